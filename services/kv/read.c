/* The server side of the reads: see read.h. */
#include "read.h"

#include <stdatomic.h>

#include <rdmx/rpc_stream.h>
#include <rdmx/status.h>

#include "common/log.h"
#include "kv.h"

static _Atomic uint64_t oneway_refused;

bool kv_read_refuse_oneway(struct rdmx_rpc_server_call *call, const char *what)
{
	struct kv_conn *c;

	if (!rdmx_rpc_call_is_oneway(call))
		return false;
	atomic_fetch_add(&oneway_refused, 1);
	/* the connection's record: only its own thread runs its handlers */
	c = rdmx_rpc_ep_get_user_data(rdmx_rpc_call_get_conn(call));
	if (c && !c->oneway_read_logged) {
		c->oneway_read_logged = true;
		RDMX_WARN(
		    "rdmx-kv: a one-way %s (request %llu) refused: its answer would reach "
		    "nobody; this connection's further one-way reads are refused without a line",
		    what, (unsigned long long)rdmx_rpc_call_get_request_id(call));
	}
	rdmx_rpc_respond(call, RDMX_RPC_INVALID_ARGUMENT, "a read called one-way is refused", NULL);
	return true;
}

uint64_t kv_read_oneway_refused(void)
{
	return atomic_load(&oneway_refused);
}

bool kv_get_respond(struct kv_store *s, struct rdmx_rpc_server_call *call, const kv_GetRequest *req)
{
	struct kv_entry e;
	kv_GetResponse resp;
	int rc;

	if (kv_read_refuse_oneway(call, "get"))
		return false;
	if (req->key.len < 1 || req->key.len > KV_MAX_KEY) {
		kv_KV_Get_respond(call, RDMX_RPC_INVALID_ARGUMENT, "a key is 1..4096 bytes", NULL);
		return true;
	}
	if (kv_store_begin_read(s)) {
		kv_KV_Get_respond(call, RDMX_RPC_INTERNAL, "the store failed (logged)", NULL);
		return true;
	}
	/* the value goes from the store into the reply, inside the read view */
	rc = kv_store_get(s, req->key.data, req->key.len, &e);
	if (rc) {
		kv_KV_Get_respond(
		    call, rc == RDMX_E_NOT_FOUND ? RDMX_RPC_NOT_FOUND : RDMX_RPC_INTERNAL,
		    rc == RDMX_E_NOT_FOUND ? "no such key" : "the store failed (logged)", NULL);
	} else {
		kv_GetResponse_init(&resp);
		resp.value = rdmx_bytes_n(e.val, e.vlen);
		kv_KV_Get_respond(call, RDMX_RPC_OK, NULL, &resp);
	}
	kv_store_end_read(s);
	return true;
}
