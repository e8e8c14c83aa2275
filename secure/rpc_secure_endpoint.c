/* The secure endpoints of this process, and the getters of rpc_secure.h that
 * work on either side's endpoints. The list is process-wide (endpoints of
 * several threads) and short-held: a lookup walks it under a mutex. Each
 * endpoint itself belongs to the thread that drives its engine, like the
 * rdmx_rpc_conn it describes. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <rdmx/dev.h>
#include <rdmx/status.h>

#include "rpc_secure_internal.h"

static pthread_mutex_t ep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdmx__rpc_secure_ep *ep_head;

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

void rdmx__rpc_secure_ep_names(struct rdmx__rpc_secure_ep *ep)
{
	const char *cert = "", *hello = "";

	if (ep->b)
		rdmx_bootstrap_get_peer_names(ep->b, &cert, &hello);
	snprintf(ep->cert_name, sizeof(ep->cert_name), "%s", cert);
	snprintf(ep->hello_name, sizeof(ep->hello_name), "%s", hello);
}

void rdmx__rpc_secure_ep_add(struct rdmx__rpc_secure_ep *ep)
{
	pthread_mutex_lock(&ep_lock);
	ep->next = ep_head;
	ep_head = ep;
	pthread_mutex_unlock(&ep_lock);
}

void rdmx__rpc_secure_ep_remove(struct rdmx__rpc_secure_ep *ep)
{
	pthread_mutex_lock(&ep_lock);
	for (struct rdmx__rpc_secure_ep **p = &ep_head; *p; p = &(*p)->next) {
		if (*p == ep) {
			*p = ep->next;
			break;
		}
	}
	ep->next = NULL;
	pthread_mutex_unlock(&ep_lock);
}

struct rdmx__rpc_secure_ep *rdmx__rpc_secure_ep_find(const struct rdmx_rpc_conn *rc)
{
	struct rdmx__rpc_secure_ep *ep;

	if (!rc)
		return NULL;
	pthread_mutex_lock(&ep_lock);
	for (ep = ep_head; ep && ep->rc != rc; ep = ep->next)
		;
	pthread_mutex_unlock(&ep_lock);
	return ep;
}

int rdmx_rpc_secure_check(struct rdmx_rpc_conn *rc)
{
	struct rdmx__rpc_secure_ep *ep = rdmx__rpc_secure_ep_find(rc);
	int ret;

	if (!rc)
		return RDMX_E_INVAL;
	if (!ep)
		return RDMX_E_NOT_FOUND;
	if (ep->lost)
		return ep->lost;
	if (!ep->b)
		return RDMX_E_DISCONNECTED;
	/* on loss the bootstrap disconnects the engine connection itself */
	ret = rdmx_bootstrap_check(ep->b);
	if (ret)
		ep->lost = ret;
	return ret;
}

int rdmx_rpc_secure_get_peer_names(const struct rdmx_rpc_conn *rc, const char **cert_name,
                                   const char **hello_name)
{
	const struct rdmx__rpc_secure_ep *ep;

	if (!rc || !cert_name || !hello_name)
		return RDMX_E_INVAL;
	ep = rdmx__rpc_secure_ep_find(rc);
	if (!ep)
		return RDMX_E_NOT_FOUND;
	*cert_name = ep->cert_name;
	*hello_name = ep->hello_name;
	return RDMX_OK;
}

int rdmx_rpc_secure_get_fd(const struct rdmx_rpc_conn *rc, int *fd)
{
	const struct rdmx__rpc_secure_ep *ep;

	if (!rc || !fd)
		return RDMX_E_INVAL;
	ep = rdmx__rpc_secure_ep_find(rc);
	if (!ep)
		return RDMX_E_NOT_FOUND;
	if (!ep->b)
		return RDMX_E_BAD_STATE;
	return rdmx_bootstrap_get_fd(ep->b, fd);
}
