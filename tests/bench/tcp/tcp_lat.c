/* tcp provider latency between two processes on loopback.
 *
 *   send_imm ping-pong round trip, both sides waiting with rdmx_pe_wait in
 *   BUSY mode, then in BLOCK mode (notification: the kernel wakes the waiter);
 *   remote read round trip while the target process never calls progress
 *   (it sleeps in read() on a control socket: its soft NIC serves);
 *   light message ping-pong (engine/msg.h, busy: what the channel's small
 *   ring writes cost the provider, with no channel or RPC above it).
 *
 * The server is a forked child (it opens its device after fork); the two
 * exchange connection details and region descriptors over a socketpair.
 * Optional pinning: server on CPU 0, client on CPU 1 (when both exist).
 *   tcp_lat [-n ITERS] [-s BYTES] [-w WARMUP] [-t busy|block|read|msg] [--no-pin]
 * Prints one RESULT line per measure (microseconds). */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdmx/rdmx.h>

#include "common/clock.h"
#include "engine/msg.h"

#define BENCH_PROG "tcp_lat"
#include "bench_try.h"

struct opts {
	int iters, warmup;
	size_t size;
	bool pin;
	const char *only; /* busy, block, read or msg: run just that one */
};

struct node {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	struct rdmx_mr *mr;
	uint8_t *mem;
	volatile int est, recvs, sends, reads, errs, msgs;
};

static void cb(struct rdmx_task *t, void *ud, void *cud)
{
	struct node *n = cud;

	(void)ud;
	if (rdmx_task_get_status(t)) {
		n->errs++;
		return;
	}
	switch (rdmx_task_get_type(t)) {
	case RDMX_TASK_RECEIVE:
		n->recvs++;
		break;
	case RDMX_TASK_SEND_IMM:
		n->sends++;
		break;
	case RDMX_TASK_READ:
		n->reads++;
		break;
	default:
		break;
	}
}

static void on_msg(void *arg, struct rdmx_conn *c, uint32_t imm, uint32_t len)
{
	(void)c;
	(void)imm;
	(void)len;
	((struct node *)arg)->msgs++;
}

static void on_est(struct rdmx_conn *c, void *ud, void *cud)
{
	(void)c;
	(void)ud;
	((struct node *)cud)->est++;
}

static void put(int fd, const void *p, uint32_t n)
{
	if (write(fd, &n, 4) != 4 || write(fd, p, n) != (ssize_t)n)
		die("control write", 0);
}

static uint32_t get(int fd, void *p, uint32_t max)
{
	uint32_t n;
	size_t got = 0;

	if (read(fd, &n, 4) != 4 || n > max)
		die("control read", 0);
	while (got < n) {
		ssize_t r = read(fd, (uint8_t *)p + got, n - got);

		if (r <= 0)
			die("control read", 0);
		got += (size_t)r;
	}
	return n;
}

static void node_open(struct node *n, int ctl, size_t size)
{
	uint8_t buf[512];
	const void *d;
	size_t dl;
	uint32_t len;

	memset(n, 0, sizeof(*n));
	TRY(rdmx_dev_open("tcp", &n->dev));
	TRY(rdmx_pe_create(&n->pe));
	TRY(rdmx_ctx_create(n->dev, n->pe, &n->ctx));
	TRY(rdmx_ctx_set_user_data(n->ctx, n));
	TRY(rdmx_ctx_set_conn_callbacks(n->ctx, NULL, on_est, NULL, NULL));
	for (int t = 0; t <= RDMX_TASK_FLUSH; t++)
		TRY(rdmx_ctx_set_task_conf(n->ctx, (enum rdmx_task_type)t, cb, cb, 16));
	TRY(rdmx__ctx_set_msg_handler(n->ctx, on_msg, n));
	TRY(rdmx_ctx_start(n->ctx));
	n->mem = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	if (!n->mem)
		die("alloc", RDMX_E_NOMEM);
	memset(n->mem, 1, size);
	TRY(rdmx_mr_reg(n->dev, n->mem, size, RDMX_ACCESS_ALL, &n->mr));
	TRY(rdmx_ctx_export(n->ctx, &d, &dl, &n->conn));
	put(ctl, d, (uint32_t)dl);
	len = get(ctl, buf, sizeof(buf));
	TRY(rdmx_ctx_connect(n->ctx, buf, len, n->conn));
	while (!n->est)
		rdmx_pe_progress(n->pe);
}

static void node_close(struct node *n)
{
	rdmx_ctx_stop(n->ctx);
	rdmx_ctx_destroy(&n->ctx);
	rdmx_pe_destroy(&n->pe);
	rdmx_mr_dereg(&n->mr);
	rdmx_dev_close(&n->dev);
	free(n->mem);
}

static void wait_until(struct node *n, volatile int *counter, int target)
{
	while (*counter < target) {
		int rc = rdmx_pe_wait(n->pe, 5000);

		if (rc < 0)
			die("rdmx_pe_wait", rc);
		if (n->errs)
			die("a task failed", RDMX_E_PROVIDER);
	}
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "tcp_lat: pinning to cpu %d failed (ignored)\n", cpu);
}

/* Both sides: each sends its region's descriptor and takes the peer's. */
static struct rdmx_mr_remote *swap_regions(struct node *n, int ctl)
{
	uint8_t mine[RDMX_MR_DESCRIPTOR_SIZE], theirs[RDMX_MR_DESCRIPTOR_SIZE];
	struct rdmx_mr_remote *rm;
	uint32_t len;

	TRY(rdmx_mr_get_descriptor(n->mr, mine));
	put(ctl, mine, sizeof(mine));
	len = get(ctl, theirs, sizeof(theirs));
	TRY(rdmx_mr_remote_from_descriptor(theirs, len, &rm));
	return rm;
}

/* One light message of the first size bytes of n's region into the peer's. */
static void post_msg(struct node *n, struct rdmx_mr_remote *rm, size_t size, uint32_t imm)
{
	struct rdmx_buf b = {.mr = n->mr, .addr = n->mem, .len = size};
	struct rdmx_rbuf dst = {.mr = rm, .offset = size, .len = size};

	TRY(rdmx__conn_post_msg(n->conn, &b, &dst, imm));
}

/* ---- server (child) ---- */

enum { CMD_PINGPONG = 1, CMD_READ, CMD_MSG, CMD_QUIT };

struct cmd {
	uint32_t op, mode, iters;
};

static void server(int ctl, const struct opts *o)
{
	struct node n;
	struct rdmx_task *rt, *st;
	struct rdmx_buf rbuf = {0}, sbuf = {0};
	struct cmd c;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE], ok = 1;

	node_open(&n, ctl, o->size < 64 ? 64 : o->size * 2);
	rbuf = (struct rdmx_buf){.mr = n.mr, .addr = n.mem, .len = o->size};
	sbuf = (struct rdmx_buf){.mr = n.mr, .addr = n.mem + o->size, .len = o->size};
	TRY(rdmx_task_receive_alloc(n.ctx, &rbuf, NULL, &rt));
	TRY(rdmx_task_send_imm_alloc(n.ctx, n.conn, &sbuf, 0, NULL, &st));
	for (;;) {
		get(ctl, &c, sizeof(c));
		if (c.op == CMD_QUIT)
			break;
		if (c.op == CMD_READ) {
			TRY(rdmx_mr_get_descriptor(n.mr, desc));
			put(ctl, desc, sizeof(desc));
			/* never progress: sleep in read() until the client is done */
			get(ctl, &c, sizeof(c));
			continue;
		}
		if (c.op == CMD_MSG) {
			struct rdmx_mr_remote *rm = swap_regions(&n, ctl);

			TRY(rdmx_pe_set_poll_mode(n.pe, RDMX_POLL_BUSY, 0));
			n.msgs = 0;
			put(ctl, &ok, 1);
			for (uint32_t i = 0; i < c.iters; i++) {
				wait_until(&n, &n.msgs, (int)i + 1);
				post_msg(&n, rm, o->size, i);
			}
			rdmx_mr_remote_delete(&rm);
			continue;
		}
		TRY(rdmx_pe_set_poll_mode(n.pe, (enum rdmx_poll_mode)c.mode, 0));
		n.recvs = n.sends = 0;
		TRY(rdmx_task_submit(rt));
		put(ctl, &ok, 1);
		for (uint32_t i = 0; i < c.iters; i++) {
			wait_until(&n, &n.recvs, (int)i + 1);
			if (i + 1 < c.iters)
				TRY(rdmx_task_submit(rt));
			TRY(rdmx_task_submit(st));
			wait_until(&n, &n.sends, (int)i + 1);
		}
	}
	node_close(&n);
}

/* ---- client (parent) ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *name, size_t size, uint64_t *lat, int n)
{
	double sum = 0;

	qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
	for (int i = 0; i < n; i++)
		sum += (double)lat[i];
	printf(
	    "RESULT test=%s bytes=%zu iters=%d avg_us=%.2f p50_us=%.2f p99_us=%.2f min_us=%.2f\n",
	    name, size, n, sum / n / 1000.0, (double)lat[n / 2] / 1000.0,
	    (double)lat[(size_t)n * 99 / 100] / 1000.0, (double)lat[0] / 1000.0);
	fflush(stdout);
}

static void client_pingpong(struct node *n, int ctl, const struct opts *o, enum rdmx_poll_mode mode,
                            struct rdmx_task *rt, struct rdmx_task *st, uint64_t *lat)
{
	int total = o->warmup + o->iters;
	struct cmd c = {.op = CMD_PINGPONG, .mode = (uint32_t)mode, .iters = (uint32_t)total};
	uint8_t ok;

	TRY(rdmx_pe_set_poll_mode(n->pe, mode, 0));
	n->recvs = n->sends = 0;
	TRY(rdmx_task_submit(rt));
	put(ctl, &c, sizeof(c));
	get(ctl, &ok, 1);
	for (int i = 0; i < total; i++) {
		uint64_t t0 = rdmx__now_ns();

		TRY(rdmx_task_submit(st));
		wait_until(n, &n->recvs, i + 1);
		if (i >= o->warmup)
			lat[i - o->warmup] = rdmx__now_ns() - t0;
		wait_until(n, &n->sends, i + 1);
		if (i + 1 < total)
			TRY(rdmx_task_submit(rt));
	}
	report(mode == RDMX_POLL_BUSY ? "send_imm_pingpong_busy" : "send_imm_pingpong_block",
	       o->size, lat, o->iters);
}

static void client_read(struct node *n, int ctl, const struct opts *o, uint64_t *lat)
{
	struct cmd c = {.op = CMD_READ};
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	struct rdmx_mr_remote *rm;
	struct rdmx_task *t;
	struct rdmx_buf dst = {.mr = n->mr, .addr = n->mem, .len = o->size};
	struct rdmx_rbuf src;
	int total = o->warmup + o->iters;

	put(ctl, &c, sizeof(c));
	get(ctl, desc, sizeof(desc));
	TRY(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm));
	src = (struct rdmx_rbuf){.mr = rm, .offset = 0, .len = o->size};
	TRY(rdmx_pe_set_poll_mode(n->pe, RDMX_POLL_BUSY, 0));
	TRY(rdmx_task_read_alloc(n->ctx, n->conn, &src, &dst, NULL, &t));
	n->reads = 0;
	for (int i = 0; i < total; i++) {
		uint64_t t0 = rdmx__now_ns();

		TRY(rdmx_task_submit(t));
		wait_until(n, &n->reads, i + 1);
		if (i >= o->warmup)
			lat[i - o->warmup] = rdmx__now_ns() - t0;
	}
	report("read_target_passive", o->size, lat, o->iters);
	TRY(rdmx_task_free(t));
	rdmx_mr_remote_delete(&rm);
	put(ctl, &c, sizeof(c)); /* wakes the server */
}

static void client_msg(struct node *n, int ctl, const struct opts *o, uint64_t *lat)
{
	int total = o->warmup + o->iters;
	struct cmd c = {.op = CMD_MSG, .iters = (uint32_t)total};
	struct rdmx_mr_remote *rm;
	uint8_t ok;

	put(ctl, &c, sizeof(c));
	rm = swap_regions(n, ctl);
	get(ctl, &ok, 1);
	TRY(rdmx_pe_set_poll_mode(n->pe, RDMX_POLL_BUSY, 0));
	n->msgs = 0;
	for (int i = 0; i < total; i++) {
		uint64_t t0 = rdmx__now_ns();

		post_msg(n, rm, o->size, (uint32_t)i);
		wait_until(n, &n->msgs, i + 1);
		if (i >= o->warmup)
			lat[i - o->warmup] = rdmx__now_ns() - t0;
	}
	report("light_msg_pingpong_busy", o->size, lat, o->iters);
	rdmx_mr_remote_delete(&rm);
}

int main(int argc, char **argv)
{
	struct opts o = {.iters = 10000, .warmup = 1000, .size = 64, .pin = true};
	static const struct option longs[] = {{"no-pin", no_argument, NULL, 'P'}, {0}};
	struct node n;
	struct rdmx_task *rt, *st;
	struct rdmx_buf rbuf, sbuf;
	uint64_t *lat;
	int sv[2], opt, status;
	pid_t pid;

	while ((opt = getopt_long(argc, argv, "n:s:w:t:", longs, NULL)) != -1) {
		switch (opt) {
		case 'n':
			o.iters = atoi(optarg);
			break;
		case 's':
			o.size = (size_t)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			o.warmup = atoi(optarg);
			break;
		case 'P':
			o.pin = false;
			break;
		case 't':
			o.only = optarg;
			break;
		default:
			fprintf(stderr, "usage: tcp_lat [-n ITERS] [-s BYTES] [-w WARMUP] "
			                "[-t busy|block|read|msg] [--no-pin]\n");
			return 2;
		}
	}
	if (o.iters <= 0 || o.warmup < 0 || o.size == 0 ||
	    (o.only && strcmp(o.only, "msg") == 0 && o.size > RDMX__MSG_MAX)) {
		fprintf(stderr, "tcp_lat: bad arguments\n");
		return 2;
	}
	if (o.pin && sysconf(_SC_NPROCESSORS_ONLN) < 2)
		o.pin = false;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair", 0);
	pid = fork();
	if (pid < 0)
		die("fork", 0);
	if (pid == 0) {
		close(sv[0]);
		if (o.pin)
			pin(0);
		server(sv[1], &o);
		_exit(0);
	}
	close(sv[1]);
	if (o.pin)
		pin(1);
	lat = calloc((size_t)o.iters, sizeof(*lat));
	node_open(&n, sv[0], o.size < 64 ? 64 : o.size * 2);
	rbuf = (struct rdmx_buf){.mr = n.mr, .addr = n.mem, .len = o.size};
	sbuf = (struct rdmx_buf){.mr = n.mr, .addr = n.mem + o.size, .len = o.size};
	TRY(rdmx_task_receive_alloc(n.ctx, &rbuf, NULL, &rt));
	TRY(rdmx_task_send_imm_alloc(n.ctx, n.conn, &sbuf, 0, NULL, &st));
	if (!o.only || strcmp(o.only, "busy") == 0)
		client_pingpong(&n, sv[0], &o, RDMX_POLL_BUSY, rt, st, lat);
	if (!o.only || strcmp(o.only, "block") == 0)
		client_pingpong(&n, sv[0], &o, RDMX_POLL_BLOCK, rt, st, lat);
	if (!o.only || strcmp(o.only, "read") == 0)
		client_read(&n, sv[0], &o, lat);
	if ((!o.only || strcmp(o.only, "msg") == 0) && o.size <= RDMX__MSG_MAX)
		client_msg(&n, sv[0], &o, lat);
	{
		struct cmd q = {.op = CMD_QUIT};

		put(sv[0], &q, sizeof(q));
	}
	waitpid(pid, &status, 0);
	node_close(&n);
	free(lat);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
