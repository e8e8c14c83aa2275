/* The server side of a Scan: see scan.h. */
#include "scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/channel.h>

#include "kv.h"
#include "read.h"

struct scan_page {
	const kv_ScanRequest *req;
	kv_ScanResponse *resp;
	kv_Entry *v;
	uint32_t limit;
	uint64_t cap;    /* what the entries of one page may take: the channel's */
	uint64_t budget; /* the same beyond a page's first entry */
	uint64_t bytes;  /* the entries so far, as encoded */
	size_t n;
	bool too_big; /* the page's first entry alone is over cap */
};

static bool has_prefix(const struct kv_entry *e, struct rdmx_str prefix)
{
	return e->klen >= prefix.len &&
	       (prefix.len == 0 || !memcmp(e->key, prefix.data, prefix.len));
}

/* The page is full: the next one starts after its last key. */
static bool page_end(struct scan_page *p)
{
	const kv_Entry *last = &p->v[p->n - 1];

	p->resp->next_page_token = rdmx_str_n(last->key.data, last->key.len);
	return false;
}

static bool scan_visit(const struct kv_entry *e, void *arg)
{
	struct scan_page *p = arg;
	kv_Entry *x;
	uint64_t size;

	if (!has_prefix(e, p->req->prefix))
		return false;
	if (p->n == p->limit)
		return page_end(p);
	x = &p->v[p->n];
	kv_Entry_init(x);
	x->key = rdmx_str_n(e->key, e->klen);
	x->size = e->vlen;
	if (!p->req->keys_only)
		x->value = rdmx_bytes_n(e->val, e->vlen);
	/* the codec's own count: key, value, size and their framing */
	size = kv_Entry_encoded_size(x);
	if (p->n > 0 && p->bytes + size > p->budget)
		return page_end(p);
	if (p->n == 0 && size > p->cap) {
		p->too_big = true; /* no page can carry it: say so, never loop */
		return false;
	}
	p->bytes += size;
	p->n++;
	return true;
}

/* The largest message the call's channel sends (the smaller of both
 * sides' limits, as rdmx_rpc_respond checks it). */
static uint64_t call_max_msg(struct rdmx_rpc_server_call *call)
{
	uint64_t max = 0;

	if (rdmx_chan_get_max_msg_size(rdmx_rpc_ep_get_chan(rdmx_rpc_call_get_conn(call)), &max))
		max = KV_MAX_MSG; /* the client is gone: nothing will be sent */
	return max;
}

static void page_init(struct scan_page *p, const kv_ScanRequest *req, kv_ScanResponse *resp,
                      kv_Entry *v, uint32_t limit, uint64_t max_msg)
{
	memset(p, 0, sizeof(*p));
	p->req = req;
	p->resp = resp;
	p->v = v;
	p->limit = limit;
	p->cap = max_msg > KV_SCAN_PAGE_RESERVE ? max_msg - KV_SCAN_PAGE_RESERVE : 0;
	p->budget = p->cap < KV_SCAN_PAGE_BYTES ? p->cap : KV_SCAN_PAGE_BYTES;
}

static bool token_ok(const kv_ScanRequest *req)
{
	if (req->prefix.len > KV_MAX_KEY || req->page_token.len > KV_MAX_KEY)
		return false;
	/* an empty prefix may have no data at all (memcmp wants a pointer) */
	return !req->page_token.len || !req->prefix.len ||
	       (req->page_token.len >= req->prefix.len &&
	        !memcmp(req->page_token.data, req->prefix.data, req->prefix.len));
}

/* Inside the read view: the page's entries point into the store. */
static void page_respond(struct rdmx_rpc_server_call *call, struct scan_page *p, uint64_t max_msg)
{
	char msg[200];

	if (p->too_big) {
		snprintf(msg, sizeof(msg),
		         "the next entry is larger than the largest message of this connection "
		         "(%llu bytes): scan with keys_only, or from its key as page_token",
		         (unsigned long long)max_msg);
		kv_KV_Scan_respond(call, RDMX_RPC_RESOURCE_EXHAUSTED, msg, NULL);
		return;
	}
	p->resp->n_entries = p->n;
	p->resp->entries = p->v;
	kv_KV_Scan_respond(call, RDMX_RPC_OK, NULL, p->resp);
}

bool kv_scan_respond(struct kv_store *s, struct rdmx_rpc_server_call *call,
                     const kv_ScanRequest *req)
{
	uint32_t limit = req->limit ? req->limit : KV_SCAN_DEFAULT_LIMIT;
	uint64_t max_msg = call_max_msg(call);
	struct scan_page page;
	kv_ScanResponse resp;
	kv_Entry *v;
	int rc;

	if (kv_read_refuse_oneway(call, "scan"))
		return false;
	if (limit > KV_SCAN_MAX_LIMIT)
		limit = KV_SCAN_MAX_LIMIT;
	if (!token_ok(req)) {
		kv_KV_Scan_respond(call, RDMX_RPC_INVALID_ARGUMENT,
		                   "page_token does not belong to this prefix", NULL);
		return true;
	}
	v = calloc(limit, sizeof(*v));
	if (!v) {
		kv_KV_Scan_respond(call, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return true;
	}
	kv_ScanResponse_init(&resp);
	page_init(&page, req, &resp, v, limit, max_msg);
	rc = kv_store_begin_read(s);
	/* the page starts after the token (the last key of the previous page) */
	if (!rc)
		rc = req->page_token.len
		         ? kv_store_scan(s, req->page_token.data, req->page_token.len, true,
		                         scan_visit, &page)
		         : kv_store_scan(s, req->prefix.data, req->prefix.len, false, scan_visit,
		                         &page);
	if (rc)
		kv_KV_Scan_respond(call, RDMX_RPC_INTERNAL, "the store failed (logged)", NULL);
	else
		page_respond(call, &page, max_msg);
	kv_store_end_read(s);
	free(v);
	return true;
}
