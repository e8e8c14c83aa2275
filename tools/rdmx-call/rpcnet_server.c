/* rpcnet server side (rpcnet.h).
 *
 * Secure: rdmx_rpc_server_listen_secure (rdmx/rpc_secure.h) does it all.
 * Plain: one context on the default device, driven by the libev loop,
 * accepting connections through the engine's rdma_cm-style listener; each
 * gets a channel and an RPC endpoint on the shared server. Endpoints that
 * close are marked dead from their callbacks and freed from the loop's
 * prepare watcher, never from inside the callback that reported them. */
#include "rpcnet.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#define SPIN_NS 50000u /* keep polling this long after the last completion */

struct peer {
	struct rpcnet_server *s;
	struct rdmx_chan *chan;
	struct rdmx_rpc_conn *rpc;
	char who[160];
	bool dead;
	struct peer *next;
};

struct rpcnet_server {
	struct ev_loop *loop;
	struct rdmx_rpc_server *rpc;
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_host *host;
	struct rdmx_rpc_secure_server *secure;
	ev_io pe_io;
	ev_timer timer;
	ev_prepare prepare;
	struct peer *peers;
	unsigned n_peers;
	uint16_t port;
	bool listening, verbose, kick, any_dead, watching;
};

static void say(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- peers ---- */

static void peer_closed(struct rdmx_rpc_conn *rc, int status, void *arg)
{
	struct peer *p = arg;

	(void)rc;
	if (p->s->verbose)
		fprintf(stderr, "rpcnet: %s closed (%s)\n", p->who, rdmx_strerror(status));
	p->dead = true;
	p->s->any_dead = true;
}

static void peer_free(struct peer *p)
{
	rdmx_rpc_conn_destroy(&p->rpc);
	rdmx_chan_destroy(&p->chan);
	free(p);
}

static void reap(struct rpcnet_server *s)
{
	struct peer **pp = &s->peers;

	s->any_dead = false;
	while (*pp) {
		struct peer *p = *pp;

		if (!p->dead) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		s->n_peers--;
		peer_free(p);
	}
}

/* A channel and an RPC endpoint on a new connection; the channel owns it. */
static struct peer *peer_add(struct rpcnet_server *s, struct rdmx_conn *conn, const char *who)
{
	struct peer *p = calloc(1, sizeof(*p));
	int rc;

	if (!p) {
		rdmx_conn_disconnect(conn);
		return NULL;
	}
	p->s = s;
	snprintf(p->who, sizeof(p->who), "%s", who);
	rc = rdmx_chan_create(s->host, conn, &p->chan);
	if (rc) {
		rdmx_conn_disconnect(conn);
		goto fail;
	}
	rc = rdmx_chan_set_max_msg_size(p->chan, RPCNET_MAX_MSG);
	if (!rc)
		rc = rdmx_rpc_conn_create(p->chan, s->rpc, &p->rpc); /* starts the channel */
	if (!rc)
		rc = rdmx_rpc_conn_set_closed_cb(p->rpc, peer_closed, p);
	if (rc)
		goto fail;
	p->next = s->peers;
	s->peers = p;
	s->n_peers++;
	s->kick = true;
	if (s->verbose)
		fprintf(stderr, "rpcnet: %s connected\n", p->who);
	return p;
fail:
	fprintf(stderr, "rpcnet: endpoint for %s: %s\n", who, rdmx_strerror(rc));
	peer_free(p);
	return NULL;
}

/* ---- driving the progress engine from the loop ---- */

static void schedule_timer(struct rpcnet_server *s)
{
	int ms = rdmx_chan_host_next_timer_ms(s->host);

	ev_timer_stop(s->loop, &s->timer);
	if (ms >= 0) {
		ev_timer_set(&s->timer, ms / 1000.0, 0.);
		ev_timer_start(s->loop, &s->timer);
	}
}

/* Runs what is ready (spinning briefly for more), then re-arms the fd. */
static void drive(struct rpcnet_server *s)
{
	for (;;) {
		uint64_t until = now_ns() + SPIN_NS;
		int n;

		do {
			n = rdmx_chan_host_progress(s->host);
			if (n > 0)
				until = now_ns() + SPIN_NS;
		} while (n >= 0 && now_ns() < until);
		if (s->any_dead)
			reap(s);
		if (rdmx_pe_request_notification(s->pe))
			break;
		/* what arrived before arming does not wake the fd */
		n = rdmx_chan_host_progress(s->host);
		if (n <= 0)
			break;
		rdmx_pe_clear_notification(s->pe);
	}
	s->kick = false;
	schedule_timer(s);
}

static void pe_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rpcnet_server *s = w->data;

	(void)loop;
	(void)revents;
	rdmx_pe_clear_notification(s->pe);
	drive(s);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rpcnet_server *s = w->data;

	(void)loop;
	(void)revents;
	rdmx_pe_clear_notification(s->pe);
	drive(s);
}

static void prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct rpcnet_server *s = w->data;

	(void)loop;
	(void)revents;
	if (s->any_dead)
		reap(s);
	if (s->kick) {
		rdmx_pe_clear_notification(s->pe);
		drive(s);
	}
}

/* ---- plain: the engine's listener ---- */

static void on_request(struct rdmx_conn *conn, void *cud)
{
	(void)cud;
	rdmx_conn_accept(conn, NULL, 0);
}

static void on_established(struct rdmx_conn *conn, void *ud, void *cud)
{
	struct rpcnet_server *s = cud;
	const struct rdmx_addr *addr;
	const char *text = "?";
	uint16_t port = 0;
	char who[160];

	(void)ud;
	if (rdmx_conn_get_addr(conn, &addr) == 0)
		rdmx_addr_get_params(addr, NULL, &text, &port);
	snprintf(who, sizeof(who), "%s:%u", text, port);
	peer_add(s, conn, who);
}

/* ---- secure: rdmx_rpc_server_listen_secure ---- */

static void secure_connected(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_conn *rc,
                             void *arg)
{
	const char *cert = "?", *hello = "";

	(void)srv;
	(void)arg;
	rdmx_rpc_secure_get_peer_names(rc, &cert, &hello);
	fprintf(stderr, "rpcnet: %s%s%s connected\n", cert, *hello ? "/" : "", hello);
}

static void secure_gone(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_conn *rc, int status,
                        void *arg)
{
	const char *cert = "?", *hello = "";

	(void)srv;
	(void)arg;
	rdmx_rpc_secure_get_peer_names(rc, &cert, &hello);
	fprintf(stderr, "rpcnet: %s%s%s closed (%s)\n", cert, *hello ? "/" : "", hello,
	        rdmx_strerror(status));
}

static int secure_create(struct rpcnet_server *s, const struct rpcnet_server_opts *opts, char *err,
                         size_t err_len)
{
	struct rdmx_rpc_secure_server_ops ops = {NULL, NULL, NULL, 0};
	struct rdmx_rpc_secure_opts so;
	int rc;

	if (opts->verbose) {
		ops.connected = secure_connected;
		ops.gone = secure_gone;
	}
	rdmx_rpc_secure_opts_init(&so);
	so.name = opts->name;
	so.max_msg_size = RPCNET_MAX_MSG;
	rc = rdmx_rpc_server_listen_secure(s->loop, s->rpc, opts->tls, opts->host, opts->port, &ops,
	                                   &so, s, &s->secure);
	if (!rc)
		rc = rdmx_rpc_secure_server_get_port(s->secure, &s->port);
	if (rc)
		say(err, err_len, "secure listener on %s:%u: %s", opts->host ? opts->host : "*",
		    opts->port, rdmx_strerror(rc));
	return rc;
}

/* ---- life cycle ---- */

int rpcnet_server_create(struct ev_loop *loop, struct rdmx_rpc_server *rpc,
                         const struct rpcnet_server_opts *opts, struct rpcnet_server **server,
                         char *err, size_t err_len)
{
	struct rdmx_chan_host_attr attr;
	struct rpcnet_server *s;
	int fd, rc;

	if (!loop || !rpc || !opts || !server)
		return RDMX_E_INVAL;
	if (!opts->tls && !opts->port) {
		say(err, err_len, "a plain listener needs a port");
		return RDMX_E_INVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return RDMX_E_NOMEM;
	s->loop = loop;
	s->rpc = rpc;
	s->verbose = opts->verbose;
	if (opts->tls) {
		rc = secure_create(s, opts, err, err_len);
		if (rc)
			goto fail;
		*server = s;
		return 0;
	}
	rdmx_chan_host_attr_init(&attr);
	attr.request_cb = on_request;
	attr.established_cb = on_established;
	attr.user_data = s;
	rc = rdmx_dev_open(NULL, &s->dev);
	if (rc) {
		say(err, err_len, "no device: %s", rdmx_strerror(rc));
		goto fail;
	}
	rc = rdmx_pe_create(&s->pe);
	if (!rc)
		rc = rdmx_ctx_create(s->dev, s->pe, &s->ctx);
	if (!rc)
		rc = rdmx_ctx_set_max_connections(s->ctx, 256);
	if (!rc)
		rc = rdmx_chan_host_create(s->ctx, s->pe, &attr, &s->host);
	if (!rc)
		rc = rdmx_ctx_start(s->ctx);
	if (!rc)
		rc = rdmx_pe_get_fd(s->pe, &fd);
	if (rc) {
		say(err, err_len, "engine setup on %s: %s", rdmx_dev_name(s->dev),
		    rdmx_strerror(rc));
		goto fail;
	}
	rc = rdmx_ctx_listen(s->ctx, opts->port);
	if (rc) {
		say(err, err_len, "listening on port %u (%s): %s", opts->port,
		    rdmx_dev_name(s->dev), rdmx_strerror(rc));
		goto fail;
	}
	s->listening = true;
	s->port = opts->port;
	ev_io_init(&s->pe_io, pe_cb, fd, EV_READ);
	s->pe_io.data = s;
	ev_timer_init(&s->timer, timer_cb, 0., 0.);
	s->timer.data = s;
	ev_prepare_init(&s->prepare, prepare_cb);
	s->prepare.data = s;
	ev_io_start(loop, &s->pe_io);
	ev_prepare_start(loop, &s->prepare);
	s->watching = true;
	s->kick = true;
	*server = s;
	return 0;
fail:
	rpcnet_server_destroy(&s);
	return rc;
}

uint16_t rpcnet_server_port(const struct rpcnet_server *server)
{
	return server ? server->port : 0;
}

const char *rpcnet_server_device(const struct rpcnet_server *server)
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_ctx *ctx;

	if (!server)
		return "";
	if (server->dev)
		return rdmx_dev_name(server->dev);
	ctx = server->secure
	          ? rdmx_chan_host_get_ctx(rdmx_rpc_secure_server_get_host(server->secure))
	          : NULL;
	if (!ctx || rdmx_ctx_get_dev(ctx, &dev) || !dev)
		return "";
	return rdmx_dev_name(dev);
}

unsigned rpcnet_server_peers(const struct rpcnet_server *server)
{
	if (!server)
		return 0;
	return server->secure ? rdmx_rpc_secure_server_get_clients(server->secure)
	                      : server->n_peers;
}

void rpcnet_server_destroy(struct rpcnet_server **server)
{
	struct rpcnet_server *s;

	if (!server || !*server)
		return;
	s = *server;
	if (s->watching) {
		ev_io_stop(s->loop, &s->pe_io);
		ev_timer_stop(s->loop, &s->timer);
		ev_prepare_stop(s->loop, &s->prepare);
	}
	rdmx_rpc_secure_server_destroy(&s->secure);
	if (s->listening)
		rdmx_ctx_stop_listen(s->ctx);
	while (s->peers) {
		struct peer *p = s->peers;

		s->peers = p->next;
		peer_free(p);
	}
	if (s->ctx) {
		enum rdmx_ctx_state st;

		if (rdmx_ctx_get_state(s->ctx, &st) == 0 && st == RDMX_CTX_RUNNING)
			rdmx_ctx_stop(s->ctx);
	}
	rdmx_chan_host_destroy(&s->host);
	rdmx_ctx_destroy(&s->ctx);
	rdmx_pe_destroy(&s->pe);
	rdmx_dev_close(&s->dev);
	free(s);
	*server = NULL;
}
