/* Secure RPC client: mutual TLS bootstrap -> engine connection -> channel ->
 * RPC endpoint, and the TLS session kept as the liveness channel (see
 * rdmx/rpc_secure.h).
 *
 * Each client connection has a context and a channel worker of its own, so
 * that the worker's connection callbacks are ours: they tell the bootstrap
 * that the engine connection is gone and close the TLS session (engine loss
 * -> TLS loss). The other way (TLS loss -> engine disconnect) is a timer of
 * the worker, that is of its progress engine: it runs whenever the engine is
 * driven (blocking calls included), which no fd of ours could promise. The
 * worker's timer API is the channel's narrow interface for the layers above
 * (chan/chan_rpc.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/bootstrap.h>
#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>

#include "chan/chan_rpc.h"
#include "common/clock.h"
#include "rpc_secure_internal.h"
#include "tls_internal.h"

struct secure_client {
	struct rdmx_rpc_secure_conn conn; /* first: what the caller holds */
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	bool own_dev, own_pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
	struct rdmx__timer liveness;
	uint64_t period_ns;
	char peer[64]; /* host:port, for logs */
};

static uint64_t now_ns(void)
{
	return rdmx__now_ns();
}

/* The engine connection ended (disconnect, failure, context stop). `cud` is
 * the bootstrap while it still holds the connection (it clears it when it
 * lets go). Close the TLS session: the peer learns it there too. */
static void conn_ended(struct rdmx_conn *conn, void *cud, void *xud, int status)
{
	struct secure_client *c = xud;

	(void)conn;
	if (!c || !cud || cud != c->conn.b)
		return;
	rdmx_bootstrap_conn_gone(c->conn.b);
	if (!c->conn.lost)
		c->conn.lost = status;
	RDMX_SEC_DBG("rpc_secure: engine connection to %s ended (%s): closing the TLS session",
	             c->peer, rdmx_err_name(status));
	rdmx_bootstrap_destroy(&c->conn.b);
}

static void on_failure(struct rdmx_conn *conn, void *cud, void *xud)
{
	conn_ended(conn, cud, xud, RDMX_E_CONN_REFUSED);
}

static void on_disconnected(struct rdmx_conn *conn, void *cud, void *xud)
{
	conn_ended(conn, cud, xud, RDMX_E_DISCONNECTED);
}

static void liveness_fired(struct rdmx__timer *t)
{
	struct secure_client *c =
	    (struct secure_client *)((char *)t - offsetof(struct secure_client, liveness));
	int ret;

	if (!c->conn.b)
		return; /* the session is closed: nothing left to watch */
	ret = rdmx_bootstrap_check(c->conn.b);
	if (ret) {
		/* the bootstrap has disconnected the engine connection (and
		 * logged): the channel closes, every call ends UNAVAILABLE.
		 * What is left of the session goes now. */
		if (!c->conn.lost)
			c->conn.lost = ret;
		rdmx_bootstrap_destroy(&c->conn.b);
		return;
	}
	rdmx__worker_timer_arm(c->worker, &c->liveness, now_ns() + c->period_ns);
}

static int check_opts(const struct rdmx_rpc_secure_opts *o)
{
	if (!o)
		return RDMX_OK;
	if (o->timeout_ms < 0 || o->liveness_ms > 60000)
		return RDMX_E_INVAL;
	if (o->name) {
		size_t n = strlen(o->name);

		if (n > RDMX_BOOTSTRAP_MAX_NAME ||
		    strspn(o->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		                    "0123456789._-") != n)
			return RDMX_E_INVAL;
	}
	return RDMX_OK;
}

static int open_engine(struct secure_client *c, struct rdmx_pe *pe,
                       const struct rdmx_rpc_secure_opts *o)
{
	struct rdmx_chan_worker_attr attr;
	int ret;

	if (pe) {
		c->pe = pe;
	} else {
		ret = rdmx_pe_create(&c->pe);
		if (ret)
			return ret;
		c->own_pe = true;
	}
	if (o && o->dev) {
		c->dev = o->dev;
	} else {
		ret = rdmx_dev_open(o ? o->device : NULL, &c->dev);
		if (ret)
			goto destroy_pe;
		c->own_dev = true;
	}
	ret = rdmx_ctx_create(c->dev, c->pe, &c->ctx);
	if (ret)
		goto close_dev;
	rdmx_chan_worker_attr_init(&attr);
	attr.failure_cb = on_failure;
	attr.disconnected_cb = on_disconnected;
	attr.user_data = c;
	ret = rdmx_chan_worker_create(c->ctx, c->pe, &attr, &c->worker);
	if (ret)
		goto destroy_ctx;
	ret = rdmx_ctx_start(c->ctx);
	if (ret)
		goto destroy_host;
	return RDMX_OK;

destroy_host:
	rdmx_chan_worker_destroy(&c->worker);
destroy_ctx:
	rdmx_ctx_destroy(&c->ctx);
close_dev:
	if (c->own_dev)
		rdmx_dev_close(&c->dev);
destroy_pe:
	if (c->own_pe)
		rdmx_pe_destroy(&c->pe);
	return ret;
}

static void close_engine(struct secure_client *c)
{
	rdmx_ctx_stop(c->ctx);
	rdmx_chan_worker_destroy(&c->worker);
	rdmx_ctx_destroy(&c->ctx);
	if (c->own_dev)
		rdmx_dev_close(&c->dev);
	if (c->own_pe)
		rdmx_pe_destroy(&c->pe);
}

/* The server's RPC hello must name our version and a ring we can write. */
static int check_server_hello(struct secure_client *c)
{
	struct rdmx__rpc_hello h;
	const void *data;
	size_t len;
	char why[160];

	rdmx_bootstrap_get_peer_data(c->conn.b, &data, &len);
	if (rdmx__rpc_hello_decode(data, len, &h, why, sizeof(why))) {
		RDMX_SEC_ERR("rpc_secure: bad answer from %s: %s", c->peer, why);
		return RDMX_E_PROTOCOL;
	}
	if (h.n_versions != 1 || h.versions[0] != RDMX_RPC_SECURE_VERSION) {
		RDMX_SEC_ERR("rpc_secure: %s chose rpc version %u, this client speaks %u", c->peer,
		             h.versions[0], RDMX_RPC_SECURE_VERSION);
		return RDMX_E_PROTOCOL;
	}
	return RDMX_OK;
}

static int make_endpoint(struct secure_client *c, const struct rdmx__rpc_hello *mine,
                         const struct rdmx_rpc_secure_opts *o)
{
	struct rdmx_conn *conn;
	int ret;

	ret = rdmx_bootstrap_get_conn(c->conn.b, &conn);
	if (ret)
		return ret;
	rdmx_conn_set_user_data(conn, c->conn.b);
	ret = rdmx_chan_create(c->worker, conn, &c->conn.chan);
	if (ret)
		return ret;
	ret = rdmx_chan_set_slot_count(c->conn.chan, mine->slot_count);
	if (!ret)
		ret = rdmx_chan_set_slot_size(c->conn.chan, mine->slot_size);
	if (!ret)
		ret = rdmx_chan_set_max_msg_size(c->conn.chan, mine->max_msg);
	if (!ret)
		ret = rdmx_rpc_ep_create(c->conn.chan, o ? o->server : NULL, &c->conn.ep);
	if (ret)
		rdmx_chan_destroy(&c->conn.chan);
	return ret;
}

/* Drives the engine until the channel is READY (or closed, or the time is
 * up), watching the TLS session meanwhile. */
static int wait_ready(struct secure_client *c, uint64_t deadline_ns)
{
	for (;;) {
		enum rdmx_chan_state st = rdmx_chan_get_state(c->conn.chan);
		uint64_t now = now_ns();
		int ret, left;

		if (st == RDMX_CHAN_READY)
			return RDMX_OK;
		if (st == RDMX_CHAN_CLOSED)
			return c->conn.lost ? c->conn.lost : RDMX_E_DISCONNECTED;
		if (!c->conn.b)
			return c->conn.lost ? c->conn.lost : RDMX_E_DISCONNECTED;
		ret = rdmx_bootstrap_check(c->conn.b);
		if (ret)
			return ret;
		if (now >= deadline_ns)
			return RDMX_E_TIMEDOUT;
		left = (int)((deadline_ns - now) / 1000000u);
		ret = rdmx_chan_worker_wait(c->worker, left < 50 ? (left ? left : 1) : 50);
		if (ret < 0)
			return ret;
	}
}

int rdmx_rpc_secure_connect(const char *host, uint16_t port, struct rdmx_tls_config *tls,
                            struct rdmx_pe *pe, const struct rdmx_rpc_secure_opts *opts,
                            struct rdmx_rpc_secure_conn **conn)
{
	struct secure_client *c;
	struct rdmx__rpc_hello mine;
	uint8_t app[RDMX__RPC_HELLO_MAX_LEN];
	size_t app_len;
	int timeout_ms, ret;
	uint64_t deadline;

	if (!host || !tls || !conn || check_opts(opts) || rdmx__rpc_hello_from_opts(opts, 0, &mine))
		return RDMX_E_INVAL;
	timeout_ms =
	    opts && opts->timeout_ms ? opts->timeout_ms : RDMX_RPC_SECURE_DEFAULT_TIMEOUT_MS;
	deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RDMX_E_NOMEM;
	c->conn.side = RDMX__RPC_SECURE_CLIENT;
	c->liveness.fn = liveness_fired;
	c->period_ns = (uint64_t)(opts && opts->liveness_ms ? opts->liveness_ms
	                                                    : RDMX_RPC_SECURE_DEFAULT_LIVENESS_MS) *
	               1000000u;
	snprintf(c->peer, sizeof(c->peer), "%s:%u", host, port);
	ret = open_engine(c, pe, opts);
	if (ret)
		goto free_client;
	ret = rdmx__rpc_hello_for_dev(opts, c->dev, &mine, app, sizeof(app), &app_len);
	if (ret)
		goto close_engine;
	ret = rdmx_bootstrap_connect(c->ctx, tls, host, port, opts ? opts->name : NULL, app,
	                             app_len, timeout_ms, &c->conn.b);
	if (ret)
		goto close_engine;
	rdmx_bootstrap_set_user_data(c->conn.b, c);
	rdmx__rpc_secure_conn_names(&c->conn);
	ret = check_server_hello(c);
	if (ret)
		goto destroy_bootstrap;
	ret = make_endpoint(c, &mine, opts);
	if (ret)
		goto destroy_bootstrap;
	ret = wait_ready(c, deadline);
	if (ret) {
		RDMX_SEC_WARN("rpc_secure: channel to %s not ready: %s", c->peer,
		              rdmx_err_name(ret));
		goto destroy_endpoint;
	}
	ret = rdmx__worker_timer_arm(c->worker, &c->liveness, now_ns() + c->period_ns);
	if (ret)
		goto destroy_endpoint;
	*conn = &c->conn;
	return RDMX_OK;

destroy_endpoint:
	rdmx_rpc_ep_destroy(&c->conn.ep);
	rdmx_chan_destroy(&c->conn.chan);
destroy_bootstrap:
	rdmx_bootstrap_destroy(&c->conn.b);
close_engine:
	close_engine(c);
free_client:
	free(c);
	return ret;
}

int rdmx_rpc_secure_close(struct rdmx_rpc_secure_conn **conn)
{
	struct secure_client *c;

	if (!conn || !*conn)
		return RDMX_OK;
	if ((*conn)->side != RDMX__RPC_SECURE_CLIENT)
		return RDMX_E_INVAL; /* a server's: the server closes it */
	c = (struct secure_client *)*conn;
	if (rdmx__worker_depth(c->worker) > 0)
		return RDMX_E_BAD_STATE; /* from a callback of its own engine */
	rdmx__worker_timer_disarm(c->worker, &c->liveness);
	/* calls complete UNAVAILABLE; the channel disconnects the engine
	 * connection; the bootstrap sends close_notify */
	rdmx_rpc_ep_destroy(&c->conn.ep);
	rdmx_chan_destroy(&c->conn.chan);
	rdmx_bootstrap_destroy(&c->conn.b);
	close_engine(c);
	free(c);
	*conn = NULL;
	return RDMX_OK;
}
