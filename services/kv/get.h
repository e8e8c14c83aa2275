/* The client side of a Get (client.c, and the zero-copy tests): the
 * response is decoded in place, and a large value (one that came by
 * rendezvous) stays in the buffer the response was read into
 * (rdmx_rpc_result_take), so the value is not copied on the client at all;
 * a small one (a channel slot) is copied once. */
#ifndef RDMX_KV_GET_H
#define RDMX_KV_GET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/rpc.h>

struct kv_get {
	bool done;            /* the call completed */
	int rc;               /* > 0 RPC status, 0 OK, < 0 RDMX_E_* (malformed reply, memory) */
	char message[256];    /* the status message, "" when none */
	bool reached;         /* as rdmx_rpc_result.reached */
	const uint8_t *value; /* rc == 0: the value (len bytes), inside owned */
	size_t len;
	void *owned; /* the memory value lies in (kv_get_fini frees it) */
	bool taken;  /* owned is the response's receive buffer (no copy) */
	struct rdmx_rpc_ep *ep;
};

/* Starts a Get of key (klen bytes) on ep; g is filled when the call
 * completes (g->done), from the progress of ep's worker. g must stay put
 * until then. The errors of rdmx_rpc_call_async (nothing started). */
int kv_get_start(struct rdmx_rpc_ep *ep, const char *key, size_t klen,
                 const struct rdmx_rpc_call_opts *opts, struct kv_get *g, uint64_t *call_id);
/* Blocking: starts the Get and drives ep's worker until it completes (not
 * from a callback of that worker). 0 once g holds the outcome (see g->rc),
 * or a negative RDMX_E_* when the call could not be started or the wait
 * failed (the engine's error); g is then empty. A call a failed wait left
 * pending is cancelled; one the cancel cannot reach (a one-way call
 * completes when sent) completes later into a record of its own, which its
 * callback frees: the call never writes g after this returned. */
int kv_get_call(struct rdmx_rpc_ep *ep, const char *key, size_t klen,
                const struct rdmx_rpc_call_opts *opts, struct kv_get *g);
/* Frees what g holds (NULL: no-op); g is then empty. */
void kv_get_fini(struct kv_get *g);

#endif
