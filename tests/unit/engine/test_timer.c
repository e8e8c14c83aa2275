/* Timers of the progress engine: heap order, stop and restart, restart from
 * the callback, rdmx_pe_wait and rdmx_pe_next_timeout_ms with no context
 * and no traffic, destroy with timers started. Due times in the past make
 * the order tests independent of the clock. */
#include <stdlib.h>

#include "helpers.h"
#include "internal.h"

static uint64_t fired[64];
static int nfired;

static void fire(struct rdmx_pe_timer *t, void *arg)
{
	(void)arg;
	fired[nfired++] = t->when_ns;
}

Test(pe_timer, order_stop_restart)
{
	struct rdmx_pe *pe = NULL;
	struct rdmx_pe_timer t[50];

	assert_ok(rdmx_pe_create(&pe));
	srand(9);
	for (int i = 0; i < 50; i++) {
		t[i].pos = 0;
		rdmx_pe_timer_init(pe, &t[i], fire, NULL);
		assert_ok(rdmx_pe_timer_start(&t[i], 1000 + (uint64_t)(rand() % 1000)));
	}
	for (int i = 0; i < 50; i += 3)
		rdmx_pe_timer_stop(&t[i]);
	assert_ok(rdmx_pe_timer_start(&t[1], 5));                                   /* earlier */
	assert_ok(rdmx_pe_timer_start(&t[2], rdmx_pe_now_ns() + 3600000000000ull)); /* later */
	cr_assert(rdmx_pe_timer_is_active(&t[1]));
	cr_assert_eq(rdmx_pe_next_timeout_ms(pe), 0, "a timer in the past is due now");
	nfired = 0;
	cr_assert_eq(rdmx_pe_progress(pe), 50 - 17 - 1, "progress counts the timers it ran");
	for (int i = 1; i < nfired; i++)
		cr_assert(fired[i - 1] <= fired[i], "out of order");
	cr_assert(rdmx_pe_timer_is_active(&t[2]));
	cr_assert(!rdmx_pe_timer_is_active(&t[1]));
	int ms = rdmx_pe_next_timeout_ms(pe);
	cr_assert(ms > 3500000 && ms <= 3600000, "next timeout %d ms", ms);
	cr_assert_eq(rdmx_pe_progress(pe), 0);
	/* destroy stops the timer left; its callback does not run */
	assert_ok(rdmx_pe_destroy(&pe));
	cr_assert(!rdmx_pe_timer_is_active(&t[2]));
	cr_assert_eq(nfired, 50 - 17 - 1);
}

Test(pe_timer, invalid_and_idle)
{
	struct rdmx_pe *pe = NULL;
	struct rdmx_pe_timer t = {0};

	cr_assert_eq(rdmx_pe_next_timeout_ms(NULL), -1);
	assert_rc(rdmx_pe_timer_start(NULL, 0), RDMX_E_INVAL);
	assert_rc(rdmx_pe_timer_start(&t, 0), RDMX_E_INVAL); /* never initialised */
	rdmx_pe_timer_stop(&t);                              /* no-op */
	rdmx_pe_timer_stop(NULL);
	cr_assert(!rdmx_pe_timer_is_active(NULL));
	assert_ok(rdmx_pe_create(&pe));
	cr_assert_eq(rdmx_pe_next_timeout_ms(pe), -1, "no timer: -1");
	rdmx_pe_timer_init(pe, &t, fire, NULL);
	cr_assert_eq(rdmx_pe_next_timeout_ms(pe), -1, "initialised, not started: -1");
	assert_ok(rdmx_pe_destroy(&pe));
}

struct ticker {
	struct rdmx_pe_timer t;
	int runs;
	int want;
};

static void tick(struct rdmx_pe_timer *t, void *arg)
{
	struct ticker *k = arg;

	cr_assert(!rdmx_pe_timer_is_active(t), "stopped before its callback");
	cr_assert_eq(rdmx_pe_progress(t->pe), RDMX_E_BAD_STATE, "no re-entrance");
	if (++k->runs < k->want)
		assert_ok(rdmx_pe_timer_start(t, rdmx_pe_now_ns() + 2000000u));
}

/* Only rdmx_pe_wait drives, with no limit, no context and no traffic: it
 * must wake for the timer (it would sleep forever otherwise), in every mode. */
Test(pe_timer, wait_wakes_for_timers, .timeout = 60)
{
	static const enum rdmx_poll_mode modes[] = {RDMX_POLL_BLOCK, RDMX_POLL_HYBRID,
	                                            RDMX_POLL_BUSY};

	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct rdmx_pe *pe = NULL;
		struct ticker k = {.want = 3};

		assert_ok(rdmx_pe_create(&pe));
		assert_ok(rdmx_pe_set_poll_mode(pe, modes[m], 10));
		rdmx_pe_timer_init(pe, &k.t, tick, &k);
		assert_ok(rdmx_pe_timer_start(&k.t, rdmx_pe_now_ns() + 5000000u));
		int ms = rdmx_pe_next_timeout_ms(pe);
		cr_assert(ms >= 0 && ms <= 5, "next timeout %d ms", ms);
		while (k.runs < k.want) {
			int n = rdmx_pe_wait(pe, -1);

			cr_assert(n >= 0, "wait: %s", rdmx_err_name(n));
		}
		cr_assert_eq(k.runs, 3);
		cr_assert_eq(rdmx_pe_next_timeout_ms(pe), -1);
		assert_ok(rdmx_pe_destroy(&pe));
	}
}

struct pair {
	struct rdmx_pe_timer a, b;
	int a_runs, b_runs;
};

static void stop_other(struct rdmx_pe_timer *t, void *arg)
{
	struct pair *p = arg;

	(void)t;
	p->a_runs++;
	rdmx_pe_timer_stop(&p->b); /* due too, but stopped: it must not run */
}

/* a timer callback that counts its runs in the int at `arg` */
static void count_run(struct rdmx_pe_timer *t, void *arg)
{
	(void)t;
	(*(int *)arg)++;
}

Test(pe_timer, callback_stops_another_due_one)
{
	struct rdmx_pe *pe = NULL;
	struct pair p = {0};

	assert_ok(rdmx_pe_create(&pe));
	rdmx_pe_timer_init(pe, &p.a, stop_other, &p);
	rdmx_pe_timer_init(pe, &p.b, count_run, &p.b_runs);
	assert_ok(rdmx_pe_timer_start(&p.a, 1));
	assert_ok(rdmx_pe_timer_start(&p.b, 2));
	cr_assert_eq(rdmx_pe_progress(pe), 1);
	cr_assert_eq(p.a_runs, 1);
	cr_assert_eq(p.b_runs, 0);
	assert_ok(rdmx_pe_destroy(&pe));
}

/* engine/pe.c runs due timers with the coarse clock first (a timer started
 * at a past time) and reads the full clock only for one due within a tick:
 * a timer due at the full clock's reading made just before the progress
 * runs in it, one started from a callback at a past time runs in the same
 * progress, and one due in an hour does not run. */
struct chain {
	struct rdmx_pe_timer a, b, far;
	int a_runs, b_runs, far_runs;
};

static void start_b(struct rdmx_pe_timer *t, void *arg)
{
	struct chain *c = arg;

	(void)t;
	c->a_runs++;
	cr_assert_eq(rdmx_pe_timer_start(&c->b, 1), 0);
}

Test(pe_timer, due_now_and_past_run_in_the_same_progress)
{
	struct rdmx_pe *pe = NULL;
	struct chain c = {0};

	assert_ok(rdmx_pe_create(&pe));
	rdmx_pe_timer_init(pe, &c.a, start_b, &c);
	rdmx_pe_timer_init(pe, &c.b, count_run, &c.b_runs);
	rdmx_pe_timer_init(pe, &c.far, count_run, &c.far_runs);
	assert_ok(rdmx_pe_timer_start(&c.far, rdmx_pe_now_ns() + 3600000000000ull));
	assert_ok(rdmx_pe_timer_start(&c.a, rdmx_pe_now_ns())); /* due now: the full clock */
	cr_assert_eq(rdmx_pe_progress(pe), 2, "a, then b started by a at a past time");
	cr_assert_eq(c.a_runs, 1);
	cr_assert_eq(c.b_runs, 1);
	cr_assert_eq(c.far_runs, 0);
	cr_assert(rdmx_pe_timer_is_active(&c.far));
	cr_assert_eq(rdmx_pe_progress(pe), 0);
	assert_ok(rdmx_pe_destroy(&pe));
}

/* rdmx_pe_get_pass: one number per progress pass, the same for every
 * callback of a pass (rpc/batch.c tells a pass's first answer by it). */
static void note_pass(struct rdmx_pe_timer *t, void *arg)
{
	uint64_t *seen = arg;

	cr_assert_eq(rdmx_pe_get_pass(t->pe, seen), 0);
}

Test(pe_timer, pass_number)
{
	struct rdmx_pe *pe = NULL;
	struct rdmx_pe_timer a, b;
	uint64_t pass = 99, in_a = 0, in_b = 0;

	cr_assert_eq(rdmx_pe_get_pass(NULL, &pass), RDMX_E_INVAL);
	assert_ok(rdmx_pe_create(&pe));
	cr_assert_eq(rdmx_pe_get_pass(pe, NULL), RDMX_E_INVAL);
	assert_ok(rdmx_pe_get_pass(pe, &pass));
	cr_assert_eq(pass, 0, "no pass before the first progress");
	rdmx_pe_timer_init(pe, &a, note_pass, &in_a);
	rdmx_pe_timer_init(pe, &b, note_pass, &in_b);
	assert_ok(rdmx_pe_timer_start(&a, 1));
	assert_ok(rdmx_pe_timer_start(&b, 1));
	cr_assert_eq(rdmx_pe_progress(pe), 2);
	cr_assert_eq(in_a, 1, "the first pass is number 1");
	cr_assert_eq(in_b, in_a, "two callbacks of one pass read one number");
	assert_ok(rdmx_pe_timer_start(&a, 1));
	cr_assert_eq(rdmx_pe_progress(pe), 1);
	cr_assert_eq(in_a, 2, "the next pass reads the next number");
	cr_assert_eq(rdmx_pe_wait(pe, 0), 0);
	assert_ok(rdmx_pe_get_pass(pe, &pass));
	cr_assert_geq(pass, 3, "rdmx_pe_wait runs passes too");
	assert_ok(rdmx_pe_destroy(&pe));
}

/* common/clock.h: the coarse clock is never ahead of the full one, and
 * rdmx__due answers from it alone for a far due time (*now untouched), from
 * the full clock otherwise (never true early). */
Test(pe_clock, coarse_and_due)
{
	uint64_t coarse = rdmx__now_coarse_ns(), full = rdmx__now_ns(), now = 7;

	cr_assert(coarse <= full, "coarse %llu ahead of full %llu", (unsigned long long)coarse,
	          (unsigned long long)full);
	cr_assert(!rdmx__due(full + 3600000000000ull, &now));
	cr_assert_eq(now, 7, "a far due time needs no full reading");
	cr_assert(rdmx__due(1, &now));
	cr_assert(now >= full, "the full reading is handed back");
	cr_assert(rdmx__due(full, &now), "a due time already read is due");
	/* well past the slack: the coarse clock alone (a margin of 1000 slacks,
	 * 10 s, so that no stall of a loaded machine between the two readings
	 * makes it due) */
	now = 7;
	cr_assert(!rdmx__due(rdmx__now_ns() + 1000ull * RDMX__COARSE_SLACK_NS, &now));
	cr_assert_eq(now, 7);
}
