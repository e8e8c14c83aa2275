/* tcp provider notification (ctx_arm / ctx_disarm / ctx_signal) and the
 * libev adapter on top of it: a wake-up that finds nothing to do must not
 * repeat (no busy loop in an embedding event loop), and deferred work of the
 * adapter runs even while other watchers are always pending. No network
 * traffic: one started context on the tcp device. */
#include <criterion/criterion.h>
#include <ev.h>
#include <poll.h>
#include <sys/epoll.h>
#include <stdatomic.h>
#include <unistd.h>

#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/ev.h>
#include <rdmx/pe.h>

#include "providers/tcp/tcp.h"

struct one {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
};

static void one_open(struct one *o)
{
	cr_assert_eq(rdmx_dev_open("tcp", &o->dev), 0);
	cr_assert_eq(rdmx_pe_create(&o->pe), 0);
	cr_assert_eq(rdmx_ctx_create(o->dev, o->pe, &o->ctx), 0);
	cr_assert_eq(rdmx_ctx_start(o->ctx), 0);
}

static void one_close(struct one *o)
{
	cr_assert_eq(rdmx_ctx_stop(o->ctx), 0);
	cr_assert_eq(rdmx_ctx_destroy(&o->ctx), 0);
	cr_assert_eq(rdmx_pe_destroy(&o->pe), 0);
	cr_assert_eq(rdmx_dev_close(&o->dev), 0);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

/* The NIC thread's signal is an exchange of the flag then a write of the
 * eventfd; the application's disarm may run between the two. Replayed here
 * step by step: the write that lands after the disarm must still be read by
 * the next disarm, or the notification fd stays readable for ever with
 * nothing to deliver (the livelock of a server under load). */
Test(tcp_notify, signal_racing_disarm_is_consumed)
{
	struct one o;
	struct tcp_ctx *tc;
	uint64_t one = 1;
	int fd;

	one_open(&o);
	tc = TCP_CTX(o.ctx);
	cr_assert_eq(rdmx_pe_get_fd(o.pe, &fd), 0);
	cr_assert_eq(rdmx_pe_request_notification(o.pe), 0);
	cr_assert_not(readable(fd), "an idle context is ready");
	/* signaller: the flag first ... */
	cr_assert_not(atomic_exchange(&tc->efd_set, true));
	/* ... the application wakes (for another reason) and disarms ... */
	cr_assert_eq(rdmx_pe_clear_notification(o.pe), 0);
	/* ... then the signaller's write lands */
	cr_assert_eq(write(tc->efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	/* the application's next round: progress, arm, wake-up, disarm */
	cr_assert_eq(rdmx_pe_progress(o.pe), 0);
	cr_assert_eq(rdmx_pe_request_notification(o.pe), 0);
	cr_assert(readable(fd), "the late signal did not wake the engine");
	cr_assert_eq(rdmx_pe_clear_notification(o.pe), 0);
	cr_assert_eq(rdmx_pe_progress(o.pe), 0);
	cr_assert_eq(rdmx_pe_request_notification(o.pe), 0);
	cr_assert_not(readable(fd), "the wake-up repeats with nothing to deliver");
	cr_assert_eq(rdmx_pe_clear_notification(o.pe), 0);
	one_close(&o);
}

/* An application sleeping in notification mode on an idle context costs
 * the soft NIC no wake-ups (it used to look every grace period: a tenth of
 * a core per idle server). Counted in NIC loop passes over a bounded idle
 * period. */
Test(tcp_notify, armed_idle_context_parks_the_nic)
{
	struct pollfd p;
	struct tcp_dev *td;
	uint64_t before;
	struct one o;
	int fd;

	one_open(&o);
	td = TCP_DEV(o.dev);
	cr_assert_eq(rdmx_pe_get_fd(o.pe, &fd), 0);
	cr_assert_eq(rdmx_pe_request_notification(o.pe), 0);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 50), 0); /* past the grace period: ARMED */
	before = atomic_load(&td->nic_rounds);
	cr_assert_eq(poll(&p, 1, 300), 0);
	cr_assert_lt(atomic_load(&td->nic_rounds) - before, 20,
	             "the NIC looped %llu times over an idle armed context",
	             (unsigned long long)(atomic_load(&td->nic_rounds) - before));
	cr_assert_eq(rdmx_pe_clear_notification(o.pe), 0);
	one_close(&o);
}

/* An application that sleeps on its fd between calls is woken by its
 * sockets alone: within the patience (ten grace periods since it last
 * progressed) the NIC keeps its socket set out of its own epoll, or every
 * message would wake both threads. Past the patience the set goes in, so an
 * idle armed context still costs no wake-ups. The grace is stretched to
 * 50 ms so that the loaded test host cannot overrun the windows. */
Test(tcp_notify, armed_sleeper_keeps_the_nic_off_its_sockets)
{
	struct pollfd p;
	struct tcp_dev *td;
	struct tcp_ctx *tc;
	struct one o;
	bool in_set;
	int fd;

	cr_assert_eq(rdmx_dev_open("tcp", &o.dev), 0);
	td = TCP_DEV(o.dev);
	pthread_mutex_lock(&td->lock);
	td->grace_ns = 50ull * 1000000u;
	pthread_mutex_unlock(&td->lock);
	cr_assert_eq(rdmx_pe_create(&o.pe), 0);
	cr_assert_eq(rdmx_ctx_create(o.dev, o.pe, &o.ctx), 0);
	cr_assert_eq(rdmx_ctx_start(o.ctx), 0);
	tc = TCP_CTX(o.ctx);
	cr_assert_eq(rdmx_pe_get_fd(o.pe, &fd), 0);
	cr_assert_geq(rdmx_pe_progress(o.pe), 0); /* the progress counter moves */
	cr_assert_eq(rdmx_pe_request_notification(o.pe), 0);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 150), 0); /* three grace periods: ARMED */
	pthread_mutex_lock(&td->lock);
	in_set = tc->nic_in_set;
	pthread_mutex_unlock(&td->lock);
	cr_assert_not(in_set,
	              "the NIC watches the sockets of an application sleeping between calls");
	cr_assert_eq(poll(&p, 1, 700), 0); /* past the patience (500 ms) */
	pthread_mutex_lock(&td->lock);
	in_set = tc->nic_in_set;
	pthread_mutex_unlock(&td->lock);
	cr_assert(in_set, "past its patience the NIC does not watch an idle armed context");
	cr_assert_eq(rdmx_pe_clear_notification(o.pe), 0);
	one_close(&o);
}

/* An application inside a call (its context lock held) while one of its
 * sockets stays readable: the NIC must count it as progressing and look
 * once per grace period, not re-watch the readable socket set at once and
 * spin on a lock it cannot take (what stole a read_bw responder's core: one
 * sendmsg of a bulk answer holds the lock for a millisecond). The readable
 * socket is a pipe in the context's epoll set; no NIC serve can run while
 * the lock is held. Counted in NIC loop passes over a bounded period: a
 * slow machine only lowers the count (the spin made tens of thousands). */
Test(tcp_notify, held_context_lock_does_not_spin_the_nic)
{
	struct tcp_ep none = {.kind = 0};
	struct epoll_event ev = {.events = EPOLLIN};
	struct tcp_dev *td;
	struct tcp_ctx *tc;
	uint64_t before, rounds;
	struct pollfd p;
	struct one o;
	int fds[2];
	char c = 'x';

	one_open(&o);
	td = TCP_DEV(o.dev);
	tc = TCP_CTX(o.ctx);
	cr_assert_eq(pipe(fds), 0);
	cr_assert_eq(write(fds[1], &c, 1), 1);
	ev.data.ptr = &none;
	pthread_mutex_lock(&tc->lock);
	cr_assert_eq(epoll_ctl(tc->epfd, EPOLL_CTL_ADD, fds[0], &ev), 0);
	atomic_store(&tc->has_dirty, true); /* work for the NIC, which it cannot do */
	p = (struct pollfd){.fd = -1};
	before = atomic_load(&td->nic_rounds);
	cr_assert_eq(poll(&p, 1, 200), 0); /* 1000 grace periods */
	rounds = atomic_load(&td->nic_rounds) - before;
	cr_assert_eq(epoll_ctl(tc->epfd, EPOLL_CTL_DEL, fds[0], NULL), 0);
	atomic_store(&tc->has_dirty, false);
	pthread_mutex_unlock(&tc->lock);
	cr_assert_leq(rounds, 2000, "the NIC looped %llu times in 200 ms over a held context",
	              (unsigned long long)rounds);
	close(fds[0]);
	close(fds[1]);
	one_close(&o);
}

/* An application that busy-polls: the NIC thread's looks at its context
 * space out (nic.c: the look period doubles while the counter moves, up to
 * TCP_BUSY_GRACES grace periods, below the patience so the NIC never parks
 * and gets kicked), instead of one per grace period: each look on the
 * application's core preempts it. 200 ms of polls: one look per grace period
 * would be 1000; the back-off makes about 125. Counted over a bounded period:
 * a slow machine only lowers the count. */
Test(tcp_notify, busy_context_spaces_out_the_nics_looks)
{
	struct tcp_dev *td;
	uint64_t before, rounds, end;
	struct one o;

	one_open(&o);
	td = TCP_DEV(o.dev);
	for (int i = 0; i < 1000; i++) /* the period's ramp */
		cr_assert_geq(rdmx_pe_progress(o.pe), 0);
	before = atomic_load(&td->nic_rounds);
	end = rdmx_pe_now_ns() + 200000000u;
	while (rdmx_pe_now_ns() < end)
		cr_assert_geq(rdmx_pe_progress(o.pe), 0);
	rounds = atomic_load(&td->nic_rounds) - before;
	cr_assert_leq(rounds, 400, "the NIC looked %llu times in 200 ms at a busy context",
	              (unsigned long long)rounds);
	one_close(&o);
}

/* ---- the libev adapter ---- */

struct loop_test {
	struct ev_loop *loop;
	struct rdmx_ev *ev;
	ev_timer stop;
	ev_io busy;
	int pipe[2];
	int busy_calls;
	int works;
	int reschedules;
	struct rdmx_ev_work *work;
};

static void on_stop(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* Always readable and never read: a watcher that is pending on every
 * iteration, as a busy socket is. */
static void on_busy(struct ev_loop *loop, ev_io *w, int revents)
{
	struct loop_test *t = w->data;

	(void)loop;
	(void)revents;
	t->busy_calls++;
	if (t->works && t->busy_calls > t->works + 1000)
		ev_break(loop, EVBREAK_ALL); /* enough seen */
}

static void on_work(struct rdmx_ev *ev, void *arg)
{
	struct loop_test *t = arg;

	(void)ev;
	t->works++;
	if (t->reschedules > 0) {
		t->reschedules--;
		cr_assert_eq(rdmx_ev_work_schedule(t->work), 0);
	}
}

/* The same racy wake-up under the adapter: the loop must go back to sleep.
 * Counted in loop iterations over a bounded idle period (a slow machine
 * only lowers the count). */
Test(tcp_notify, adapter_sleeps_after_a_late_signal)
{
	struct loop_test t = {0};
	struct rdmx_ev_stats st;
	struct tcp_ctx *tc;
	uint64_t one = 1;
	struct one o;

	one_open(&o);
	tc = TCP_CTX(o.ctx);
	t.loop = ev_loop_new(EVFLAG_AUTO);
	cr_assert_not_null(t.loop);
	cr_assert_eq(rdmx_ev_attach(t.loop, o.pe, &t.ev), 0);
	ev_run(t.loop, EVRUN_NOWAIT); /* armed */
	cr_assert_not(atomic_exchange(&tc->efd_set, true));
	cr_assert_eq(rdmx_pe_clear_notification(o.pe), 0); /* as on_io does */
	cr_assert_eq(write(tc->efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	ev_timer_init(&t.stop, on_stop, 0.3, 0.0);
	ev_timer_start(t.loop, &t.stop);
	ev_run(t.loop, 0);
	cr_assert_eq(rdmx_ev_get_stats(t.ev, &st), 0);
	cr_assert_lt(st.iterations, 50, "the loop spun: %llu iterations in an idle period",
	             st.iterations);
	cr_assert_eq(rdmx_ev_detach(&t.ev), 0);
	ev_loop_destroy(t.loop);
	one_close(&o);
}

/* An idle engine after start: the loop sleeps. */
Test(tcp_notify, adapter_idle_engine_sleeps)
{
	struct loop_test t = {0};
	struct rdmx_ev_stats st;
	struct one o;

	one_open(&o);
	t.loop = ev_loop_new(EVFLAG_AUTO);
	cr_assert_eq(rdmx_ev_attach(t.loop, o.pe, &t.ev), 0);
	ev_timer_init(&t.stop, on_stop, 0.3, 0.0);
	ev_timer_start(t.loop, &t.stop);
	ev_run(t.loop, 0);
	cr_assert_eq(rdmx_ev_get_stats(t.ev, &st), 0);
	cr_assert_lt(st.iterations, 10, "%llu iterations", st.iterations);
	cr_assert_lt(st.wakeups, 5, "%llu wake-ups", st.wakeups);
	cr_assert_eq(rdmx_ev_detach(&t.ev), 0);
	ev_loop_destroy(t.loop);
	one_close(&o);
}

/* Deferred work runs although another watcher is pending on every
 * iteration (an ev_idle there would never run), once per schedule, and a
 * work that schedules itself runs again. */
Test(tcp_notify, deferred_work_is_not_starved)
{
	struct loop_test t = {0};
	struct one o;
	char c = 'x';

	one_open(&o);
	t.loop = ev_loop_new(EVFLAG_AUTO);
	cr_assert_eq(rdmx_ev_attach(t.loop, o.pe, &t.ev), 0);
	cr_assert_eq(pipe(t.pipe), 0);
	cr_assert_eq(write(t.pipe[1], &c, 1), 1);
	ev_io_init(&t.busy, on_busy, t.pipe[0], EV_READ);
	t.busy.data = &t;
	ev_io_start(t.loop, &t.busy);
	cr_assert_eq(rdmx_ev_work_create(t.ev, on_work, &t, &t.work), 0);
	t.reschedules = 2;
	cr_assert_eq(rdmx_ev_work_schedule(t.work), 0);
	cr_assert_eq(rdmx_ev_work_schedule(t.work), 0); /* still one run */
	ev_run(t.loop, 0); /* on_busy breaks once the works had their chance */
	cr_assert_eq(t.works, 3, "deferred work ran %d times, want 3", t.works);
	cr_assert_eq(rdmx_ev_work_destroy(&t.work), 0);
	cr_assert_null(t.work);
	cr_assert_eq(rdmx_ev_work_destroy(&t.work), 0);
	ev_io_stop(t.loop, &t.busy);
	close(t.pipe[0]);
	close(t.pipe[1]);
	cr_assert_eq(rdmx_ev_detach(&t.ev), 0);
	ev_loop_destroy(t.loop);
	one_close(&o);
}

static void on_work_detach(struct rdmx_ev *ev, void *arg)
{
	struct loop_test *t = arg;

	(void)ev;
	t->works++;
	cr_assert_eq(rdmx_ev_work_destroy(&t->work), 0);
	cr_assert_eq(rdmx_ev_detach(&t->ev), 0);
	ev_break(t->loop, EVBREAK_ALL);
}

/* A work may destroy itself and detach the adapter; a work outliving its
 * adapter refuses to be scheduled. */
Test(tcp_notify, deferred_work_may_detach)
{
	struct loop_test t = {0};
	struct rdmx_ev_work *orphan = NULL;
	struct one o;

	one_open(&o);
	t.loop = ev_loop_new(EVFLAG_AUTO);
	cr_assert_eq(rdmx_ev_attach(t.loop, o.pe, &t.ev), 0);
	cr_assert_eq(rdmx_ev_work_create(t.ev, on_work, &t, &orphan), 0);
	cr_assert_eq(rdmx_ev_work_create(t.ev, on_work_detach, &t, &t.work), 0);
	cr_assert_eq(rdmx_ev_work_schedule(t.work), 0);
	ev_run(t.loop, 0);
	cr_assert_eq(t.works, 1);
	cr_assert_null(t.ev);
	cr_assert_eq(rdmx_ev_work_schedule(orphan), RDMX_E_BAD_STATE);
	cr_assert_eq(rdmx_ev_work_destroy(&orphan), 0);
	cr_assert_eq(rdmx_ev_work_schedule(NULL), RDMX_E_INVAL);
	ev_loop_destroy(t.loop);
	one_close(&o);
}
