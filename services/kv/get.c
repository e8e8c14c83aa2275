/* The client side of a Get: see get.h. */
#include "get.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/channel.h>
#include <rdmx/codec.h>
#include <rdmx/status.h>

#include "kv.rdmx.h"

static void get_done(const struct rdmx_rpc_result *res, void *arg)
{
	struct rdmx_decode_opts dopts = {0, false, 0};
	unsigned char buf[RDMX_CODEC_STACK_ARENA];
	struct kv_get *g = arg;
	kv_GetResponse resp;
	struct rdmx_arena a;
	int rc;

	g->done = true;
	g->reached = res->reached;
	g->rc = (int)res->code;
	snprintf(g->message, sizeof(g->message), "%s", res->message ? res->message : "");
	if (res->code != RDMX_RPC_OK)
		return;
	/* a value by rendezvous: keep its receive buffer, decode in place */
	g->taken = res->len && rdmx_rpc_result_take(g->ep, res, &g->owned, NULL) == 0;
	rdmx_arena_init(&a, buf, sizeof(buf), 0);
	kv_GetResponse_init(&resp);
	rc = res->len ? kv_GetResponse_decode(&resp, res->data, res->len, &a, &dopts) : 0;
	if (rc) {
		g->rc = RDMX_E_PROTOCOL;
		snprintf(g->message, sizeof(g->message), "malformed response");
	} else if (g->taken) {
		g->value = resp.value.data;
		g->len = resp.value.len;
	} else {
		/* in a channel slot, valid only now: the one copy */
		g->owned = malloc(resp.value.len ? resp.value.len : 1);
		if (g->owned) {
			if (resp.value.len)
				memcpy(g->owned, resp.value.data, resp.value.len);
			g->value = g->owned;
			g->len = resp.value.len;
		} else {
			g->rc = RDMX_E_NOMEM;
			snprintf(g->message, sizeof(g->message), "out of memory");
		}
	}
	rdmx_arena_fini(&a);
	if (g->rc) {
		free(g->owned);
		g->owned = NULL;
		g->taken = false;
		g->value = NULL;
		g->len = 0;
	}
}

static int start(struct rdmx_rpc_ep *ep, const char *key, size_t klen,
                 const struct rdmx_rpc_call_opts *opts, struct kv_get *g, rdmx_rpc_done_cb cb,
                 void *arg, uint64_t *call_id)
{
	struct rdmx_rpc_payload p;
	kv_GetRequest req;

	memset(g, 0, sizeof(*g));
	g->ep = ep;
	kv_GetRequest_init(&req);
	req.key = rdmx_str_n(key, klen);
	p = kv_GetRequest_payload(&req);
	return rdmx_rpc_call_async(ep, KV_KV_GET_ID, &p, opts, cb, arg, call_id);
}

int kv_get_start(struct rdmx_rpc_ep *ep, const char *key, size_t klen,
                 const struct rdmx_rpc_call_opts *opts, struct kv_get *g, uint64_t *call_id)
{
	if (!ep || !g || (klen && !key))
		return RDMX_E_INVAL;
	return start(ep, key, klen, opts, g, get_done, g, call_id);
}

/* kv_get_call's call record, on the heap: the call completes into it, and
 * a call kv_get_call had to leave pending completes into it later (then
 * its callback frees it), never into the caller's g. */
struct get_rec {
	struct kv_get g;
	bool left; /* kv_get_call returned without the outcome */
};

static void rec_done(const struct rdmx_rpc_result *res, void *arg)
{
	struct get_rec *r = arg;

	get_done(res, &r->g);
	if (r->left) {
		kv_get_fini(&r->g);
		free(r);
	}
}

/* The wait failed with the call pending: cancel it. Its callback runs once,
 * from inside the cancel or, when the cancel cannot reach it (a one-way
 * call is in no list of pending calls: it completes once sent), later from
 * progress; r lives until then. */
static int leave(struct rdmx_rpc_ep *ep, uint64_t id, struct get_rec *r, int rc)
{
	rdmx_rpc_cancel(ep, id);
	if (r->g.done) {
		kv_get_fini(&r->g);
		free(r);
	} else {
		r->left = true;
	}
	return rc;
}

int kv_get_call(struct rdmx_rpc_ep *ep, const char *key, size_t klen,
                const struct rdmx_rpc_call_opts *opts, struct kv_get *g)
{
	struct rdmx_chan_worker *worker;
	struct get_rec *r;
	uint64_t id = 0;
	int rc;

	if (!ep || !g || (klen && !key))
		return RDMX_E_INVAL;
	memset(g, 0, sizeof(*g));
	g->ep = ep;
	r = malloc(sizeof(*r));
	if (!r)
		return RDMX_E_NOMEM;
	r->left = false;
	worker = rdmx_chan_get_worker(rdmx_rpc_ep_get_chan(ep));
	while ((rc = start(ep, key, klen, opts, &r->g, rec_done, r, &id)) == RDMX_E_AGAIN) {
		rc = rdmx_chan_worker_wait(worker, 100); /* the send queue is full */
		if (rc < 0)
			break;
	}
	if (rc) {
		free(r); /* nothing started */
		return rc;
	}
	while (!r->g.done) {
		rc = rdmx_chan_worker_wait(worker, 1000);
		if (rc < 0 && !r->g.done)
			return leave(ep, id, r, rc);
	}
	*g = r->g; /* what it holds is g's now (value points into owned, not r) */
	free(r);
	return 0;
}

void kv_get_fini(struct kv_get *g)
{
	if (!g)
		return;
	free(g->owned);
	g->owned = NULL;
	g->taken = false;
	g->value = NULL;
	g->len = 0;
}
