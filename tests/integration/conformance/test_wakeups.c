/* Wake-up paths of a target: one-sided operations complete whatever the
 * target application does (busy-polls, then stops; busy-polls, then arms
 * and never looks at its fd), and an application asleep on its notification
 * fd is woken once per message, with no wake-up that finds nothing to do.
 * On tcp these are the soft NIC's modes (engine/providers/tcp/nic.c): its
 * look period grows while the target busy-polls, and it must still notice
 * when the target stops. No timing: every wait is on a state, with the
 * fixture's failure guard. */
#include <poll.h>
#include <string.h>

#include "conformance.h"

TestSuite(wakeups, .timeout = 120);

static struct side A, B;

#define BUSY_READS 3000

/* B reads from A BUSY_READS times while both progress without pause: long
 * enough for the target's provider to see a busy application for many of
 * its looks (on tcp the NIC's look period grows to its longest). */
static void busy_phase(struct rdmx_conn *cb, struct region *ra, struct region *rb)
{
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	struct rdmx_rbuf src = rbuf(m, 0, 64);
	struct rdmx_buf dst = lbuf(rb, 0, 64);
	uint64_t deadline = now_ms() + GUARD_MS;
	struct tinfo ti = {0};
	struct rdmx_task *t;

	ASSERT_OK(rdmx_task_read_alloc(B.ctx, cb, &src, &dst, &ti, &t));
	for (int i = 0; i < BUSY_READS; i++) {
		memset(&ti, 0, sizeof(ti));
		ASSERT_OK(rdmx_task_submit(t));
		while (!TI_DONE(&ti)) {
			cr_assert(now_ms() < deadline, "busy phase: read %d never completed", i);
			cr_assert_geq(rdmx_pe_progress(A.pe), 0);
			cr_assert_geq(rdmx_pe_progress(B.pe), 0);
		}
		ASSERT_DONE_OK(&ti);
	}
	ASSERT_OK(rdmx_task_free(t));
}

/* The two one-sided tests' start: a connected pair, A's region open to
 * B for everything, B's local one, and the busy phase behind them. */
static void busy_pair_open(struct rdmx_conn **cb, struct region **ra, struct region **rb)
{
	struct rdmx_conn *ca;

	leak_begin();
	pair_open(&A, &B, 64);
	connect_pair(&A, &B, &ca, cb);
	*ra = region_new(&A, 4096, RDMX_ACCESS_ALL, 0);
	*rb = region_new(&B, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	busy_phase(*cb, *ra, *rb);
}

/* Write, read and (where supported) fetch-add on A's region, driven by B
 * alone; checks the bytes moved. */
static void one_sided_by_b_alone(struct rdmx_conn *cb, struct region *ra, struct region *rb,
                                 uint8_t seed)
{
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	struct rdmx_buf s = lbuf(rb, 1024, 1024), d = lbuf(rb, 2048, 1024), res = lbuf(rb, 4000, 8);
	struct rdmx_rbuf wr = rbuf(m, 0, 0), rd = rbuf(m, 2048, 1024), at = rbuf(m, 3072, 8);
	struct tinfo tw = {0}, tr = {0}, ta = {0};
	struct rdmx_task *tasks[3] = {NULL, NULL, NULL};
	uint64_t before = 0;

	pattern_fill(rb->mem + 1024, 1024, seed);
	pattern_fill(ra->mem + 2048, 1024, (uint8_t)(seed + 1));
	memcpy(&before, ra->mem + 3072, 8);
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &s, &wr, &tw, &tasks[0]));
	ASSERT_OK(rdmx_task_submit(tasks[0]));
	ASSERT_OK(rdmx_task_read_alloc(B.ctx, cb, &rd, &d, &tr, &tasks[1]));
	ASSERT_OK(rdmx_task_submit(tasks[1]));
	if (B.caps.atomics) {
		ASSERT_OK(rdmx_task_atomic_fadd_alloc(B.ctx, cb, &at, &res, 3, &ta, &tasks[2]));
		ASSERT_OK(rdmx_task_submit(tasks[2]));
	}
	DRIVE_UNTIL(&B, NULL, TI_DONE(&tw) && TI_DONE(&tr) && (!B.caps.atomics || TI_DONE(&ta)));
	ASSERT_DONE_OK(&tw);
	ASSERT_DONE_OK(&tr);
	cr_assert(pattern_check(ra->mem, 1024, seed));
	cr_assert(pattern_check(rb->mem + 2048, 1024, (uint8_t)(seed + 1)));
	if (B.caps.atomics) {
		uint64_t v;

		ASSERT_DONE_OK(&ta);
		memcpy(&v, ra->mem + 3072, 8);
		cr_assert_eq(v, before + 3);
	}
	for (int i = 0; i < 3; i++)
		ASSERT_OK(rdmx_task_free(tasks[i]));
}

/* A target that busy-polled for a long while and then stops progressing
 * still answers: its provider notices that it stopped. */
Test(wakeups, one_sided_after_target_stops_busy_polling)
{
	struct rdmx_conn *cb;
	struct region *ra, *rb;

	busy_pair_open(&cb, &ra, &rb);
	/* A stops here: only B progresses from now on */
	one_sided_by_b_alone(cb, ra, rb, 70);
	one_sided_by_b_alone(cb, ra, rb, 80);
	cr_assert_eq(A.completions, 0);
	pair_close(&A, &B);
	leak_end();
}

/* A target that busy-polled, then armed its notification and never looks
 * at its fd (its event loop is busy elsewhere) still answers. */
Test(wakeups, one_sided_target_armed_never_reacting)
{
	struct rdmx_conn *cb;
	struct region *ra, *rb;

	busy_pair_open(&cb, &ra, &rb);
	ASSERT_OK(rdmx_pe_request_notification(A.pe));
	one_sided_by_b_alone(cb, ra, rb, 90);
	one_sided_by_b_alone(cb, ra, rb, 100);
	ASSERT_OK(rdmx_pe_clear_notification(A.pe));
	cr_assert_eq(A.completions, 0);
	pair_close(&A, &B);
	leak_end();
}

#define SLEEPER_MESSAGES 50
#define SLEEPER_STRAY 3 /* wake-ups for frames of the connection set-up */

/* An application asleep on its notification fd is woken once per message:
 * every message wakes it, and a wake-up that delivers nothing (a busy loop
 * in any event loop that embeds the engine) does not happen, bar a few for
 * the connection's set-up frames still in flight. */
Test(wakeups, armed_sleeper_woken_once_per_message)
{
	struct rdmx_conn *ca, *cb;
	int fd = -1, wakes = 0, empty = 0;
	leak_begin();
	pair_open(&A, &B, 64);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 4096, 0, 0);
	struct rdmx_buf d = lbuf(ra, 0, 64), s = lbuf(rb, 0, 16);

	ASSERT_OK(rdmx_pe_get_fd(A.pe, &fd));
	cr_assert_geq(fd, 0);
	for (int i = 0; i < SLEEPER_MESSAGES; i++) {
		struct tinfo tr = {0}, ts = {0};
		struct rdmx_task *t, *rt;

		rt = post_recv(&A, &d, &tr);
		while (rdmx_pe_progress(A.pe) > 0)
			;
		ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &s, &ts, &t));
		ASSERT_OK(rdmx_task_submit(t));
		while (!TI_DONE(&tr)) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			int n;

			ASSERT_OK(rdmx_pe_request_notification(A.pe));
			/* one blocking wait: the message must wake it (the guard is
			 * the failure bound, not a timing check) */
			cr_assert_eq(poll(&p, 1, GUARD_MS), 1,
			             "message %d did not wake the sleeper", i);
			ASSERT_OK(rdmx_pe_clear_notification(A.pe));
			n = rdmx_pe_progress(A.pe);
			cr_assert_geq(n, 0);
			wakes++;
			if (n == 0)
				empty++;
		}
		ASSERT_DONE_OK(&tr);
		cr_assert_eq(tr.len, 16u);
		DRIVE_UNTIL(&A, &B, TI_DONE(&ts)); /* A's poll sends its held ack */
		ASSERT_DONE_OK(&ts);
		ASSERT_OK(rdmx_task_free(t));
		ASSERT_OK(rdmx_task_free(rt));
	}
	cr_assert_leq(empty, SLEEPER_STRAY, "%d of %d wake-ups delivered nothing", empty, wakes);
	cr_assert_leq(wakes, SLEEPER_MESSAGES + SLEEPER_STRAY, "%d wake-ups for %d messages", wakes,
	              SLEEPER_MESSAGES);
	pair_close(&A, &B);
	leak_end();
}

/* B sends `rounds` messages to `rx` over cb; rx's engine, in blocking mode,
 * must be woken by each one inside rdmx_pe_wait (the guard is the failure
 * bound: a wait that sleeps through the message answers 0 at its end). */
static void blocking_waits(struct side *rx, struct rdmx_conn *cb, struct region *rr,
                           struct region *rb, int rounds)
{
	struct rdmx_buf d = lbuf(rr, 0, 64), s = lbuf(rb, 0, 24);

	for (int i = 0; i < rounds; i++) {
		struct tinfo tr = {0}, ts = {0};
		struct rdmx_task *t, *rt;

		rt = post_recv(rx, &d, &tr);
		ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &s, &ts, &t));
		ASSERT_OK(rdmx_task_submit(t));
		while (!TI_DONE(&tr)) {
			int n = rdmx_pe_wait(rx->pe, GUARD_MS);

			cr_assert_gt(n, 0, "%s: message %d: the blocking wait answered %d",
			             rx->name, i, n);
		}
		ASSERT_DONE_OK(&tr);
		cr_assert_eq(tr.len, 24u);
		DRIVE_UNTIL(rx, &B, TI_DONE(&ts));
		ASSERT_DONE_OK(&ts);
		ASSERT_OK(rdmx_task_free(t));
		ASSERT_OK(rdmx_task_free(rt));
	}
}

/* rdmx_pe_wait sleeps on the one context's own fd when the engine drives
 * one context, on the engine's set when it drives several (engine/pe.c):
 * a message wakes it in both cases, on either context, and once a context
 * is gone the engine sleeps on what is left (no stale fd). */
Test(wakeups, blocking_wait_with_one_then_two_contexts)
{
	static struct side A2;
	struct rdmx_conn *a1, *b1, *a2, *b2;

	leak_begin();
	trio_open(&A, &A2, &B, 16);
	side_start(&A);
	side_start(&B);
	ASSERT_OK(rdmx_pe_set_poll_mode(A.pe, RDMX_POLL_BLOCK, 0));
	connect_pair(&A, &B, &a1, &b1);
	struct region *r1 = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *r2 = region_new(&A2, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 4096, 0, 0);
	pattern_fill(rb->mem, 4096, 7);
	blocking_waits(&A, b1, r1, rb, 8); /* one context on the engine */
	side_start(&A2);
	connect_pair(&A2, &B, &a2, &b2);
	blocking_waits(&A, b1, r1, rb, 8); /* two: a message to either wakes it */
	blocking_waits(&A2, b2, r2, rb, 8);
	ASSERT_OK(rdmx_ctx_stop(B.ctx));
	side_close(&A2);
	/* one context again: a wait with nothing to deliver ends at its
	 * timeout, not with an error from a closed fd */
	for (int i = 0; i < 3; i++)
		cr_assert_geq(rdmx_pe_wait(A.pe, 1), 0);
	side_close(&A);
	side_close(&B);
	leak_end();
}

/* The engine's only context stopped and destroyed: a blocking wait on the
 * engine ends at its timeout, it does not sleep on the context's old fd. */
Test(wakeups, blocking_wait_after_the_only_context_is_gone)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_conf(&A, 16);
	side_start(&A);
	ASSERT_OK(rdmx_pe_set_poll_mode(A.pe, RDMX_POLL_BLOCK, 0));
	cr_assert_geq(rdmx_pe_wait(A.pe, 1), 0);
	ASSERT_OK(rdmx_ctx_stop(A.ctx));
	ASSERT_OK(rdmx_ctx_destroy(&A.ctx));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(rdmx_pe_wait(A.pe, 1), 0);
	side_close(&A);
	leak_end();
}
