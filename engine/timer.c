/* Timers of the progress engine (include/rdmx/pe.h): an indexed binary
 * min-heap per engine, so that a call completing before its deadline stops
 * its timer in O(log n) instead of leaving a stale entry behind. The
 * engine runs them from rdmx_pe_progress, on its own thread: no thread, no
 * signal, no timerfd. */
#include <stdlib.h>

#include "internal.h"

uint64_t rdmx_pe_now_ns(void)
{
	return rdmx__now_ns();
}

void rdmx__timers_init(struct rdmx__timers *ts)
{
	ts->heap = NULL;
	ts->len = 0;
	ts->cap = 0;
}

void rdmx__timers_fini(struct rdmx__timers *ts)
{
	for (uint32_t i = 0; i < ts->len; i++)
		ts->heap[i]->pos = 0;
	free(ts->heap);
	rdmx__timers_init(ts);
}

static inline void heap_set(struct rdmx__timers *ts, uint32_t i, struct rdmx_pe_timer *t)
{
	ts->heap[i] = t;
	t->pos = i + 1;
}

static void sift_up(struct rdmx__timers *ts, uint32_t i)
{
	struct rdmx_pe_timer *t = ts->heap[i];

	while (i > 0) {
		uint32_t p = (i - 1) / 2;

		if (ts->heap[p]->when_ns <= t->when_ns)
			break;
		heap_set(ts, i, ts->heap[p]);
		i = p;
	}
	heap_set(ts, i, t);
}

static void sift_down(struct rdmx__timers *ts, uint32_t i)
{
	struct rdmx_pe_timer *t = ts->heap[i];

	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		uint64_t best = t->when_ns;

		if (l < ts->len && ts->heap[l]->when_ns < best) {
			m = l;
			best = ts->heap[l]->when_ns;
		}
		if (r < ts->len && ts->heap[r]->when_ns < best)
			m = r;
		if (m == i)
			break;
		heap_set(ts, i, ts->heap[m]);
		i = m;
	}
	heap_set(ts, i, t);
}

static int heap_add(struct rdmx__timers *ts, struct rdmx_pe_timer *t, uint64_t when_ns)
{
	if (t->pos) {
		uint64_t old = t->when_ns;

		t->when_ns = when_ns;
		if (when_ns < old)
			sift_up(ts, t->pos - 1);
		else
			sift_down(ts, t->pos - 1);
		return 0;
	}
	if (ts->len == ts->cap) {
		uint32_t ncap = ts->cap ? ts->cap * 2 : 64;
		struct rdmx_pe_timer **nh = realloc(ts->heap, (size_t)ncap * sizeof(*nh));

		if (!nh)
			return RDMX_E_NOMEM;
		ts->heap = nh;
		ts->cap = ncap;
	}
	t->when_ns = when_ns;
	heap_set(ts, ts->len++, t);
	sift_up(ts, ts->len - 1);
	return 0;
}

static void heap_remove(struct rdmx__timers *ts, struct rdmx_pe_timer *t)
{
	uint32_t i;
	struct rdmx_pe_timer *last;

	if (!t->pos)
		return;
	i = t->pos - 1;
	t->pos = 0;
	last = ts->heap[--ts->len];
	if (i == ts->len)
		return;
	heap_set(ts, i, last);
	if (i > 0 && ts->heap[(i - 1) / 2]->when_ns > last->when_ns)
		sift_up(ts, i);
	else
		sift_down(ts, i);
}

int rdmx__timers_run(struct rdmx__timers *ts, uint64_t now_ns)
{
	int n = 0;

	while (ts->len && ts->heap[0]->when_ns <= now_ns) {
		struct rdmx_pe_timer *t = ts->heap[0];

		heap_remove(ts, t);
		n++;
		t->cb(t, t->arg);
	}
	return n;
}

void rdmx_pe_timer_init(struct rdmx_pe *pe, struct rdmx_pe_timer *timer, rdmx_pe_timer_cb cb,
                        void *arg)
{
	if (!timer)
		return;
	timer->pe = pe;
	timer->cb = cb;
	timer->arg = arg;
	timer->when_ns = 0;
	timer->pos = 0;
}

int rdmx_pe_timer_start(struct rdmx_pe_timer *timer, uint64_t when_ns)
{
	if (!timer || !timer->pe || !timer->cb)
		return RDMX_E_INVAL;
	return heap_add(rdmx__pe_timers(timer->pe), timer, when_ns);
}

void rdmx_pe_timer_stop(struct rdmx_pe_timer *timer)
{
	if (!timer || !timer->pos)
		return;
	heap_remove(rdmx__pe_timers(timer->pe), timer);
}

bool rdmx_pe_timer_is_active(const struct rdmx_pe_timer *timer)
{
	return timer && timer->pos != 0;
}
