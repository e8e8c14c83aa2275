/* The store side of a Put: see put.h. */
#include "put.h"

int kv_put_request(struct kv_store *s, struct rdmx_rpc_server_call *call, const kv_PutRequest *req,
                   bool *replaced, bool *kept)
{
	void *owned = NULL;

	if (kept)
		*kept = false;
	/* the skeleton decoded without copies: value points into the request,
	 * which for a large value is a receive buffer of its own */
	if (req->value.len && rdmx_rpc_server_call_take_request(call, &owned, NULL) == 0) {
		if (kept)
			*kept = true;
		return kv_store_put_owned(s, req->key.data, req->key.len, req->value.data,
		                          req->value.len, owned, replaced);
	}
	return kv_store_put(s, req->key.data, req->key.len, req->value.data, req->value.len,
	                    replaced);
}
