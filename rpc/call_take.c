/* A client keeps a large response instead of copying it
 * (rdmx_rpc_result_take, rdmx/rpc.h): the mirror of
 * rdmx_rpc_server_call_take_request. A response larger than a channel slot
 * came by rendezvous into a receive buffer of the worker's registration
 * cache; from inside the call's completion callback (which runs inside the
 * channel's receive callback of that message) the channel hands that
 * buffer over (rdmx__chan_take_rx: deregistered, out of the cache). */
#include "rpc_priv.h"

int rdmx_rpc_result_take(struct rdmx_rpc_ep *ep, const struct rdmx_rpc_result *result, void **owned,
                         size_t *size)
{
	if (!ep || !result || !owned)
		return RDMX_E_INVAL;
	*owned = NULL;
	if (!result->data || !result->len || ep->closed)
		return RDMX_E_BAD_STATE; /* no body here, or the endpoint is going */
	/* the channel checks that data lies in the message being delivered */
	return rdmx__chan_take_rx(ep->chan, result->data, owned, size);
}
