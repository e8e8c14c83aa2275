/* Scan pages sized to the message they travel in (services/kv/scan.c): a
 * page's keys, values and their framing all count, against
 * KV_SCAN_PAGE_BYTES and the largest message the client's channel takes.
 * Two nodes in one process over the battery's fixture (kvfix.h), the client
 * asking for smaller messages than the server's (the channel sends the
 * smaller of both sides'), the generated kv stubs, the real store:
 * - 1000 entries with 4 KiB keys and 4 KiB values, client messages up to
 *   4 MiB: every page fits, every entry back in order and intact;
 * - the same keys, keys_only, client messages up to 2 MiB: the keys count;
 * - an entry larger than the client's messages: the entries before it come,
 *   then a RESOURCE_EXHAUSTED that says why; keys_only passes it, and a
 *   scan from its key goes on after it;
 * - an entry over KV_SCAN_PAGE_BYTES that fits the channel goes alone:
 *   every page has an entry, the scan ends. */
#include "kvfix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv.h"
#include "kv.rdmx.h"
#include "scan.h"
#include "store.h"

#define MIB (1u << 20)
#define N 1000

/* what the client saw of one entry */
struct seen {
	char head[8]; /* the key's first bytes, NUL-terminated */
	size_t klen;
	uint64_t size;
	size_t vlen;
	uint64_t vsum;
};

/* one scan, page after page */
struct scan {
	bool keys_only;
	uint32_t limit;
	int done;
	enum rdmx_rpc_code code;
	char msg[256];
	char token[KV_MAX_KEY];
	size_t token_len;
	struct seen seen[N + 8];
	size_t n, pages;
	uint64_t largest; /* the largest page's answer: RPC header and body */
};

static void page_cb(enum rdmx_rpc_code code, const char *message, const kv_ScanResponse *resp,
                    void *arg)
{
	struct scan *s = arg;
	uint64_t size;

	s->done++;
	s->code = code;
	snprintf(s->msg, sizeof(s->msg), "%s", message ? message : "");
	if (code != RDMX_RPC_OK)
		return;
	s->pages++;
	size = RDMX_RPC_HDR_SIZE + kv_ScanResponse_encoded_size(resp);
	if (size > s->largest)
		s->largest = size;
	cr_assert(resp->n_entries > 0 || !resp->next_page_token.len,
	          "page %zu: no entry, and a token to go on", s->pages);
	for (size_t i = 0; i < resp->n_entries; i++) {
		const kv_Entry *e = &resp->entries[i];
		struct seen *w = &s->seen[s->n];

		cr_assert(s->n < sizeof(s->seen) / sizeof(s->seen[0]), "more entries than stored");
		snprintf(w->head, sizeof(w->head), "%.*s", (int)(e->key.len < 7 ? e->key.len : 7),
		         e->key.data);
		w->klen = e->key.len;
		w->size = e->size;
		w->vlen = e->value.len;
		w->vsum = checksum64(e->value.data, e->value.len);
		s->n++;
	}
	cr_assert(resp->next_page_token.len <= sizeof(s->token));
	if (resp->next_page_token.len)
		memcpy(s->token, resp->next_page_token.data, resp->next_page_token.len);
	s->token_len = resp->next_page_token.len;
}

/* One page after s->token; its outcome in s. */
static void scan_page(struct kv_fix *f, struct scan *s)
{
	kv_ScanRequest req;

	kv_ScanRequest_init(&req);
	req.limit = s->limit;
	req.keys_only = s->keys_only;
	req.page_token = rdmx_str_n(s->token, s->token_len);
	s->done = 0;
	ASSERT_OK(kv_KV_Scan_async(f->ra, &req, NULL, page_cb, s, NULL));
	DRIVE_UNTIL(&f->a, &f->b, s->done);
	cr_assert_eq(s->done, 1);
}

/* Every page, until the last or an error (s->code); a scan that does not
 * move on fails the test. */
static void scan_all(struct kv_fix *f, struct scan *s)
{
	do {
		cr_assert(s->pages <= N, "%zu pages for at most %d entries", s->pages, N);
		scan_page(f, s);
	} while (s->code == RDMX_RPC_OK && s->token_len);
}

/* key i: "k%04d" then 'x' up to KV_MAX_KEY bytes; value i: vlen bytes of
 * pattern i */
static void fill(struct kv_fix *f, size_t vlen)
{
	static char key[KV_MAX_KEY];
	uint8_t *val = malloc(vlen);

	cr_assert_not_null(val);
	memset(key, 'x', sizeof(key));
	for (int i = 0; i < N; i++) {
		char head[8];

		snprintf(head, sizeof(head), "k%04d", i);
		memcpy(key, head, 5);
		pattern_fill(val, vlen, (uint32_t)i);
		ASSERT_OK(kv_store_put(f->st.store, key, sizeof(key), val, vlen, NULL));
	}
	free(val);
}

/* every stored entry seen once, in key order, as fill() made it */
static void check_all(const struct scan *s, size_t vlen)
{
	uint8_t *val = malloc(vlen ? vlen : 1);

	cr_assert_not_null(val);
	cr_assert_eq(s->n, N, "%zu of %d entries", s->n, N);
	for (int i = 0; i < N; i++) {
		char head[8];

		snprintf(head, sizeof(head), "k%04dxx", i);
		cr_assert_str_eq(s->seen[i].head, head, "entry %d", i);
		cr_assert_eq(s->seen[i].klen, KV_MAX_KEY, "entry %d", i);
		cr_assert_eq(s->seen[i].size, vlen, "entry %d", i);
		if (s->keys_only) {
			cr_assert_eq(s->seen[i].vlen, 0, "entry %d: a value in a keys_only scan",
			             i);
			continue;
		}
		pattern_fill(val, vlen, (uint32_t)i);
		cr_assert_eq(s->seen[i].vlen, vlen, "entry %d", i);
		cr_assert_eq(s->seen[i].vsum, checksum64(val, vlen), "entry %d: value differs", i);
	}
	free(val);
}

Test(kv_scan, pages_count_keys_and_fit_the_channel, .timeout = 300)
{
	const struct chan_conf client = {.max_msg = 4 * MIB};
	static struct scan s;
	struct kv_fix f;

	kv_fix_open_conf(&f, &client);
	fill(&f, 4096);
	memset(&s, 0, sizeof(s));
	s.limit = KV_SCAN_MAX_LIMIT; /* the values alone (4000 KiB) fit one old page */
	scan_all(&f, &s);
	cr_assert_eq(s.code, RDMX_RPC_OK, "page %zu: code %d (%s)", s.pages + 1, s.code, s.msg);
	cr_assert(s.largest <= client.max_msg, "a page of %llu bytes",
	          (unsigned long long)s.largest);
	cr_assert(s.pages >= 2, "8 MB of entries in %zu page", s.pages);
	check_all(&s, 4096);
	kv_fix_close(&f);
}

Test(kv_scan, keys_only_pages_count_keys, .timeout = 300)
{
	const struct chan_conf client = {.max_msg = 2 * MIB};
	static struct scan s;
	struct kv_fix f;

	kv_fix_open_conf(&f, &client);
	fill(&f, 4096);
	memset(&s, 0, sizeof(s));
	s.limit = KV_SCAN_MAX_LIMIT;
	s.keys_only = true; /* 4 MB of keys */
	scan_all(&f, &s);
	cr_assert_eq(s.code, RDMX_RPC_OK, "page %zu: code %d (%s)", s.pages + 1, s.code, s.msg);
	cr_assert(s.largest <= client.max_msg, "a page of %llu bytes",
	          (unsigned long long)s.largest);
	check_all(&s, 4096);
	kv_fix_close(&f);
}

static void put3(struct kv_fix *f, size_t big)
{
	uint8_t *val = malloc(big);

	cr_assert_not_null(val);
	pattern_fill(val, big, 7);
	/* straight into the store: as if put by a client with larger messages */
	ASSERT_OK(kv_store_put(f->st.store, "a", 1, val, 1024, NULL));
	ASSERT_OK(kv_store_put(f->st.store, "b", 1, val, big, NULL));
	ASSERT_OK(kv_store_put(f->st.store, "c", 1, val, 1024, NULL));
	free(val);
}

Test(kv_scan, entry_over_the_channel_is_a_clear_error, .timeout = 300)
{
	const struct chan_conf client = {.max_msg = 2 * MIB};
	static struct scan s;
	struct kv_fix f;

	kv_fix_open_conf(&f, &client);
	put3(&f, 3 * MIB);
	memset(&s, 0, sizeof(s));
	scan_page(&f, &s);
	cr_assert_eq(s.code, RDMX_RPC_OK, "first page: code %d (%s)", s.code, s.msg);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.seen[0].head, "a");
	cr_assert_eq(s.token_len, 1);
	/* the next page would be b alone: too large for this client */
	scan_page(&f, &s);
	cr_assert_eq(s.code, RDMX_RPC_RESOURCE_EXHAUSTED, "code %d (%s)", s.code, s.msg);
	cr_assert(strstr(s.msg, "largest message") && strstr(s.msg, "keys_only"),
	          "an unclear message: %s", s.msg);
	cr_assert_eq(s.n, 1);
	/* the keys pass it */
	memset(&s, 0, sizeof(s));
	s.keys_only = true;
	scan_all(&f, &s);
	cr_assert_eq(s.code, RDMX_RPC_OK, "keys_only: code %d (%s)", s.code, s.msg);
	cr_assert_eq(s.n, 3);
	cr_assert_str_eq(s.seen[1].head, "b");
	cr_assert_eq(s.seen[1].size, 3 * MIB);
	/* and a scan from its key goes on after it */
	memset(&s, 0, sizeof(s));
	s.token[0] = 'b';
	s.token_len = 1;
	scan_all(&f, &s);
	cr_assert_eq(s.code, RDMX_RPC_OK, "after b: code %d (%s)", s.code, s.msg);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.seen[0].head, "c");
	kv_fix_close(&f);
}

Test(kv_scan, entry_over_the_page_budget_goes_alone, .timeout = 300)
{
	static struct scan s;
	struct kv_fix f;

	kv_fix_open(&f, NULL, NULL); /* client messages up to KV_FIX_MAX_MSG */
	put3(&f, KV_SCAN_PAGE_BYTES + MIB);
	memset(&s, 0, sizeof(s));
	scan_all(&f, &s);
	cr_assert_eq(s.code, RDMX_RPC_OK, "page %zu: code %d (%s)", s.pages + 1, s.code, s.msg);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.pages, 3, "%zu pages", s.pages); /* a; b alone; c */
	cr_assert_eq(s.seen[1].vlen, KV_SCAN_PAGE_BYTES + MIB);
	kv_fix_close(&f);
}
