/* tcp provider: contexts.
 *
 * A context owns an epoll set of its sockets (epfd: what a poll serves and
 * what the soft NIC watches), an eventfd for completions the soft NIC
 * produces (efd) and the notification fd handed to the progress engine
 * (nfd: every socket of epfd with the same interest, plus efd; not epfd
 * nested, one level less for each wake-up to climb): a sleeping application
 * is woken by the kernel as soon as one of its sockets is readable, or when
 * the NIC queued something for it. The soft NIC is not on that path: while
 * the application sleeps on nfd the NIC keeps out of its sockets' wait
 * queues (nic.c), so a message costs one wake-up.
 *
 * Completions and connection events go through one ring (cq) in the order
 * they happened, under the context lock; ctx_poll moves a batch out, drops
 * the lock and runs the callbacks, which may post or disconnect again. A
 * connection's final event (failure, disconnected) waits until no queued
 * entry names the connection any more, so it always comes last. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tcp.h"

#define CQ_BATCH 32u
#define SERVE_EVENTS 32

/* ---- completion queue ---- */

/* The ring holds a power of two of entries: indexes are masked. */
static int cq_grow(struct tcp_ctx *tc, uint32_t cap)
{
	struct tcp_cqe *n;

	cap = rdmx__tcp_pow2(cap);
	if (cap <= tc->cq_cap)
		return 0;
	n = malloc((size_t)cap * sizeof(*n));
	if (!n)
		return RDMX_E_NOMEM;
	for (uint32_t i = 0; i < tc->cq_count; i++)
		n[i] = tc->cq[(tc->cq_head + i) & (tc->cq_cap - 1)];
	free(tc->cq);
	tc->cq = n;
	tc->cq_cap = cap;
	tc->cq_head = 0;
	return 0;
}

int rdmx__tcp_cq_reserve(struct tcp_ctx *tc, uint32_t extra)
{
	uint64_t want = (uint64_t)tc->cq_count + extra + 64;

	if (want <= tc->cq_cap)
		return 0;
	if (want > UINT32_MAX / 4) /* twice that, rounded up to a power of two, fits */
		return RDMX_E_NOMEM;
	return cq_grow(tc, (uint32_t)(want * 2));
}

/* The conn an entry names (its final event waits for it), or NULL. */
static struct tcp_conn *cqe_conn(const struct tcp_cqe *e)
{
	const struct rdmx_task *t;

	switch (e->kind) {
	case TCP_CQE_TASK:
		t = e->p;
		if (t->op == RDMX__OP_RECV)
			return t->prov_ptr ? TCP_CONN((struct rdmx_conn *)t->prov_ptr) : NULL;
		return t->conn ? TCP_CONN(t->conn) : NULL;
	case TCP_CQE_ESTABLISHED:
	case TCP_CQE_SET_ERROR:
	case TCP_CQE_MSG:
		return e->p;
	default:
		return NULL;
	}
}

/* The entry pushed, or NULL when the queue could not grow. */
static struct tcp_cqe *cq_push(struct tcp_ctx *tc, uint8_t kind, void *p, int status)
{
	struct tcp_cqe *e;
	struct tcp_conn *c;

	if (tc->cq_count == tc->cq_cap && cq_grow(tc, tc->cq_cap ? tc->cq_cap * 2 : 64)) {
		/* sized at start and per connection: reaching this is a bug */
		RDMX_ERR("tcp: completion queue full (%u entries): completion lost", tc->cq_cap);
		return NULL;
	}
	e = &tc->cq[(tc->cq_head + tc->cq_count) & (tc->cq_cap - 1)];
	e->p = p;
	e->status = status;
	e->kind = kind;
	tc->cq_count++;
	tc->produced = true;
	c = cqe_conn(e);
	if (c)
		c->cq_refs++;
	return e;
}

void rdmx__tcp_cq_task(struct tcp_ctx *tc, struct rdmx_task *task, int status)
{
	task->next = NULL;
	cq_push(tc, TCP_CQE_TASK, task, status);
}

void rdmx__tcp_cq_event(struct tcp_ctx *tc, enum tcp_cqe_kind kind, void *p)
{
	cq_push(tc, (uint8_t)kind, p, 0);
}

bool rdmx__tcp_cq_msg(struct tcp_ctx *tc, struct tcp_conn *c, uint32_t imm, uint32_t len)
{
	struct tcp_cqe *e = cq_push(tc, TCP_CQE_MSG, c, 0);

	if (!e)
		return false;
	e->imm = imm;
	e->len = len;
	c->msg_backlog++;
	return true;
}

static bool cq_pop(struct tcp_ctx *tc, struct tcp_cqe *out)
{
	struct tcp_conn *c;

	if (!tc->cq_count)
		return false;
	*out = tc->cq[tc->cq_head];
	tc->cq_head = (tc->cq_head + 1) & (tc->cq_cap - 1);
	tc->cq_count--;
	c = cqe_conn(out);
	if (c)
		c->cq_refs--;
	if (out->kind == TCP_CQE_MSG)
		c->msg_backlog--;
	return true;
}

/* Results are written here, on the progress thread (rx.c keeps them in the
 * provider's scratch fields meanwhile). */
static void deliver_task(struct rdmx_task *t, int status)
{
	if (t->op == RDMX__OP_RECV) {
		if (t->prov_ptr) {
			t->res_conn = t->prov_ptr;
			t->res_opcode = (enum rdmx_opcode)t->prov_u64[0];
			t->res_imm = (uint32_t)(t->prov_u64[1] >> 32);
			t->res_len = (uint32_t)t->prov_u64[1];
		}
	} else if (t->op == RDMX__OP_READ && status == 0) {
		t->res_len = (uint32_t)t->len;
	}
	rdmx__task_complete(t, status);
}

/* ---- sockets and timers ---- */

/* fd into (or changed in) both sets: epfd, and the notification set, where
 * a sleeping application is woken by the socket itself, one epoll level
 * below its engine's. */
static int ep_ctl_both(struct tcp_ctx *tc, int fd, struct tcp_ep *ep, uint32_t events, bool add)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = ep;
	if (epoll_ctl(tc->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev)) {
		RDMX_ERR("tcp: epoll_ctl fd %d failed: %s", fd, strerror(errno));
		return RDMX_E_PROVIDER;
	}
	if (epoll_ctl(tc->nfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev)) {
		RDMX_ERR("tcp: epoll_ctl fd %d (notification set) failed: %s", fd, strerror(errno));
		if (add)
			epoll_ctl(tc->epfd, EPOLL_CTL_DEL, fd, NULL);
		return RDMX_E_PROVIDER;
	}
	return 0;
}

/* ---- quiet sockets ----
 *
 * A socket in an epoll set costs every segment that arrives on it a walk of
 * the socket's wait queue: one epoll callback per set, each under a lock
 * taken with interrupts off (this machine kind: 600-900 cycles more of
 * the sender's sendmsg, which runs the receive side on loopback, and as
 * much of the receiver's recv; docs/BENCHMARKS.md, session 17). An
 * application that busy-polls its context's only connection needs neither
 * set: every poll reads that socket with a recv. So after TCP_QUIET_POLLS
 * polls in a row without arming, the solo connection's socket leaves both
 * sets (quiet). It is back in them before anybody could wait on them: the
 * application arming to sleep (ctx_arm), another connection joining the
 * context, a send that needs EPOLLOUT (ep_set), the NIC thread taking over
 * a context that stopped polling (nic.c, before it watches the set). The NIC
 * is kicked when a socket goes quiet: a NIC thread parked on the set (the
 * application paused, then came back) looks again and sees it active. */
static void quiet(struct tcp_ctx *tc, struct tcp_conn *c)
{
	struct epoll_event ev = {.events = c->ep_events, .data.ptr = &c->ep};

	if (epoll_ctl(tc->nfd, EPOLL_CTL_DEL, c->fd, NULL)) {
		RDMX_WARN("tcp: connection %u: epoll_ctl del (quiet) failed: %s", c->conn->id,
		          strerror(errno));
		tc->quiet_polls = 0;
		return;
	}
	if (epoll_ctl(tc->epfd, EPOLL_CTL_DEL, c->fd, NULL)) {
		RDMX_WARN("tcp: connection %u: epoll_ctl del (quiet) failed: %s", c->conn->id,
		          strerror(errno));
		if (epoll_ctl(tc->nfd, EPOLL_CTL_ADD, c->fd, &ev))
			RDMX_ERR("tcp: connection %u: back into the notification set failed: %s",
			         c->conn->id, strerror(errno));
		tc->quiet_polls = 0;
		return;
	}
	c->ep_quiet = true;
	tc->quiets++;
	atomic_store(&tc->quiet, true);
	rdmx__tcp_nic_kick(tc->td);
}

void rdmx__tcp_ctx_unquiet(struct tcp_ctx *tc)
{
	tc->quiet_polls = 0;
	if (!atomic_load_explicit(&tc->quiet, memory_order_relaxed))
		return;
	for (struct tcp_conn *c = tc->conns, *next; c; c = next) {
		next = c->next;
		if (!c->ep_quiet)
			continue;
		if (c->fd >= 0 && ep_ctl_both(tc, c->fd, &c->ep, c->ep_events, true)) {
			/* cannot be watched: closed (still quiet, so the close's
			 * ep_del only counts it out) */
			rdmx__tcp_conn_error(c, RDMX_E_PROVIDER, 0, true);
			continue;
		}
		c->ep_quiet = false;
	}
	atomic_store(&tc->quiet, false);
}

bool rdmx__tcp_ctx_unquiet_try(struct tcp_ctx *tc)
{
	if (pthread_mutex_trylock(&tc->lock))
		return false;
	rdmx__tcp_ctx_unquiet(tc);
	pthread_mutex_unlock(&tc->lock);
	return true;
}

int rdmx__tcp_ep_set(struct tcp_ctx *tc, int fd, struct tcp_ep *ep, uint32_t events, bool add)
{
	/* a connection joining, or a quiet one changing its interest: every
	 * socket back in the sets first */
	if (ep->kind == TCP_EP_CONN && (add || ((struct tcp_conn *)ep)->ep_quiet))
		rdmx__tcp_ctx_unquiet(tc);
	if (ep_ctl_both(tc, fd, ep, events, add))
		return RDMX_E_PROVIDER;
	if (add) {
		tc->n_ep++;
		if (ep->kind == TCP_EP_CONN) {
			tc->n_conn_ep++;
			tc->last_conn = (struct tcp_conn *)ep;
		}
	}
	return 0;
}

void rdmx__tcp_ep_del(struct tcp_ctx *tc, int fd, const struct tcp_ep *ep)
{
	if (ep->kind == TCP_EP_CONN && ((const struct tcp_conn *)ep)->ep_quiet) {
		((struct tcp_conn *)ep)->ep_quiet = false; /* in neither set */
		tc->n_ep--;
		tc->n_conn_ep--;
		return;
	}
	if (epoll_ctl(tc->nfd, EPOLL_CTL_DEL, fd, NULL))
		RDMX_WARN("tcp: epoll_ctl del fd %d (notification set) failed: %s", fd,
		          strerror(errno));
	if (epoll_ctl(tc->epfd, EPOLL_CTL_DEL, fd, NULL)) {
		RDMX_WARN("tcp: epoll_ctl del fd %d failed: %s", fd, strerror(errno));
		return;
	}
	tc->n_ep--;
	if (ep->kind == TCP_EP_CONN)
		tc->n_conn_ep--;
}

/* The context's only connection socket, when it is an established one:
 * then a poll needs no epoll_wait to find it, a recv tells as much (one
 * syscall less per message, the common case of one connection per context).
 * The other fds, a listener or handshakes under way, if any, are looked at
 * as side_look says. */
static struct tcp_conn *solo_conn(const struct tcp_ctx *tc)
{
	struct tcp_conn *c = tc->last_conn;

	if (tc->n_conn_ep != 1 || !c || !c->ep_events)
		return NULL;
	return c->state == TC_UP || c->state == TC_ERROR ? c : NULL;
}

/* An application poll: the solo connection's socket goes quiet after
 * TCP_QUIET_POLLS of them in a row (see quiet). */
static void quiet_check(struct tcp_ctx *tc)
{
	struct tcp_conn *c;

	if (tc->quiet_polls < TCP_QUIET_POLLS) {
		tc->quiet_polls++;
		return;
	}
	c = solo_conn(tc);
	if (c && !c->ep_quiet && c->state == TC_UP && c->fd >= 0 && c->ep_events == EPOLLIN &&
	    !atomic_load(&tc->armed)) /* an armed application may sleep on nfd any time */
		quiet(tc, c);
}

/* Whether a pass looks at the set's fds that are no connection's (a
 * listener, handshakes), with epoll_wait, when the connections need none
 * (there is none, or only the solo one). The NIC thread's passes do. The
 * application's polls do once every TCP_SIDE_LOOK polls, and at the first
 * one after a wake-up that found nothing on the connection (what woke the
 * application was another fd): a busy server with one client spins on one
 * recv per poll, as a raw TCP server does, and still accepts the next
 * client within TCP_SIDE_LOOK polls, or at once when it sleeps. */
static bool side_look(struct tcp_ctx *tc, bool app, size_t got)
{
	if (tc->n_ep == tc->n_conn_ep)
		return false;
	if (app && ++tc->side_polls < TCP_SIDE_LOOK &&
	    (got || !atomic_load_explicit(&tc->side_due, memory_order_relaxed)))
		return false;
	tc->side_polls = 0;
	atomic_store_explicit(&tc->side_due, false, memory_order_relaxed);
	return true;
}

void rdmx__tcp_ctx_timer(struct tcp_ctx *tc, uint64_t deadline)
{
	if (deadline < atomic_load_explicit(&tc->next_deadline, memory_order_relaxed))
		atomic_store(&tc->next_deadline, deadline); /* seq_cst: see nic_nudge */
}

void rdmx__tcp_ctx_run_timers(struct tcp_ctx *tc, uint64_t now)
{
	struct tcp_cmreq **pp;

	atomic_store_explicit(&tc->next_deadline, TCP_NEVER, memory_order_relaxed);
	rdmx__tcp_cm_resume(tc, now);
	for (struct tcp_conn *c = tc->conns; c; c = c->next)
		rdmx__tcp_conn_timer(c, now);
	for (pp = &tc->cmreqs; *pp;) {
		struct tcp_cmreq *r = *pp;

		if (!r->queued && r->deadline <= now) {
			RDMX_WARN("tcp: cm connection dropped: no request within %u ms",
			          TCP_HELLO_TIMEOUT_MS);
			rdmx__tcp_cmreq_free(tc, r); /* unlinks r */
			continue;
		}
		if (!r->queued)
			rdmx__tcp_ctx_timer(tc, r->deadline);
		pp = &r->next;
	}
}

/* Serves what epoll_wait finds ready in the context's set, but the solo
 * connection (served already in this pass) */
static size_t serve_set(struct tcp_ctx *tc, size_t budget, const struct tcp_conn *solo)
{
	struct epoll_event evs[SERVE_EVENTS];
	int n = epoll_wait(tc->epfd, evs, SERVE_EVENTS, 0);
	size_t got = 0;

	for (int i = 0; i < n; i++) {
		struct tcp_ep *ep = evs[i].data.ptr;
		uint32_t e = evs[i].events;

		switch (ep->kind) {
		case TCP_EP_CONN: {
			struct tcp_conn *c = (struct tcp_conn *)ep;

			if (c == solo)
				break;
			if (c->state == TC_DIALING) {
				rdmx__tcp_conn_dialed(c);
				break;
			}
			if (e & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
				got += rdmx__tcp_rx_serve(c, budget);
			if (c->fd >= 0 && (e & EPOLLOUT))
				rdmx__tcp_tx_flush(c);
			break;
		}
		case TCP_EP_LISTEN:
			rdmx__tcp_cm_accept(tc);
			break;
		case TCP_EP_CMREQ:
			rdmx__tcp_cmreq_read(tc, (struct tcp_cmreq *)ep);
			break;
		default:
			break;
		}
	}
	return got;
}

size_t rdmx__tcp_ctx_serve(struct tcp_ctx *tc, size_t budget, bool app)
{
	struct tcp_conn *solo = solo_conn(tc);
	size_t got = 0;
	uint64_t dl, now;

	if (solo) {
		got = rdmx__tcp_rx_serve(solo, budget);
		if (solo->fd >= 0 && (solo->ep_events & EPOLLOUT))
			rdmx__tcp_tx_flush(solo);
	}
	/* bytes a wait read (ctx_wait_read) for a connection that is no longer
	 * the only one: its socket may not be readable any more */
	if (tc->wait_staged && tc->wait_staged != solo)
		got += rdmx__tcp_rx_serve(tc->wait_staged, budget);
	tc->wait_staged = NULL;
	/* other connections need epoll_wait to be found; side fds alone
	 * (a listener, handshakes) are looked at as side_look says */
	if (tc->n_conn_ep > (solo ? 1u : 0u) || side_look(tc, app, got))
		got += serve_set(tc, budget, solo);
	dl = atomic_load_explicit(&tc->next_deadline, memory_order_relaxed);
	if (dl != TCP_NEVER && rdmx__due(dl, &now)) /* a far one: no clock-source read */
		rdmx__tcp_ctx_run_timers(tc, now);
	return got;
}

/* ---- life cycle ---- */

static uint32_t total_tasks(const struct rdmx_ctx *ctx)
{
	uint64_t n = 0;

	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++)
		n += ctx->conf[t].num_tasks;
	return n > UINT32_MAX / 4 ? UINT32_MAX / 4 : (uint32_t)n;
}

int rdmx__tcp_ctx_start(struct rdmx_ctx *ctx)
{
	struct tcp_dev *td = TCP_DEV(ctx->dev);
	struct epoll_event ev;
	struct tcp_ctx *tc;
	int rc;

	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return RDMX_E_NOMEM;
	tc->ctx = ctx;
	tc->td = td;
	tc->lfd = -1;
	tc->listen_ep.kind = TCP_EP_LISTEN;
	atomic_init(&tc->progress, 0);
	atomic_init(&tc->armed, false);
	atomic_init(&tc->arms, 0);
	atomic_init(&tc->next_deadline, TCP_NEVER);
	atomic_init(&tc->has_dirty, false);
	atomic_init(&tc->efd_set, false);
	rc = cq_grow(tc, total_tasks(ctx) + 64);
	if (rc)
		goto free_ctx;
	if (pthread_mutex_init(&tc->lock, NULL)) {
		rc = RDMX_E_PROVIDER;
		goto free_cq;
	}
	rc = RDMX_E_PROVIDER;
	tc->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (tc->epfd < 0) {
		RDMX_ERR("tcp: epoll_create1 failed: %s", strerror(errno));
		goto destroy_lock;
	}
	tc->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (tc->efd < 0) {
		RDMX_ERR("tcp: eventfd failed: %s", strerror(errno));
		goto close_epfd;
	}
	tc->nfd = epoll_create1(EPOLL_CLOEXEC);
	if (tc->nfd < 0) {
		RDMX_ERR("tcp: epoll_create1 failed: %s", strerror(errno));
		goto close_efd;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	if (epoll_ctl(tc->nfd, EPOLL_CTL_ADD, tc->efd, &ev)) {
		RDMX_ERR("tcp: epoll_ctl failed: %s", strerror(errno));
		goto close_nfd;
	}
	ctx->prov = tc;
	pthread_mutex_lock(&td->lock);
	rc = rdmx__tcp_nic_start(td);
	if (!rc)
		rc = rdmx__tcp_nic_add_ctx(td, tc);
	pthread_mutex_unlock(&td->lock);
	if (rc)
		goto unset_prov;
	return 0;

unset_prov:
	ctx->prov = NULL;
close_nfd:
	close(tc->nfd);
close_efd:
	close(tc->efd);
close_epfd:
	close(tc->epfd);
destroy_lock:
	pthread_mutex_destroy(&tc->lock);
free_cq:
	free(tc->cq);
free_ctx:
	free(tc);
	return rc;
}

/* Flushes every connection's tasks and the receive queue with CANCELED. */
static void cancel_all(struct tcp_ctx *tc)
{
	struct rdmx_task *t;

	if (tc->lfd >= 0) {
		close(tc->lfd);
		tc->lfd = -1;
	}
	while (tc->cmreqs)
		rdmx__tcp_cmreq_free(tc, tc->cmreqs);
	for (struct tcp_conn *c = tc->conns; c; c = c->next) {
		rdmx__tcp_conn_close_fd(c);
		rdmx__tcp_rx_forget_task(c, RDMX_E_CANCELED);
		rdmx__tcp_conn_flush_tasks(c, RDMX_E_CANCELED, RDMX_E_CANCELED);
		c->state = TC_DOWN;
	}
	while ((t = tc->rq_head)) {
		tc->rq_head = t->next;
		rdmx__tcp_cq_task(tc, t, RDMX_E_CANCELED);
	}
	tc->rq_tail = NULL;
	tc->rq_count = 0;
}

void rdmx__tcp_ctx_stop(struct rdmx_ctx *ctx)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	struct tcp_dev *td;
	struct tcp_cqe e;
	bool leader;

	if (!tc)
		return;
	td = tc->td;
	/* out of a listen group first: a listener under its own lock (the
	 * dealing order), a member before its own lock is taken */
	pthread_mutex_lock(&tc->lock);
	leader = tc->lfd >= 0 && tc->lgroup;
	if (leader)
		rdmx__tcp_lgroup_leave(tc);
	pthread_mutex_unlock(&tc->lock);
	if (!leader)
		rdmx__tcp_lgroup_leave(tc);
	/* from here on the NIC thread neither sees the context nor its exports */
	pthread_mutex_lock(&td->lock);
	rdmx__tcp_nic_del_ctx(td, tc);
	for (struct tcp_conn *c = tc->conns; c; c = c->next)
		rdmx__tcp_pending_del(td, c);
	pthread_mutex_unlock(&td->lock);

	pthread_mutex_lock(&tc->lock);
	tc->stopping = true;
	cancel_all(tc);
	/* entries already queued complete in their order, CANCELED as every
	 * task at a stop (include/rdmx/ctx.h; the verbs provider does the
	 * same): the NIC thread may have finished one before the stop, and
	 * what a task reports must not depend on that race. Connection events
	 * are left to the engine, which ends every connection itself. */
	while (cq_pop(tc, &e)) {
		if (e.kind != TCP_CQE_TASK)
			continue;
		pthread_mutex_unlock(&tc->lock);
		deliver_task(e.p, RDMX_E_CANCELED);
		pthread_mutex_lock(&tc->lock);
	}
	for (struct tcp_conn *c = tc->conns; c; c = c->next) {
		c->tc = NULL;
		c->linked = false;
		c->dirty = false;
		c->next_dirty = NULL;
	}
	tc->conns = NULL;
	tc->dirty = NULL;
	pthread_mutex_unlock(&tc->lock);

	close(tc->nfd);
	close(tc->efd);
	close(tc->epfd);
	pthread_mutex_destroy(&tc->lock);
	free(tc->cq);
	free(tc);
	ctx->prov = NULL;
}

int rdmx__tcp_ctx_get_fd(struct rdmx_ctx *ctx)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);

	return tc ? tc->nfd : -1;
}

static bool has_ready(struct tcp_ctx *tc)
{
	if (tc->cq_count)
		return true;
	for (struct tcp_conn *c = tc->conns; c && tc->num_finals; c = c->next)
		if (c->final_pending && c->cq_refs == 0)
			return true;
	return false;
}

/* provider.h ctx_wait_read: the wait's first moments spent in a read of the
 * context's only connection (rx.c), when nothing else could need the
 * context meanwhile: no other connection (one exported and waiting for its
 * data connection would be attached by the NIC thread, under this lock),
 * no other fd in its set (a listener, handshakes), no listen group (another
 * member's thread deals connections to it under this lock), nothing to
 * deliver or signalled, nothing queued to send, no timer due within
 * RDMX__WAIT_READ_MAX_MS. The read holds the context lock: the NIC thread,
 * which only tries it, leaves the context to the application (nic.c), and
 * every socket is still read and written only under its lock. A
 * blocking RPC round trip then costs each side a recv and a sendmsg, as a
 * raw TCP ping-pong does, instead of epoll_wait, recv and sendmsg. */
#define WAIT_READ_NS (RDMX__WAIT_READ_MAX_MS * 1000000ull)

int rdmx__tcp_ctx_wait_read(struct rdmx_ctx *ctx)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	struct tcp_conn *c;
	uint64_t dl, now;
	int rc = 0;

	pthread_mutex_lock(&tc->lock);
	c = solo_conn(tc);
	dl = atomic_load_explicit(&tc->next_deadline, memory_order_relaxed);
	if (c && c->state == TC_UP && tc->conns == c && !c->next && !tc->lgroup &&
	    tc->n_ep == tc->n_conn_ep && !has_ready(tc) && !atomic_load(&tc->efd_set) &&
	    !atomic_load(&tc->has_dirty) && !rdmx__tcp_tx_pending(c) &&
	    !(c->ep_events & EPOLLOUT) &&
	    (dl == TCP_NEVER || !rdmx__due(dl > WAIT_READ_NS ? dl - WAIT_READ_NS : 0, &now)))
		rc = rdmx__tcp_rx_wait(c);
	if (rc > 0 && c->rx.stage_off < c->rx.stage_len)
		tc->wait_staged = c; /* the next serve frames what was read */
	pthread_mutex_unlock(&tc->lock);
	return rc;
}

void rdmx__tcp_ctx_signal(struct tcp_ctx *tc)
{
	uint64_t one = 1;

	if (atomic_exchange(&tc->efd_set, true))
		return; /* still readable */
	if (write(tc->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		RDMX_WARN("tcp: eventfd write failed: %s", strerror(errno));
}

int rdmx__tcp_ctx_arm(struct rdmx_ctx *ctx)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	bool ready;

	atomic_store(&tc->armed, true);
	atomic_fetch_add_explicit(&tc->arms, 1, memory_order_relaxed);
	pthread_mutex_lock(&tc->lock);
	rdmx__tcp_ctx_unquiet(tc);     /* going to sleep: the sockets wake it */
	rdmx__tcp_ctx_flush_dirty(tc); /* going to sleep: answers go now */
	ready = has_ready(tc);
	pthread_mutex_unlock(&tc->lock);
	/* the sockets in nfd are level-triggered: bytes already waiting make
	 * it readable; queued completions are answered here, no eventfd write */
	return ready ? 1 : 0;
}

int rdmx__tcp_ctx_disarm(struct rdmx_ctx *ctx)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	uint64_t v;

	atomic_store(&tc->armed, false);
	atomic_store_explicit(&tc->side_due, true, memory_order_relaxed);
	/* one syscall less per wake-up when the NIC did not signal */
	if (!atomic_exchange(&tc->efd_set, false))
		return 0;
	if (read(tc->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		return 0;
	if (errno != EAGAIN) {
		RDMX_WARN("tcp: eventfd read failed: %s", strerror(errno));
		return 0;
	}
	/* The flag was set but the count is not there yet: a signaller is
	 * between its exchange and its write (only this thread reads efd).
	 * Leaving the flag clear would let that write keep the fd readable
	 * with nobody ever reading it: every later wake-up would find nothing
	 * to do (a busy loop in every event loop that embeds us). Keep the flag
	 * so that the next disarm reads the count. */
	atomic_store(&tc->efd_set, true);
	return 0;
}

/* ---- delivery ---- */

static void deliver_one(struct tcp_ctx *tc, const struct tcp_cqe *e)
{
	struct tcp_conn *c;

	switch (e->kind) {
	case TCP_CQE_TASK:
		deliver_task(e->p, e->status);
		break;
	case TCP_CQE_ESTABLISHED:
		c = e->p;
		if (c->pd_len) {
			memcpy(c->conn->private_data, c->pd, c->pd_len);
			c->conn->private_data_len = c->pd_len;
		}
		rdmx__conn_event(c->conn, RDMX__CONN_EV_ESTABLISHED);
		break;
	case TCP_CQE_SET_ERROR:
		c = e->p;
		rdmx__conn_set_error(c->conn);
		break;
	case TCP_CQE_REQUEST:
		rdmx__tcp_cm_deliver(tc, e->p);
		break;
	case TCP_CQE_MSG:
		c = e->p;
		rdmx__msg_arrived(c->conn, e->imm, e->len);
		break;
	default:
		break;
	}
}

/* Final events of connections nothing queued names any more (lock held,
 * dropped around each callback). Returns how many ran. */
static unsigned deliver_finals(struct tcp_ctx *tc)
{
	unsigned n = 0;
	bool again = true;

	while (again && tc->num_finals) {
		again = false;
		for (struct tcp_conn *c = tc->conns; c; c = c->next) {
			enum rdmx__conn_event ev;

			if (!c->final_pending || c->cq_refs)
				continue;
			c->final_pending = false;
			c->final_done = true;
			tc->num_finals--;
			ev = (enum rdmx__conn_event)c->final_ev;
			/* an export stays in the device's table (device lock) until
			 * conn_release; the NIC leaves a DOWN connection alone */
			rdmx__tcp_conn_unlink(tc, c);
			pthread_mutex_unlock(&tc->lock);
			rdmx__conn_event(c->conn, ev);
			pthread_mutex_lock(&tc->lock);
			n++;
			again = true; /* the list may have changed */
			break;
		}
	}
	return n;
}

/* Acknowledgements of the requests read here are held until the
 * application's next post on the connection (they share its segment: a send
 * ping-pong costs one sendmsg and one recv per side instead of two and two,
 * measured 2x faster), its next poll, or its ctx_arm. An application that
 * stops driving the context meanwhile leaves them to the NIC thread, which
 * sends them at its next look (within a grace period; within its patience,
 * nic.c, after an application that sleeps between calls): a peer waiting
 * only for a send completion then waits that long. Drive every context you
 * wait on (one progress engine for several contexts does). */
int rdmx__tcp_ctx_poll(struct rdmx_ctx *ctx, unsigned budget)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	struct tcp_cqe batch[CQ_BATCH];
	unsigned done = 0;

	rdmx__tcp_ctx_enter(tc);
	/* answers queued by the previous poll: the application did not post
	 * anything they could have shared a segment with */
	rdmx__tcp_ctx_flush_dirty(tc);
	rdmx__tcp_ctx_serve(tc, TCP_SERVE_BUDGET, true);
	quiet_check(tc);
	tc->produced = false; /* the application is here: no wake-up needed */
	while (done < budget) {
		unsigned k = 0;
		bool more;

		while (k < CQ_BATCH && done + k < budget && cq_pop(tc, &batch[k]))
			k++;
		if (!k)
			break;
		/* the lock is taken again after the callbacks only when there
		 * is more to deliver in this poll: a full batch (entries may be
		 * left) or a final event (it must follow the batch's entries).
		 * What the callbacks queue meanwhile goes at the next poll, as
		 * it would once the budget is spent; a sleeper's ctx_arm sees it
		 * (has_ready), so nobody waits for it. One lock pair per poll in
		 * the common case instead of two. */
		more = (k == CQ_BATCH && done + k < budget) || tc->num_finals;
		pthread_mutex_unlock(&tc->lock);
		for (unsigned i = 0; i < k; i++) {
			ctx->cb_more = k - 1 - i; /* of this batch: a lower bound */
			deliver_one(tc, &batch[i]);
		}
		ctx->cb_more = 0;
		done += k;
		if (!more)
			goto delivered;
		pthread_mutex_lock(&tc->lock);
	}
	if (tc->num_finals && done < budget)
		done += deliver_finals(tc);
	pthread_mutex_unlock(&tc->lock);
delivered:
	/* answers wait for the next poll or post: if none comes, the NIC
	 * sends them (and runs the timers) once we look idle */
	rdmx__tcp_nic_nudge(tc);
	return (int)done;
}
