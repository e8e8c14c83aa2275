/* Data-plane keys of a connection (rdmx_conn_set_data_keys): the engine
 * checks the state, the provider seals its wire (tcp) or says it cannot
 * (verbs: RoCE has no encryption of its own). */
#include "provider.h"

int rdmx_conn_set_data_keys(struct rdmx_conn *conn, const struct rdmx_conn_keys *keys)
{
	struct rdmx_ctx *ctx;
	int rc;

	if (!conn || !keys)
		return RDMX_E_INVAL;
	ctx = conn->ctx;
	if (ctx->state != RDMX_CTX_RUNNING || !conn->exported || conn->can_post || conn->closing ||
	    conn->sealed || conn->state != RDMX_CONN_CONNECTING)
		return RDMX_E_BAD_STATE;
	if (!ctx->dev->ops->conn_set_keys)
		return RDMX_E_NOT_SUPPORTED;
	rc = ctx->dev->ops->conn_set_keys(conn, keys);
	if (rc)
		return rc;
	conn->sealed = true;
	return 0;
}

int rdmx_conn_is_sealed(const struct rdmx_conn *conn, bool *sealed)
{
	if (!conn || !sealed)
		return RDMX_E_INVAL;
	*sealed = conn->sealed;
	return 0;
}
