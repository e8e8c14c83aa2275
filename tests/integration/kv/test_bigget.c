/* Large kv values read back without extra copies (services/kv/get.c,
 * rdmx_rpc_result_take): the server answers a Get from the store's memory
 * (the memory store keeps a large Put's receive buffer), the response
 * travels by rendezvous into a receive buffer of the client's registration
 * cache, and the client keeps that buffer and decodes the value in place.
 * Two nodes in one process over the battery's fixture
 * (tests/integration/rpc/rpcfix.c), the generated kv stubs, the real store:
 * - a 64 MiB value got back intact (checksum), the client's buffer handed
 *   over once, nothing left busy on either side;
 * - many large gets: every receive buffer handed over once, the
 *   registrations of both caches bounded;
 * - a client gone while it reads a 64 MiB answer: its call completes once
 *   with UNAVAILABLE, no buffer left busy or handed over, the server's
 *   source released, and the server serves the next client;
 * - a small value (a channel slot) is copied once; a take outside the
 *   completion callback, or without a body, is refused;
 * - the blocking get (kv_get_call) fills the caller's g, and a call it had
 *   to leave pending (its wait failed, the cancel could not reach it)
 *   never writes g after the return. */
#include "kvfix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "get.h"
#include "kv.rdmx.h"
#include "put.h"
#include "store.h"

#define MIB (1u << 20)
#define BIG (64u * MIB)

struct put_rec {
	int done;
	enum rdmx_rpc_code code;
};

static void put_cb(enum rdmx_rpc_code code, const char *message, const kv_PutResponse *resp,
                   void *arg)
{
	struct put_rec *r = arg;

	(void)message;
	(void)resp;
	r->done++;
	r->code = code;
}

static void put_sync(struct kv_fix *f, const char *key, const void *val, size_t len)
{
	struct put_rec r = {0, RDMX_RPC_UNKNOWN};
	kv_PutRequest req;

	kv_PutRequest_init(&req);
	req.key = rdmx_str_c(key);
	req.value = rdmx_bytes_n(val, len);
	ASSERT_OK(kv_KV_Put_async(f->ra, &req, NULL, put_cb, &r, NULL));
	DRIVE_UNTIL(&f->a, &f->b, r.done);
	cr_assert_eq(r.code, RDMX_RPC_OK, "put %s: code %d", key, r.code);
}

static void get_sync(struct kv_fix *f, const char *key, struct kv_get *g)
{
	ASSERT_OK(kv_get_start(f->ra, key, strlen(key), NULL, g, NULL));
	DRIVE_UNTIL(&f->a, &f->b, g->done);
}

static void cache(struct node *n, struct rdmx_chan_reg_cache_stats *st)
{
	ASSERT_OK(rdmx_chan_worker_get_reg_cache_stats(n->worker, st));
}

Test(kv_bigget, value_64mib_intact_not_copied, .timeout = 600)
{
	struct rdmx_chan_reg_cache_stats ca, cb;
	uint8_t *src = malloc(BIG);
	struct kv_get g;
	struct kv_fix f;
	uint64_t want;

	cr_assert_not_null(src);
	pattern_fill(src, BIG, 17);
	want = checksum64(src, BIG);
	kv_fix_open(&f, NULL, NULL);
	put_sync(&f, "blob", src, BIG);
	free(src); /* the client holds no copy of its own from here */
	get_sync(&f, "blob", &g);
	cr_assert_eq(g.rc, 0, "get: %d %s", g.rc, g.message);
	cr_assert_eq(g.len, BIG);
	cr_assert(g.taken, "the 64 MiB answer was copied, not kept");
	cr_assert(g.value > (const uint8_t *)g.owned &&
	              g.value + g.len <= (const uint8_t *)g.owned + BIG + MIB,
	          "the value does not lie in the kept receive buffer");
	cr_assert_eq(checksum64(g.value, g.len), want, "the value came back different");
	cache(&f.a, &ca);
	cr_assert_eq(ca.handovers, 1, "the client's receive buffer was not handed over");
	cr_assert_eq(ca.busy, 0);
	cr_assert(ca.bytes < BIG, "the kept buffer still counts in the client's cache");
	/* the server's source goes back once the client acknowledged it */
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		cache(&f.b, &cb);
		if (!cb.busy)
			break;
		cr_assert(now_ms() < guard, "the server's source left busy (failure guard)");
		drive_once(&f.a, &f.b);
	}
	kv_get_fini(&g);
	cr_assert_null(g.owned);
	/* a missing key: a status, nothing held */
	get_sync(&f, "nope", &g);
	cr_assert_eq(g.rc, RDMX_RPC_NOT_FOUND);
	cr_assert_null(g.owned);
	cr_assert_eq(g.len, 0);
	kv_fix_close(&f);
}

Test(kv_bigget, many_large_gets_stay_bounded, .timeout = 600)
{
	enum { N = 32, KEYS = 4, INFLIGHT = 4 };
	const size_t len = 4 * MIB;
	struct rdmx_chan_reg_cache_stats ca, cb;
	static struct kv_get g[N];
	uint8_t *src = malloc(len);
	uint64_t want;
	int sent = 0, done;
	struct kv_fix f;
	char key[16];

	cr_assert_not_null(src);
	pattern_fill(src, len, 5);
	want = checksum64(src, len);
	kv_fix_open(&f, NULL, NULL);
	for (int k = 0; k < KEYS; k++) {
		snprintf(key, sizeof(key), "k%d", k);
		put_sync(&f, key, src, len);
	}
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		done = 0;
		for (int i = 0; i < sent; i++)
			done += g[i].done;
		if (done == N)
			break;
		while (sent < N && sent - done < INFLIGHT) {
			snprintf(key, sizeof(key), "k%d", sent % KEYS);
			ASSERT_OK(kv_get_start(f.ra, key, strlen(key), NULL, &g[sent], NULL));
			sent++;
		}
		cr_assert(now_ms() < guard, "timed out (failure guard), %d of %d done", done, N);
		drive_once(&f.a, &f.b);
	}
	for (int i = 0; i < N; i++) {
		cr_assert_eq(g[i].rc, 0, "get %d: %d", i, g[i].rc);
		cr_assert(g[i].taken, "get %d copied", i);
		cr_assert_eq(g[i].len, len);
		cr_assert_eq(checksum64(g[i].value, len), want, "get %d", i);
		kv_get_fini(&g[i]);
	}
	cr_assert_eq(f.st.gets, N);
	/* the server's sources go back as the client's acks come */
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		cache(&f.b, &cb);
		if (!cb.busy)
			break;
		cr_assert(now_ms() < guard, "server sources left busy (failure guard)");
		drive_once(&f.a, &f.b);
	}
	cache(&f.a, &ca);
	cr_assert_eq(ca.handovers, N, "%llu of %d receive buffers handed over",
	             (unsigned long long)ca.handovers, N);
	cr_assert_eq(ca.busy, 0);
	cr_assert(ca.peak_regs <= 2 * INFLIGHT + 2, "client: peak %llu registrations",
	          (unsigned long long)ca.peak_regs);
	cr_assert(ca.bytes <= ca.limit);
	/* the server's reply sources: reused from its cache, not one per get */
	cr_assert(cb.peak_regs <= 2 * INFLIGHT + KEYS + 2, "server: peak %llu registrations",
	          (unsigned long long)cb.peak_regs);
	cr_assert(cb.bytes <= cb.limit, "server: %llu bytes cached over the limit",
	          (unsigned long long)cb.bytes);
	kv_fix_close(&f);
	free(src);
}

/* One attempt: a 64 MiB get, the client gone as soon as it began to read
 * the answer. true when caught mid-transfer (not yet delivered). */
static bool get_then_vanish(const uint8_t *src, uint64_t want)
{
	struct rdmx_chan_reg_cache_stats ca, cb;
	struct rdmx_chan_stats cs;
	struct rdmx_chan *x, *y;
	struct kv_get g;
	struct kv_fix f;
	bool mid;

	kv_fix_open(&f, NULL, NULL);
	put_sync(&f, "blob", src, BIG);
	cache(&f.a, &ca);
	x = rdmx_rpc_ep_get_chan(f.ra);
	y = rdmx_rpc_ep_get_chan(f.rb);
	ASSERT_OK(kv_get_start(f.ra, "blob", 4, NULL, &g, NULL));
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		ASSERT_OK(rdmx_chan_get_stats(x, &cs));
		if (cs.rendezvous_received || g.done)
			break;
		cr_assert(now_ms() < guard, "the client never saw the answer (failure guard)");
		drive_once(&f.a, &f.b);
	}
	mid = !g.done;
	/* the client goes away: its endpoint, channel and connection */
	ASSERT_OK(rdmx_rpc_ep_destroy(&f.ra));
	ASSERT_OK(rdmx_chan_destroy(&x));
	cr_assert(g.done, "the get did not complete with its endpoint");
	if (mid) {
		cr_assert_eq(g.rc, RDMX_RPC_UNAVAILABLE, "a get cut off: code %d", g.rc);
		cr_assert_null(g.owned, "a get cut off holds memory");
	}
	kv_get_fini(&g);
	kv_fix_wait_server_noticed(&f, y);
	ASSERT_OK(rdmx_rpc_ep_destroy(&f.rb));
	ASSERT_OK(rdmx_chan_destroy(&y));
	/* reads still in flight hold the client's buffer until they fail;
	 * the server's source goes with its channel */
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		cache(&f.a, &ca);
		cache(&f.b, &cb);
		if (!ca.busy && !cb.busy)
			break;
		cr_assert(now_ms() < guard, "a buffer left busy: client %llu, server %llu",
		          (unsigned long long)ca.busy, (unsigned long long)cb.busy);
		rdmx_pe_progress(f.a.pe);
		rdmx_pe_progress(f.b.pe);
	}
	if (mid)
		cr_assert_eq(ca.handovers, 0, "a buffer handed over for a get never completed");
	/* the server serves the next client, the value still intact */
	rpc_pair(&f.a, &f.b, NULL, f.srv, &kv_fix_conf, &kv_fix_conf, &f.ra, &f.rb);
	get_sync(&f, "blob", &g);
	cr_assert_eq(g.rc, 0);
	cr_assert_eq(g.len, BIG);
	cr_assert_eq(checksum64(g.value, g.len), want);
	kv_get_fini(&g);
	kv_fix_close(&f);
	return mid;
}

Test(kv_bigget, client_gone_mid_get, .timeout = 900)
{
	uint8_t *src = malloc(BIG);
	uint64_t want;
	int hits = 0;

	cr_assert_not_null(src);
	pattern_fill(src, BIG, 29);
	want = checksum64(src, BIG);
	for (int i = 0; i < 5 && !hits; i++)
		hits += get_then_vanish(src, want);
	cr_assert(hits > 0, "no attempt caught the get mid-transfer");
	free(src);
}

struct small {
	struct rdmx_rpc_ep *ep;
	int done, rc;
};

static void small_done(const struct rdmx_rpc_result *res, void *arg)
{
	struct small *s = arg;
	void *owned = (void *)1;

	/* an answer in a channel slot cannot be taken (copy it) */
	s->rc = rdmx_rpc_result_take(s->ep, res, &owned, NULL);
	cr_assert_null(owned);
	s->done++;
}

Test(kv_bigget, small_value_copied_and_take_refused)
{
	struct rdmx_rpc_result fake;
	void *owned = (void *)1;
	struct kv_get g;
	struct kv_fix f;

	kv_fix_open(&f, NULL, NULL);
	put_sync(&f, "s", "tiny", 4);
	get_sync(&f, "s", &g);
	cr_assert_eq(g.rc, 0);
	cr_assert(!g.taken, "a slot-sized answer was taken");
	cr_assert_eq(g.len, 4);
	cr_assert_eq(memcmp(g.value, "tiny", 4), 0);
	kv_get_fini(&g);
	{
		struct small sm = {f.ra, 0, 0};
		kv_GetRequest req;
		struct rdmx_rpc_payload p;

		kv_GetRequest_init(&req);
		req.key = rdmx_str_c("s");
		p = kv_GetRequest_payload(&req);
		ASSERT_OK(rdmx_rpc_call_async(f.ra, KV_KV_GET_ID, &p, NULL, small_done, &sm, NULL));
		DRIVE_UNTIL(&f.a, &f.b, sm.done);
		cr_assert_eq(sm.rc, RDMX_E_BAD_STATE, "a slot-sized answer taken: %d", sm.rc);
	}
	/* outside any callback, or without a body */
	memset(&fake, 0, sizeof(fake));
	ASSERT_RC(rdmx_rpc_result_take(f.ra, &fake, &owned, NULL), RDMX_E_BAD_STATE);
	cr_assert_null(owned);
	fake.data = "xyz";
	fake.len = 3;
	ASSERT_RC(rdmx_rpc_result_take(f.ra, &fake, &owned, NULL), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_rpc_result_take(NULL, &fake, &owned, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_result_take(f.ra, NULL, &owned, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_result_take(f.ra, &fake, NULL, NULL), RDMX_E_INVAL);
	kv_fix_close(&f);
}

/* the blocking get (kv_get_call), the server on a thread of its own: the
 * outcome lands in the caller's g, a large value still not copied */
Test(kv_bigget, blocking_get_fills_g, .timeout = 600)
{
	const size_t len = 8 * MIB;
	uint8_t *src = malloc(len);
	struct node_serve ns;
	struct kv_get g;
	struct kv_fix f;
	uint64_t want;

	cr_assert_not_null(src);
	pattern_fill(src, len, 3);
	want = checksum64(src, len);
	kv_fix_open(&f, NULL, NULL);
	put_sync(&f, "blob", src, len);
	put_sync(&f, "s", "tiny", 4);
	free(src);
	node_serve_start(&ns, &f.b);
	ASSERT_OK(kv_get_call(f.ra, "blob", 4, NULL, &g));
	cr_assert_eq(g.rc, 0, "get: %d %s", g.rc, g.message);
	cr_assert(g.taken, "the 8 MiB answer was copied, not kept");
	cr_assert_eq(g.len, len);
	cr_assert_eq(checksum64(g.value, g.len), want);
	kv_get_fini(&g);
	ASSERT_OK(kv_get_call(f.ra, "s", 1, NULL, &g));
	cr_assert_eq(g.rc, 0);
	cr_assert(!g.taken);
	cr_assert_eq(g.len, 4);
	cr_assert_eq(memcmp(g.value, "tiny", 4), 0);
	kv_get_fini(&g);
	ASSERT_OK(kv_get_call(f.ra, "nope", 4, NULL, &g));
	cr_assert_eq(g.rc, RDMX_RPC_NOT_FOUND);
	cr_assert_null(g.owned);
	node_serve_stop(&ns);
	kv_fix_close(&f);
}

/* kv_get_call run from a callback of its own worker, where its wait
 * answers RDMX_E_BAD_STATE at once: the one failure of that wait a test
 * can cause (an engine failure cannot be). */
struct nested {
	struct rdmx_rpc_ep *ep;
	struct rdmx_rpc_call_opts opts;
	struct kv_get *g; /* the caller's record: other data once the call returned */
	int ran, rc;
};

static void nested_get(enum rdmx_rpc_code code, const char *message, const kv_PutResponse *resp,
                       void *arg)
{
	struct nested *n = arg;

	(void)code;
	(void)message;
	(void)resp;
	n->ran++;
	n->rc = kv_get_call(n->ep, "k", 1, &n->opts, n->g);
	memset(n->g, 0xa5, sizeof(*n->g)); /* the caller's memory, put to other use */
}

static bool untouched(const struct kv_get *g)
{
	const uint8_t *p = (const uint8_t *)g;

	for (size_t i = 0; i < sizeof(*g); i++)
		if (p[i] != 0xa5)
			return false;
	return true;
}

static uint64_t client_completed(struct kv_fix *f)
{
	struct rdmx_rpc_stats st;

	ASSERT_OK(rdmx_rpc_ep_get_stats(f->ra, RDMX_RPC_ROLE_CLIENT, &st));
	return st.completed;
}

/* a put whose callback runs the nested get; then until both completed */
static void get_from_callback(struct kv_fix *f, struct nested *n)
{
	uint64_t before = client_completed(f);
	kv_PutRequest req;

	kv_PutRequest_init(&req);
	req.key = rdmx_str_c("k");
	req.value = rdmx_bytes_n("v", 1);
	ASSERT_OK(kv_KV_Put_async(f->ra, &req, NULL, nested_get, n, NULL));
	DRIVE_UNTIL(&f->a, &f->b, n->ran);
	DRIVE_UNTIL(&f->a, &f->b, client_completed(f) == before + 2);
	cr_assert_eq(n->ran, 1);
}

Test(kv_bigget, get_left_pending_never_writes_g)
{
	struct kv_get *g = malloc(sizeof(*g));
	struct nested n;
	struct kv_fix f;

	cr_assert_not_null(g);
	kv_fix_open(&f, NULL, NULL);
	/* one-way: no cancel reaches it, it completes when sent, after the
	 * return */
	memset(&n, 0, sizeof(n));
	n.ep = f.ra;
	n.g = g;
	n.opts.oneway = true;
	get_from_callback(&f, &n);
	ASSERT_RC(n.rc, RDMX_E_BAD_STATE);
	cr_assert(untouched(g), "the get completed into g after kv_get_call returned");
	/* it was sent, and refused (a one-way read is not served: read.h) */
	DRIVE_UNTIL(&f.a, &f.b, f.st.refused == 1);
	cr_assert_eq(f.st.gets, 0);
	/* two-way: cancelled, its callback runs inside the cancel */
	n.opts.oneway = false;
	n.ran = 0;
	get_from_callback(&f, &n);
	ASSERT_RC(n.rc, RDMX_E_BAD_STATE);
	cr_assert(untouched(g), "the cancelled get wrote g after kv_get_call returned");
	kv_fix_close(&f);
	free(g);
}
