/* The server side of the reads (server.c's handlers, and the kv tests): a
 * Get answered from the store, and the refusal of a read called one-way,
 * which Get and Scan (scan.c) share. */
#ifndef RDMX_KV_READ_H
#define RDMX_KV_READ_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmx/rpc.h>

#include "kv.rdmx.h"
#include "store.h"

/* rdmx-kv serve's record of a client's connection: its endpoint's user
 * data (rdmx_rpc_ep_set_user_data), zeroed and set when the client
 * connects, freed when it goes (server.c; the kv tests' fixture keeps one
 * per connection too). Read and written by that connection's handlers
 * only, so from one thread (with --workers, its worker's). */
struct kv_conn {
	bool oneway_read_logged; /* kv_read_refuse_oneway logged one */
};

/* A read's answer is its only effect: called one-way
 * (rdmx_rpc_call_is_oneway), its work would go to nobody. Such a call is
 * not executed: answered INVALID_ARGUMENT (nothing is sent; the server's
 * stats count it under that code), counted (kv_read_oneway_refused) and
 * logged (RDMX_WARN, naming `what` and the request id, nothing of the
 * request) for the first one-way read of its connection (struct kv_conn;
 * a connection without that record: none logged), so a client that sends
 * them in a loop costs one line. Returns true when it refused call (call
 * is answered), false for a call that wants its answer. */
bool kv_read_refuse_oneway(struct rdmx_rpc_server_call *call, const char *what);
/* One-way reads refused by this process, all connections and threads. */
uint64_t kv_read_oneway_refused(void);

/* Answers call, a Get of req, from s: the value goes from the store's
 * memory into the reply, inside a read view; NOT_FOUND, INVALID_ARGUMENT
 * (a key outside 1..KV_MAX_KEY bytes) or INTERNAL (the store failed;
 * logged by it). A one-way Get is refused (kv_read_refuse_oneway, the
 * store not read): false; true otherwise. */
bool kv_get_respond(struct kv_store *s, struct rdmx_rpc_server_call *call,
                    const kv_GetRequest *req);

#endif
