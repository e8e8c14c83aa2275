/* rdmx_ev: the libev adapter (see include/rdmx/ev.h). */
#include <ev.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/channel.h>
#include <rdmx/ev.h>
#include <rdmx/log.h>
#include <rdmx/pe.h>
#include <rdmx/status.h>

#define EV_LOG(level, ...) rdmx__log(RDMX_LOG_##level, __FILE__, __LINE__, __func__, __VA_ARGS__)

struct rdmx_ev {
	struct ev_loop *loop;
	struct rdmx_pe *pe;
	ev_io io;
	ev_prepare prepare;
	ev_idle idle;
	ev_timer timer;
	struct rdmx_chan_host *hosts[RDMX_EV_MAX_HOSTS];
	unsigned nhosts;
	unsigned budget;
	bool armed;
};

static void run_timers(struct rdmx_ev *e)
{
	for (unsigned i = 0; i < e->nhosts; i++)
		rdmx_chan_host_run_timers(e->hosts[i]);
}

/* Progresses until nothing is ready or the budget is spent; true when it
 * stopped with work possibly left. */
static bool drain(struct rdmx_ev *e)
{
	for (unsigned i = 0; i < e->budget; i++) {
		int n = rdmx_pe_progress(e->pe);

		if (n < 0) {
			EV_LOG(ERROR, "ev: progress failed: %s", rdmx_err_name(n));
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

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rdmx_ev *e = w->data;

	(void)revents;
	disarm(e);
	if (drain(e))
		ev_idle_start(loop, &e->idle); /* more to do: do not sleep */
	run_timers(e);
}

static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct rdmx_ev *e = w->data;

	(void)revents;
	if (!drain(e))
		ev_idle_stop(loop, w);
	run_timers(e);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rdmx_ev *e = w->data;

	(void)loop;
	(void)revents;
	run_timers(e);
}

/* Before the loop sleeps: arm the engine's fd and the nearest deadline. */
static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct rdmx_ev *e = w->data;
	int next = -1, rc;

	(void)revents;
	if (ev_is_active(&e->idle))
		return; /* not going to sleep */
	if (!e->armed) {
		if (drain(e)) {
			ev_idle_start(loop, &e->idle);
			return;
		}
		rc = rdmx_pe_request_notification(e->pe);
		if (rc) {
			EV_LOG(ERROR, "ev: arming the engine failed: %s", rdmx_err_name(rc));
			ev_idle_start(loop, &e->idle); /* fall back to polling */
			return;
		}
		e->armed = true;
		/* an event that landed before arming would not wake the fd */
		if (rdmx_pe_progress(e->pe) > 0) {
			disarm(e);
			ev_idle_start(loop, &e->idle);
			return;
		}
	}
	run_timers(e);
	for (unsigned i = 0; i < e->nhosts; i++) {
		int t = rdmx_chan_host_next_timer_ms(e->hosts[i]);

		if (t >= 0 && (next < 0 || t < next))
			next = t;
	}
	ev_timer_stop(loop, &e->timer);
	if (next >= 0) {
		ev_timer_set(&e->timer, (double)next / 1000.0 + 0.0001, 0.0);
		ev_timer_start(loop, &e->timer);
	}
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
	free(e);
	*ev = NULL;
	return 0;
}

int rdmx_ev_add_host(struct rdmx_ev *ev, struct rdmx_chan_host *host)
{
	if (!ev || !host || rdmx_chan_host_get_pe(host) != ev->pe)
		return RDMX_E_INVAL;
	for (unsigned i = 0; i < ev->nhosts; i++)
		if (ev->hosts[i] == host)
			return RDMX_E_EXISTS;
	if (ev->nhosts >= RDMX_EV_MAX_HOSTS)
		return RDMX_E_FULL;
	ev->hosts[ev->nhosts++] = host;
	return 0;
}

int rdmx_ev_remove_host(struct rdmx_ev *ev, struct rdmx_chan_host *host)
{
	if (!ev || !host)
		return RDMX_E_INVAL;
	for (unsigned i = 0; i < ev->nhosts; i++) {
		if (ev->hosts[i] == host) {
			ev->hosts[i] = ev->hosts[--ev->nhosts];
			return 0;
		}
	}
	return RDMX_E_NOT_FOUND;
}

int rdmx_ev_set_budget(struct rdmx_ev *ev, unsigned rounds)
{
	if (!ev || !rounds)
		return RDMX_E_INVAL;
	ev->budget = rounds;
	return 0;
}
