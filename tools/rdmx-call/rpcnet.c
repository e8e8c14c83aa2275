/* rpcnet client side and helpers (rpcnet.h). */
#include "rpcnet.h"

#include "cli.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

struct rpcnet_client {
	struct rdmx_dev *dev;
	uint64_t max_msg; /* RPCNET_MAX_MSG, or the device's max message size if smaller */
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
	struct rdmx_tls_config *cfg;
	struct rdmx_conn *conn;
	struct rdmx_chan *chan;
	struct rdmx_rpc_ep *rpc;
	struct rdmx_rpc_secure_conn *secure; /* made by rdmx_rpc_secure_connect */
	int established, failed;
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

static uint64_t now_ms(void)
{
	return rdmx_pe_now_ns() / 1000000u;
}

struct rdmx_tls_config *rpcnet_tls_config(const struct rpcnet_tls *tls, char *err, size_t err_len)
{
	struct rdmx_tls_config *cfg = NULL;
	int rc;

	if (!tls || !tls->ca || !tls->cert || !tls->key) {
		say(err, err_len, "TLS needs --ca, --cert and --key");
		return NULL;
	}
	rc = rdmx_tls_config_create(&cfg);
	if (!rc)
		rc = rdmx_tls_config_set_ca_file(cfg, tls->ca);
	if (!rc)
		rc = rdmx_tls_config_set_cert_key(cfg, tls->cert, tls->key);
	if (!rc && tls->crl)
		rc = rdmx_tls_config_set_crl_file(cfg, tls->crl);
	if (!rc)
		rc = rdmx_tls_config_set_allow_insecure_key(cfg, tls->allow_insecure_key);
	if (!rc)
		rc = rdmx_tls_config_add_allowed_peer(cfg, tls->peer ? tls->peer : "*");
	if (!rc)
		rc = rdmx_tls_config_load(cfg);
	if (rc) {
		if (!rdmx_cli_key_refused_msg(err, err_len, tls->key, rc))
			say(err, err_len, "TLS setup (ca %s, cert %s, key %s): %s", tls->ca,
			    tls->cert, tls->key, rdmx_strerror(rc));
		rdmx_tls_config_destroy(&cfg);
		return NULL;
	}
	return cfg;
}

/* ---- client ---- */

static void on_established(struct rdmx_conn *conn, void *ud, void *cud)
{
	struct rpcnet_client *c = cud;

	(void)conn;
	(void)ud;
	c->established = 1;
}

static void on_failure(struct rdmx_conn *conn, void *ud, void *cud)
{
	struct rpcnet_client *c = cud;

	(void)conn;
	(void)ud;
	c->failed = 1;
}

static int dev_open(struct rpcnet_client *c, char *err, size_t err_len)
{
	struct rdmx_dev_caps caps;
	int rc;

	rc = rdmx_dev_open(NULL, &c->dev);
	if (rc) {
		say(err, err_len, "no device (RDMX_DEVICE=%s): %s",
		    getenv("RDMX_DEVICE") ? getenv("RDMX_DEVICE") : "", rdmx_strerror(rc));
		return rc;
	}
	c->max_msg = RPCNET_MAX_MSG;
	if (rdmx_dev_query_caps(c->dev, &caps) == 0 && caps.max_message_size &&
	    caps.max_message_size < c->max_msg)
		c->max_msg = caps.max_message_size; /* Soft-RoCE: 8 MiB */
	return 0;
}

static int engine_open(struct rpcnet_client *c, char *err, size_t err_len)
{
	struct rdmx_chan_worker_attr attr;
	int rc;

	rdmx_chan_worker_attr_init(&attr);
	attr.established_cb = on_established;
	attr.failure_cb = on_failure;
	attr.user_data = c;
	/* a short-lived client: keep the pools small */
	attr.recv_tasks = 64;
	attr.write_tasks = 128;
	attr.send_tasks = 64;
	attr.read_tasks = 8;
	rc = rdmx_pe_create(&c->pe);
	if (!rc)
		rc = rdmx_pe_set_poll_mode(c->pe, RDMX_POLL_HYBRID, 200);
	if (!rc)
		rc = rdmx_ctx_create(c->dev, c->pe, &c->ctx);
	if (!rc)
		rc = rdmx_chan_worker_create(c->ctx, c->pe, &attr, &c->worker);
	if (!rc)
		rc = rdmx_ctx_start(c->ctx);
	if (rc)
		say(err, err_len, "engine setup on %s: %s", rdmx_dev_name(c->dev),
		    rdmx_strerror(rc));
	return rc;
}

/* drives progress until *flag, a failure or the deadline */
static int wait_for(struct rpcnet_client *c, int *flag, uint64_t deadline)
{
	while (!*flag) {
		int n;

		if (c->failed)
			return RDMX_E_CONN_REFUSED;
		if (now_ms() >= deadline)
			return RDMX_E_TIMEDOUT;
		n = rdmx_chan_worker_wait(c->worker, 10);
		if (n < 0)
			return n;
	}
	return 0;
}

static int connect_plain(struct rpcnet_client *c, const char *host, uint16_t port,
                         uint64_t deadline, char *err, size_t err_len)
{
	struct rdmx_addr *addr = NULL;
	int rc;

	rc = rdmx_addr_create(strchr(host, ':') ? RDMX_ADDR_IPV6 : RDMX_ADDR_IPV4, host, port,
	                      &addr);
	if (rc) {
		say(err, err_len, "bad address %s: %s", host, rdmx_strerror(rc));
		return rc;
	}
	rc = rdmx_ctx_connect_to_addr(c->ctx, addr, NULL, 0, c, &c->conn);
	rdmx_addr_destroy(&addr);
	if (!rc)
		rc = wait_for(c, &c->established, deadline);
	if (rc) {
		c->conn = NULL; /* the engine frees a connection that failed */
		say(err, err_len, "connecting to %s:%u: %s", host, port, rdmx_strerror(rc));
	}
	return rc;
}

/* The secure path is rdmx_rpc_secure_connect (rdmx/rpc_secure.h): it
 * opens its own device, engine and context, so the plain path's are not
 * used. */
static int connect_secure(struct rpcnet_client *c, const char *host, uint16_t port,
                          const struct rpcnet_tls *tls, const char *name, int timeout_ms, char *err,
                          size_t err_len)
{
	struct rdmx_rpc_secure_opts opts;
	int rc;

	c->cfg = rpcnet_tls_config(tls, err, err_len);
	if (!c->cfg)
		return RDMX_E_INVAL;
	rdmx_rpc_secure_opts_init(&opts);
	opts.name = name;
	opts.dev = c->dev;
	opts.max_msg_size = c->max_msg;
	opts.timeout_ms = timeout_ms;
	rc = rdmx_rpc_secure_connect(host, port, c->cfg, NULL, &opts, &c->secure);
	if (rc)
		say(err, err_len, "secure connection to %s:%u: %s", host, port, rdmx_strerror(rc));
	return rc;
}

int rpcnet_client_connect(const char *host, uint16_t port, const struct rpcnet_tls *tls,
                          const char *name, int timeout_ms, struct rpcnet_client **client,
                          char *err, size_t err_len)
{
	struct rpcnet_client *c;
	uint64_t deadline;
	int rc;

	if (!host || !client)
		return RDMX_E_INVAL;
	if (timeout_ms <= 0)
		timeout_ms = RPCNET_DEFAULT_TIMEOUT_MS;
	deadline = now_ms() + (uint64_t)timeout_ms;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RDMX_E_NOMEM;
	rc = dev_open(c, err, err_len);
	if (rc)
		goto fail;
	if (tls) {
		rc = connect_secure(c, host, port, tls, name, timeout_ms, err, err_len);
		if (rc)
			goto fail;
		c->rpc = rdmx_rpc_secure_conn_get_ep(c->secure);
		*client = c;
		return 0;
	}
	rc = engine_open(c, err, err_len);
	if (!rc)
		rc = connect_plain(c, host, port, deadline, err, err_len);
	if (rc)
		goto fail;
	rc = rdmx_chan_create(c->worker, c->conn, &c->chan);
	if (rc) {
		say(err, err_len, "channel: %s", rdmx_strerror(rc));
		goto fail;
	}
	rc = rdmx_chan_set_max_msg_size(c->chan, c->max_msg);
	if (!rc) /* starts the channel */
		rc = rdmx_rpc_ep_create(c->chan, NULL, &c->rpc);
	while (!rc && rdmx_chan_get_state(c->chan) != RDMX_CHAN_READY) {
		if (rdmx_chan_get_state(c->chan) == RDMX_CHAN_CLOSED)
			rc = RDMX_E_DISCONNECTED;
		else if (now_ms() >= deadline)
			rc = RDMX_E_TIMEDOUT;
		else if ((rc = rdmx_chan_worker_wait(c->worker, 10)) > 0)
			rc = 0;
	}
	if (rc) {
		say(err, err_len, "channel to %s:%u: %s", host, port, rdmx_strerror(rc));
		goto fail;
	}
	*client = c;
	return 0;
fail:
	rpcnet_client_close(&c);
	return rc;
}

struct rdmx_rpc_ep *rpcnet_client_rpc(const struct rpcnet_client *client)
{
	return client ? client->rpc : NULL;
}

const char *rpcnet_client_device(const struct rpcnet_client *client)
{
	return client && client->dev ? rdmx_dev_name(client->dev) : "";
}

void rpcnet_client_close(struct rpcnet_client **client)
{
	struct rpcnet_client *c;

	if (!client || !*client)
		return;
	c = *client;
	if (c->secure) {
		rdmx_rpc_secure_close(&c->secure);
		c->rpc = NULL;
	}
	rdmx_rpc_ep_destroy(&c->rpc);
	rdmx_chan_destroy(&c->chan);
	if (c->ctx) {
		enum rdmx_ctx_state st;

		if (rdmx_ctx_get_state(c->ctx, &st) == 0 && st == RDMX_CTX_RUNNING)
			rdmx_ctx_stop(c->ctx);
	}
	rdmx_chan_worker_destroy(&c->worker);
	rdmx_ctx_destroy(&c->ctx);
	rdmx_pe_destroy(&c->pe);
	rdmx_dev_close(&c->dev);
	rdmx_tls_config_destroy(&c->cfg);
	free(c);
	*client = NULL;
}
