/* rdmx_ev: the libev adapter (see include/rdmx/ev.h).
 *
 * Where the work happens: in the ev_prepare watcher, which libev runs on
 * every loop iteration before it polls, whatever else is pending. The idle
 * watcher only keeps the loop from blocking while the engine has more to do
 * or deferred work is scheduled; it is never the only place where work runs,
 * because libev does not run idle watchers while any other event is pending
 * (a busy socket elsewhere in the loop would starve it). */
#include <ev.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/ev.h>
#include <rdmx/log.h>
#include <rdmx/pe.h>
#include <rdmx/status.h>

#include "common/log.h"

struct rdmx_ev_work {
	struct rdmx_ev *ev; /* NULL once the adapter is detached */
	rdmx_ev_work_cb cb;
	void *arg;
	bool scheduled;
	struct rdmx_ev_work *prev, *next; /* every work of the adapter */
};

struct rdmx_ev {
	struct ev_loop *loop;
	struct rdmx_pe *pe;
	ev_io io;
	ev_prepare prepare;
	ev_idle idle;
	ev_timer timer;
	unsigned budget;
	bool armed;
	bool in_works; /* a work callback is on the stack */
	bool detached; /* ... and it detached the adapter: free after it */
	struct rdmx_ev_work *works;
	unsigned scheduled; /* works with scheduled set */
	struct rdmx_ev_stats stats;
};

/* Progresses until nothing is ready or the budget is spent; true when it
 * stopped with work possibly left. */
static bool drain(struct rdmx_ev *e)
{
	for (unsigned i = 0; i < e->budget; i++) {
		int n;

		e->stats.progress_calls++;
		n = rdmx_pe_progress(e->pe);
		if (n < 0) {
			RDMX_ERR("ev: progress failed: %s", rdmx_err_name(n));
			return false;
		}
		if (n == 0)
			return false;
	}
	return true;
}

static void disarm(struct rdmx_ev *e)
{
	if (e->armed) {
		rdmx_pe_clear_notification(e->pe);
		e->armed = false;
	}
}

/* Runs the works scheduled when the pass began, at most that many runs (a
 * work scheduled again from its callback runs again at the latest in the
 * next iteration). 1 when any ran, 0 when none, -1 when a callback detached
 * the adapter (it is freed: touch nothing). */
static int run_works(struct rdmx_ev *e)
{
	unsigned left = e->scheduled;
	int ran = 0;

	for (struct rdmx_ev_work *w = e->works; w && left;) {
		struct rdmx_ev_work *next = w->next;

		if (w->scheduled) {
			w->scheduled = false;
			e->scheduled--;
			left--;
			e->stats.works_run++;
			e->in_works = true;
			w->cb(e, w->arg);
			e->in_works = false;
			if (e->detached) {
				free(e);
				return -1;
			}
			ran = 1;
			/* the callback may have destroyed w or others: walk again */
			next = e->works;
		}
		w = next;
	}
	return ran;
}

static void keep_awake(struct rdmx_ev *e, bool on)
{
	if (on && !ev_is_active(&e->idle))
		ev_idle_start(e->loop, &e->idle);
	else if (!on && ev_is_active(&e->idle))
		ev_idle_stop(e->loop, &e->idle);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rdmx_ev *e = w->data;

	(void)loop;
	(void)revents;
	e->stats.wakeups++;
	disarm(e);
	if (drain(e))
		keep_awake(e, true); /* more to do: do not sleep */
}

/* Only runs when nothing else is pending; the prepare watcher does the same
 * work on every iteration anyway. */
static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct rdmx_ev *e = w->data;

	(void)loop;
	(void)revents;
	if (!e->armed)
		drain(e);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rdmx_ev *e = w->data;

	(void)loop;
	(void)revents;
	/* the engine's progress runs its due timers; the prepare watcher of
	 * the next iteration re-arms the fd and the timer */
	e->stats.progress_calls++;
	if (rdmx_pe_progress(e->pe) > 0)
		disarm(e);
}

static void set_timer(struct rdmx_ev *e)
{
	int next = rdmx_pe_next_timeout_ms(e->pe);

	ev_timer_stop(e->loop, &e->timer);
	if (next >= 0) {
		ev_now_update(e->loop); /* the timer counts from the loop's time */
		ev_timer_set(&e->timer, (double)next / 1000.0 + 0.0001, 0.0);
		ev_timer_start(e->loop, &e->timer);
	}
}

/* Every iteration, before the loop polls: deferred work, then the engine
 * until nothing is ready; then either arm the engine's fd and let the loop
 * sleep, or keep the loop awake when work is left. */
static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct rdmx_ev *e = w->data;
	bool more = false;
	int rc;

	(void)loop;
	(void)revents;
	e->stats.iterations++;
	rc = run_works(e);
	if (rc < 0)
		return; /* detached by a work */
	if (rc)
		disarm(e); /* the work may have queued engine work of its own */
	if (e->armed) {
		/* another watcher woke the loop; its callbacks may have queued
		 * completions that do not make the fd readable (a post that
		 * failed at once): one look, a few loads when nothing is there */
		e->stats.progress_calls++;
		if (rdmx_pe_progress(e->pe) > 0)
			disarm(e);
	}
	if (!e->armed) {
		more = drain(e);
		if (!more && !e->scheduled) {
			rc = rdmx_pe_request_notification(e->pe);
			if (rc) {
				RDMX_ERR("ev: arming the engine failed: %s", rdmx_err_name(rc));
				more = true; /* fall back to polling */
			} else {
				e->armed = true;
				/* an event that landed before arming would not wake the fd */
				e->stats.progress_calls++;
				if (rdmx_pe_progress(e->pe) > 0) {
					disarm(e);
					more = true;
				}
			}
		}
	}
	keep_awake(e, more || e->scheduled);
	set_timer(e);
}

int rdmx_ev_attach(struct ev_loop *loop, struct rdmx_pe *pe, struct rdmx_ev **ev)
{
	struct rdmx_ev *e;
	int fd = -1, rc;

	if (!loop || !pe || !ev)
		return RDMX_E_INVAL;
	rc = rdmx_pe_get_fd(pe, &fd);
	if (rc)
		return rc;
	e = calloc(1, sizeof(*e));
	if (!e)
		return RDMX_E_NOMEM;
	e->loop = loop;
	e->pe = pe;
	e->budget = 64;
	ev_io_init(&e->io, on_io, fd, EV_READ);
	ev_prepare_init(&e->prepare, on_prepare);
	ev_idle_init(&e->idle, on_idle);
	ev_timer_init(&e->timer, on_timer, 0.0, 0.0);
	e->io.data = e->prepare.data = e->idle.data = e->timer.data = e;
	ev_io_start(loop, &e->io);
	ev_prepare_start(loop, &e->prepare);
	*ev = e;
	return 0;
}

int rdmx_ev_detach(struct rdmx_ev **ev)
{
	struct rdmx_ev *e;

	if (!ev || !*ev)
		return 0;
	e = *ev;
	ev_io_stop(e->loop, &e->io);
	ev_prepare_stop(e->loop, &e->prepare);
	ev_idle_stop(e->loop, &e->idle);
	ev_timer_stop(e->loop, &e->timer);
	disarm(e);
	for (struct rdmx_ev_work *w = e->works; w; w = w->next) {
		w->ev = NULL; /* the owner still destroys it */
		w->scheduled = false;
	}
	e->works = NULL;
	e->scheduled = 0;
	if (e->in_works)
		e->detached = true; /* run_works frees it once the callback returns */
	else
		free(e);
	*ev = NULL;
	return 0;
}

int rdmx_ev_set_budget(struct rdmx_ev *ev, unsigned rounds)
{
	if (!ev || !rounds)
		return RDMX_E_INVAL;
	ev->budget = rounds;
	return 0;
}

int rdmx_ev_get_stats(const struct rdmx_ev *ev, struct rdmx_ev_stats *stats)
{
	if (!ev || !stats)
		return RDMX_E_INVAL;
	*stats = ev->stats;
	return 0;
}

/* ---- deferred work ---- */

int rdmx_ev_work_create(struct rdmx_ev *ev, rdmx_ev_work_cb cb, void *arg,
                        struct rdmx_ev_work **work)
{
	struct rdmx_ev_work *w;

	if (!ev || !cb || !work)
		return RDMX_E_INVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return RDMX_E_NOMEM;
	w->ev = ev;
	w->cb = cb;
	w->arg = arg;
	w->next = ev->works;
	if (ev->works)
		ev->works->prev = w;
	ev->works = w;
	*work = w;
	return 0;
}

int rdmx_ev_work_schedule(struct rdmx_ev_work *work)
{
	struct rdmx_ev *e;

	if (!work)
		return RDMX_E_INVAL;
	e = work->ev;
	if (!e)
		return RDMX_E_BAD_STATE;
	if (!work->scheduled) {
		work->scheduled = true;
		e->scheduled++;
		/* a callback of another watcher may run after this iteration's
		 * prepare: do not let the loop sleep before the work ran */
		keep_awake(e, true);
	}
	return 0;
}

int rdmx_ev_work_destroy(struct rdmx_ev_work **work)
{
	struct rdmx_ev_work *w;
	struct rdmx_ev *e;

	if (!work || !*work)
		return 0;
	w = *work;
	e = w->ev;
	if (e) {
		if (w->scheduled)
			e->scheduled--;
		if (w->prev)
			w->prev->next = w->next;
		else
			e->works = w->next;
		if (w->next)
			w->next->prev = w->prev;
	}
	free(w);
	*work = NULL;
	return 0;
}
