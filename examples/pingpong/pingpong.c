/* pingpong: two processes bounce a message with send_imm, then with
 * write_imm, and print the round-trip latency (median, p99).
 *
 *   pingpong                 forks: the child serves, the parent pings
 *   pingpong server          serve once (per mode) and exit
 *   pingpong client ADDR     ping the server at ADDR
 * options: -d DEVICE (default device), -n ITERS (10000), -s SIZE (64), -p PORT (18600)
 *
 * The connection uses the rdma_cm-style flow; each side's buffer descriptor
 * travels in the connect/accept private data, so write_imm knows where to write. */
#include <rdmx/rdmx.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct side {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	struct rdmx_mr *mr;
	struct rdmx_mr_remote *peer_buf;
	char buf[2][4096]; /* [0]: what we send; [1]: where the peer writes / sends land */
	bool up, down;
	unsigned long received;
};

static const char *device;
static unsigned long iters = 10000;
static size_t size = 64;
static uint16_t port = 18600;

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		if (rc_) {                                                                         \
			fprintf(stderr, "pingpong: %s: %s\n", #expr, rdmx_strerror(rc_));          \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static uint64_t now_ns(void)
{
	return rdmx_pe_now_ns();
}

static void on_recv(struct rdmx_task *t, void *tud, void *ud)
{
	(void)tud;
	((struct side *)ud)->received++;
	rdmx_task_submit(t); /* repost the same receive: no allocation */
}

static unsigned long sent; /* completed sends */

static void on_sent(struct rdmx_task *t, void *tud, void *ud)
{
	(void)t, (void)tud, (void)ud;
	sent++;
}

static void on_fail(struct rdmx_task *t, void *tud, void *ud)
{
	(void)tud;
	if (rdmx_task_get_type(t) != RDMX_TASK_RECEIVE)
		sent++; /* completed, with an error: e.g. the peer hung up before acking */
	if (!((struct side *)ud)->down && rdmx_task_get_status(t) != RDMX_E_CONN_ABORTED)
		fprintf(stderr, "pingpong: task failed: %s\n",
		        rdmx_strerror(rdmx_task_get_status(t)));
}

static void adopt_peer(struct side *s, struct rdmx_conn *conn)
{
	const void *pd;
	size_t len;
	CHECK(rdmx_conn_get_private_data(conn, &pd, &len));
	CHECK(rdmx_mr_remote_from_descriptor(pd, len, &s->peer_buf));
}

static void on_request(struct rdmx_conn *conn, void *ud)
{
	struct side *s = ud;
	unsigned char desc[RDMX_MR_DESCRIPTOR_SIZE];
	adopt_peer(s, conn);
	CHECK(rdmx_mr_get_descriptor(s->mr, desc));
	CHECK(rdmx_conn_accept(conn, desc, sizeof(desc)));
}

static void on_up(struct rdmx_conn *conn, void *cud, void *ud)
{
	struct side *s = ud;
	(void)cud;
	if (!s->peer_buf)
		adopt_peer(s, conn);
	s->conn = conn;
	s->up = true;
}

static void on_down(struct rdmx_conn *conn, void *cud, void *ud)
{
	(void)conn, (void)cud;
	((struct side *)ud)->down = true;
}

static void open_side(struct side *s)
{
	CHECK(rdmx_dev_open(device, &s->dev));
	CHECK(rdmx_pe_create(&s->pe));
	CHECK(rdmx_ctx_create(s->dev, s->pe, &s->ctx));
	CHECK(rdmx_ctx_set_user_data(s->ctx, s));
	CHECK(rdmx_ctx_set_conn_callbacks(s->ctx, on_request, on_up, on_down, on_down));
	CHECK(rdmx_ctx_set_task_conf(s->ctx, RDMX_TASK_RECEIVE, on_recv, on_fail, 4));
	CHECK(rdmx_ctx_set_task_conf(s->ctx, RDMX_TASK_SEND_IMM, on_sent, on_fail, 4));
	CHECK(rdmx_ctx_set_task_conf(s->ctx, RDMX_TASK_WRITE_IMM, on_sent, on_fail, 4));
	CHECK(rdmx_mr_reg(s->dev, s->buf, sizeof(s->buf),
	                  RDMX_ACCESS_LOCAL_WRITE | RDMX_ACCESS_REMOTE_WRITE, &s->mr));
	CHECK(rdmx_ctx_start(s->ctx));
	static struct rdmx_buf landing; /* receives land in buf[1] (send_imm) */
	landing = (struct rdmx_buf){s->mr, s->buf[1], size, NULL};
	for (int i = 0; i < 4; i++) {
		struct rdmx_task *t;
		CHECK(rdmx_task_receive_alloc(s->ctx, &landing, NULL, &t));
		CHECK(rdmx_task_submit(t));
	}
}

static void close_side(struct side *s)
{
	if (s->conn && !s->down) {
		rdmx_conn_disconnect(s->conn);
		for (int i = 0; i < 2000 && !s->down; i++)
			rdmx_pe_wait(s->pe, 1);
	}
	CHECK(rdmx_ctx_stop(s->ctx));
	CHECK(rdmx_ctx_destroy(&s->ctx));
	CHECK(rdmx_mr_remote_delete(&s->peer_buf));
	CHECK(rdmx_mr_dereg(&s->mr));
	CHECK(rdmx_pe_destroy(&s->pe));
	CHECK(rdmx_dev_close(&s->dev));
}

static void wait_for(struct side *s, bool *flag_or_null, unsigned long received)
{
	while (flag_or_null ? !*flag_or_null : s->received < received) {
		if (s->down) {
			fprintf(stderr, "pingpong: peer went away\n");
			exit(1);
		}
		rdmx_pe_progress(s->pe); /* busy polling, like the raw TCP anchor */
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* One mode (phase 0: send_imm, 1: write_imm): `iters` bounces; the client
 * records each round trip. Counters are absolute: the peer's first message of
 * a phase may arrive before this side finished the previous one. */
static void bounce(struct side *s, bool client, bool use_write, uint64_t *rtt_ns)
{
	struct rdmx_buf src = {s->mr, s->buf[0], size, NULL};
	struct rdmx_rbuf dst = {s->peer_buf, sizeof(s->buf[0]), size}; /* peer's buf[1] */
	struct rdmx_task *t;
	if (use_write)
		CHECK(rdmx_task_write_imm_alloc(s->ctx, s->conn, &src, &dst, 0, NULL, &t));
	else
		CHECK(rdmx_task_send_imm_alloc(s->ctx, s->conn, &src, 0, NULL, &t));
	unsigned long base = use_write ? iters : 0, sent_base = base;
	for (unsigned long i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		if (!client)
			wait_for(s, NULL, base + i + 1);
		while (sent < sent_base + i) /* the previous send is still in flight */
			rdmx_pe_progress(s->pe);
		CHECK(rdmx_task_set_imm(t, (uint32_t)i));
		CHECK(rdmx_task_submit(t));
		if (client) {
			wait_for(s, NULL, base + i + 1);
			rtt_ns[i] = now_ns() - t0;
		}
	}
	while (sent < sent_base + iters) /* the peer may hang up first: then it fails */
		rdmx_pe_progress(s->pe);
	CHECK(rdmx_task_free(t));
}

static void report(const char *mode, uint64_t *rtt)
{
	qsort(rtt, iters, sizeof(*rtt), cmp_u64);
	printf("pingpong %-9s %4zu B x %lu: round trip median %.1f us, p99 %.1f us\n", mode, size,
	       iters, (double)rtt[iters / 2] / 1e3, (double)rtt[(iters - 1) * 99 / 100] / 1e3);
}

static int run(bool client, const char *addr_text)
{
	struct side *s = calloc(1, sizeof(*s));
	uint64_t *rtt = calloc(iters, sizeof(*rtt));
	open_side(s);
	if (client) {
		struct rdmx_addr *addr;
		struct rdmx_conn *conn;
		unsigned char desc[RDMX_MR_DESCRIPTOR_SIZE];
		CHECK(rdmx_mr_get_descriptor(s->mr, desc));
		CHECK(rdmx_addr_create(RDMX_ADDR_IPV4, addr_text, port, &addr));
		/* the server may not listen yet: retry a refused connect for a while */
		for (int attempt = 0; attempt < 100 && !s->up; attempt++) {
			s->down = false;
			CHECK(rdmx_ctx_connect_to_addr(s->ctx, addr, desc, sizeof(desc), NULL,
			                               &conn));
			while (!s->up && !s->down)
				rdmx_pe_wait(s->pe, 10);
			if (!s->up)
				nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
		}
		CHECK(rdmx_addr_destroy(&addr));
	} else {
		CHECK(rdmx_ctx_listen(s->ctx, port));
	}
	wait_for(s, &s->up, 0);
	printf("pingpong: %s connected on %s (%s)\n", client ? "client" : "server",
	       rdmx_dev_name(s->dev), rdmx_dev_provider(s->dev));
	bounce(s, client, false, rtt);
	if (client)
		report("send_imm", rtt);
	bounce(s, client, true, rtt);
	if (client)
		report("write_imm", rtt);
	if (!client)
		wait_for(s, &s->down, 0); /* the client hangs up */
	close_side(s);
	free(rtt);
	free(s);
	return 0;
}

static const char usage_text[] =
    "usage: pingpong [-d DEV] [-n N] [-s SIZE] [-p PORT] [server|client ADDR]\n"
    "The plain cm flow it uses (no TLS) is unauthenticated and unencrypted: use it\n"
    "only on a trusted network.\n";

int main(int argc, char **argv)
{
	int c;
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage_text, stdout);
		return 0;
	}
	while ((c = getopt(argc, argv, "d:n:s:p:")) != -1) {
		if (c == 'd')
			device = optarg;
		else if (c == 'n')
			iters = strtoul(optarg, NULL, 0);
		else if (c == 's')
			size = strtoul(optarg, NULL, 0);
		else if (c == 'p')
			port = (uint16_t)strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	if (iters == 0 || size == 0 || size > 4096) {
		fprintf(stderr, "pingpong: need -n >= 1 and 1 <= -s <= 4096\n");
		return 2;
	}
	const char *role = optind < argc ? argv[optind] : "both";
	bool server = strcmp(role, "server") == 0;
	bool client = strcmp(role, "client") == 0 && optind + 1 < argc;
	if (!server && !client && strcmp(role, "both") != 0) {
		fputs(usage_text, stderr);
		return 2;
	}
	fprintf(stderr, "pingpong: warning: the plain cm flow is unauthenticated and unencrypted; "
	                "use it only on a trusted network\n");
	if (server)
		return run(false, NULL);
	if (client)
		return run(true, argv[optind + 1]);
	pid_t child = fork();
	if (child == 0) {
		int rc_child = run(false, NULL);
		fflush(stdout);
		_exit(rc_child);
	}
	int rc = run(true, "127.0.0.1"), status;
	waitpid(child, &status, 0);
	return rc || !WIFEXITED(status) || WEXITSTATUS(status);
}
