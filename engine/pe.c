/* Progress engine: drives the contexts attached to it.
 *
 * rdmx_pe_progress walks the attached contexts, lets each provider deliver
 * what is ready (ops->ctx_poll) and then the engine's own deferred
 * completions. It makes no system call of its own, so polling an idle engine
 * costs a few loads per context (plus whatever the provider's poll does).
 *
 * Timers (engine/timer.c) run at the end of every rdmx_pe_progress; the
 * blocking wait never sleeps past the nearest one.
 *
 * Notification: one epoll set holds every context's provider fd and an
 * eventfd of the engine itself, which stands for engine-level completions
 * (tasks aborted at submit on a connection in error). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "provider.h"

#define PE_POLL_BUDGET 64u
#define PE_DEFAULT_SPIN_US 50u

struct rdmx_pe {
	int epfd;
	int evfd;
	struct rdmx_ctx *ctxs; /* attached contexts, through ctx->next_in_pe */
	unsigned num_ctxs;     /* attached (running) */
	unsigned holders;      /* created on this pe, running or not */
	bool armed;            /* request_notification called, not yet cleared */
	bool signaled;         /* evfd written since the last clear (progress thread only) */
	bool in_progress;      /* guards against progress from a callback */
	uint64_t passes;       /* progress passes begun (rdmx_pe_get_pass) */
	enum rdmx_poll_mode mode;
	uint32_t spin_us;
	/* the only attached context's fd when it is an epoll set, else -1:
	 * block() sleeps on it directly (update_solo) */
	int solo_fd;
	struct rdmx__timers timers;
};

struct rdmx__timers *rdmx__pe_timers(struct rdmx_pe *pe)
{
	return &pe->timers;
}

int rdmx_pe_get_pass(const struct rdmx_pe *pe, uint64_t *pass)
{
	if (!pe || !pass)
		return RDMX_E_INVAL;
	*pass = pe->passes;
	return 0;
}

int rdmx_pe_create(struct rdmx_pe **pe)
{
	struct epoll_event ev;
	struct rdmx_pe *p;
	int rc;

	if (!pe)
		return RDMX_E_INVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return RDMX_E_NOMEM;
	p->mode = RDMX_POLL_HYBRID;
	p->spin_us = PE_DEFAULT_SPIN_US;
	p->solo_fd = -1;
	rdmx__timers_init(&p->timers);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0) {
		RDMX_ERR("epoll_create1 failed: %s", strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto free_pe;
	}
	p->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->evfd < 0) {
		RDMX_ERR("eventfd failed: %s", strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto close_epoll;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = NULL; /* NULL marks the engine's own eventfd */
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->evfd, &ev)) {
		RDMX_ERR("epoll_ctl add eventfd failed: %s", strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto close_eventfd;
	}
	*pe = p;
	return 0;

close_eventfd:
	close(p->evfd);
close_epoll:
	close(p->epfd);
free_pe:
	free(p);
	return rc;
}

int rdmx_pe_destroy(struct rdmx_pe **pe)
{
	if (!pe || !*pe)
		return 0;
	if ((*pe)->holders || (*pe)->num_ctxs) {
		RDMX_DBG("progress engine still has %u contexts", (*pe)->holders);
		return RDMX_E_BAD_STATE;
	}
	rdmx__timers_fini(&(*pe)->timers);
	close((*pe)->evfd);
	close((*pe)->epfd);
	free(*pe);
	*pe = NULL;
	return 0;
}

void rdmx__pe_hold(struct rdmx_pe *pe)
{
	pe->holders++;
}

void rdmx__pe_release(struct rdmx_pe *pe)
{
	pe->holders--;
}

/* With one context whose fd is an epoll set (the tcp provider's sockets and
 * eventfd), block() waits on that set itself instead of on ours, which holds
 * it and our eventfd: a message then wakes the sleeper through one epoll
 * level instead of two, and the wake-up scans no nested ready list. Nothing
 * is lost: only this thread writes our eventfd (rdmx__pe_signal), never
 * while it sleeps in block(), and the provider's set is level-triggered as
 * the nesting requires anyway. The probe: an epoll set answers ENOENT when
 * asked to drop an fd it does not hold, any other fd EINVAL. */
static void update_solo(struct rdmx_pe *pe)
{
	int fd;

	pe->solo_fd = -1;
	if (pe->num_ctxs != 1)
		return;
	fd = pe->ctxs->dev->ops->ctx_get_fd(pe->ctxs);
	if (fd >= 0 && epoll_ctl(fd, EPOLL_CTL_DEL, pe->evfd, NULL) && errno == ENOENT)
		pe->solo_fd = fd;
}

int rdmx__pe_attach(struct rdmx_pe *pe, struct rdmx_ctx *ctx)
{
	struct epoll_event ev;
	int fd = ctx->dev->ops->ctx_get_fd(ctx);

	if (fd >= 0) {
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN;
		ev.data.ptr = ctx;
		if (epoll_ctl(pe->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			RDMX_ERR("epoll_ctl add fd %d failed: %s", fd, strerror(errno));
			return RDMX_E_PROVIDER;
		}
	}
	ctx->next_in_pe = pe->ctxs;
	pe->ctxs = ctx;
	pe->num_ctxs++;
	update_solo(pe);
	return 0;
}

void rdmx__pe_detach(struct rdmx_pe *pe, struct rdmx_ctx *ctx)
{
	int fd = ctx->dev->ops->ctx_get_fd(ctx);

	if (fd >= 0 && epoll_ctl(pe->epfd, EPOLL_CTL_DEL, fd, NULL) && errno != EBADF &&
	    errno != ENOENT)
		RDMX_WARN("epoll_ctl del fd %d failed: %s", fd, strerror(errno));
	for (struct rdmx_ctx **pp = &pe->ctxs; *pp; pp = &(*pp)->next_in_pe) {
		if (*pp == ctx) {
			*pp = ctx->next_in_pe;
			pe->num_ctxs--;
			break;
		}
	}
	ctx->next_in_pe = NULL;
	update_solo(pe);
}

void rdmx__pe_signal(struct rdmx_pe *pe)
{
	uint64_t one = 1;

	if (!pe || !pe->armed || pe->signaled)
		return;
	if (write(pe->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		RDMX_WARN("eventfd write failed: %s", strerror(errno));
	pe->signaled = true;
}

static int progress_ctx(struct rdmx_ctx *ctx)
{
	int n, done = 0;

	ctx->in_poll++;
	n = ctx->dev->ops->ctx_poll(ctx, PE_POLL_BUDGET);
	ctx->in_poll--;
	if (n < 0) {
		RDMX_DBG("ctx_poll failed: %s", rdmx_err_name(n));
		return n;
	}
	done += n;
	if (ctx->deferred_head) {
		ctx->in_poll++;
		done += rdmx__ctx_deliver_deferred(ctx, false);
		ctx->in_poll--;
	}
	if (ctx->dead)
		rdmx__ctx_reap_conns(ctx);
	return done;
}

/* Runs the due timers with as few clock-source reads as can tell them:
 * the coarse clock (common/clock.h: never ahead) runs those surely due (a
 * timer started at a past time: answer batches), and rules out the far
 * ones (keep-alives); the full clock is read only for a timer due within a
 * tick of now. Never runs a timer early. */
static int run_timers(struct rdmx_pe *pe)
{
	uint64_t coarse = rdmx__now_coarse_ns(), now;
	int n = 0;

	if (rdmx__timers_next(&pe->timers) <= coarse)
		n = rdmx__timers_run(&pe->timers, coarse);
	if (!pe->timers.len)
		return n;
	if (rdmx__due_after(rdmx__timers_next(&pe->timers), coarse, &now))
		n += rdmx__timers_run(&pe->timers, now);
	return n;
}

int rdmx_pe_progress(struct rdmx_pe *pe)
{
	int total = 0, err = 0;

	if (!pe)
		return RDMX_E_INVAL;
	if (pe->in_progress)
		return RDMX_E_BAD_STATE;
	pe->in_progress = true;
	pe->passes++;
	/* read `next` after the callbacks ran: they may stop other contexts */
	for (struct rdmx_ctx *ctx = pe->ctxs; ctx; ctx = ctx->next_in_pe) {
		int n = progress_ctx(ctx);

		if (n < 0)
			err = n;
		else
			total += n;
	}
	if (pe->timers.len)
		total += run_timers(pe);
	pe->in_progress = false;
	return total ? total : err;
}

/* Milliseconds (rounded up) from `now` to the nearest timer, -1 for none. */
static int timer_ms(const struct rdmx_pe *pe, uint64_t now)
{
	uint64_t next = rdmx__timers_next(&pe->timers);

	if (next == UINT64_MAX)
		return -1;
	if (next <= now)
		return 0;
	if (next - now > (uint64_t)INT32_MAX * 1000000u)
		return INT32_MAX;
	return (int)((next - now + 999999u) / 1000000u);
}

int rdmx_pe_next_timeout_ms(const struct rdmx_pe *pe)
{
	if (!pe || !pe->timers.len)
		return -1;
	return timer_ms(pe, rdmx_pe_now_ns());
}

int rdmx_pe_get_fd(struct rdmx_pe *pe, int *fd)
{
	if (!pe || !fd)
		return RDMX_E_INVAL;
	*fd = pe->epfd;
	return 0;
}

/* Arms every context; *ready when something is deliverable already (a
 * provider's ctx_arm answering 1, deferred completions, a dead context). */
static int arm_all(struct rdmx_pe *pe, bool *ready)
{
	int rc;

	*ready = false;
	for (struct rdmx_ctx *ctx = pe->ctxs; ctx; ctx = ctx->next_in_pe) {
		rc = ctx->dev->ops->ctx_arm(ctx);
		if (rc < 0)
			return rc;
		*ready = *ready || rc > 0 || rdmx__ctx_deferred_ready(ctx) || ctx->dead;
	}
	pe->armed = true;
	return 0;
}

int rdmx_pe_request_notification(struct rdmx_pe *pe)
{
	bool ready;
	int rc;

	if (!pe)
		return RDMX_E_INVAL;
	rc = arm_all(pe, &ready);
	if (rc)
		return rc;
	if (ready)
		rdmx__pe_signal(pe);
	return 0;
}

int rdmx_pe_clear_notification(struct rdmx_pe *pe)
{
	uint64_t v;
	int rc, err = 0;

	if (!pe)
		return RDMX_E_INVAL;
	for (struct rdmx_ctx *ctx = pe->ctxs; ctx; ctx = ctx->next_in_pe) {
		rc = ctx->dev->ops->ctx_disarm(ctx);
		if (rc)
			err = rc;
	}
	/* only the progress thread writes evfd, so an unsignaled one needs no read */
	if (pe->signaled && read(pe->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RDMX_WARN("eventfd read failed: %s", strerror(errno));
	pe->signaled = false;
	pe->armed = false;
	return err;
}

int rdmx_pe_set_poll_mode(struct rdmx_pe *pe, enum rdmx_poll_mode mode, uint32_t spin_us)
{
	if (!pe)
		return RDMX_E_INVAL;
	if (mode != RDMX_POLL_BUSY && mode != RDMX_POLL_BLOCK && mode != RDMX_POLL_HYBRID)
		return RDMX_E_INVAL;
	pe->mode = mode;
	pe->spin_us = spin_us;
	return 0;
}

int rdmx_pe_get_poll_mode(const struct rdmx_pe *pe, enum rdmx_poll_mode *mode, uint32_t *spin_us)
{
	if (!pe)
		return RDMX_E_INVAL;
	if (mode)
		*mode = pe->mode;
	if (spin_us)
		*spin_us = pe->spin_us;
	return 0;
}

/* Spins on progress until something ran or `until_ns` (0: forever) passed,
 * reading the coarse clock while the deadline is far (common/clock.h
 * rdmx__due). The pause between polls leaves a hyperthread sibling its
 * share; dropping it measured no faster (docs/BENCHMARKS.md). */
static int spin(struct rdmx_pe *pe, uint64_t until_ns)
{
	uint64_t now;

	for (;;) {
		int n = rdmx_pe_progress(pe);

		if (n != 0)
			return n;
		if (until_ns && rdmx__due(until_ns, &now))
			return 0;
		rdmx__cpu_relax();
	}
}

/* How long block() may sleep from `now`: up to the deadline (0: none) and
 * the nearest timer, in whole milliseconds rounded up; -1: forever. */
static int sleep_ms(const struct rdmx_pe *pe, uint64_t deadline_ns, uint64_t now)
{
	int ms = -1, tms;

	if (deadline_ns)
		ms = now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999u) / 1000000u);
	/* never sleep past the nearest timer: its progress runs it */
	tms = timer_ms(pe, now);
	if (tms >= 0 && (ms < 0 || tms < ms))
		ms = tms;
	return ms;
}

/* The start of a sleep of `ms` on an engine with one context, spent in a
 * read of its only connection when the provider can (provider.h
 * ctx_wait_read): 1 something came, 0 nothing came in the read's time, -1
 * not tried. */
static int wait_read(struct rdmx_pe *pe, int ms)
{
	struct rdmx_ctx *ctx = pe->ctxs;

	if (pe->num_ctxs != 1 || !ctx->dev->ops->ctx_wait_read ||
	    (ms >= 0 && ms < RDMX__WAIT_READ_MAX_MS))
		return -1;
	return ctx->dev->ops->ctx_wait_read(ctx) > 0 ? 1 : 0;
}

/* Sleeps on the fd until something ran or `deadline_ns` (0: forever) passed.
 *
 * One system call per wake-up: arming is exact (provider.h: after ctx_arm
 * the fd becomes readable for anything deliverable, what was already there
 * included, or ctx_arm says it is ready), so there is no progress pass
 * before sleeping (on the tcp provider it was a recv answering EAGAIN) and
 * no eventfd write when something is ready at arming: it is served at once. */
static int block(struct rdmx_pe *pe, uint64_t deadline_ns, uint64_t now0)
{
	struct epoll_event evs[8];

	/* now0: the caller's reading, used for the first sleep (only the arming
	 * came between: the timeouts round up to whole milliseconds anyway) */
	for (;; now0 = 0) {
		int n, rc, ms = -1;
		bool ready;

		rc = arm_all(pe, &ready);
		if (rc) {
			rdmx_pe_clear_notification(pe);
			return rc;
		}
		if (!ready) {
			ms = sleep_ms(pe, deadline_ns, now0 ? now0 : rdmx_pe_now_ns());
			rc = wait_read(pe, ms);
			if (rc == 0) /* the read took its time: what is left of the sleep */
				ms = sleep_ms(pe, deadline_ns, rdmx_pe_now_ns());
			ready = rc > 0;
		}
		if (!ready) {
			rc = epoll_wait(pe->solo_fd >= 0 ? pe->solo_fd : pe->epfd, evs, 8, ms);
			if (rc < 0 && errno != EINTR) {
				RDMX_ERR("epoll_wait failed: %s", strerror(errno));
				rdmx_pe_clear_notification(pe);
				return RDMX_E_PROVIDER;
			}
		}
		rc = rdmx_pe_clear_notification(pe);
		if (rc)
			return rc;
		n = rdmx_pe_progress(pe);
		if (n != 0)
			return n;
		if (deadline_ns && rdmx_pe_now_ns() >= deadline_ns)
			return 0;
	}
}

int rdmx_pe_wait(struct rdmx_pe *pe, int timeout_ms)
{
	uint64_t start, deadline = 0, spin_until;

	if (!pe || timeout_ms < -1)
		return RDMX_E_INVAL;
	if (pe->in_progress)
		return RDMX_E_BAD_STATE;
	start = rdmx_pe_now_ns();
	if (timeout_ms >= 0)
		deadline = start + (uint64_t)timeout_ms * 1000000u + 1; /* nonzero */
	switch (pe->mode) {
	case RDMX_POLL_BUSY:
		return spin(pe, deadline);
	case RDMX_POLL_BLOCK:
		return block(pe, deadline, start);
	case RDMX_POLL_HYBRID:
	default: {
		int n;

		spin_until = start + (uint64_t)pe->spin_us * 1000u + 1;
		if (deadline && deadline < spin_until)
			spin_until = deadline;
		n = spin(pe, spin_until);
		if (n != 0 || (deadline && rdmx_pe_now_ns() >= deadline))
			return n;
		return block(pe, deadline, 0);
	}
	}
}
