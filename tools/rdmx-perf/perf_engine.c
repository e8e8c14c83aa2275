/* rdmx-perf engine tests: latency (ping-pong / one at a time) and bandwidth
 * (a window of operations in flight), perftest's conventions: send_lat and
 * write_lat report half the round trip, read_lat and atomic_lat the whole
 * operation.
 *
 * Latency loops do what perftest's do (run_iter_lat_send, _lat_write,
 * run_iter_lat): every operation signaled, one clock read per iteration (a
 * sample is the time from one iteration's post to the next one's), the
 * engine's progress driven until the awaited completion. write_lat waits
 * for its own write's completion and then spins on the last byte of its
 * landing zone without calling progress (the peer's write places it), as
 * perftest polls its buffer. The failure guards (a hang-up, 60 s without
 * progress) read the clock once in GUARD_EVERY polls, not on every one. */
#include "perf.h"

#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define RING 16           /* send-side tasks reused round-robin in latency tests */
#define GUARD_EVERY 1024u /* busy polls per failure-guard check (a power of 2) */
#define GUARD_NS 60000000000ull

struct perf_state {
	struct perf_session s;
	struct perf_params p;
	volatile uint64_t recvs; /* receive completions */
	volatile uint64_t done;  /* send-side completions */
	uint64_t to_submit;      /* bandwidth: operations not yet submitted */
	uint64_t bw_ops;         /* bandwidth: total operations */
	uint64_t submitted;      /* bandwidth: operations submitted */
	uint64_t first_recv_ns, last_recv_ns;
	bool time_recvs;      /* send_bw receiver: time the first and last receive */
	uint64_t recv_target; /* ... the last one's number (UINT64_MAX: every one is) */
	bool serves;          /* server of a one-sided test: the device answers */
	struct rdmx_task *ring[RING];
};
static struct perf_state st;

static uint64_t warmup_of(uint64_t iters)
{
	uint64_t w = iters / 10;
	return w > 1000 ? 1000 : w;
}

static void on_recv(struct rdmx_task *task, void *tud, void *cud)
{
	(void)tud;
	(void)cud;
	/* a clock read is a system call in a guest on HPET: only the first
	 * and the last receive are timed when the count is known */
	if (st.time_recvs &&
	    (!st.recvs || st.recv_target == UINT64_MAX || st.recvs + 1 == st.recv_target)) {
		st.last_recv_ns = perf_now_ns();
		if (!st.recvs)
			st.first_recv_ns = st.last_recv_ns;
	}
	st.recvs++;
	if (rdmx_task_submit(task) != 0)
		fprintf(stderr, "rdmx-perf: receive repost failed\n");
}

static void on_done(struct rdmx_task *task, void *tud, void *cud)
{
	(void)task;
	(void)tud;
	(void)cud;
	st.done++;
}

static void on_err(struct rdmx_task *task, void *tud, void *cud)
{
	perf_count_err(task, tud, cud);
}

/* Bandwidth: each completion submits the next operation while any remain. */
static void on_bw_done(struct rdmx_task *task, void *tud, void *cud)
{
	(void)tud;
	(void)cud;
	st.done++;
	if (st.to_submit > 0) {
		st.to_submit--;
		st.submitted++;
		if (rdmx_task_submit(task) != 0) {
			fprintf(stderr, "rdmx-perf: resubmit failed\n");
			st.s.failed = true;
		}
	}
}

/* The failure guard of a wait: true once GUARD_NS passed since its first
 * check; reads the clock in one call of GUARD_EVERY (every call when not
 * busy polling: a blocking drive waits up to 100 ms). */
static bool guard_expired(uint64_t *since, unsigned *calls, bool busy)
{
	if (busy && (++*calls & (GUARD_EVERY - 1)) != 0)
		return false;
	uint64_t now = perf_coarse_ns();
	if (!*since)
		*since = now;
	return now - *since > GUARD_NS;
}

static int wait_count(volatile uint64_t *counter, uint64_t target, enum rdmx_poll_mode mode)
{
	uint64_t since = 0;
	unsigned calls = 0;
	while (*counter < target) {
		if (st.s.failed || st.s.disconnected)
			return RDMX_E_DISCONNECTED;
		int rc = perf_drive(&st.s, mode);
		if (rc < 0)
			return rc;
		if (guard_expired(&since, &calls, mode == RDMX_POLL_BUSY))
			return RDMX_E_TIMEDOUT;
	}
	return 0;
}

/* write_lat: spins on a byte the peer's RDMA write sets, with no progress
 * call per spin; one in GUARD_EVERY drives progress once (a hang-up). */
static int spin_byte(volatile uint8_t *p, uint8_t mark)
{
	uint64_t since = 0;
	unsigned calls = 0;
	while (*p != mark) {
		if ((calls & (GUARD_EVERY - 1)) == GUARD_EVERY - 1) {
			rdmx_pe_progress(st.s.pe);
			if (st.s.disconnected || st.s.failed)
				return *p == mark ? 0 : RDMX_E_DISCONNECTED;
		}
		if (guard_expired(&since, &calls, true))
			return RDMX_E_DISCONNECTED;
	}
	return 0;
}

/* The latency clock of a ping-pong loop: one clock read per iteration, a
 * sample is post to next post, divided by div (2000 for a round trip halved,
 * 1000 for a one-sided operation); the warm-up iterations before first give
 * no sample. As perftest's get_cycles(), the read is the CPU's cycle counter
 * where there is one (x86: rdtsc), converted to time at the end with the
 * rate measured over the run against the monotonic clock: a clock_gettime
 * per iteration would be a system call wherever the kernel's clock source
 * is not readable from user space (a guest on HPET: Soft-RoCE under QEMU),
 * a cost perftest does not pay. */
struct lat_clock {
	double *lat;
	double div;
	uint64_t first, prev;           /* cycle counter readings */
	uint64_t start_ticks, start_ns; /* the first sample's: the rate */
};

static inline uint64_t lat_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return perf_now_ns();
#endif
}

static inline void lat_tick(struct lat_clock *c, uint64_t i)
{
	uint64_t now = lat_ticks();
	if (i > c->first)
		c->lat[i - 1 - c->first] = (double)(now - c->prev);
	if (i == c->first) {
		c->start_ticks = now;
		c->start_ns = perf_now_ns();
	}
	c->prev = now;
}

/* The last sample ends with the last reply or completion. */
static inline void lat_last(struct lat_clock *c, uint64_t iters)
{
	if (iters)
		c->lat[iters - 1] = (double)(lat_ticks() - c->prev);
}

/* Converts the n samples to microseconds (divided by div); returns the
 * seconds since the first sample. */
static double lat_finish(struct lat_clock *c, uint64_t n)
{
	uint64_t ns = perf_now_ns() - c->start_ns, ticks = lat_ticks() - c->start_ticks;
	double ns_per_tick = ticks ? (double)ns / (double)ticks : 1.0;

	for (uint64_t i = 0; i < n; i++)
		c->lat[i] *= ns_per_tick / c->div;
	return (double)ns / 1e9;
}

/* The task for operation i of the ring. Send-side completions come in
 * submission order, so slot i % RING is free once operation i - RING is done;
 * drives progress until then. */
static struct rdmx_task *ring_next(uint64_t i)
{
	while (i >= RING && st.done < i - RING + 1 && !st.s.failed && !st.s.disconnected)
		rdmx_pe_progress(st.s.pe);
	return st.ring[i % RING];
}

static int test_id_of(const char *name)
{
	for (size_t i = 0; i < perf_engine_tests_count; i++)
		if (strcmp(perf_engine_tests[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int open_session(const struct perf_opts *o, size_t buf_len, unsigned access,
                        const struct perf_task_conf *confs, size_t n)
{
	memset(&st, 0, sizeof(st));
	st.p.test_id = (uint8_t)test_id_of(o->test);
	st.p.poll = (uint8_t)o->poll;
	st.p.inflight = o->inflight;
	st.p.size = o->size;
	st.p.iters = o->iters;
	st.p.reserved = (uint16_t)o->duration; /* -D seconds (bandwidth tests) */
	int rc = perf_session_open(o, &st.p, buf_len, access, confs, n, &st.s);
	if (rc == 0 && o->server == NULL && st.p.test_id != (uint8_t)test_id_of(o->test)) {
		fprintf(stderr, "rdmx-perf: the client runs a different test\n");
		rc = RDMX_E_INVAL;
	}
	return rc;
}

static int finish(const struct perf_opts *o, int rc)
{
	if (o->server == NULL && rc == 0 && o->passive) { /* the device alone serves */
		uint64_t guard = perf_now_ns();
		while (!st.s.disconnected && perf_now_ns() - guard < 600000000000ull) {
			nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
			rdmx_pe_progress(st.s.pe);
		}
	} else if (o->server == NULL && rc == 0) { /* server: wait for the client to hang up */
		/* where the device alone serves, the wait blocks (as perftest's
		 * server sleeps in a socket read): a busy-polling server would
		 * take the CPU the device's own work (rxe: the kernel) needs */
		enum rdmx_poll_mode mode = st.serves ? RDMX_POLL_BLOCK : o->poll;
		rc = perf_drive_until(&st.s, mode, &st.s.disconnected) == RDMX_E_DISCONNECTED ? 0
		                                                                              : rc;
	}
	perf_session_close(&st.s);
	if (rc)
		fprintf(stderr, "rdmx-perf: %s failed: %s\n", o->test, rdmx_strerror(rc));
	return rc ? 1 : 0;
}

/* ---- send_lat: ping-pong of sends, half round trip ---- */
static int run_send_lat(const struct perf_opts *o)
{
	const struct perf_task_conf confs[] = {
	    {RDMX_TASK_RECEIVE, on_recv, on_err, 4},
	    {RDMX_TASK_SEND, on_done, on_err, RING},
	};
	int rc = open_session(o, 2 * (o->size ? o->size : 1), RDMX_ACCESS_LOCAL_WRITE, confs, 2);
	if (rc)
		return finish(o, rc);
	uint64_t size = st.p.size, iters = st.p.iters, total = iters + warmup_of(iters);
	struct rdmx_buf src = {st.s.mr, st.s.buf, size, NULL};
	struct rdmx_buf dst = {st.s.mr, (char *)st.s.buf + size, size, NULL};
	double *lat = calloc(iters ? iters : 1, sizeof(double));
	for (int i = 0; rc == 0 && i < 4; i++) {
		struct rdmx_task *t;
		rc = rdmx_task_receive_alloc(st.s.ctx, &dst, NULL, &t);
		if (rc == 0)
			rc = rdmx_task_submit(t);
	}
	for (int i = 0; rc == 0 && i < RING; i++)
		rc = rdmx_task_send_alloc(st.s.ctx, st.s.conn, &src, NULL, &st.ring[i]);
	bool client = o->server != NULL;
	struct lat_clock clk = {lat, 2000.0, total - iters, 0, 0, 0};
	for (uint64_t i = 0; rc == 0 && i < total; i++) {
		if (!client)
			rc = wait_count(&st.recvs, i + 1, o->poll);
		if (rc)
			break;
		lat_tick(&clk, i);
		rc = rdmx_task_submit(ring_next(i));
		if (rc == 0 && client)
			rc = wait_count(&st.recvs, i + 1, o->poll);
	}
	/* the client's last sample ends with the last reply */
	if (rc == 0 && client)
		lat_last(&clk, iters);
	if (rc == 0)
		rc = wait_count(&st.done, total, o->poll);
	/* the client hangs up once it has the last reply: that reply arrived */
	if (!client && rc == RDMX_E_DISCONNECTED && st.recvs >= total)
		rc = 0;
	if (rc == 0) {
		uint64_t n = client ? iters : iters - 1;
		double secs = lat_finish(&clk, n);

		perf_report_as(o, size, lat, n, iters, iters * size, secs);
	}
	free(lat);
	return finish(o, rc);
}

/* ---- write_lat: each side polls the last byte of its landing zone ---- */
static int run_write_lat(const struct perf_opts *o)
{
	const struct perf_task_conf confs[] = {{RDMX_TASK_WRITE, on_done, on_err, RING}};
	uint64_t sz = o->size ? o->size : 1;
	int rc =
	    open_session(o, 2 * sz, RDMX_ACCESS_LOCAL_WRITE | RDMX_ACCESS_REMOTE_WRITE, confs, 1);
	if (rc)
		return finish(o, rc);
	uint64_t size = st.p.size ? st.p.size : 1, iters = st.p.iters,
	         total = iters + warmup_of(iters);
	volatile uint8_t *src_last = (uint8_t *)st.s.buf + size - 1;
	volatile uint8_t *land_last = (uint8_t *)st.s.buf + 2 * size - 1;
	struct rdmx_buf src = {st.s.mr, st.s.buf, size, NULL};
	struct rdmx_rbuf dst = {st.s.remote, size, size};
	double *lat = calloc(iters ? iters : 1, sizeof(double));
	for (int i = 0; rc == 0 && i < RING; i++)
		rc = rdmx_task_write_alloc(st.s.ctx, st.s.conn, &src, &dst, NULL, &st.ring[i]);
	bool client = o->server != NULL;
	struct lat_clock clk = {lat, 2000.0, total - iters, 0, 0, 0};
	for (uint64_t i = 0; rc == 0 && i < total; i++) {
		uint8_t mark = (uint8_t)(i % 255 + 1);
		if (!client)
			rc = spin_byte(land_last, mark);
		if (rc)
			break;
		lat_tick(&clk, i);
		*src_last = mark;
		rc = rdmx_task_submit(ring_next(i));
		/* perftest polls the send CQ for this write's completion, then
		 * the buffer: so do we */
		if (rc == 0)
			rc = wait_count(&st.done, i + 1, RDMX_POLL_BUSY);
		if (rc == 0 && client)
			rc = spin_byte(land_last, mark);
	}
	if (rc == 0 && client)
		lat_last(&clk, iters);
	if (rc == 0)
		rc = wait_count(&st.done, total, RDMX_POLL_BUSY);
	if (!client && rc == RDMX_E_DISCONNECTED && st.done + RING >= total)
		rc = 0;
	if (rc == 0) {
		uint64_t n = client ? iters : iters - 1;
		double secs = lat_finish(&clk, n);

		perf_report_as(o, size, lat, n, iters, iters * size, secs);
	}
	free(lat);
	return finish(o, rc);
}

/* ---- read_lat / atomic_lat: one operation at a time, the target is passive ---- */
static int run_one_sided_lat(const struct perf_opts *o, bool atomic)
{
	const struct perf_task_conf confs[] = {
	    {atomic ? RDMX_TASK_ATOMIC_FADD : RDMX_TASK_READ, on_done, on_err, 1}};
	uint64_t sz = atomic ? 8 : (o->size ? o->size : 1);
	unsigned access = RDMX_ACCESS_LOCAL_WRITE |
	                  (atomic ? RDMX_ACCESS_REMOTE_ATOMIC : RDMX_ACCESS_REMOTE_READ);
	int rc = open_session(o, sz < 8 ? 8 : sz, access, confs, 1);
	st.serves = o->server == NULL;
	if (rc == 0 && st.serves)
		printf("rdmx-perf: %s server: the device served the one-sided operations; "
		       "the client prints the results\n",
		       o->test);
	if (rc || o->server == NULL)
		return finish(o, rc);
	uint64_t size = atomic ? 8 : (st.p.size ? st.p.size : 1), iters = st.p.iters,
	         total = iters + warmup_of(iters);
	struct rdmx_buf local = {st.s.mr, st.s.buf, size, NULL};
	struct rdmx_rbuf remote = {st.s.remote, 0, size};
	struct rdmx_task *t;
	double *lat = calloc(iters ? iters : 1, sizeof(double));
	rc = atomic ? rdmx_task_atomic_fadd_alloc(st.s.ctx, st.s.conn, &remote, &local, 1, NULL, &t)
	            : rdmx_task_read_alloc(st.s.ctx, st.s.conn, &remote, &local, NULL, &t);
	struct lat_clock clk = {lat, 1000.0, total - iters, 0, 0, 0};
	for (uint64_t i = 0; rc == 0 && i < total; i++) {
		lat_tick(&clk, i);
		rc = rdmx_task_submit(t);
		if (rc == 0)
			rc = wait_count(&st.done, i + 1, o->poll);
	}
	if (rc == 0)
		lat_last(&clk, iters);
	if (rc == 0)
		perf_report(o, lat, iters, iters, iters * size, lat_finish(&clk, iters));
	free(lat);
	return finish(o, rc);
}

static int run_read_lat(const struct perf_opts *o)
{
	return run_one_sided_lat(o, false);
}

static int run_atomic_lat(const struct perf_opts *o)
{
	return run_one_sided_lat(o, true);
}

/* ---- bandwidth: a window of `inflight` operations ---- */

/* The receiver of send_bw: every message (or, with -D, every message until
 * the client hangs up), timed from the first to the last. */
static int bw_receiver(const struct perf_opts *o, struct rdmx_buf *local, uint32_t rq,
                       uint64_t size, uint64_t iters)
{
	int rc = 0;

	st.time_recvs = true;
	st.recv_target = st.p.reserved ? UINT64_MAX : iters;
	for (uint32_t i = 0; rc == 0 && i < rq; i++) {
		struct rdmx_task *t;
		rc = rdmx_task_receive_alloc(st.s.ctx, local, NULL, &t);
		if (rc == 0)
			rc = rdmx_task_submit(t);
	}
	if (rc == 0 && st.p.reserved) { /* timed: until the client hangs up */
		rc = wait_count(&st.recvs, UINT64_MAX, o->poll);
		if (rc == RDMX_E_DISCONNECTED)
			rc = 0;
		iters = st.recvs;
	} else if (rc == 0) {
		rc = wait_count(&st.recvs, iters, o->poll);
	}
	if (rc == 0)
		perf_report_as(o, size, NULL, 0, iters, iters * size,
		               (double)(st.last_recv_ns - st.first_recv_ns) / 1e9);
	return rc;
}

/* -D: resubmit until the time is up, with the meter; then let the window
 * drain. The operations completed are the iterations. */
static int bw_timed(const struct perf_opts *o, uint64_t size, uint64_t *iters)
{
	uint64_t end = perf_now_ns() + (uint64_t)o->duration * 1000000000ull;
	struct rdmx_progress meter;
	int rc = 0;

	rdmx_progress_init_timed(&meter, o->test, (uint64_t)o->duration * 1000000000ull, o->quiet);
	while (rc == 0 && perf_now_ns() < end) {
		if (st.s.failed || st.s.disconnected)
			rc = RDMX_E_DISCONNECTED;
		else if (perf_drive(&st.s, o->poll) < 0)
			rc = RDMX_E_PROVIDER;
		rdmx_progress_update(&meter, st.done * size);
	}
	st.to_submit = 0;
	if (rc == 0)
		rc = wait_count(&st.done, st.submitted, o->poll);
	rdmx_progress_finish(&meter, st.done * size);
	*iters = st.done;
	return rc;
}

static int run_bw(const struct perf_opts *o, enum rdmx_task_type type)
{
	uint32_t window = o->inflight ? o->inflight : 64;
	uint32_t rq = window * 2 > 512 ? 512 : window * 2;
	bool atomic = type == RDMX_TASK_ATOMIC_FADD;
	const struct perf_task_conf confs[] = {
	    {type, on_bw_done, on_err, window},
	    {RDMX_TASK_RECEIVE, on_recv, on_err, rq},
	};
	unsigned access = RDMX_ACCESS_LOCAL_WRITE | RDMX_ACCESS_REMOTE_WRITE |
	                  RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_ATOMIC;
	uint64_t buf = atomic ? 8 : (o->size ? o->size : 1);
	int rc = open_session(o, buf < 8 ? 8 : buf, access, confs, type == RDMX_TASK_SEND ? 2 : 1);
	if (rc)
		return finish(o, rc);
	uint64_t size = atomic ? 8 : (st.p.size ? st.p.size : 1), iters = st.p.iters;
	struct rdmx_buf local = {st.s.mr, st.s.buf, size, NULL};
	struct rdmx_rbuf remote = {st.s.remote, 0, size};
	if (o->server == NULL) {
		if (type == RDMX_TASK_SEND) /* the receiver side of send_bw */
			rc = bw_receiver(o, &local, rq, size, iters);
		else
			st.serves = true;
		if (st.serves)
			printf("rdmx-perf: %s server: the device served the one-sided operations; "
			       "the client prints the results\n",
			       o->test);
		return finish(o, rc);
	}
	window = st.p.inflight ? st.p.inflight : window;
	if (!o->duration && window > iters)
		window = (uint32_t)(iters ? iters : 1);
	st.to_submit = o->duration ? UINT64_MAX : iters - window;
	st.submitted = window;
	struct rdmx_task **tasks = calloc(window, sizeof(*tasks));
	if (!tasks)
		rc = RDMX_E_NOMEM;
	for (uint32_t i = 0; rc == 0 && i < window; i++) {
		if (type == RDMX_TASK_SEND)
			rc = rdmx_task_send_alloc(st.s.ctx, st.s.conn, &local, NULL, &tasks[i]);
		else if (type == RDMX_TASK_WRITE)
			rc = rdmx_task_write_alloc(st.s.ctx, st.s.conn, &local, &remote, NULL,
			                           &tasks[i]);
		else if (atomic)
			rc = rdmx_task_atomic_fadd_alloc(st.s.ctx, st.s.conn, &remote, &local, 1,
			                                 NULL, &tasks[i]);
		else
			rc = rdmx_task_read_alloc(st.s.ctx, st.s.conn, &remote, &local, NULL,
			                          &tasks[i]);
	}
	uint64_t start = perf_now_ns();
	for (uint32_t i = 0; rc == 0 && i < window; i++)
		rc = rdmx_task_submit(tasks[i]);
	if (rc == 0 && o->duration)
		rc = bw_timed(o, size, &iters);
	else if (rc == 0)
		rc = wait_count(&st.done, iters, o->poll);
	double secs = (double)(perf_now_ns() - start) / 1e9;
	if (rc == 0)
		perf_report_as(o, size, NULL, 0, iters, iters * size, secs);
	free(tasks);
	return finish(o, rc);
}

static int run_atomic_bw(const struct perf_opts *o)
{
	return run_bw(o, RDMX_TASK_ATOMIC_FADD);
}

static int run_send_bw(const struct perf_opts *o)
{
	return run_bw(o, RDMX_TASK_SEND);
}

static int run_write_bw(const struct perf_opts *o)
{
	return run_bw(o, RDMX_TASK_WRITE);
}

static int run_read_bw(const struct perf_opts *o)
{
	return run_bw(o, RDMX_TASK_READ);
}

const struct perf_test perf_engine_tests[] = {
    {"send_lat", run_send_lat},     {"write_lat", run_write_lat}, {"read_lat", run_read_lat},
    {"atomic_lat", run_atomic_lat}, {"send_bw", run_send_bw},     {"write_bw", run_write_bw},
    {"read_bw", run_read_bw},       {"atomic_bw", run_atomic_bw},
};
const size_t perf_engine_tests_count = sizeof(perf_engine_tests) / sizeof(perf_engine_tests[0]);
