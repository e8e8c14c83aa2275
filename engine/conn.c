/* Connections: the export/connect and listen/accept flows, connection events
 * reported by providers, and the connection's end of life.
 *
 * A connection that reached its final event (failure, disconnected) or was
 * rejected is "retired": unlinked from the context and forgotten by every
 * task, then released and freed once the provider's ctx_poll returned
 * (ctx->dead), so neither the user's callback nor the provider's poll loop
 * ever touches freed memory. */
#include <stdlib.h>
#include <string.h>

#include "provider.h"

struct rdmx_conn *rdmx__conn_new(struct rdmx_ctx *ctx, enum rdmx_conn_state state)
{
	struct rdmx_conn *conn;

	if (ctx->num_conns >= ctx->props.max_connections)
		return NULL;
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return NULL;
	conn->ctx = ctx;
	conn->id = ctx->next_conn_id++;
	if (ctx->next_conn_id == 0)
		ctx->next_conn_id = 1;
	conn->state = state;
	conn->next_in_ctx = ctx->conns;
	ctx->conns = conn;
	ctx->num_conns++;
	return conn;
}

static void unlink_conn(struct rdmx_conn *conn)
{
	struct rdmx_ctx *ctx = conn->ctx;

	for (struct rdmx_conn **pp = &ctx->conns; *pp; pp = &(*pp)->next_in_ctx) {
		if (*pp == conn) {
			*pp = conn->next_in_ctx;
			ctx->num_conns--;
			break;
		}
	}
	conn->next_in_ctx = NULL;
}

/* A connection that never reached the provider (its export failed). */
static void drop_conn(struct rdmx_conn *conn)
{
	unlink_conn(conn);
	free(conn);
}

static void forget_in_tasks(struct rdmx_conn *conn)
{
	struct rdmx_ctx *ctx = conn->ctx;

	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++) {
		struct rdmx_task_pool *pool = &ctx->pool[t];

		if (!pool->tasks)
			continue;
		for (uint32_t i = 0; i < ctx->conf[t].num_tasks; i++) {
			if (pool->tasks[i].conn == conn)
				pool->tasks[i].conn = NULL;
			if (pool->tasks[i].res_conn == conn)
				pool->tasks[i].res_conn = NULL;
		}
	}
}

void rdmx__conn_retire(struct rdmx_conn *conn)
{
	struct rdmx_ctx *ctx = conn->ctx;

	rdmx__conn_end_grants(conn);
	unlink_conn(conn);
	forget_in_tasks(conn);
	conn->next_in_ctx = ctx->dead;
	ctx->dead = conn;
	if (!ctx->in_poll)
		rdmx__ctx_reap_conns(ctx);
}

void rdmx__ctx_reap_conns(struct rdmx_ctx *ctx)
{
	while (ctx->dead) {
		struct rdmx_conn *conn = ctx->dead;

		ctx->dead = conn->next_in_ctx;
		ctx->dev->ops->conn_release(conn);
		free(conn);
	}
}

void rdmx__conn_set_error(struct rdmx_conn *conn)
{
	if (conn->state == RDMX_CONN_ESTABLISHED || conn->state == RDMX_CONN_CONNECTING)
		conn->state = RDMX_CONN_ERROR;
}

void rdmx__conn_fail_posts(struct rdmx_conn *conn, uint32_t n)
{
	conn->fail_posts = n;
}

void rdmx__conn_event(struct rdmx_conn *conn, enum rdmx__conn_event ev)
{
	struct rdmx_ctx *ctx = conn->ctx;

	switch (ev) {
	case RDMX__CONN_EV_REQUEST:
		conn->state = RDMX_CONN_REQUESTED;
		if (ctx->request_cb) {
			ctx->request_cb(conn, ctx->user_data);
		} else {
			RDMX_WARN("connection request without a request callback: rejected");
			rdmx_conn_reject(conn);
		}
		return;
	case RDMX__CONN_EV_ESTABLISHED:
		if (conn->state == RDMX_CONN_CONNECTING || conn->state == RDMX_CONN_REQUESTED)
			conn->state = RDMX_CONN_ESTABLISHED;
		conn->can_post = true;
		ctx->stats.conns_established++;
		if (conn->sealed)
			ctx->stats.conns_sealed++;
		else
			ctx->stats.conns_plaintext++;
		if (ctx->established_cb)
			ctx->established_cb(conn, conn->user_data, ctx->user_data);
		return;
	case RDMX__CONN_EV_FAILURE:
	case RDMX__CONN_EV_DISCONNECTED:
		if (conn->outstanding)
			RDMX_ERR("connection %u ended with %u tasks outstanding", conn->id,
			         conn->outstanding);
		conn->state = RDMX_CONN_DISCONNECTED;
		/* mr.h: keys granted to it die before the user hears of the end */
		rdmx__conn_end_grants(conn);
		if (ev == RDMX__CONN_EV_FAILURE)
			ctx->stats.conns_failed++;
		else
			ctx->stats.conns_disconnected++;
		/* the user's own earlier submits come first */
		ctx->in_poll++;
		rdmx__ctx_deliver_deferred(ctx, false);
		if (ev == RDMX__CONN_EV_FAILURE) {
			if (ctx->failure_cb)
				ctx->failure_cb(conn, conn->user_data, ctx->user_data);
		} else if (ctx->disconnected_cb) {
			ctx->disconnected_cb(conn, conn->user_data, ctx->user_data);
		}
		ctx->in_poll--;
		rdmx__conn_retire(conn);
		return;
	}
}

int rdmx_ctx_export(struct rdmx_ctx *ctx, const void **details, size_t *details_len,
                    struct rdmx_conn **conn)
{
	struct rdmx_conn *c;
	size_t len = RDMX_CONN_DETAILS_MAX;
	int rc;

	if (!ctx || !details || !details_len || !conn)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING)
		return RDMX_E_BAD_STATE;
	if (ctx->num_conns >= ctx->props.max_connections)
		return RDMX_E_FULL;
	c = rdmx__conn_new(ctx, RDMX_CONN_CONNECTING);
	if (!c)
		return RDMX_E_NOMEM;
	c->exported = true;
	rc = ctx->dev->ops->conn_export(c, c->details, &len);
	if (rc) {
		RDMX_DBG("export failed: %s", rdmx_err_name(rc));
		drop_conn(c);
		return rc;
	}
	if (len > RDMX_CONN_DETAILS_MAX) {
		RDMX_ERR("provider exported %zu bytes of details (max %u)", len,
		         RDMX_CONN_DETAILS_MAX);
		ctx->dev->ops->conn_release(c);
		drop_conn(c);
		return RDMX_E_PROVIDER;
	}
	c->details_len = len;
	*details = c->details;
	*details_len = len;
	*conn = c;
	return 0;
}

int rdmx_ctx_connect(struct rdmx_ctx *ctx, const void *remote_details, size_t details_len,
                     struct rdmx_conn *conn)
{
	int rc;

	if (!ctx || !remote_details || !conn || conn->ctx != ctx)
		return RDMX_E_INVAL;
	if (details_len == 0 || details_len > RDMX_CONN_DETAILS_MAX)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING)
		return RDMX_E_BAD_STATE;
	if (!conn->exported || conn->can_post || conn->closing ||
	    conn->state != RDMX_CONN_CONNECTING)
		return RDMX_E_BAD_STATE;
	rc = ctx->dev->ops->conn_connect(conn, remote_details, details_len);
	if (rc)
		return rc;
	conn->can_post = true;
	return 0;
}

int rdmx_ctx_listen(struct rdmx_ctx *ctx, uint16_t port)
{
	int rc;

	if (!ctx)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING || !ctx->request_cb || ctx->listening)
		return RDMX_E_BAD_STATE;
	if (!ctx->dev->ops->listen)
		return RDMX_E_NOT_SUPPORTED;
	rc = ctx->dev->ops->listen(ctx, port);
	if (rc)
		return rc;
	ctx->listening = true;
	return 0;
}

int rdmx_ctx_stop_listen(struct rdmx_ctx *ctx)
{
	if (!ctx)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING || !ctx->listening)
		return RDMX_E_BAD_STATE;
	if (ctx->dev->ops->stop_listen)
		ctx->dev->ops->stop_listen(ctx);
	ctx->listening = false;
	return 0;
}

int rdmx_ctx_listen_join(struct rdmx_ctx *ctx, struct rdmx_ctx *listener)
{
	if (!ctx || !listener || ctx == listener || ctx->dev != listener->dev)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING || listener->state != RDMX_CTX_RUNNING ||
	    !ctx->request_cb || ctx->listening || !listener->listening)
		return RDMX_E_BAD_STATE;
	if (!ctx->dev->ops->listen_join)
		return RDMX_E_NOT_SUPPORTED;
	return ctx->dev->ops->listen_join(ctx, listener);
}

int rdmx_ctx_connect_to_addr(struct rdmx_ctx *ctx, const struct rdmx_addr *addr,
                             const void *private_data, size_t private_data_len, void *user_data,
                             struct rdmx_conn **conn)
{
	struct rdmx_conn *c;
	int rc;

	if (!ctx || !addr || !conn || private_data_len > RDMX_PRIVATE_DATA_MAX ||
	    (private_data_len && !private_data))
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING)
		return RDMX_E_BAD_STATE;
	if (!ctx->dev->ops->connect_to_addr)
		return RDMX_E_NOT_SUPPORTED;
	if (ctx->num_conns >= ctx->props.max_connections)
		return RDMX_E_FULL;
	c = rdmx__conn_new(ctx, RDMX_CONN_CONNECTING);
	if (!c)
		return RDMX_E_NOMEM;
	c->user_data = user_data;
	c->peer_addr = *addr;
	c->has_peer_addr = true;
	rc = ctx->dev->ops->connect_to_addr(c, addr, private_data, private_data_len);
	if (rc) {
		RDMX_DBG("connect to %s port %u failed: %s", addr->text, addr->port,
		         rdmx_err_name(rc));
		drop_conn(c);
		return rc;
	}
	*conn = c;
	return 0;
}

int rdmx_conn_accept(struct rdmx_conn *conn, const void *private_data, size_t private_data_len)
{
	struct rdmx_ctx *ctx;
	int rc;

	if (!conn || private_data_len > RDMX_PRIVATE_DATA_MAX ||
	    (private_data_len && !private_data))
		return RDMX_E_INVAL;
	ctx = conn->ctx;
	if (ctx->state != RDMX_CTX_RUNNING || conn->state != RDMX_CONN_REQUESTED)
		return RDMX_E_BAD_STATE;
	if (!ctx->dev->ops->conn_accept)
		return RDMX_E_NOT_SUPPORTED;
	rc = ctx->dev->ops->conn_accept(conn, private_data, private_data_len);
	if (rc)
		return rc;
	conn->state = RDMX_CONN_CONNECTING;
	return 0;
}

int rdmx_conn_reject(struct rdmx_conn *conn)
{
	struct rdmx_ctx *ctx;
	int rc = 0;

	if (!conn)
		return RDMX_E_INVAL;
	ctx = conn->ctx;
	if (ctx->state != RDMX_CTX_RUNNING || conn->state != RDMX_CONN_REQUESTED)
		return RDMX_E_BAD_STATE;
	if (ctx->dev->ops->conn_reject)
		rc = ctx->dev->ops->conn_reject(conn);
	if (rc)
		RDMX_DBG("reject of connection %u failed: %s", conn->id, rdmx_err_name(rc));
	conn->state = RDMX_CONN_DISCONNECTED;
	rdmx__conn_retire(conn);
	return 0;
}

int rdmx_conn_disconnect(struct rdmx_conn *conn)
{
	struct rdmx_ctx *ctx;
	int rc;

	if (!conn)
		return RDMX_E_INVAL;
	ctx = conn->ctx;
	if (ctx->state != RDMX_CTX_RUNNING)
		return RDMX_E_BAD_STATE;
	if (conn->closing || conn->state == RDMX_CONN_DISCONNECTED)
		return 0;
	if (conn->state == RDMX_CONN_REQUESTED)
		return RDMX_E_BAD_STATE; /* rdmx_conn_reject */
	rc = ctx->dev->ops->conn_disconnect(conn);
	if (rc)
		return rc;
	conn->closing = true;
	return 0;
}

int rdmx_conn_get_id(const struct rdmx_conn *conn, uint32_t *id)
{
	if (!conn || !id)
		return RDMX_E_INVAL;
	*id = conn->id;
	return 0;
}

int rdmx_conn_get_state(const struct rdmx_conn *conn, enum rdmx_conn_state *state)
{
	if (!conn || !state)
		return RDMX_E_INVAL;
	*state = conn->state;
	return 0;
}

int rdmx_conn_get_addr(const struct rdmx_conn *conn, const struct rdmx_addr **addr)
{
	if (!conn || !addr)
		return RDMX_E_INVAL;
	if (!conn->has_peer_addr)
		return RDMX_E_NOT_FOUND;
	*addr = &conn->peer_addr;
	return 0;
}

int rdmx_conn_get_private_data(const struct rdmx_conn *conn, const void **data, size_t *len)
{
	if (!conn || !data || !len)
		return RDMX_E_INVAL;
	*data = conn->private_data_len ? conn->private_data : NULL;
	*len = conn->private_data_len;
	return 0;
}

int rdmx_conn_set_user_data(struct rdmx_conn *conn, void *user_data)
{
	if (!conn)
		return RDMX_E_INVAL;
	conn->user_data = user_data;
	return 0;
}

int rdmx_conn_get_user_data(const struct rdmx_conn *conn, void **user_data)
{
	if (!conn || !user_data)
		return RDMX_E_INVAL;
	*user_data = conn->user_data;
	return 0;
}

int rdmx_conn_get_ctx(const struct rdmx_conn *conn, struct rdmx_ctx **ctx)
{
	if (!conn || !ctx)
		return RDMX_E_INVAL;
	*ctx = conn->ctx;
	return 0;
}
