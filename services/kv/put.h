/* The store side of a Put (server.c's handler, and the zero-copy tests):
 * a value that came by rendezvous is kept in the buffer it was read into,
 * a small one (a channel slot) is copied. */
#ifndef RDMX_KV_PUT_H
#define RDMX_KV_PUT_H

#include <stdbool.h>

#include <rdmx/rpc.h>

#include "kv.rdmx.h"
#include "store.h"

/* Inside the Put handler, req decoded without copies (the generated
 * skeleton's way): stores req's key and value. When the request came by
 * rendezvous, the receive buffer is taken (rdmx_rpc_server_call_take_request)
 * and handed to the store (kv_store_put_owned: the memory store keeps it,
 * LMDB copies once into its map); *kept (may be NULL) tells. Otherwise the
 * value is copied (kv_store_put). The errors of kv_store_put. */
int kv_put_request(struct kv_store *s, struct rdmx_rpc_server_call *call, const kv_PutRequest *req,
                   bool *replaced, bool *kept);

#endif
