/* rdmx bootstrap server on libev (target rdmx_secure_ev): the TLS listener
 * gives established sessions (client certificate and allow-list accepted);
 * the server greets each with its hello, the client must answer with its
 * own within the handshake timeout; then the exchange, and the session is
 * watched for liveness until its owner destroys the bootstrap. A session
 * that waits for its peer to read (our frames queued, or the TLS layer's
 * answer to a KeyUpdate not taken by the full socket) for longer than
 * write_timeout_ms is ended: a peer that floods KeyUpdates and never reads
 * would otherwise hold it, and its descriptor, for as long as it likes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "bootstrap_internal.h"
#include "tls_internal.h"

/* How long a session may wait for its peer to read (rdmx-bootstrapd's
 * frame timeout has the same default): far above what a peer that reads
 * ever makes us wait, the few bytes we write after the exchange being
 * TLS's own. */
#define WRITE_TIMEOUT_MS 10000u
/* A certificate name escaped for a log line (rdmx__log_escape): a printable
 * name of up to RDMX_TLS_NAME_MAX bytes shows whole, a longer escape is cut
 * with "...". */
#define LOG_NAME 300

struct session {
	struct rdmx_bootstrap_server *srv;
	struct rdmx_bootstrap *b;
	ev_io io;
	ev_timer timer; /* the client's hello must come within timeout_ms */
	ev_timer stall; /* runs while the session waits for its peer to read */
	int established;
	struct session *prev, *next;
};

struct rdmx_bootstrap_server {
	struct ev_loop *loop;
	struct rdmx_ctx *ctx;
	struct rdmx_tls_listener *listener;
	char *name;
	struct rdmx_bootstrap_server_ops ops;
	void *arg;
	uint32_t timeout_ms;
	uint32_t write_timeout_ms;
	struct session *sessions;
};

static void unlink_session(struct session *s)
{
	struct rdmx_bootstrap_server *srv = s->srv;

	ev_io_stop(srv->loop, &s->io);
	ev_timer_stop(srv->loop, &s->timer);
	ev_timer_stop(srv->loop, &s->stall);
	if (s->prev)
		s->prev->next = s->next;
	else
		srv->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
}

/* rdmx_bootstrap_destroy of an established one: forget it. */
static void destroy_hook(struct rdmx_bootstrap *b, void *arg)
{
	struct session *s = arg;

	(void)b;
	unlink_session(s);
	free(s);
}

static void session_drop(struct session *s)
{
	rdmx__bootstrap_set_hook(s->b, NULL, NULL);
	unlink_session(s);
	rdmx_bootstrap_destroy(&s->b);
	free(s);
}

/* The clock of a session waiting for its peer to read starts when it
 * begins to wait and stops when it no longer does. */
static void stall_watch(struct session *s)
{
	struct rdmx_bootstrap_server *srv = s->srv;

	if (!rdmx__tls_conn_waits_to_write(rdmx__bootstrap_tls(s->b))) {
		ev_timer_stop(srv->loop, &s->stall);
	} else if (!ev_is_active(&s->stall)) {
		ev_timer_set(&s->stall, srv->write_timeout_ms / 1000.0, 0.0);
		ev_timer_start(srv->loop, &s->stall);
	}
}

/* Watches for what the TLS layer waits for, and only that: a read that
 * must first write (its answer to a KeyUpdate, the socket full) gets no
 * further on a readable socket, so watching readability then spins. */
static void rearm(struct session *s, int wants)
{
	int fd, events = (wants & RDMX_TLS_WANT_WRITE) ? EV_WRITE : 0;

	if ((wants & RDMX_TLS_WANT_READ) || !events)
		events |= EV_READ;
	rdmx_tls_conn_get_fd(rdmx__bootstrap_tls(s->b), &fd);
	ev_io_stop(s->srv->loop, &s->io);
	ev_io_set(&s->io, fd, events);
	ev_io_start(s->srv->loop, &s->io);
	stall_watch(s);
}

/* After queueing a frame: read on, and write what the socket did not take. */
static int wants_after_send(struct session *s)
{
	return RDMX_TLS_WANT_READ |
	       (rdmx_tls_conn_want_write(rdmx__bootstrap_tls(s->b)) ? RDMX_TLS_WANT_WRITE : 0);
}

static int decide(struct rdmx_bootstrap *b, const void **reply, size_t *reply_len, void *arg)
{
	struct rdmx_bootstrap_server *srv = arg;

	return srv->ops.request ? srv->ops.request(srv, b, reply, reply_len, srv->arg) : 0;
}

static void established_io(struct session *s)
{
	struct rdmx_bootstrap_server *srv = s->srv;
	struct rdmx_bootstrap *b = s->b;
	int wants;
	int ret = rdmx_bootstrap_check_wants(b, &wants);

	if (ret == RDMX_OK) {
		rearm(s, wants);
		return;
	}
	/* stop watching; the owner still destroys b (and with it s) */
	ev_io_stop(srv->loop, &s->io);
	ev_timer_stop(srv->loop, &s->stall);
	if (srv->ops.lost)
		srv->ops.lost(srv, b, ret, srv->arg);
}

static void exchange_io(struct session *s)
{
	struct rdmx_bootstrap_server *srv = s->srv;
	struct rdmx_tls_conn *tls = rdmx__bootstrap_tls(s->b);
	const void *frame;
	size_t len;
	int ret = rdmx__tls_conn_step(tls, &frame, &len);

	if (ret > 0) {
		rearm(s, ret);
		return;
	}
	if (ret < 0) {
		session_drop(s);
		return;
	}
	ret = rdmx__bootstrap_accept(s->b, frame, len, decide, srv);
	rdmx_tls_conn_flush(tls);
	if (ret) {
		session_drop(s);
		return;
	}
	s->established = 1;
	ev_timer_stop(srv->loop, &s->timer);
	rdmx__bootstrap_set_hook(s->b, destroy_hook, s);
	rearm(s, wants_after_send(s));
	srv->ops.established(srv, s->b, srv->arg);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct session *s = w->data;

	(void)loop;
	(void)revents;
	if (s->established)
		established_io(s);
	else
		exchange_io(s);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct session *s = w->data;
	const char *peer = "unknown";

	(void)loop;
	(void)revents;
	rdmx_tls_conn_get_peer_addr(rdmx__bootstrap_tls(s->b), &peer);
	RDMX_SEC_WARN("bootstrap: no hello from %s within %u ms, dropped", peer,
	              s->srv->timeout_ms);
	session_drop(s);
}

/* The peer has left the session waiting to write for write_timeout_ms:
 * dropped before the exchange; after it, lost as a dead channel is (the
 * engine connection disconnected, the owner told, who destroys it). */
static void stall_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct session *s = w->data;
	struct rdmx_bootstrap_server *srv = s->srv;
	struct rdmx_bootstrap *b = s->b;
	const char *addr = "unknown", *cert = "", *hello = "";
	char cert_log[LOG_NAME], hello_log[LOG_NAME];

	(void)revents;
	rdmx_tls_conn_get_peer_addr(rdmx__bootstrap_tls(b), &addr);
	rdmx_tls_conn_get_peer_name(rdmx__bootstrap_tls(b), &cert);
	if (s->established)
		rdmx_bootstrap_get_peer_names(b, &cert, &hello);
	/* the names are the peer's text: a certificate allowed by "*" may
	 * hold any byte but NUL */
	rdmx__log_escape(cert, strlen(cert), cert_log, sizeof(cert_log));
	rdmx__log_escape(hello, strlen(hello), hello_log, sizeof(hello_log));
	/* "at least": the bound is what the session waited since its clock
	 * last started, and rdmx__bootstrap_server_set_write_timeout restarts
	 * the clock of a session already waiting */
	RDMX_SEC_WARN("bootstrap: %s (peer %s%s%s) does not read: "
	              "waited at least %u ms to write, %s",
	              cert_log, addr, *hello ? ", hello name " : "", hello_log,
	              srv->write_timeout_ms, s->established ? "disconnected" : "dropped");
	if (!s->established) {
		session_drop(s);
		return;
	}
	ev_io_stop(loop, &s->io);
	rdmx__bootstrap_lost(b, RDMX_E_TIMEDOUT);
	/* may destroy b, and with it s */
	if (srv->ops.lost)
		srv->ops.lost(srv, b, RDMX_E_TIMEDOUT, srv->arg);
}

static void tls_established(struct rdmx_tls_listener *l, struct rdmx_tls_conn *tls, void *arg)
{
	struct rdmx_bootstrap_server *srv = arg;
	struct session *s = calloc(1, sizeof(*s));
	int fd;

	(void)l;
	if (!s || rdmx__bootstrap_create(srv->ctx, tls, &s->b)) {
		RDMX_SEC_ERR("bootstrap: out of memory for a session");
		free(s);
		rdmx_tls_conn_destroy(&tls);
		return;
	}
	s->srv = srv;
	s->next = srv->sessions;
	if (srv->sessions)
		srv->sessions->prev = s;
	srv->sessions = s;
	rdmx_tls_conn_get_fd(tls, &fd);
	ev_io_init(&s->io, io_cb, fd, EV_READ);
	s->io.data = s;
	ev_timer_init(&s->timer, timer_cb, srv->timeout_ms / 1000.0, 0.0);
	s->timer.data = s;
	ev_timer_start(srv->loop, &s->timer);
	ev_timer_init(&s->stall, stall_cb, srv->write_timeout_ms / 1000.0, 0.0);
	s->stall.data = s;
	/* server speaks first: the client holds its details back until our
	 * hello tells it that its certificate was accepted */
	if (rdmx__bootstrap_greet(s->b, srv->name)) {
		const char *peer = "unknown";

		rdmx_tls_conn_get_peer_addr(tls, &peer);
		RDMX_SEC_WARN("bootstrap: could not send the hello to %s, dropped", peer);
		session_drop(s);
		return;
	}
	rearm(s, wants_after_send(s));
	/* a frame may already sit in TLS buffers */
	ev_feed_event(srv->loop, &s->io, EV_READ);
}

static int server_create(struct ev_loop *loop, struct rdmx_ctx *ctx, struct rdmx_tls_config *cfg,
                         bool bound, const char *host, uint16_t port, const char *name,
                         const struct rdmx_bootstrap_server_ops *ops, void *arg,
                         struct rdmx_bootstrap_server **out)
{
	struct rdmx_bootstrap_server *srv;
	int ret;

	if (!loop || !ctx || !cfg || !ops || !ops->established || !out ||
	    (name && strlen(name) > RDMX_BOOTSTRAP_MAX_NAME))
		return RDMX_E_INVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return RDMX_E_NOMEM;
	srv->name = strdup(name ? name : "");
	if (!srv->name) {
		free(srv);
		return RDMX_E_NOMEM;
	}
	srv->loop = loop;
	srv->ctx = ctx;
	srv->ops = *ops;
	srv->arg = arg;
	rdmx_tls_config_get_handshake_timeout(cfg, &srv->timeout_ms);
	srv->write_timeout_ms = WRITE_TIMEOUT_MS;
	ret = bound ? rdmx_tls_listener_create(loop, cfg, host, port, tls_established, srv,
	                                       &srv->listener)
	            : rdmx__tls_listener_create_unbound(loop, cfg, tls_established, srv,
	                                                &srv->listener);
	if (ret) {
		free(srv->name);
		free(srv);
		return ret;
	}
	*out = srv;
	return RDMX_OK;
}

int rdmx_bootstrap_server_create(struct ev_loop *loop, struct rdmx_ctx *ctx,
                                 struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                                 const char *name, const struct rdmx_bootstrap_server_ops *ops,
                                 void *arg, struct rdmx_bootstrap_server **out)
{
	return server_create(loop, ctx, cfg, true, host, port, name, ops, arg, out);
}

int rdmx__bootstrap_server_create_unbound(struct ev_loop *loop, struct rdmx_ctx *ctx,
                                          struct rdmx_tls_config *cfg, const char *name,
                                          const struct rdmx_bootstrap_server_ops *ops, void *arg,
                                          struct rdmx_bootstrap_server **out)
{
	return server_create(loop, ctx, cfg, false, NULL, 0, name, ops, arg, out);
}

struct rdmx_tls_listener *rdmx__bootstrap_server_listener(const struct rdmx_bootstrap_server *srv)
{
	return srv->listener;
}

void rdmx__bootstrap_server_set_write_timeout(struct rdmx_bootstrap_server *srv, uint32_t ms)
{
	srv->write_timeout_ms = ms ? ms : WRITE_TIMEOUT_MS;
	/* the sessions waiting now restart their clock with the new bound */
	for (struct session *s = srv->sessions; s; s = s->next) {
		if (!ev_is_active(&s->stall))
			continue;
		ev_timer_stop(srv->loop, &s->stall);
		ev_timer_set(&s->stall, srv->write_timeout_ms / 1000.0, 0.0);
		ev_timer_start(srv->loop, &s->stall);
	}
}

void rdmx__bootstrap_server_adopt(struct rdmx_bootstrap_server *srv, int fd,
                                  const struct sockaddr_storage *src)
{
	rdmx__tls_listener_adopt(srv->listener, fd, src);
}

int rdmx_bootstrap_server_get_port(const struct rdmx_bootstrap_server *srv, uint16_t *port)
{
	if (!srv || !port)
		return RDMX_E_INVAL;
	return rdmx_tls_listener_get_port(srv->listener, port);
}

int rdmx_bootstrap_server_destroy(struct rdmx_bootstrap_server **sp)
{
	struct rdmx_bootstrap_server *srv;

	if (!sp || !*sp)
		return RDMX_OK;
	srv = *sp;
	rdmx_tls_listener_destroy(&srv->listener);
	while (srv->sessions) {
		struct session *s = srv->sessions;

		if (s->established) {
			/* stays with its owner, no longer watched */
			rdmx__bootstrap_set_hook(s->b, NULL, NULL);
			unlink_session(s);
			free(s);
		} else {
			session_drop(s);
		}
	}
	free(srv->name);
	free(srv);
	*sp = NULL;
	return RDMX_OK;
}
