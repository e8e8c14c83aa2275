#include "kvfix.h"

#include <string.h>

#include "put.h"
#include "read.h"
#include "scan.h"

static void on_put(struct rdmx_rpc_server_call *call, const kv_PutRequest *req, void *arg)
{
	struct kv_fix_state *s = arg;
	kv_PutResponse resp;
	bool kept = false;
	int rc;

	s->puts++;
	kv_PutResponse_init(&resp);
	rc = kv_put_request(s->store, call, req, &resp.replaced, &kept);
	s->kept += kept;
	if (rc) {
		s->failed++;
		kv_KV_Put_respond(call, RDMX_RPC_INTERNAL, "store failed", NULL);
		return;
	}
	kv_KV_Put_respond(call, RDMX_RPC_OK, NULL, &resp);
}

/* as rdmx-kv serve's (read.c, scan.c): a one-way read refused */
static void on_get(struct rdmx_rpc_server_call *call, const kv_GetRequest *req, void *arg)
{
	struct kv_fix_state *s = arg;

	if (kv_get_respond(s->store, call, req))
		s->gets++;
	else
		s->refused++;
}

static void on_scan(struct rdmx_rpc_server_call *call, const kv_ScanRequest *req, void *arg)
{
	struct kv_fix_state *s = arg;

	if (kv_scan_respond(s->store, call, req))
		s->scans++;
	else
		s->refused++;
}

const struct chan_conf kv_fix_conf = {.max_msg = KV_FIX_MAX_MSG};

static void fix_open(struct kv_fix *f, const char *extra_name, rdmx_rpc_handler extra,
                     const struct chan_conf *client)
{
	static const struct kv_KV_handlers h = {on_get, on_put, NULL, on_scan};

	memset(f, 0, sizeof(*f));
	ASSERT_OK(kv_store_open_memory(0, &f->st.store));
	node_open(&f->a, "a", 0, NULL);
	node_open(&f->b, "b", 1, NULL);
	ASSERT_OK(rdmx_rpc_server_create(&f->srv));
	ASSERT_OK(kv_KV_register(f->srv, &h, &f->st));
	if (extra)
		ASSERT_OK(rdmx_rpc_server_register(f->srv, rdmx_rpc_method_id(extra_name),
		                                   extra_name, extra, NULL));
	rpc_pair(&f->a, &f->b, NULL, f->srv, client, &kv_fix_conf, &f->ra, &f->rb);
	ASSERT_OK(rdmx_rpc_ep_set_user_data(f->rb, &f->conn));
}

void kv_fix_open(struct kv_fix *f, const char *extra_name, rdmx_rpc_handler extra)
{
	fix_open(f, extra_name, extra, &kv_fix_conf);
}

void kv_fix_open_conf(struct kv_fix *f, const struct chan_conf *client)
{
	fix_open(f, NULL, NULL, client);
}

void kv_fix_close(struct kv_fix *f)
{
	if (f->ra || f->rb)
		rpc_pair_close(&f->ra, &f->rb);
	ASSERT_OK(rdmx_rpc_server_destroy(&f->srv));
	node_close(&f->a);
	node_close(&f->b);
	kv_store_destroy(&f->st.store);
}

void kv_fix_wait_server_noticed(struct kv_fix *f, struct rdmx_chan *y)
{
	for (uint64_t guard = now_ms() + GUARD_MS; rdmx_chan_get_state(y) == RDMX_CHAN_READY;) {
		cr_assert(now_ms() < guard, "the server never noticed (failure guard)");
		rdmx_pe_progress(f->b.pe);
	}
}
