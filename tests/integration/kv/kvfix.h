/* The two-node fixture of the kv tests on the rpc battery (test_bigput.c,
 * test_bigget.c, test_scan.c): nodes a and b over the rpc battery's fixture
 * (rpcfix.h), the generated kv service on b with a memory store, served as
 * `rdmx-kv serve` does (a Put's value kept by the store when it can be
 * taken, a Get answered from the store's memory by read.c, a Scan by
 * scan.c, a one-way Get or Scan refused), and a's
 * endpoint to it; channels carry messages up to KV_FIX_MAX_MSG unless the
 * client's asks for less (kv_fix_open_conf). */
#ifndef RDMX_TEST_KVFIX_H
#define RDMX_TEST_KVFIX_H

#include <stdint.h>

#include "rpcfix.h"

#include "kv.rdmx.h"
#include "read.h"
#include "store.h"

#define KV_FIX_MAX_MSG (65u << 20) /* a 64 MiB value and its framing */

/* What the server did: Puts served, values kept (not copied), Puts the
 * store failed, Gets and Scans served, one-way Gets and Scans refused (not
 * served: read.h). */
struct kv_fix_state {
	struct kv_store *store;
	uint32_t puts, kept, failed, gets, scans, refused;
};

struct kv_fix {
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct kv_fix_state st;
	struct kv_conn conn; /* rb's record, as rdmx-kv serve keeps (read.h) */
};

/* The channel settings of both sides (for a reconnect in a test). */
extern const struct chan_conf kv_fix_conf;

/* Opens the fixture; `extra` (may be NULL) is registered on the server too,
 * as method `extra_name`. */
void kv_fix_open(struct kv_fix *f, const char *extra_name, rdmx_rpc_handler extra);
/* kv_fix_open with no extra method, a's channel set by `client` (the
 * server's stays kv_fix_conf): a client that asks for smaller messages. */
void kv_fix_open_conf(struct kv_fix *f, const struct chan_conf *client);
/* Drives b until its channel y (a's peer) has left READY: the server saw
 * the client go (failure guard: GUARD_MS). */
void kv_fix_wait_server_noticed(struct kv_fix *f, struct rdmx_chan *y);
/* Closes what is still open (the endpoints may be closed already). */
void kv_fix_close(struct kv_fix *f);

#endif
