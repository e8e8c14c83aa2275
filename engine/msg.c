/* Light messages (engine/msg.h): the engine's checks around the provider's
 * post_msg, and the context's handler. */
#include "msg.h"

#include "provider.h"

int rdmx__ctx_set_msg_handler(struct rdmx_ctx *ctx, rdmx__msg_fn fn, void *arg)
{
	if (!ctx || !fn)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_IDLE)
		return RDMX_E_BAD_STATE;
	if (!ctx->dev->ops->post_msg)
		return RDMX_E_NOT_SUPPORTED;
	ctx->msg_fn = fn;
	ctx->msg_arg = arg;
	return 0;
}

void rdmx__msg_arrived(struct rdmx_conn *conn, uint32_t imm, uint32_t len)
{
	struct rdmx_ctx *ctx = conn->ctx;

	/* as a receive posted and consumed: completed never passes submitted */
	ctx->stats.submitted[RDMX_TASK_RECEIVE]++;
	ctx->stats.completed[RDMX_TASK_RECEIVE]++;
	ctx->stats.bytes[RDMX_TASK_RECEIVE] += len;
	ctx->msg_fn(ctx->msg_arg, conn, imm, len);
}

int rdmx__conn_post_msg(struct rdmx_conn *conn, const struct rdmx_buf *src,
                        const struct rdmx_rbuf *dst, uint32_t imm)
{
	struct rdmx_ctx *ctx;
	uint64_t len = 0;
	int rc;

	if (!conn || !src || !dst || !dst->mr)
		return RDMX_E_INVAL;
	ctx = conn->ctx;
	if (!ctx->dev->ops->post_msg)
		return RDMX_E_NOT_SUPPORTED;
	if (dst->mr->provider != ctx->dev->ops->id)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING || conn->state != RDMX_CONN_ESTABLISHED)
		return RDMX_E_BAD_STATE;
	if (RDMX_UNLIKELY(conn->fail_posts)) /* tests: rdmx__conn_fail_posts */
		return RDMX_E_AGAIN;
	for (const struct rdmx_buf *b = src; b; b = b->next) {
		len += b->len;
		if (len > RDMX__MSG_MAX)
			return RDMX_E_INVAL;
	}
	rc = ctx->dev->ops->post_msg(conn, src, dst, imm, (uint32_t)len);
	if (rc == 0) {
		ctx->stats.submitted[RDMX_TASK_WRITE_IMM]++;
		ctx->stats.completed[RDMX_TASK_WRITE_IMM]++;
		ctx->stats.bytes[RDMX_TASK_WRITE_IMM] += len;
	}
	return rc;
}
