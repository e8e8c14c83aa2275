/* Secure RPC server on libev (library rdmx_secure_ev): a bootstrap server
 * (mutual TLS, hello, engine details) whose request callback checks the RPC
 * hello and the application's accept callback, and whose established
 * callback builds a channel and an RPC endpoint on the shared rdmx_rpc_server
 * for each client. The engine (one context and channel worker for every
 * client) is driven from the same loop through rdmx_ev.
 *
 * A client goes away for three reasons, seen in three callbacks: its TLS
 * session is lost (bootstrap lost: the bootstrap has disconnected the engine
 * connection), its channel closes (RPC closed callback: engine connection
 * ended or protocol violation), or the engine connection ends (worker
 * callbacks: the bootstrap must let go of it). Each marks the session dead;
 * dead sessions are released from a prepare watcher of the loop, outside
 * every engine and TLS callback, where destroying the endpoint, the channel
 * and the bootstrap (which closes the TLS session) is safe. A prepare
 * watcher runs on every loop iteration before the loop sleeps, however many
 * events are pending (an idle watcher would starve while any is), so a dead
 * session never outlives the iteration that saw it die. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include <rdmx/bootstrap.h>
#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/ev.h>
#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>

#include "bootstrap_internal.h"
#include "chan/chan_rpc.h"
#include "common/share.h"
#include "rpc_secure_internal.h"
#include "tls_internal.h"

#define RPC_SECURE_LOG_NAME 300 /* a peer name escaped for the log */

struct session {
	struct rdmx_rpc_secure_conn conn; /* first: what the callbacks get */
	struct rdmx_rpc_secure_server *srv;
	bool dead;
	int status;
	struct session *prev, *next;
};

struct rdmx_rpc_secure_server {
	struct ev_loop *loop;
	struct rdmx_rpc_server *server;
	struct rdmx_rpc_secure_server_ops ops;
	void *arg;
	struct rdmx__rpc_hello mine;
	uint8_t reply[RDMX__RPC_HELLO_MAX_LEN];
	size_t reply_len;

	struct rdmx_dev *dev;
	bool own_dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
	struct rdmx_ev *ev;
	struct rdmx_bootstrap_server *bs;

	struct session *sessions;
	uint32_t clients;
	ev_prepare reaper;
	ev_idle kick;           /* keeps the loop from sleeping until the reaper ran */
	ev_tstamp no_data_last; /* log_no_data's rate */
	uint64_t no_data_skipped;
	int depth;       /* our callbacks on the stack */
	bool destroying; /* rdmx_rpc_secure_server_destroy releases every session */
};

static void mark_dead(struct session *s, int status)
{
	if (!s->dead) {
		s->dead = true;
		s->status = status;
		if (!s->conn.lost)
			s->conn.lost = status;
	}
	/* the destroy releases every session itself, and then frees the
	 * reaper: a session may still die inside it (an application callback
	 * that drives the engine), and must not restart the watcher there */
	if (!s->srv->destroying) {
		ev_prepare_start(s->srv->loop, &s->srv->reaper);
		/* A death seen inside another prepare watcher (rdmx_ev's, which
		 * drives the engine: a data connection that failed, say) comes
		 * too late for this iteration's prepare phase, and with nothing
		 * else to do the loop would sleep with the session unreleased
		 * (its TLS session and place held until some other event). An
		 * active idle watcher makes the loop poll without sleeping, so
		 * the reaper runs in the next iteration. */
		ev_idle_start(s->srv->loop, &s->srv->kick);
	}
}

static void session_release(struct session *s)
{
	struct rdmx_rpc_secure_server *srv = s->srv;

	if (s->conn.ep) {
		srv->depth++;
		/* The session's channel closes as the end of its engine connection
		 * would: the endpoint cancels the calls it holds (their cancel
		 * callbacks run), fails its own calls and ends its streams, all
		 * before gone, which may free what those callbacks use; the endpoint
		 * stays valid through gone. The session is dead already: nothing
		 * left for the closed callback. A channel closed already (TLS and
		 * engine connection ending together, the usual case on tcp) did all
		 * this when it closed; on verbs the engine connection's end may come
		 * only after the release. */
		rdmx__rpc_ep_close(s->conn.ep, s->status);
		if (srv->ops.gone)
			srv->ops.gone(srv, &s->conn, s->status, srv->arg);
		srv->depth--;
	}
	rdmx_rpc_ep_destroy(&s->conn.ep);
	rdmx_chan_destroy(&s->conn.chan);
	/* sends close_notify when the session is healthy; lets go of the
	 * engine connection (disconnecting it unless gone) */
	rdmx_bootstrap_destroy(&s->conn.b);
	if (s->prev)
		s->prev->next = s->next;
	else
		srv->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	srv->clients--;
	free(s);
}

static void reap(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct rdmx_rpc_secure_server *srv = w->data;
	struct session *s = srv->sessions;

	(void)revents;
	ev_prepare_stop(loop, w);
	ev_idle_stop(loop, &srv->kick);
	/* a release may end another session: scan until none is dead (each
	 * pass frees at least one, so this ends) */
	while (s) {
		if (s->dead) {
			session_release(s);
			s = srv->sessions;
			continue;
		}
		s = s->next;
	}
	ev_prepare_stop(loop, w);
}

/* Nothing to do: its being active is what counts (mark_dead). */
static void kick(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	ev_idle_stop(loop, w);
}

/* ---- engine connection callbacks (the worker passes them through) ---- */

static void conn_ended(void *cud, int status)
{
	struct rdmx_bootstrap *b = cud;
	void *ud = NULL;

	if (!b)
		return; /* the bootstrap already let go */
	rdmx_bootstrap_conn_gone(b);
	rdmx_bootstrap_get_user_data(b, &ud);
	if (ud)
		mark_dead(ud, status);
}

/* A client whose bootstrap was accepted but whose data connection never
 * came (it did not dial within the connection timeout, or could not be
 * dialed): one line, at most one a second (a client may do this at the
 * cost of a handshake; the engine counts each, connections failed). */
static void log_no_data(struct session *s)
{
	struct rdmx_rpc_secure_server *srv = s->srv;
	const char *addr = "unknown";
	char cert[RPC_SECURE_LOG_NAME];
	ev_tstamp now = ev_now(srv->loop);

	if (srv->no_data_last > 0 && now - srv->no_data_last < 1.0) {
		srv->no_data_skipped++;
		return;
	}
	srv->no_data_last = now;
	rdmx_tls_conn_get_peer_addr(rdmx__bootstrap_tls(s->conn.b), &addr);
	rdmx__log_escape(s->conn.cert_name, strlen(s->conn.cert_name), cert, sizeof(cert));
	if (srv->no_data_skipped)
		RDMX_SEC_WARN(
		    "rpc_secure: client %s (peer %s) dropped: its data connection did not "
		    "come up (%llu more not logged)",
		    cert, addr, (unsigned long long)srv->no_data_skipped);
	else
		RDMX_SEC_WARN(
		    "rpc_secure: client %s (peer %s) dropped: its data connection did not "
		    "come up",
		    cert, addr);
	srv->no_data_skipped = 0;
}

static void on_failure(struct rdmx_conn *conn, void *cud, void *xud)
{
	void *ud = NULL;

	(void)conn;
	(void)xud;
	if (cud)
		rdmx_bootstrap_get_user_data(cud, &ud);
	/* its channel closed first (the worker tells it before us): the
	 * session is dead already, not released before the loop's prepare */
	if (ud)
		log_no_data(ud);
	conn_ended(cud, RDMX_E_CONN_REFUSED);
}

static void on_disconnected(struct rdmx_conn *conn, void *cud, void *xud)
{
	(void)conn;
	(void)xud;
	conn_ended(cud, RDMX_E_DISCONNECTED);
}

static void rpc_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)ep;
	mark_dead(arg, status);
}

/* ---- bootstrap server callbacks ---- */

/* All max_clients clients are in and another's bootstrap asks to come in:
 * a client that bootstraps and never opens its data connection holds a
 * place for the connection timeout at the cost of a handshake, so one
 * certificate must not hold them all (common/share.h): the name holding
 * the most gives up its oldest client. 0: room made (the client given up
 * is released before the loop sleeps). Only at the limit, O(n log n). */
static int make_room(struct rdmx_rpc_secure_server *srv, const char *name, const char *name_log)
{
	struct rdmx__place *live = malloc(srv->clients * sizeof(*live));
	struct session *victim = NULL;
	uint32_t n = 0, mine = 0, most = 0;
	char victim_log[RPC_SECURE_LOG_NAME];
	long top = -1;

	if (!live) {
		RDMX_SEC_WARN("rpc_secure: client %s refused: %u clients already", name_log,
		              srv->clients);
		return -1;
	}
	for (struct session *s = srv->sessions; s && n < srv->clients; s = s->next)
		if (!s->dead)
			live[n++] = (struct rdmx__place){s->conn.cert_name, s};
	if (n < srv->ops.max_clients) {
		free(live); /* room is being made already */
		return 0;
	}
	top = rdmx__share_pick(live, n, name, &mine, &most);
	/* newest first: the name's oldest is its last in the list */
	if (top >= 0)
		for (struct session *s = srv->sessions; s; s = s->next)
			if (!s->dead && !strcmp(s->conn.cert_name, live[top].name))
				victim = s;
	free(live);
	if (!victim) {
		RDMX_SEC_WARN("rpc_secure: client %s refused: %u clients already, %u of them "
		              "its certificate's",
		              name_log, srv->clients, mine);
		return -1;
	}
	rdmx__log_escape(victim->conn.cert_name, strlen(victim->conn.cert_name), victim_log,
	                 sizeof(victim_log));
	RDMX_SEC_WARN("rpc_secure: %u clients already, %u of them %s's: its oldest closed for "
	              "client %s",
	              srv->clients, most, victim_log, name_log);
	mark_dead(victim, RDMX_E_FULL);
	return 0;
}

static int request(struct rdmx_bootstrap_server *bs, struct rdmx_bootstrap *b, const void **reply,
                   size_t *reply_len, void *arg)
{
	struct rdmx_rpc_secure_server *srv = arg;
	struct rdmx__rpc_hello h;
	const char *cert_raw = "", *hello_raw = "";
	char cert[RPC_SECURE_LOG_NAME], hello[RPC_SECURE_LOG_NAME];
	const void *data;
	size_t len;
	char why[160];
	int ret;

	(void)bs;
	rdmx_bootstrap_get_peer_names(b, &cert_raw, &hello_raw);
	/* the peer's text: a certificate allowed by "*" may hold any byte but
	 * NUL, the hello name is what the client sent */
	rdmx__log_escape(cert_raw, strlen(cert_raw), cert, sizeof(cert));
	rdmx__log_escape(hello_raw, strlen(hello_raw), hello, sizeof(hello));
	rdmx_bootstrap_get_peer_data(b, &data, &len);
	if (rdmx__rpc_hello_decode(data, len, &h, why, sizeof(why))) {
		RDMX_SEC_WARN("rpc_secure: client %s refused: %s", cert, why);
		return RDMX_E_PROTOCOL;
	}
	if (!rdmx__rpc_hello_has_version(&h, RDMX_RPC_SECURE_VERSION)) {
		RDMX_SEC_WARN("rpc_secure: client %s refused: no common rpc version (server "
		              "speaks %u)",
		              cert, RDMX_RPC_SECURE_VERSION);
		return RDMX_E_PROTOCOL;
	}
	if (srv->clients >= srv->ops.max_clients && make_room(srv, cert_raw, cert))
		return RDMX_E_FULL;
	if (srv->ops.accept) {
		srv->depth++;
		ret = srv->ops.accept(srv, cert_raw, hello_raw, srv->arg);
		srv->depth--;
		if (ret) {
			RDMX_SEC_WARN("rpc_secure: client %s (%s) refused by the application: %s",
			              cert, hello, rdmx_err_name(ret));
			return ret < 0 ? ret : RDMX_E_CONN_REFUSED;
		}
	}
	*reply = srv->reply;
	*reply_len = srv->reply_len;
	return RDMX_OK;
}

static int session_start(struct session *s)
{
	struct rdmx_rpc_secure_server *srv = s->srv;
	struct rdmx_conn *conn;
	int ret;

	ret = rdmx_bootstrap_get_conn(s->conn.b, &conn);
	if (ret)
		return ret;
	rdmx_conn_set_user_data(conn, s->conn.b);
	ret = rdmx_chan_create(srv->worker, conn, &s->conn.chan);
	if (ret)
		return ret;
	ret = rdmx_chan_set_slot_count(s->conn.chan, srv->mine.slot_count);
	if (!ret)
		ret = rdmx_chan_set_slot_size(s->conn.chan, srv->mine.slot_size);
	if (!ret)
		ret = rdmx_chan_set_max_msg_size(s->conn.chan, srv->mine.max_msg);
	if (!ret)
		ret = rdmx_rpc_ep_create(s->conn.chan, srv->server, &s->conn.ep);
	if (!ret)
		ret = rdmx_rpc_ep_set_closed_cb(s->conn.ep, rpc_closed, s);
	if (ret) {
		rdmx_rpc_ep_destroy(&s->conn.ep);
		rdmx_chan_destroy(&s->conn.chan);
	}
	return ret;
}

static void established(struct rdmx_bootstrap_server *bs, struct rdmx_bootstrap *b, void *arg)
{
	struct rdmx_rpc_secure_server *srv = arg;
	struct session *s = calloc(1, sizeof(*s));
	int ret;

	(void)bs;
	if (!s) {
		RDMX_SEC_ERR("rpc_secure: out of memory for a client session");
		rdmx_bootstrap_destroy(&b);
		return;
	}
	s->srv = srv;
	s->conn.side = RDMX__RPC_SECURE_SERVER;
	s->conn.b = b;
	rdmx__rpc_secure_conn_names(&s->conn);
	ret = session_start(s);
	if (ret) {
		RDMX_SEC_ERR("rpc_secure: no endpoint for client %s: %s", s->conn.cert_name,
		             rdmx_err_name(ret));
		rdmx_bootstrap_destroy(&s->conn.b);
		free(s);
		return;
	}
	rdmx_bootstrap_set_user_data(b, s);
	s->next = srv->sessions;
	if (srv->sessions)
		srv->sessions->prev = s;
	srv->sessions = s;
	srv->clients++;
	RDMX_SEC_DBG("rpc_secure: client %s (%s) connected", s->conn.cert_name, s->conn.hello_name);
	if (srv->ops.connected) {
		srv->depth++;
		srv->ops.connected(srv, &s->conn, srv->arg);
		srv->depth--;
	}
}

static void lost(struct rdmx_bootstrap_server *bs, struct rdmx_bootstrap *b, int reason, void *arg)
{
	void *ud = NULL;

	(void)bs;
	(void)arg;
	rdmx_bootstrap_get_user_data(b, &ud);
	if (ud)
		mark_dead(ud, reason);
}

/* ---- server ---- */

/* The context takes a connection per client, and one per client given up
 * for a newcomer until it is released (make_room): twice max_clients, as
 * far as the device goes. The context's default (64) would refuse the
 * 65th client with a "pool or table full" far below max_clients. */
static int set_max_connections(struct rdmx_rpc_secure_server *srv)
{
	struct rdmx_dev_caps caps;
	uint64_t want = 2ull * srv->ops.max_clients;
	int ret = rdmx_dev_query_caps(srv->dev, &caps);

	if (ret)
		return ret;
	if (caps.max_connections && want > caps.max_connections)
		want = caps.max_connections;
	return rdmx_ctx_set_max_connections(srv->ctx,
	                                    (uint32_t)(want > UINT32_MAX ? UINT32_MAX : want));
}

static int open_engine(struct rdmx_rpc_secure_server *srv, const struct rdmx_rpc_secure_opts *o)
{
	struct rdmx_chan_worker_attr attr;
	int ret;

	if (o && o->dev) {
		srv->dev = o->dev;
	} else {
		ret = rdmx_dev_open(o ? o->device : NULL, &srv->dev);
		if (ret)
			return ret;
		srv->own_dev = true;
	}
	ret = rdmx_pe_create(&srv->pe);
	if (ret)
		goto close_dev;
	ret = rdmx_ctx_create(srv->dev, srv->pe, &srv->ctx);
	if (ret)
		goto destroy_pe;
	ret = set_max_connections(srv);
	if (ret)
		goto destroy_ctx;
	rdmx_chan_worker_attr_init(&attr);
	attr.failure_cb = on_failure;
	attr.disconnected_cb = on_disconnected;
	attr.user_data = srv;
	ret = rdmx_chan_worker_create(srv->ctx, srv->pe, &attr, &srv->worker);
	if (ret)
		goto destroy_ctx;
	ret = rdmx_ctx_start(srv->ctx);
	if (ret)
		goto destroy_host;
	ret = rdmx_ev_attach(srv->loop, srv->pe, &srv->ev);
	if (ret)
		goto stop_ctx;
	return RDMX_OK;

stop_ctx:
	rdmx_ctx_stop(srv->ctx);
destroy_host:
	rdmx_chan_worker_destroy(&srv->worker);
destroy_ctx:
	rdmx_ctx_destroy(&srv->ctx);
destroy_pe:
	rdmx_pe_destroy(&srv->pe);
close_dev:
	if (srv->own_dev)
		rdmx_dev_close(&srv->dev);
	return ret;
}

static void close_engine(struct rdmx_rpc_secure_server *srv)
{
	rdmx_ctx_stop(srv->ctx);
	rdmx_ev_detach(&srv->ev);
	rdmx_chan_worker_destroy(&srv->worker);
	rdmx_ctx_destroy(&srv->ctx);
	rdmx_pe_destroy(&srv->pe);
	if (srv->own_dev)
		rdmx_dev_close(&srv->dev);
}

static int secure_listen(struct ev_loop *loop, struct rdmx_rpc_server *server,
                         struct rdmx_tls_config *tls, bool bound, const char *host, uint16_t port,
                         const struct rdmx_rpc_secure_server_ops *ops,
                         const struct rdmx_rpc_secure_opts *opts, void *arg,
                         struct rdmx_rpc_secure_server **out)
{
	static const struct rdmx_bootstrap_server_ops bs_ops = {request, established, lost};
	struct rdmx_rpc_secure_server *srv;
	int ret;

	if (!loop || !server || !tls || !out ||
	    (opts && opts->name && strlen(opts->name) > RDMX_BOOTSTRAP_MAX_NAME))
		return RDMX_E_INVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return RDMX_E_NOMEM;
	srv->loop = loop;
	srv->server = server;
	srv->arg = arg;
	if (ops)
		srv->ops = *ops;
	if (!srv->ops.max_clients)
		srv->ops.max_clients = RDMX_RPC_SECURE_DEFAULT_MAX_CLIENTS;
	ret = rdmx__rpc_hello_from_opts(opts, 0, &srv->mine);
	if (ret)
		goto free_srv;
	ev_prepare_init(&srv->reaper, reap);
	srv->reaper.data = srv;
	ev_idle_init(&srv->kick, kick);
	ret = open_engine(srv, opts);
	if (ret)
		goto free_srv;
	/* the server answers with the one version it chose */
	ret = rdmx__rpc_hello_for_dev(opts, srv->dev, &srv->mine, srv->reply, sizeof(srv->reply),
	                              &srv->reply_len);
	if (ret)
		goto close_engine;
	ret = bound ? rdmx_bootstrap_server_create(loop, srv->ctx, tls, host, port,
	                                           opts ? opts->name : NULL, &bs_ops, srv, &srv->bs)
	            : rdmx__bootstrap_server_create_unbound(
	                  loop, srv->ctx, tls, opts ? opts->name : NULL, &bs_ops, srv, &srv->bs);
	if (ret)
		goto close_engine;
	*out = srv;
	return RDMX_OK;

close_engine:
	close_engine(srv);
free_srv:
	free(srv);
	return ret;
}

int rdmx_rpc_secure_listen(struct ev_loop *loop, struct rdmx_rpc_server *server,
                           struct rdmx_tls_config *tls, const char *host, uint16_t port,
                           const struct rdmx_rpc_secure_server_ops *ops,
                           const struct rdmx_rpc_secure_opts *opts, void *arg,
                           struct rdmx_rpc_secure_server **out)
{
	return secure_listen(loop, server, tls, true, host, port, ops, opts, arg, out);
}

int rdmx__rpc_secure_listen_unbound(struct ev_loop *loop, struct rdmx_rpc_server *server,
                                    struct rdmx_tls_config *tls,
                                    const struct rdmx_rpc_secure_server_ops *ops,
                                    const struct rdmx_rpc_secure_opts *opts, void *arg,
                                    struct rdmx_rpc_secure_server **out)
{
	return secure_listen(loop, server, tls, false, NULL, 0, ops, opts, arg, out);
}

struct rdmx_tls_listener *rdmx__rpc_secure_server_listener(const struct rdmx_rpc_secure_server *srv)
{
	return rdmx__bootstrap_server_listener(srv->bs);
}

void rdmx__rpc_secure_server_adopt(struct rdmx_rpc_secure_server *srv, int fd,
                                   const struct sockaddr_storage *src)
{
	rdmx__bootstrap_server_adopt(srv->bs, fd, src);
}

int rdmx_rpc_secure_server_get_port(const struct rdmx_rpc_secure_server *srv, uint16_t *port)
{
	if (!srv || !port)
		return RDMX_E_INVAL;
	return rdmx_bootstrap_server_get_port(srv->bs, port);
}

uint32_t rdmx_rpc_secure_server_get_clients(const struct rdmx_rpc_secure_server *srv)
{
	return srv ? srv->clients : 0;
}

struct rdmx_chan_worker *rdmx_rpc_secure_server_get_worker(const struct rdmx_rpc_secure_server *srv)
{
	return srv ? srv->worker : NULL;
}

int rdmx_rpc_secure_server_get_listener_stats(const struct rdmx_rpc_secure_server *srv,
                                              struct rdmx_tls_listener_stats *stats)
{
	if (!srv)
		return RDMX_E_INVAL;
	return rdmx_tls_listener_get_stats(rdmx__rpc_secure_server_listener(srv), stats);
}

int rdmx_rpc_secure_server_destroy(struct rdmx_rpc_secure_server **sp)
{
	struct rdmx_rpc_secure_server *srv;

	if (!sp || !*sp)
		return RDMX_OK;
	srv = *sp;
	if (srv->depth)
		return RDMX_E_BAD_STATE;
	/* from here on no session restarts the reaper (mark_dead) */
	srv->destroying = true;
	ev_prepare_stop(srv->loop, &srv->reaper);
	ev_idle_stop(srv->loop, &srv->kick);
	/* handshakes and exchanges in progress are dropped; the established
	 * bootstraps are ours */
	rdmx_bootstrap_server_destroy(&srv->bs);
	while (srv->sessions) {
		struct session *s = srv->sessions;

		if (!s->dead) {
			s->dead = true;
			s->status = RDMX_E_CANCELED;
		}
		session_release(s);
	}
	close_engine(srv);
	free(srv);
	*sp = NULL;
	return RDMX_OK;
}
