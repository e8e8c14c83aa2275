/* Multi-worker secure RPC server (library rdmx_secure_ev): N threads, each
 * a libev loop driving a secure server of its own (rpc_secure_server.c:
 * device, progress engine, context, channel worker), all serving one
 * rdmx_rpc_server.
 *
 * Worker 0's server is the only one with a listening socket; its TLS
 * listener hands every accepted socket to dispatch() instead of
 * handshaking it, and dispatch deals them out in turn. A socket for worker
 * 0 is adopted at once; one for another worker goes into that worker's
 * inbox (a mutex-guarded list) and its ev_async wakes the worker's loop,
 * which adopts it there. The hand-off is the only place threads meet, and
 * it happens once per connection, before its handshake: the calls
 * themselves run on one thread each, without locks.
 *
 * Stop: the same inbox carries a stop flag; the worker destroys its
 * secure server on its own thread (which closes its clients) and breaks
 * its loop; destroy joins the threads, then frees the loops.
 *
 * Engine counters: a context's counters are plain words of its worker's
 * thread. rdmx_rpc_secure_workers_get_engine_stats asks each worker for a
 * snapshot (its request number, under the object's stats_lock, then the
 * same ev_async wake); the worker copies its context's counters on its own
 * thread, from its loop between events, into its snapshot under stats_lock
 * and wakes the askers (stats_cond). The workers take the lock only to
 * answer; the hot path does not change. An asker waits a bounded time,
 * then uses a late worker's previous snapshot. An asker that is itself a
 * worker (a handler) answers the requests made to it while it waits, so
 * two workers asking at once do not wait for each other. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>

#include "rpc_secure_internal.h"
#include "tls_internal.h"

struct handoff {
	int fd;
	struct sockaddr_storage src;
	struct handoff *next;
};

struct worker {
	struct rdmx_rpc_secure_workers *w;
	unsigned index;
	struct ev_loop *loop;
	struct rdmx_rpc_secure_server *srv;
	const void *srv_id; /* srv as made, kept for index_of (srv is cleared at stop) */
	ev_async wake;
	pthread_t thread;
	bool running;

	pthread_mutex_t lock; /* inbox and stop */
	struct handoff *inbox, **inbox_tail;
	bool stop;

	atomic_uint_fast64_t assigned;
	atomic_uint clients;

	/* engine counters (see the top), under w->stats_lock: asked by any
	 * thread, answered by the worker's; `engine` is the snapshot of the
	 * latest answer */
	uint64_t stats_asked, stats_answered;
	struct rdmx_ctx_stats engine;
};

/* The worker whose thread this is (NULL on any other thread). */
static _Thread_local struct worker *this_worker;

struct rdmx_rpc_secure_workers {
	unsigned n;
	struct worker *v;
	struct rdmx_rpc_secure_server_ops ops; /* the application's */
	void *arg;
	unsigned next; /* dispatch's turn: worker 0's thread only */
	uint16_t port;
	pthread_mutex_t stats_lock; /* every worker's stats_asked, _answered, engine */
	pthread_cond_t stats_cond;  /* an answer came (CLOCK_MONOTONIC) */
};

/* ---- the application's callbacks, counted per worker ---- */

static int on_accept(struct rdmx_rpc_secure_server *srv, const char *cert, const char *hello,
                     void *arg)
{
	struct worker *wk = arg;

	return wk->w->ops.accept(srv, cert, hello, wk->w->arg);
}

static void on_connected(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                         void *arg)
{
	struct worker *wk = arg;

	atomic_fetch_add(&wk->clients, 1);
	if (wk->w->ops.connected)
		wk->w->ops.connected(srv, conn, wk->w->arg);
}

static void on_gone(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                    int status, void *arg)
{
	struct worker *wk = arg;

	atomic_fetch_sub(&wk->clients, 1);
	if (wk->w->ops.gone)
		wk->w->ops.gone(srv, conn, status, wk->w->arg);
}

/* ---- hand-off ---- */

static void adopt_inbox(struct worker *wk)
{
	struct handoff *list;
	bool stop;

	pthread_mutex_lock(&wk->lock);
	list = wk->inbox;
	wk->inbox = NULL;
	wk->inbox_tail = &wk->inbox;
	stop = wk->stop;
	pthread_mutex_unlock(&wk->lock);
	while (list) {
		struct handoff *h = list;

		list = h->next;
		if (stop || !wk->srv)
			close(h->fd);
		else
			rdmx__rpc_secure_server_adopt(wk->srv, h->fd, &h->src);
		free(h);
	}
	if (stop) {
		rdmx_rpc_secure_server_destroy(&wk->srv);
		ev_async_stop(wk->loop, &wk->wake);
		ev_break(wk->loop, EVBREAK_ALL);
	}
}

/* ---- engine counters ---- */

/* Copies the worker's context's counters to *out. The worker's thread
 * only, outside the engine's callbacks (or once the thread is gone). */
static void engine_read(const struct worker *wk, struct rdmx_ctx_stats *out)
{
	struct rdmx_ctx *ctx = NULL;

	if (wk->srv)
		ctx = rdmx_chan_worker_get_ctx(rdmx_rpc_secure_server_get_worker(wk->srv));
	if (ctx)
		rdmx_ctx_get_stats(ctx, out);
}

/* On the worker's thread, under w->stats_lock: answers the requests made
 * to it so far. */
static void engine_answer_locked(struct worker *wk)
{
	if (wk->stats_answered != wk->stats_asked) {
		engine_read(wk, &wk->engine);
		wk->stats_answered = wk->stats_asked;
		pthread_cond_broadcast(&wk->w->stats_cond);
	}
}

static void engine_answer(struct worker *wk)
{
	pthread_mutex_lock(&wk->w->stats_lock);
	engine_answer_locked(wk);
	pthread_mutex_unlock(&wk->w->stats_lock);
}

static void wake_cb(struct ev_loop *loop, ev_async *a, int revents)
{
	(void)loop;
	(void)revents;
	/* before the inbox: a stop there destroys the context */
	engine_answer(a->data);
	adopt_inbox(a->data);
}

static void dispatch(struct rdmx_tls_listener *l, int fd, const struct sockaddr_storage *src,
                     void *arg)
{
	struct rdmx_rpc_secure_workers *w = arg;
	struct worker *wk = &w->v[w->next];
	struct handoff *h;

	w->next = (w->next + 1) % w->n;
	atomic_fetch_add(&wk->assigned, 1);
	if (wk->index == 0) {
		rdmx__tls_listener_adopt(l, fd, src);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		RDMX_SEC_ERR("rpc_secure: out of memory handing a connection to worker %u",
		             wk->index);
		close(fd);
		return;
	}
	h->fd = fd;
	h->src = *src;
	pthread_mutex_lock(&wk->lock);
	if (wk->stop) {
		pthread_mutex_unlock(&wk->lock);
		close(fd);
		free(h);
		return;
	}
	*wk->inbox_tail = h;
	wk->inbox_tail = &h->next;
	pthread_mutex_unlock(&wk->lock);
	ev_async_send(wk->loop, &wk->wake);
}

/* ---- threads ---- */

static void *worker_main(void *arg)
{
	struct worker *wk = arg;

	this_worker = wk;
	ev_run(wk->loop, 0);
	this_worker = NULL;
	return NULL;
}

static void worker_stop(struct worker *wk)
{
	pthread_mutex_lock(&wk->lock);
	wk->stop = true;
	pthread_mutex_unlock(&wk->lock);
	ev_async_send(wk->loop, &wk->wake);
	pthread_join(wk->thread, NULL);
	wk->running = false;
}

static void worker_fini(struct worker *wk)
{
	if (wk->running)
		worker_stop(wk);
	if (wk->loop) {
		/* never started, or stopped: its thread is gone */
		rdmx_rpc_secure_server_destroy(&wk->srv);
		adopt_inbox(wk);
		ev_loop_destroy(wk->loop);
		wk->loop = NULL;
	}
	pthread_mutex_destroy(&wk->lock);
}

static int worker_init(struct rdmx_rpc_secure_workers *w, unsigned i,
                       struct rdmx_rpc_server *server, struct rdmx_tls_config *tls,
                       const char *host, uint16_t port,
                       const struct rdmx_rpc_secure_server_ops *ops,
                       const struct rdmx_rpc_secure_opts *opts)
{
	struct worker *wk = &w->v[i];
	int ret;

	wk->w = w;
	wk->index = i;
	wk->inbox_tail = &wk->inbox;
	atomic_init(&wk->assigned, 0);
	atomic_init(&wk->clients, 0);
	pthread_mutex_init(&wk->lock, NULL);
	wk->loop = ev_loop_new(EVFLAG_AUTO);
	if (!wk->loop) {
		RDMX_SEC_ERR("rpc_secure: no event loop for worker %u", i);
		return RDMX_E_NOMEM;
	}
	ev_async_init(&wk->wake, wake_cb);
	wk->wake.data = wk;
	ev_async_start(wk->loop, &wk->wake);
	if (i == 0)
		ret = rdmx_rpc_secure_listen(wk->loop, server, tls, host, port, ops, opts, wk,
		                             &wk->srv);
	else
		ret =
		    rdmx__rpc_secure_listen_unbound(wk->loop, server, tls, ops, opts, wk, &wk->srv);
	if (ret)
		return ret;
	wk->srv_id = wk->srv;
	if (i == 0) {
		rdmx__tls_listener_set_dispatch(rdmx__rpc_secure_server_listener(wk->srv), dispatch,
		                                w);
		ret = rdmx_rpc_secure_server_get_port(wk->srv, &w->port);
	}
	return ret;
}

static int workers_start(struct rdmx_rpc_secure_workers *w)
{
	sigset_t all, old;
	int err = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < w->n && !err; i++) {
		err = pthread_create(&w->v[i].thread, NULL, worker_main, &w->v[i]);
		if (err)
			RDMX_SEC_ERR("rpc_secure: cannot start worker %u: %s", i, strerror(err));
		else
			w->v[i].running = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err ? RDMX_E_PROVIDER : RDMX_OK;
}

int rdmx_rpc_secure_workers_listen(unsigned n, struct rdmx_rpc_server *server,
                                   struct rdmx_tls_config *tls, const char *host, uint16_t port,
                                   const struct rdmx_rpc_secure_server_ops *ops,
                                   const struct rdmx_rpc_secure_opts *opts, void *arg,
                                   struct rdmx_rpc_secure_workers **out)
{
	struct rdmx_rpc_secure_server_ops mine;
	struct rdmx_rpc_secure_workers *w;
	pthread_condattr_t ca;
	unsigned i;
	int ret;

	if (n < 1 || n > RDMX_RPC_SECURE_MAX_WORKERS || !server || !tls || !out)
		return RDMX_E_INVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return RDMX_E_NOMEM;
	w->v = calloc(n, sizeof(*w->v));
	if (!w->v) {
		free(w);
		return RDMX_E_NOMEM;
	}
	pthread_mutex_init(&w->stats_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->stats_cond, &ca);
	pthread_condattr_destroy(&ca);
	w->arg = arg;
	if (ops)
		w->ops = *ops;
	if (!w->ops.max_clients)
		w->ops.max_clients = RDMX_RPC_SECURE_DEFAULT_MAX_CLIENTS;
	memset(&mine, 0, sizeof(mine));
	mine.accept = w->ops.accept ? on_accept : NULL;
	mine.connected = on_connected;
	mine.gone = on_gone;
	mine.max_clients = (w->ops.max_clients + n - 1) / n;
	for (i = 0; i < n; i++) {
		w->n = i + 1; /* what fini undoes */
		ret = worker_init(w, i, server, tls, host, port, &mine, opts);
		if (ret)
			goto fail;
	}
	ret = workers_start(w);
	if (ret)
		goto fail;
	*out = w;
	return RDMX_OK;

fail:
	rdmx_rpc_secure_workers_destroy(&w);
	return ret;
}

int rdmx_rpc_secure_workers_get_port(const struct rdmx_rpc_secure_workers *w, uint16_t *port)
{
	if (!w || !port)
		return RDMX_E_INVAL;
	*port = w->port;
	return RDMX_OK;
}

unsigned rdmx_rpc_secure_workers_get_count(const struct rdmx_rpc_secure_workers *w)
{
	return w ? w->n : 0;
}

uint64_t rdmx_rpc_secure_workers_get_assigned(const struct rdmx_rpc_secure_workers *w,
                                              unsigned index)
{
	if (!w || index >= w->n)
		return 0;
	return atomic_load(&w->v[index].assigned);
}

uint32_t rdmx_rpc_secure_workers_get_clients(const struct rdmx_rpc_secure_workers *w,
                                             unsigned index)
{
	if (!w || index >= w->n)
		return 0;
	return atomic_load(&w->v[index].clients);
}

int rdmx_rpc_secure_workers_get_listener_stats(const struct rdmx_rpc_secure_workers *w,
                                               struct rdmx_tls_listener_stats *stats)
{
	struct rdmx_tls_listener_stats one;

	if (!w || !stats)
		return RDMX_E_INVAL;
	memset(stats, 0, sizeof(*stats));
	for (unsigned i = 0; i < w->n; i++) {
		if (rdmx_rpc_secure_server_get_listener_stats(w->v[i].srv, &one))
			continue; /* stopped */
		stats->accepted += one.accepted;
		stats->established += one.established;
		stats->refused += one.refused;
		stats->timed_out += one.timed_out;
		stats->over_limit += one.over_limit;
		stats->evicted += one.evicted;
		stats->handshaking += one.handshaking;
	}
	return RDMX_OK;
}

static void engine_add(struct rdmx_ctx_stats *sum, const struct rdmx_ctx_stats *one)
{
	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++) {
		sum->submitted[t] += one->submitted[t];
		sum->completed[t] += one->completed[t];
		sum->failed[t] += one->failed[t];
		sum->bytes[t] += one->bytes[t];
	}
	sum->conns_established += one->conns_established;
	sum->conns_failed += one->conns_failed;
	sum->conns_disconnected += one->conns_disconnected;
	sum->conns_sealed += one->conns_sealed;
	sum->conns_plaintext += one->conns_plaintext;
}

/* Whether every worker but `self` answered its ticket. Under stats_lock. */
static bool engine_all_answered(const struct rdmx_rpc_secure_workers *w, const uint64_t *ticket,
                                const struct worker *self)
{
	for (unsigned i = 0; i < w->n; i++)
		if (&w->v[i] != self && w->v[i].stats_answered < ticket[i])
			return false;
	return true;
}

int rdmx_rpc_secure_workers_get_engine_stats(const struct rdmx_rpc_secure_workers *cw,
                                             uint32_t timeout_ms, struct rdmx_ctx_stats *stats)
{
	/* the object is never const: the lock is ours to take */
	struct rdmx_rpc_secure_workers *w = (struct rdmx_rpc_secure_workers *)cw;
	uint64_t ticket[RDMX_RPC_SECURE_MAX_WORKERS];
	bool late[RDMX_RPC_SECURE_MAX_WORKERS];
	struct worker *self = NULL;
	struct rdmx_ctx_stats one;
	struct timespec deadline;
	unsigned n_late = 0;
	int rc = 0;

	if (!w || !stats)
		return RDMX_E_INVAL;
	if (!timeout_ms)
		timeout_ms = RDMX_RPC_SECURE_ENGINE_STATS_WAIT_MS;
	for (unsigned i = 0; i < w->n; i++)
		if (&w->v[i] == this_worker)
			self = this_worker; /* asked from a handler of ours */
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)(timeout_ms / 1000u);
	deadline.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	/* ask them all first, so that they answer in parallel */
	pthread_mutex_lock(&w->stats_lock);
	for (unsigned i = 0; i < w->n; i++)
		ticket[i] = &w->v[i] == self ? 0 : ++w->v[i].stats_asked;
	/* a worker waiting in here for others answers on this, not its loop */
	pthread_cond_broadcast(&w->stats_cond);
	pthread_mutex_unlock(&w->stats_lock);
	for (unsigned i = 0; i < w->n; i++)
		if (&w->v[i] != self)
			ev_async_send(w->v[i].loop, &w->v[i].wake);
	memset(stats, 0, sizeof(*stats));
	if (self) {
		/* this thread's own context: read here */
		memset(&one, 0, sizeof(one));
		engine_read(self, &one);
		engine_add(stats, &one);
	}
	pthread_mutex_lock(&w->stats_lock);
	for (;;) {
		/* a worker asking answers those who ask it meanwhile: its loop
		 * does not run until this returns */
		if (self)
			engine_answer_locked(self);
		if (engine_all_answered(w, ticket, self) || rc)
			break;
		rc = pthread_cond_timedwait(&w->stats_cond, &w->stats_lock, &deadline);
	}
	for (unsigned i = 0; i < w->n; i++) {
		late[i] = false;
		if (&w->v[i] == self)
			continue;
		if (w->v[i].stats_answered < ticket[i]) {
			late[i] = true;
			n_late++;
		}
		engine_add(stats, &w->v[i].engine);
	}
	pthread_mutex_unlock(&w->stats_lock);
	for (unsigned i = 0; i < w->n; i++)
		if (late[i])
			RDMX_SEC_WARN(
			    "rpc_secure: worker %u did not answer for its engine counters "
			    "within %u ms: its counters are from its previous answer",
			    i, timeout_ms);
	return n_late ? RDMX_E_TIMEDOUT : RDMX_OK;
}

int rdmx_rpc_secure_workers_index_of(const struct rdmx_rpc_secure_workers *w,
                                     const struct rdmx_rpc_secure_server *srv)
{
	if (!w || !srv)
		return -1;
	for (unsigned i = 0; i < w->n; i++)
		if (w->v[i].srv_id == (const void *)srv)
			return (int)i;
	return -1;
}

int rdmx_rpc_secure_workers_destroy(struct rdmx_rpc_secure_workers **wp)
{
	struct rdmx_rpc_secure_workers *w;

	if (!wp || !*wp)
		return RDMX_OK;
	w = *wp;
	for (unsigned i = 0; i < w->n; i++)
		if (w->v[i].running && pthread_equal(w->v[i].thread, pthread_self()))
			return RDMX_E_BAD_STATE; /* a worker cannot join itself */
	/* worker 0 first: once its listener is gone nothing is dispatched */
	for (unsigned i = 0; i < w->n; i++)
		worker_fini(&w->v[i]);
	pthread_cond_destroy(&w->stats_cond);
	pthread_mutex_destroy(&w->stats_lock);
	free(w->v);
	free(w);
	*wp = NULL;
	return RDMX_OK;
}
