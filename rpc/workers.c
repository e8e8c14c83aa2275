/* Multi-worker RPC server over the engine's cm flow (rdmx/rpc.h,
 * rdmx_rpc_workers_*): N threads, each with its own progress engine,
 * context and channel worker on one device, serving one rdmx_rpc_server.
 *
 * Worker 0's context listens; every other context joins its listener
 * (rdmx_ctx_listen_join), so the provider deals each accepted connection to
 * the next context in turn, before its cm request is read: from then on the
 * connection, its channel, its endpoint and every call on it belong to that
 * worker's thread. A worker's thread runs its engine (progress, then a
 * sleep on the engine's fd and the worker's eventfd, no longer than the
 * next timer) and, between two progress calls, releases the clients whose
 * endpoint closed (never from inside an engine callback). The eventfd only
 * carries the stop: nothing else crosses threads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/status.h>

#include "chan/chan_rpc.h"
#include "common/log.h"

struct client {
	struct rpcw *wk;
	struct rdmx_chan *chan;
	struct rdmx_rpc_ep *ep;
	bool dead;
	int status;
	struct client *prev, *next;
};

struct rpcw { /* one worker */
	struct rdmx_rpc_workers *w;
	unsigned index;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
	int wake_fd;
	pthread_t thread;
	bool running;
	atomic_bool stop;
	struct client *clients;
	bool any_dead;
	atomic_uint_fast64_t assigned;
	atomic_uint live;
};

struct rdmx_rpc_workers {
	unsigned n;
	struct rpcw *v;
	struct rdmx_rpc_server *server;
	struct rdmx_rpc_workers_ops ops;
	void *arg;
};

/* ---- clients (on their worker's thread) ---- */

static void client_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	struct client *c = arg;

	(void)ep;
	if (!c->dead) {
		c->dead = true;
		c->status = status;
		c->wk->any_dead = true;
	}
}

static void client_release(struct client *c)
{
	struct rpcw *wk = c->wk;

	/* a live client (the workers stop) is closed as the end of its
	 * connection would close it: its held calls are cancelled (their
	 * cancel callbacks run) before gone, which may free what they use */
	rdmx__rpc_ep_close(c->ep, c->status);
	if (wk->w->ops.gone)
		wk->w->ops.gone(wk->w, wk->index, c->ep, c->status, wk->w->arg);
	rdmx_rpc_ep_destroy(&c->ep);
	rdmx_chan_destroy(&c->chan);
	if (c->prev)
		c->prev->next = c->next;
	else
		wk->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	atomic_fetch_sub(&wk->live, 1);
	free(c);
}

static void reap(struct rpcw *wk)
{
	struct client *c = wk->clients;

	if (!wk->any_dead)
		return;
	wk->any_dead = false;
	while (c) {
		struct client *next = c->next;

		if (c->dead)
			client_release(c);
		c = next;
	}
}

static void on_request(struct rdmx_conn *conn, void *ud)
{
	struct rpcw *wk = ud;
	int rc;

	atomic_fetch_add(&wk->assigned, 1);
	rc = rdmx_conn_accept(conn, NULL, 0);
	if (rc)
		RDMX_WARN("rpc workers: worker %u cannot accept a connection: %s", wk->index,
		          rdmx_err_name(rc));
}

static void on_established(struct rdmx_conn *conn, void *cud, void *ud)
{
	struct rpcw *wk = ud;
	struct client *c = calloc(1, sizeof(*c));
	int rc = c ? rdmx_chan_create(wk->worker, conn, &c->chan) : RDMX_E_NOMEM;

	(void)cud;
	if (!rc)
		rc = rdmx_chan_start(c->chan);
	if (!rc)
		rc = rdmx_rpc_ep_create(c->chan, wk->w->server, &c->ep);
	if (!rc)
		rc = rdmx_rpc_ep_set_closed_cb(c->ep, client_closed, c);
	if (rc) {
		RDMX_WARN("rpc workers: worker %u cannot serve a client: %s", wk->index,
		          rdmx_err_name(rc));
		if (c) {
			rdmx_rpc_ep_destroy(&c->ep);
			rdmx_chan_destroy(&c->chan);
			free(c);
		}
		rdmx_conn_disconnect(conn);
		return;
	}
	c->wk = wk;
	c->next = wk->clients;
	if (wk->clients)
		wk->clients->prev = c;
	wk->clients = c;
	atomic_fetch_add(&wk->live, 1);
	if (wk->w->ops.connected)
		wk->w->ops.connected(wk->w, wk->index, c->ep, wk->w->arg);
}

/* ---- a worker's engine and thread ---- */

static int worker_open(struct rdmx_rpc_workers *w, unsigned i, struct rdmx_dev *dev)
{
	struct rpcw *wk = &w->v[i];
	struct rdmx_chan_worker_attr attr;
	int rc;

	wk->w = w;
	wk->index = i;
	atomic_init(&wk->stop, false);
	atomic_init(&wk->assigned, 0);
	atomic_init(&wk->live, 0);
	wk->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wk->wake_fd < 0) {
		RDMX_ERR_ERRNO("rpc workers: eventfd for worker %u", i);
		return RDMX_E_PROVIDER;
	}
	rc = rdmx_pe_create(&wk->pe);
	if (!rc)
		rc = rdmx_ctx_create(dev, wk->pe, &wk->ctx);
	if (rc)
		return rc;
	rdmx_chan_worker_attr_init(&attr);
	attr.request_cb = on_request;
	attr.established_cb = on_established;
	attr.user_data = wk;
	rc = rdmx_chan_worker_create(wk->ctx, wk->pe, &attr, &wk->worker);
	if (!rc)
		rc = rdmx_ctx_start(wk->ctx);
	return rc;
}

/* On the worker's thread once it runs (else on the caller's, before). */
static void worker_close(struct rpcw *wk)
{
	while (wk->clients) {
		struct client *c = wk->clients;

		if (!c->dead) {
			c->dead = true;
			c->status = RDMX_E_CANCELED;
		}
		client_release(c);
	}
	if (wk->ctx)
		rdmx_ctx_stop(wk->ctx);
	rdmx_chan_worker_destroy(&wk->worker);
	rdmx_ctx_destroy(&wk->ctx);
	rdmx_pe_destroy(&wk->pe);
}

static void *worker_main(void *arg)
{
	struct rpcw *wk = arg;
	int pe_fd = -1;

	rdmx_pe_get_fd(wk->pe, &pe_fd);
	while (!atomic_load(&wk->stop)) {
		struct pollfd p[2] = {{pe_fd, POLLIN, 0}, {wk->wake_fd, POLLIN, 0}};
		int n = rdmx_pe_progress(wk->pe);

		reap(wk);
		if (n > 0)
			continue;
		if (n < 0) {
			RDMX_ERR("rpc workers: worker %u progress failed: %s", wk->index,
			         rdmx_err_name(n));
			break;
		}
		if (rdmx_pe_request_notification(wk->pe) == 0 &&
		    poll(p, 2, rdmx_pe_next_timeout_ms(wk->pe)) < 0 && errno != EINTR)
			RDMX_ERR_ERRNO("rpc workers: worker %u poll", wk->index);
		rdmx_pe_clear_notification(wk->pe);
	}
	worker_close(wk);
	return NULL;
}

static void worker_fini(struct rpcw *wk)
{
	if (wk->running) {
		uint64_t one = 1;

		atomic_store(&wk->stop, true);
		if (write(wk->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			RDMX_ERR_ERRNO("rpc workers: waking worker %u", wk->index);
		pthread_join(wk->thread, NULL);
		wk->running = false;
	} else {
		worker_close(wk);
	}
	if (wk->wake_fd >= 0)
		close(wk->wake_fd);
	wk->wake_fd = -1;
}

/* ---- the object ---- */

int rdmx_rpc_workers_listen(unsigned n, struct rdmx_rpc_server *server, struct rdmx_dev *dev,
                            uint16_t port, const struct rdmx_rpc_workers_ops *ops, void *arg,
                            struct rdmx_rpc_workers **out)
{
	struct rdmx_rpc_workers *w;
	sigset_t all, old;
	unsigned i;
	int rc = 0;

	if (n < 1 || n > RDMX_RPC_MAX_WORKERS || !server || !dev || !port || !out)
		return RDMX_E_INVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return RDMX_E_NOMEM;
	w->v = calloc(n, sizeof(*w->v));
	if (!w->v) {
		free(w);
		return RDMX_E_NOMEM;
	}
	w->server = server;
	w->arg = arg;
	if (ops)
		w->ops = *ops;
	for (i = 0; i < n; i++)
		w->v[i].wake_fd = -1;
	w->n = n;
	for (i = 0; i < n && !rc; i++)
		rc = worker_open(w, i, dev);
	if (!rc)
		rc = rdmx_ctx_listen(w->v[0].ctx, port);
	for (i = 1; i < n && !rc; i++)
		rc = rdmx_ctx_listen_join(w->v[i].ctx, w->v[0].ctx);
	if (rc)
		goto fail;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < n && !rc; i++) {
		int err = pthread_create(&w->v[i].thread, NULL, worker_main, &w->v[i]);

		if (err) {
			RDMX_ERR("rpc workers: cannot start worker %u: %s", i, strerror(err));
			rc = RDMX_E_PROVIDER;
		} else {
			w->v[i].running = true;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto fail;
	*out = w;
	return 0;

fail:
	rdmx_rpc_workers_destroy(&w);
	return rc;
}

unsigned rdmx_rpc_workers_get_count(const struct rdmx_rpc_workers *w)
{
	return w ? w->n : 0;
}

uint64_t rdmx_rpc_workers_get_assigned(const struct rdmx_rpc_workers *w, unsigned index)
{
	return w && index < w->n ? atomic_load(&w->v[index].assigned) : 0;
}

uint32_t rdmx_rpc_workers_get_clients(const struct rdmx_rpc_workers *w, unsigned index)
{
	return w && index < w->n ? atomic_load(&w->v[index].live) : 0;
}

int rdmx_rpc_workers_destroy(struct rdmx_rpc_workers **wp)
{
	struct rdmx_rpc_workers *w;

	if (!wp || !*wp)
		return 0;
	w = *wp;
	for (unsigned i = 0; i < w->n; i++)
		if (w->v[i].running && pthread_equal(w->v[i].thread, pthread_self()))
			return RDMX_E_BAD_STATE; /* a worker cannot join itself */
	/* worker 0 first: its listener goes, nothing more is dealt */
	for (unsigned i = 0; i < w->n; i++)
		worker_fini(&w->v[i]);
	free(w->v);
	free(w);
	*wp = NULL;
	return 0;
}
