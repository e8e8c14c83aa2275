/* The cost of sealed tcp data connections, in one run: plaintext vs sealed
 * (AES-256-GCM, rdmx_conn_set_data_keys) on the tcp provider over loopback.
 *
 *   small RPC round trip: a 32-byte echo over rdmx_rpc_secure_connect
 *     / rdmx_rpc_secure_listen (server on a libev thread), p50 of
 *     `calls` calls after a warm-up; plaintext = rdmx_tls_config_set_data_plaintext;
 *   write bandwidth: engine writes of 64 KiB and 1 MiB, `window` in flight,
 *     between two contexts on two tcp devices of this process (the target's
 *     soft NIC places them), keys set or not.
 * Each measure runs `rounds` times, plain and sealed interleaved; the table
 * gives the median of the rounds.
 *
 *   bench_seal [-r rounds] [-n calls] [-m MiB per bandwidth run] [-o only] [-k mode] [-b]
 * -o runs one measure, plaintext then sealed, and prints its rounds
 * (rtt, 64k, 1m; wlat: the engine write round trip, one in flight): for
 * profiling one path. -k plaintext|sealed runs that mode only (the other
 * prints 0), so that strace -c or perf see one mode. -b: the bandwidth sender waits blocking
 * instead of spinning (a spinning sender takes a core from the target's soft NIC). Certificates are
 * made at start in a temporary directory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/mr.h>
#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/task.h>
#include <rdmx/tls.h>

#include "ev_thread.h"
#include "secure_server.h"
#include "tls_test_pki.h"

#include "common/clock.h"

#define ECHO "rdmx.bench.Echo/Echo"
#define MAX_ROUNDS 9

static struct tls_test_pki pki;

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_seal: %s: %s\n", what, rdmx_strerror(rc));
	exit(1);
}

#define TRY(what, expr)                                                                            \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		if (rc_)                                                                           \
			die(what, rc_);                                                            \
	} while (0)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- small RPC round trip over the secure path ---- */

static struct {
	struct rdmx_test_ev_thread ev;
	struct test_secure_server srv;
} S;

static void echo(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static const struct test_secure_method echo_methods[] = {{ECHO, echo}};

/* p50 of `calls` 32-byte echo round trips, in microseconds. */
static double rpc_rtt(bool plaintext, int calls)
{
	struct rdmx_tls_config *ccfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *conn = NULL;
	uint8_t msg[32] = "rdmx seal bench: 32-byte echo..";
	struct rdmx_rpc_payload req = rdmx_rpc_bytes(msg, sizeof(msg));
	uint32_t id = rdmx_rpc_method_id(ECHO);
	double *lat = malloc(sizeof(double) * (size_t)calls), p50;

	memset(&S, 0, sizeof(S));
	S.srv.cfg = tls_test_config(&pki, "server", "client.test", 0);
	S.srv.device = "tcp";
	S.srv.methods = echo_methods;
	S.srv.n_methods = 1;
	ccfg = tls_test_config(&pki, "client", "server.test", 0);
	if (!S.srv.cfg || !ccfg || !lat)
		die("configs", RDMX_E_NOMEM);
	TRY("plaintext option", rdmx_tls_config_set_data_plaintext(S.srv.cfg, plaintext));
	TRY("plaintext option", rdmx_tls_config_set_data_plaintext(ccfg, plaintext));
	TRY("server", rdmx_test_ev_thread_start(&S.ev, test_secure_server_setup,
	                                        test_secure_server_teardown, &S.srv));
	rdmx_rpc_secure_opts_init(&o);
	o.device = "tcp";
	TRY("connect", rdmx_rpc_secure_connect("127.0.0.1", S.srv.port, ccfg, NULL, &o, &conn));
	for (int i = -calls / 10; i < calls; i++) {
		struct rdmx_rpc_reply reply;
		uint64_t t0 = rdmx__now_ns();

		TRY("call",
		    rdmx_rpc_call(rdmx_rpc_secure_conn_get_ep(conn), id, &req, NULL, &reply));
		if (reply.code != RDMX_RPC_OK || reply.len != sizeof(msg))
			die("echo", RDMX_E_PROTOCOL);
		rdmx_rpc_reply_fini(&reply);
		if (i >= 0)
			lat[i] = (double)(rdmx__now_ns() - t0) / 1000.0;
	}
	p50 = median(lat, calls);
	free(lat);
	rdmx_rpc_secure_close(&conn);
	rdmx_test_ev_thread_stop(&S.ev);
	rdmx_tls_config_destroy(&S.srv.cfg);
	rdmx_tls_config_destroy(&ccfg);
	return p50;
}

/* ---- write bandwidth between two engine contexts ---- */

struct side {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	uint8_t *mem;
	struct rdmx_mr *mr;
	int up, ended;
};

static int done_writes, failed_writes;
static bool blocking; /* -b */

static void w_ok(struct rdmx_task *t, void *ud, void *cud)
{
	(void)t;
	(void)cud;
	*(bool *)ud = true;
	done_writes++;
}

static void w_err(struct rdmx_task *t, void *ud, void *cud)
{
	(void)t;
	(void)ud;
	(void)cud;
	failed_writes++;
}

static void on_up(struct rdmx_conn *c, void *cud, void *xud)
{
	(void)c;
	(void)cud;
	((struct side *)xud)->up++;
}

static void on_end(struct rdmx_conn *c, void *cud, void *xud)
{
	(void)c;
	(void)cud;
	((struct side *)xud)->ended++;
}

#define WINDOW 8

static void side_open(struct side *s, size_t mem)
{
	memset(s, 0, sizeof(*s));
	TRY("dev", rdmx_dev_open("tcp", &s->dev));
	TRY("pe", rdmx_pe_create(&s->pe));
	TRY("ctx", rdmx_ctx_create(s->dev, s->pe, &s->ctx));
	rdmx_ctx_set_user_data(s->ctx, s);
	rdmx_ctx_set_conn_callbacks(s->ctx, NULL, on_up, on_end, on_end);
	TRY("task conf", rdmx_ctx_set_task_conf(s->ctx, RDMX_TASK_WRITE, w_ok, w_err, WINDOW));
	TRY("start", rdmx_ctx_start(s->ctx));
	s->mem = calloc(1, mem);
	if (!s->mem)
		die("memory", RDMX_E_NOMEM);
	TRY("reg", rdmx_mr_reg(s->dev, s->mem, mem, RDMX_ACCESS_ALL, &s->mr));
}

static void side_close(struct side *s)
{
	rdmx_mr_dereg(&s->mr);
	rdmx_ctx_stop(s->ctx);
	rdmx_ctx_destroy(&s->ctx);
	rdmx_pe_destroy(&s->pe);
	rdmx_dev_close(&s->dev);
	free(s->mem);
}

/* MB/s (10^6 bytes) of `total` bytes written in `size`-byte writes. */
static double write_bw_w(bool sealed, size_t size, uint64_t total, int window);

static double write_bw(bool sealed, size_t size, uint64_t total)
{
	return write_bw_w(sealed, size, total, WINDOW);
}

static double write_bw_w(bool sealed, size_t size, uint64_t total, int window)
{
	struct side a, b;
	const void *da, *db;
	size_t la, lb;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	struct rdmx_mr_remote *rm;
	struct rdmx_task *t[WINDOW];
	struct rdmx_buf src[WINDOW];
	bool fin[WINDOW];
	uint64_t n = total / size, posted = 0, t0;
	double secs;

	side_open(&a, size * WINDOW);
	side_open(&b, size * WINDOW);
	TRY("export", rdmx_ctx_export(a.ctx, &da, &la, &a.conn));
	TRY("export", rdmx_ctx_export(b.ctx, &db, &lb, &b.conn));
	if (sealed) {
		struct rdmx_conn_keys ka, kb;

		for (unsigned i = 0; i < RDMX_CONN_KEY_SIZE; i++) {
			ka.tx_key[i] = kb.rx_key[i] = (uint8_t)(i * 7 + 1);
			ka.rx_key[i] = kb.tx_key[i] = (uint8_t)(i * 11 + 3);
		}
		for (unsigned i = 0; i < RDMX_CONN_IV_SIZE; i++) {
			ka.tx_iv[i] = kb.rx_iv[i] = (uint8_t)(i * 5 + 2);
			ka.rx_iv[i] = kb.tx_iv[i] = (uint8_t)(i * 13 + 4);
		}
		TRY("keys", rdmx_conn_set_data_keys(a.conn, &ka));
		TRY("keys", rdmx_conn_set_data_keys(b.conn, &kb));
	}
	TRY("connect", rdmx_ctx_connect(a.ctx, db, lb, a.conn));
	TRY("connect", rdmx_ctx_connect(b.ctx, da, la, b.conn));
	while (!a.up || !b.up) {
		rdmx_pe_progress(a.pe);
		rdmx_pe_progress(b.pe);
		if (a.ended || b.ended)
			die("connection", RDMX_E_CONN_ABORTED);
	}
	TRY("descriptor", rdmx_mr_get_descriptor(b.mr, desc));
	TRY("remote", rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm));
	memset(a.mem, 0x5c, size * WINDOW);
	done_writes = failed_writes = 0;
	for (int i = 0; i < WINDOW; i++) {
		struct rdmx_rbuf dst = {rm, (uint64_t)i * size, size};

		src[i] = (struct rdmx_buf){a.mr, a.mem + (size_t)i * size, size, NULL};
		fin[i] = false;
		TRY("alloc", rdmx_task_write_alloc(a.ctx, a.conn, &src[i], &dst, &fin[i], &t[i]));
	}
	t0 = rdmx__now_ns();
	for (int i = 0; i < window && posted < n; i++, posted++)
		TRY("submit", rdmx_task_submit(t[i]));
	while ((uint64_t)done_writes < n) {
		/* blocking waits: a spinning sender would take a core from the
		 * receiver's soft NIC on a small machine */
		if (blocking)
			rdmx_pe_wait(a.pe, 100);
		else
			rdmx_pe_progress(a.pe);
		if (failed_writes)
			die("write", RDMX_E_CONN_ABORTED);
		for (int i = 0; i < window && posted < n; i++) {
			if (!fin[i])
				continue;
			fin[i] = false;
			TRY("submit", rdmx_task_submit(t[i]));
			posted++;
		}
	}
	secs = (double)(rdmx__now_ns() - t0) / 1e9;
	for (int i = 0; i < WINDOW; i++)
		rdmx_task_free(t[i]);
	rdmx_mr_remote_delete(&rm);
	rdmx_conn_disconnect(a.conn);
	while (!a.ended || !b.ended) {
		rdmx_pe_progress(a.pe);
		rdmx_pe_progress(b.pe);
	}
	side_close(&a);
	side_close(&b);
	return (double)(n * size) / secs / 1e6;
}

int main(int argc, char **argv)
{
	int rounds = 3, calls = 20000, mib = 1024, opt, only = -1, mode = -1;
	double v[2][3][MAX_ROUNDS];
	static const char *const name[3] = {"small RPC round trip, 32 B (p50 us)",
	                                    "write bandwidth, 64 KiB (MB/s)",
	                                    "write bandwidth, 1 MiB (MB/s)"};

	while ((opt = getopt(argc, argv, "r:n:m:o:k:b")) != -1) {
		switch (opt) {
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'n':
			calls = atoi(optarg);
			break;
		case 'm':
			mib = atoi(optarg);
			break;
		case 'b':
			blocking = true;
			break;
		case 'k':
			mode = !strcmp(optarg, "plaintext") ? 0
			       : !strcmp(optarg, "sealed")  ? 1
			                                    : -2;
			break;
		case 'o':
			if (!strcmp(optarg, "wlat")) {
				/* engine write round trip, one in flight, 32 B */
				for (int k = 0; k < 2; k++)
					printf("%s write 32 B one at a time: %.2f us\n",
					       k ? "sealed" : "plaintext",
					       32.0 / write_bw_w(k == 1, 32, 32u * 20000u, 1));
				for (int k = 1; k >= 0; k--)
					printf("%s write 32 B one at a time: %.2f us\n",
					       k ? "sealed" : "plaintext",
					       32.0 / write_bw_w(k == 1, 32, 32u * 20000u, 1));
				return 0;
			}
			only = !strcmp(optarg, "rtt") ? 0 : !strcmp(optarg, "64k") ? 1 : 2;
			break;
		default:
			fprintf(stderr,
			        "usage: %s [-r rounds] [-n calls] [-m MiB] [-o rtt|64k|1m|wlat] "
			        "[-k plaintext|sealed] [-b]\n",
			        argv[0]);
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || calls < 10 || mib < 1 || mode == -2) {
		fprintf(stderr,
		        "bench_seal: rounds 1..%d, calls >= 10, MiB >= 1, -k plaintext|sealed\n",
		        MAX_ROUNDS);
		return 2;
	}
	if (tls_test_pki_create(&pki)) {
		fprintf(stderr, "bench_seal: cannot make the test certificates\n");
		return 1;
	}
	rdmx_log_set_threshold(RDMX_LOG_ERROR);
	for (int r = 0; r < rounds; r++) {
		for (int s = 0; s < 2; s++) {
			bool sealed = s == 1, run = mode < 0 || mode == s;

			v[s][0][r] = run && (only < 0 || only == 0) ? rpc_rtt(!sealed, calls) : 0;
			v[s][1][r] = run && (only < 0 || only == 1)
			                 ? write_bw(sealed, 64u << 10, (uint64_t)mib << 20)
			                 : 0;
			v[s][2][r] = run && (only < 0 || only == 2)
			                 ? write_bw(sealed, 1u << 20, (uint64_t)mib << 20)
			                 : 0;
			printf("round %d %-9s rtt %.2f us  64KiB %.0f MB/s  1MiB %.0f MB/s\n",
			       r + 1, sealed ? "sealed" : "plaintext", v[s][0][r], v[s][1][r],
			       v[s][2][r]);
			fflush(stdout);
		}
	}
	printf("\n| measure | plaintext | sealed (AES-256-GCM) | sealed / plaintext | median of "
	       "per-round ratios |\n");
	printf("|---|---|---|---|---|\n");
	for (int m = 0; m < 3; m++) {
		double ratio[MAX_ROUNDS], p, q;

		/* a round's two runs are back to back: their ratio is the least
		 * disturbed by a machine whose load changes over the run */
		for (int r = 0; r < rounds; r++)
			ratio[r] = v[0][m][r] > 0 ? v[1][m][r] / v[0][m][r] : 0;
		p = median(v[0][m], rounds);
		q = median(v[1][m], rounds);
		printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", name[m], p, q, p > 0 ? q / p : 0,
		       median(ratio, rounds));
	}
	tls_test_pki_destroy(&pki);
	return 0;
}
