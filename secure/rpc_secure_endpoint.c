/* struct rdmx_rpc_secure_conn: the getters of rpc_secure.h that work on
 * either side's connections. A connection belongs to the thread that drives
 * its engine, like the rdmx_rpc_ep it owns: no lock, no global list. */
#include <stdio.h>
#include <string.h>

#include <rdmx/dev.h>
#include <rdmx/status.h>

#include "rpc_secure_internal.h"

void rdmx_rpc_secure_opts_init(struct rdmx_rpc_secure_opts *opts)
{
	if (opts)
		memset(opts, 0, sizeof(*opts));
}

int rdmx__rpc_hello_for_dev(const struct rdmx_rpc_secure_opts *opts, const struct rdmx_dev *dev,
                            struct rdmx__rpc_hello *h, void *buf, size_t cap, size_t *len)
{
	struct rdmx_dev_caps caps;
	uint64_t dev_max = 0;
	int ret;

	if (rdmx_dev_query_caps(dev, &caps) == 0)
		dev_max = caps.max_message_size;
	ret = rdmx__rpc_hello_from_opts(opts, dev_max, h);
	if (!ret && dev_max && h->max_msg > dev_max)
		ret = RDMX_E_INVAL; /* asked for more than the device carries */
	if (!ret)
		ret = rdmx__rpc_hello_encode(h, buf, cap, len);
	return ret;
}

void rdmx__rpc_secure_conn_names(struct rdmx_rpc_secure_conn *conn)
{
	const char *cert = "", *hello = "";

	if (conn->b)
		rdmx_bootstrap_get_peer_names(conn->b, &cert, &hello);
	snprintf(conn->cert_name, sizeof(conn->cert_name), "%s", cert);
	snprintf(conn->hello_name, sizeof(conn->hello_name), "%s", hello);
}

struct rdmx_rpc_ep *rdmx_rpc_secure_conn_get_ep(const struct rdmx_rpc_secure_conn *conn)
{
	return conn ? conn->ep : NULL;
}

int rdmx_rpc_secure_check_wants(struct rdmx_rpc_secure_conn *conn, int *wants)
{
	int ret;

	if (!conn || !wants)
		return RDMX_E_INVAL;
	if (conn->lost)
		return conn->lost;
	if (!conn->b)
		return RDMX_E_DISCONNECTED;
	/* on loss the bootstrap disconnects the engine connection itself */
	ret = rdmx_bootstrap_check_wants(conn->b, wants);
	if (ret)
		conn->lost = ret;
	return ret;
}

int rdmx_rpc_secure_check(struct rdmx_rpc_secure_conn *conn)
{
	int wants;

	return rdmx_rpc_secure_check_wants(conn, &wants);
}

int rdmx_rpc_secure_get_peer_names(const struct rdmx_rpc_secure_conn *conn, const char **cert_name,
                                   const char **hello_name)
{
	if (!conn || !cert_name || !hello_name)
		return RDMX_E_INVAL;
	*cert_name = conn->cert_name;
	*hello_name = conn->hello_name;
	return RDMX_OK;
}

int rdmx_rpc_secure_get_fd(const struct rdmx_rpc_secure_conn *conn, int *fd)
{
	if (!conn || !fd)
		return RDMX_E_INVAL;
	if (!conn->b)
		return RDMX_E_BAD_STATE;
	return rdmx_bootstrap_get_fd(conn->b, fd);
}
