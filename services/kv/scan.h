/* The server side of a Scan (server.c's handler, and the kv tests): one
 * page of the keys under a prefix, in key order, sized to travel in one
 * message of the call's channel. */
#ifndef RDMX_KV_SCAN_H
#define RDMX_KV_SCAN_H

#include <stdbool.h>

#include <rdmx/rpc.h>

#include "kv.rdmx.h"
#include "store.h"

/* Room a page's answer needs besides its entries: the RPC header, the
 * response's map and array headers and next_page_token (a key of up to
 * KV_MAX_KEY bytes) take 4131 bytes at most. */
#define KV_SCAN_PAGE_RESERVE (8u << 10)

/* Answers call, a Scan of req, from s (in a read view of its own): the
 * entries whose keys start with req->prefix, from the first (no page
 * token) or after req->page_token, in key order; at most req->limit of them
 * (0: KV_SCAN_DEFAULT_LIMIT, at most KV_SCAN_MAX_LIMIT). A page's entries
 * as encoded (key, value unless keys_only, size and their framing) take at
 * most KV_SCAN_PAGE_BYTES, and at most the largest message the call's
 * channel sends (the smaller of both sides') less KV_SCAN_PAGE_RESERVE.
 * The first entry of a page goes alone when it is over KV_SCAN_PAGE_BYTES
 * but fits the channel, so every page makes progress; one that alone is
 * over the channel's limit answers RESOURCE_EXHAUSTED with a message that
 * says so (the entries before it came in earlier pages; a keys_only scan
 * passes it, and a scan from its key as page_token goes on after it).
 * Other answers: INVALID_ARGUMENT (a page token outside the prefix, or a
 * prefix or token over KV_MAX_KEY), RESOURCE_EXHAUSTED (out of memory),
 * INTERNAL (the store failed; logged). A one-way Scan is refused
 * (kv_read_refuse_oneway, read.h; the store not read): false; true
 * otherwise. */
bool kv_scan_respond(struct kv_store *s, struct rdmx_rpc_server_call *call,
                     const kv_ScanRequest *req);

#endif
