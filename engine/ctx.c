/* Contexts: properties, task configuration and the IDLE/RUNNING/STOPPING
 * life cycle. Task pools live in task.c, connections in conn.c. */
#include <stdlib.h>
#include <string.h>

#include "provider.h"

#define CTX_DEFAULT_QUEUE 256u
#define CTX_DEFAULT_MAX_CONNS 64u
#define CTX_DEFAULT_MTU 4096u
#define CTX_DEFAULT_CONN_TIMEOUT_MS 5000u
#define CTX_DEFAULT_RNR_RETRY 7u
/* x (7 + 1) tries: a lost peer in 8 s, near verbs (~7.5 s) */
#define CTX_DEFAULT_TRANSPORT_TIMEOUT_MS 1000u
#define CTX_DEFAULT_RETRY 7u
#define CTX_REMOTE_ALL                                                                             \
	(RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_ATOMIC)

static uint32_t pow2_floor(uint32_t v)
{
	uint32_t p = 1;

	while (p <= v / 2)
		p <<= 1;
	return v ? p : 0;
}

static uint64_t pow2_ceil(uint32_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static void set_defaults(struct rdmx_ctx *ctx)
{
	const struct rdmx_dev_caps *c = &ctx->caps;
	struct rdmx_ctx_props *p = &ctx->props;

	p->send_queue_size = pow2_floor(min_u32(CTX_DEFAULT_QUEUE, c->max_send_queue_size));
	p->recv_queue_size = pow2_floor(min_u32(CTX_DEFAULT_QUEUE, c->max_recv_queue_size));
	p->max_send_buf_list_len = c->max_buf_list_len ? 1 : 0;
	p->max_recv_buf_list_len = c->max_buf_list_len ? 1 : 0;
	p->permissions = CTX_REMOTE_ALL;
	p->mtu = CTX_DEFAULT_MTU; /* the provider clamps to the port at start */
	p->gid_index = 0;
	p->sl = 0;
	p->grh = false;
	p->conn_request_timeout_ms = CTX_DEFAULT_CONN_TIMEOUT_MS;
	p->rnr_retry_count = CTX_DEFAULT_RNR_RETRY;
	p->transport_timeout_ms = CTX_DEFAULT_TRANSPORT_TIMEOUT_MS;
	p->retry_count = CTX_DEFAULT_RETRY;
	p->max_connections = c->max_connections ? min_u32(CTX_DEFAULT_MAX_CONNS, c->max_connections)
	                                        : CTX_DEFAULT_MAX_CONNS;
	p->transport_type = RDMX_TRANSPORT_TYPE_RC;
}

int rdmx_ctx_create(struct rdmx_dev *dev, struct rdmx_pe *pe, struct rdmx_ctx **ctx)
{
	struct rdmx_ctx *c;
	int rc;

	if (!dev || !pe || !ctx)
		return RDMX_E_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RDMX_E_NOMEM;
	rc = rdmx_dev_query_caps(dev, &c->caps);
	if (rc)
		goto free_ctx;
	if (!c->caps.max_send_queue_size || !c->caps.max_recv_queue_size ||
	    !c->caps.max_buf_list_len) {
		RDMX_ERR("device %s reports empty queue caps", dev->name);
		rc = RDMX_E_PROVIDER;
		goto free_ctx;
	}
	c->dev = dev;
	c->pe = pe;
	c->state = RDMX_CTX_IDLE;
	c->next_conn_id = 1;
	set_defaults(c);
	atomic_fetch_add(&dev->users, 1);
	rdmx__pe_hold(pe);
	*ctx = c;
	return 0;

free_ctx:
	free(c);
	return rc;
}

int rdmx_ctx_destroy(struct rdmx_ctx **ctx)
{
	if (!ctx || !*ctx)
		return 0;
	if ((*ctx)->state != RDMX_CTX_IDLE)
		return RDMX_E_BAD_STATE;
	atomic_fetch_sub(&(*ctx)->dev->users, 1);
	rdmx__pe_release((*ctx)->pe);
	free(*ctx);
	*ctx = NULL;
	return 0;
}

int rdmx_ctx_start(struct rdmx_ctx *ctx)
{
	int rc;

	if (!ctx)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_IDLE)
		return RDMX_E_BAD_STATE;
	rc = rdmx__task_pools_create(ctx);
	if (rc)
		return rc;
	rc = ctx->dev->ops->ctx_start(ctx);
	if (rc) {
		RDMX_DBG("starting a context on %s failed: %s", ctx->dev->name, rdmx_err_name(rc));
		goto destroy_pools;
	}
	rc = rdmx__pe_attach(ctx->pe, ctx);
	if (rc)
		goto stop_provider;
	ctx->state = RDMX_CTX_RUNNING;
	return 0;

stop_provider:
	ctx->state = RDMX_CTX_STOPPING;
	ctx->dev->ops->ctx_stop(ctx);
	ctx->state = RDMX_CTX_IDLE;
destroy_pools:
	rdmx__task_pools_destroy(ctx);
	return rc;
}

/* Gives each live connection its final callback and queues it for reaping:
 * established ones see disconnected_cb, never-established ones are simply
 * released (their user has no wire to lose). */
static void retire_conns(struct rdmx_ctx *ctx)
{
	while (ctx->conns) {
		struct rdmx_conn *conn = ctx->conns;

		if (conn->state == RDMX_CONN_ESTABLISHED || conn->state == RDMX_CONN_ERROR)
			rdmx__conn_event(conn, RDMX__CONN_EV_DISCONNECTED);
		else
			rdmx__conn_retire(conn);
	}
}

int rdmx_ctx_stop(struct rdmx_ctx *ctx)
{
	if (!ctx)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING || ctx->in_poll)
		return RDMX_E_BAD_STATE;
	ctx->state = RDMX_CTX_STOPPING;
	rdmx__pe_detach(ctx->pe, ctx);
	ctx->in_poll++; /* frees of connections wait until the provider returns */
	ctx->dev->ops->ctx_stop(ctx);
	rdmx__ctx_deliver_deferred(ctx, true);
	retire_conns(ctx);
	/* callbacks above may have deferred more tasks (submits fail in
	 * STOPPING, so this loop ends) */
	while (ctx->deferred_head)
		rdmx__ctx_deliver_deferred(ctx, true);
	ctx->in_poll--;
	rdmx__ctx_reap_conns(ctx);
	rdmx__task_pools_destroy(ctx);
	ctx->listening = false;
	ctx->num_conns = 0;
	ctx->state = RDMX_CTX_IDLE;
	return 0;
}

int rdmx_ctx_get_state(const struct rdmx_ctx *ctx, enum rdmx_ctx_state *state)
{
	if (!ctx || !state)
		return RDMX_E_INVAL;
	*state = ctx->state;
	return 0;
}

int rdmx_ctx_get_completions_pending(const struct rdmx_ctx *ctx, uint32_t *n)
{
	if (!ctx || !n)
		return RDMX_E_INVAL;
	*n = ctx->in_poll ? ctx->cb_more : 0;
	return 0;
}

int rdmx_ctx_get_dev(const struct rdmx_ctx *ctx, struct rdmx_dev **dev)
{
	if (!ctx || !dev)
		return RDMX_E_INVAL;
	*dev = ctx->dev;
	return 0;
}

/* Common prologue of the IDLE-only setters. */
#define SETTER_CHECK(ctx)                                                                          \
	do {                                                                                       \
		if (!(ctx))                                                                        \
			return RDMX_E_INVAL;                                                       \
		if ((ctx)->state != RDMX_CTX_IDLE)                                                 \
			return RDMX_E_BAD_STATE;                                                   \
	} while (0)

#define GETTER(name, type, field)                                                                  \
	int rdmx_ctx_get_##name(const struct rdmx_ctx *ctx, type *out)                             \
	{                                                                                          \
		if (!ctx || !out)                                                                  \
			return RDMX_E_INVAL;                                                       \
		*out = ctx->props.field;                                                           \
		return 0;                                                                          \
	}

static int queue_size(uint32_t size, uint32_t max, uint32_t *out)
{
	uint64_t rounded;

	if (size == 0)
		return RDMX_E_INVAL;
	rounded = pow2_ceil(size);
	if (rounded > max)
		return RDMX_E_INVAL;
	*out = (uint32_t)rounded;
	return 0;
}

int rdmx_ctx_set_send_queue_size(struct rdmx_ctx *ctx, uint32_t size)
{
	SETTER_CHECK(ctx);
	return queue_size(size, ctx->caps.max_send_queue_size, &ctx->props.send_queue_size);
}
GETTER(send_queue_size, uint32_t, send_queue_size)

int rdmx_ctx_set_recv_queue_size(struct rdmx_ctx *ctx, uint32_t size)
{
	SETTER_CHECK(ctx);
	return queue_size(size, ctx->caps.max_recv_queue_size, &ctx->props.recv_queue_size);
}
GETTER(recv_queue_size, uint32_t, recv_queue_size)

int rdmx_ctx_set_max_send_buf_list_len(struct rdmx_ctx *ctx, uint32_t len)
{
	SETTER_CHECK(ctx);
	if (len == 0 || len > ctx->caps.max_buf_list_len)
		return RDMX_E_INVAL;
	ctx->props.max_send_buf_list_len = len;
	return 0;
}
GETTER(max_send_buf_list_len, uint32_t, max_send_buf_list_len)

int rdmx_ctx_set_max_recv_buf_list_len(struct rdmx_ctx *ctx, uint32_t len)
{
	SETTER_CHECK(ctx);
	if (len == 0 || len > ctx->caps.max_buf_list_len)
		return RDMX_E_INVAL;
	ctx->props.max_recv_buf_list_len = len;
	return 0;
}
GETTER(max_recv_buf_list_len, uint32_t, max_recv_buf_list_len)

int rdmx_ctx_set_permissions(struct rdmx_ctx *ctx, unsigned access)
{
	SETTER_CHECK(ctx);
	if (access & ~(unsigned)CTX_REMOTE_ALL)
		return RDMX_E_INVAL;
	ctx->props.permissions = access;
	return 0;
}
GETTER(permissions, unsigned, permissions)

int rdmx_ctx_set_mtu(struct rdmx_ctx *ctx, uint32_t mtu)
{
	SETTER_CHECK(ctx);
	if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
		return RDMX_E_INVAL;
	ctx->props.mtu = mtu;
	return 0;
}
GETTER(mtu, uint32_t, mtu)

int rdmx_ctx_set_gid_index(struct rdmx_ctx *ctx, uint32_t index)
{
	SETTER_CHECK(ctx);
	if (index >= ctx->caps.gid_table_len)
		return RDMX_E_INVAL;
	ctx->props.gid_index = index;
	return 0;
}
GETTER(gid_index, uint32_t, gid_index)

int rdmx_ctx_set_sl(struct rdmx_ctx *ctx, uint8_t sl)
{
	SETTER_CHECK(ctx);
	if (sl > 15)
		return RDMX_E_INVAL;
	ctx->props.sl = sl;
	return 0;
}
GETTER(sl, uint8_t, sl)

int rdmx_ctx_set_grh(struct rdmx_ctx *ctx, bool grh)
{
	SETTER_CHECK(ctx);
	ctx->props.grh = grh;
	return 0;
}
GETTER(grh, bool, grh)

int rdmx_ctx_set_conn_request_timeout(struct rdmx_ctx *ctx, uint32_t timeout_ms)
{
	SETTER_CHECK(ctx);
	if (timeout_ms == 0)
		return RDMX_E_INVAL;
	ctx->props.conn_request_timeout_ms = timeout_ms;
	return 0;
}
GETTER(conn_request_timeout, uint32_t, conn_request_timeout_ms)

int rdmx_ctx_set_rnr_retry_count(struct rdmx_ctx *ctx, uint8_t count)
{
	SETTER_CHECK(ctx);
	if (count > 7)
		return RDMX_E_INVAL;
	ctx->props.rnr_retry_count = count;
	return 0;
}
GETTER(rnr_retry_count, uint8_t, rnr_retry_count)

int rdmx_ctx_set_transport_timeout(struct rdmx_ctx *ctx, uint32_t timeout_ms)
{
	SETTER_CHECK(ctx);
	if (timeout_ms > RDMX_CTX_TRANSPORT_TIMEOUT_MAX_MS)
		return RDMX_E_INVAL;
	ctx->props.transport_timeout_ms = timeout_ms;
	return 0;
}
GETTER(transport_timeout, uint32_t, transport_timeout_ms)

int rdmx_ctx_set_retry_count(struct rdmx_ctx *ctx, uint8_t count)
{
	SETTER_CHECK(ctx);
	if (count > 7)
		return RDMX_E_INVAL;
	ctx->props.retry_count = count;
	return 0;
}
GETTER(retry_count, uint8_t, retry_count)

int rdmx_ctx_set_max_inline(struct rdmx_ctx *ctx, uint32_t bytes)
{
	SETTER_CHECK(ctx);
	if (bytes > ctx->caps.max_inline)
		return RDMX_E_INVAL;
	ctx->props.max_inline = bytes;
	return 0;
}
GETTER(max_inline, uint32_t, max_inline)

int rdmx_ctx_set_max_connections(struct rdmx_ctx *ctx, uint32_t max)
{
	SETTER_CHECK(ctx);
	if (max == 0 || (ctx->caps.max_connections && max > ctx->caps.max_connections))
		return RDMX_E_INVAL;
	ctx->props.max_connections = max;
	return 0;
}
GETTER(max_connections, uint32_t, max_connections)

int rdmx_ctx_set_transport_type(struct rdmx_ctx *ctx, enum rdmx_transport_type type)
{
	SETTER_CHECK(ctx);
	switch (type) {
	case RDMX_TRANSPORT_TYPE_RC:
		ctx->props.transport_type = type;
		return 0;
	case RDMX_TRANSPORT_TYPE_DC:
		return RDMX_E_NOT_SUPPORTED;
	default:
		return RDMX_E_INVAL;
	}
}
GETTER(transport_type, enum rdmx_transport_type, transport_type)

int rdmx_ctx_set_user_data(struct rdmx_ctx *ctx, void *user_data)
{
	if (!ctx)
		return RDMX_E_INVAL;
	ctx->user_data = user_data;
	return 0;
}

int rdmx_ctx_get_user_data(const struct rdmx_ctx *ctx, void **user_data)
{
	if (!ctx || !user_data)
		return RDMX_E_INVAL;
	*user_data = ctx->user_data;
	return 0;
}

/* Upper bound on a type's pool: the queue it posts to, times the connections
 * that share the type for send-side tasks. */
#define CTX_MAX_TASKS_PER_TYPE (1u << 22)

int rdmx_ctx_set_task_conf(struct rdmx_ctx *ctx, enum rdmx_task_type type, rdmx_task_cb ok_cb,
                           rdmx_task_cb err_cb, uint32_t num_tasks)
{
	uint64_t limit;

	SETTER_CHECK(ctx);
	if ((unsigned)type >= RDMX_TASK_TYPE_COUNT || !ok_cb || !err_cb || num_tasks == 0)
		return RDMX_E_INVAL;
	if (type == RDMX_TASK_RECEIVE)
		limit = ctx->caps.max_recv_queue_size;
	else
		limit = (uint64_t)ctx->caps.max_send_queue_size *
		        (ctx->caps.max_connections ? ctx->caps.max_connections : 1);
	if (limit > CTX_MAX_TASKS_PER_TYPE)
		limit = CTX_MAX_TASKS_PER_TYPE;
	if (num_tasks > limit)
		return RDMX_E_INVAL;
	ctx->conf[type].ok_cb = ok_cb;
	ctx->conf[type].err_cb = err_cb;
	ctx->conf[type].num_tasks = num_tasks;
	return 0;
}

int rdmx_ctx_set_conn_callbacks(struct rdmx_ctx *ctx, rdmx_conn_request_cb request,
                                rdmx_conn_established_cb established, rdmx_conn_failure_cb failure,
                                rdmx_conn_disconnected_cb disconnected)
{
	SETTER_CHECK(ctx);
	ctx->request_cb = request;
	ctx->established_cb = established;
	ctx->failure_cb = failure;
	ctx->disconnected_cb = disconnected;
	return 0;
}
