/* Large kv values without extra copies (services/kv/put.c, store_mem.c,
 * rdmx_rpc_server_call_take_request): a Put's value travels from the
 * client's buffer by rendezvous into a receive buffer that the memory store
 * then keeps (handed over by the registration cache, deregistered), and a
 * Get answers from that memory. Two nodes in one process over the battery's
 * fixture (tests/integration/rpc/rpcfix.c), the generated kv stubs and the
 * real store:
 * - a 64 MiB value put and got back intact (checksum), kept, not copied;
 * - many large puts: every receive buffer handed over once, the cache's
 *   registrations and the store's bytes bounded;
 * - a client gone while the server reads its 64 MiB value: nothing stored,
 *   no buffer left busy or handed over, the server serves the next client;
 * - small values (in a channel slot) are copied; a request outside its
 *   handler cannot be taken. */
#include "kvfix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv.rdmx.h"
#include "put.h"
#include "store.h"

#define MIB (1u << 20)
#define BIG (64u * MIB)

/* a raw method: tries to take its request after the handler returned */
static struct rdmx_rpc_server_call *late_call;

static void on_late(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	void *owned = (void *)1;

	(void)req;
	(void)len;
	(void)arg;
	late_call = call; /* answered by the test */
	ASSERT_RC(rdmx_rpc_server_call_take_request(NULL, &owned, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_server_call_take_request(call, NULL, NULL), RDMX_E_INVAL);
}

struct rec {
	int done;
	enum rdmx_rpc_code code;
	bool replaced;
	uint64_t sum;
	size_t len;
};

static void put_cb(enum rdmx_rpc_code code, const char *message, const kv_PutResponse *resp,
                   void *arg)
{
	struct rec *r = arg;

	(void)message;
	r->done++;
	r->code = code;
	r->replaced = resp ? resp->replaced : false;
}

static void get_cb(enum rdmx_rpc_code code, const char *message, const kv_GetResponse *resp,
                   void *arg)
{
	struct rec *r = arg;

	(void)message;
	r->done++;
	r->code = code;
	if (code == RDMX_RPC_OK && resp) {
		r->len = resp->value.len;
		r->sum = r->len ? checksum64(resp->value.data, r->len) : 0;
	}
}

static void put_async(struct kv_fix *f, const char *key, const void *val, size_t len, struct rec *r)
{
	kv_PutRequest req;

	kv_PutRequest_init(&req);
	req.key = rdmx_str_c(key);
	req.value = rdmx_bytes_n(val, len);
	memset(r, 0, sizeof(*r));
	ASSERT_OK(kv_KV_Put_async(f->ra, &req, NULL, put_cb, r, NULL));
}

static void put_sync(struct kv_fix *f, const char *key, const void *val, size_t len)
{
	struct rec r;

	put_async(f, key, val, len, &r);
	DRIVE_UNTIL(&f->a, &f->b, r.done);
	cr_assert_eq(r.code, RDMX_RPC_OK, "put %s: code %d", key, r.code);
}

static void get_sync(struct kv_fix *f, const char *key, struct rec *r)
{
	kv_GetRequest req;

	kv_GetRequest_init(&req);
	req.key = rdmx_str_c(key);
	memset(r, 0, sizeof(*r));
	ASSERT_OK(kv_KV_Get_async(f->ra, &req, NULL, get_cb, r, NULL));
	DRIVE_UNTIL(&f->a, &f->b, r->done);
}

static void srv_cache(struct kv_fix *f, struct rdmx_chan_reg_cache_stats *st)
{
	ASSERT_OK(rdmx_chan_worker_get_reg_cache_stats(f->b.worker, st));
}

Test(kv_bigput, value_64mib_round_trip_kept_not_copied, .timeout = 600)
{
	struct rdmx_chan_reg_cache_stats st;
	struct kv_entry e;
	struct kv_fix f;
	struct rec r;
	uint8_t *src = malloc(BIG);
	uint64_t want;

	cr_assert_not_null(src);
	pattern_fill(src, BIG, 64);
	want = checksum64(src, BIG);
	kv_fix_open(&f, "test.Late/Late", on_late);
	put_sync(&f, "blob", src, BIG);
	cr_assert_eq(f.st.kept, 1, "the 64 MiB value was copied, not kept");
	srv_cache(&f, &st);
	cr_assert_eq(st.handovers, 1);
	cr_assert_eq(st.busy, 0);
	cr_assert(st.bytes < BIG, "the kept buffer still counts in the cache (%llu bytes)",
	          (unsigned long long)st.bytes);
	/* the store's value is the bytes the client sent */
	ASSERT_OK(kv_store_begin_read(f.st.store));
	ASSERT_OK(kv_store_get(f.st.store, "blob", 4, &e));
	cr_assert_eq(e.vlen, BIG);
	cr_assert_eq(checksum64(e.val, e.vlen), want);
	kv_store_end_read(f.st.store);
	cr_assert_eq(kv_store_bytes(f.st.store), BIG + 4);
	/* and back: intact */
	get_sync(&f, "blob", &r);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	cr_assert_eq(r.len, BIG);
	cr_assert_eq(r.sum, want, "the value came back different");
	/* replaced by a small value: copied (it came in a slot), the big buffer freed */
	put_sync(&f, "blob", "tiny", 4);
	cr_assert_eq(f.st.kept, 1, "a slot-sized request was taken");
	get_sync(&f, "blob", &r);
	cr_assert_eq(r.len, 4);
	cr_assert_eq(r.sum, checksum64("tiny", 4));
	kv_fix_close(&f);
	free(src);
}

Test(kv_bigput, many_large_puts_stay_bounded, .timeout = 600)
{
	enum { N = 48, KEYS = 6, INFLIGHT = 4 };
	const size_t len = 4 * MIB;
	struct rdmx_chan_reg_cache_stats st;
	static struct rec r[N];
	uint8_t *src = malloc(len);
	struct kv_fix f;
	int sent = 0, done;
	char key[16];

	cr_assert_not_null(src);
	pattern_fill(src, len, 9);
	kv_fix_open(&f, "test.Late/Late", on_late);
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		done = 0;
		for (int i = 0; i < sent; i++)
			done += r[i].done;
		if (done == N)
			break;
		while (sent < N && sent - done < INFLIGHT) {
			snprintf(key, sizeof(key), "k%d", sent % KEYS);
			put_async(&f, key, src, len, &r[sent]);
			sent++;
		}
		cr_assert(now_ms() < guard, "timed out (failure guard), %d of %d done", done, N);
		drive_once(&f.a, &f.b);
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(r[i].code, RDMX_RPC_OK, "put %d", i);
	cr_assert_eq(f.st.kept, N, "%u of %d values kept", f.st.kept, N);
	srv_cache(&f, &st);
	/* every receive buffer handed over once: the cache holds none of them,
	 * and registered a new one per message only up to what was in flight */
	cr_assert_eq(st.handovers, N);
	cr_assert_eq(st.busy, 0);
	cr_assert(st.regs <= INFLIGHT + 2, "%llu registrations left in the cache",
	          (unsigned long long)st.regs);
	cr_assert(st.peak_regs <= 2 * INFLIGHT + 2, "peak %llu registrations",
	          (unsigned long long)st.peak_regs);
	cr_assert(st.bytes <= st.limit);
	/* the store holds the last value of each key only (replaced ones freed) */
	cr_assert_eq(kv_store_count(f.st.store), KEYS);
	cr_assert_eq(kv_store_bytes(f.st.store), KEYS * (len + 2));
	for (int k = 0; k < KEYS; k++) {
		struct rec g;

		snprintf(key, sizeof(key), "k%d", k);
		get_sync(&f, key, &g);
		cr_assert_eq(g.len, len);
		cr_assert_eq(g.sum, checksum64(src, len), "value of %s", key);
	}
	kv_fix_close(&f);
	free(src);
}

/* One attempt: a 64 MiB put, the client gone as soon as the server began
 * to read it. true when the put was caught mid-transfer (not yet
 * delivered to the server), false when it went through first. */
static bool put_then_vanish(uint8_t *src, bool *stored)
{
	struct rdmx_chan_reg_cache_stats st;
	struct rdmx_chan_stats cs;
	struct rdmx_chan *x, *y;
	struct kv_fix f;
	struct rec r;
	bool mid;

	kv_fix_open(&f, "test.Late/Late", on_late);
	x = rdmx_rpc_ep_get_chan(f.ra);
	y = rdmx_rpc_ep_get_chan(f.rb);
	put_async(&f, "gone", src, BIG, &r);
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		ASSERT_OK(rdmx_chan_get_stats(y, &cs));
		if (cs.rendezvous_received)
			break;
		cr_assert(now_ms() < guard, "the server never saw the put (failure guard)");
		drive_once(&f.a, &f.b);
	}
	mid = cs.msgs_received == 0 && f.st.puts == 0;
	/* the client goes away: its endpoint, channel and connection */
	ASSERT_OK(rdmx_rpc_ep_destroy(&f.ra));
	ASSERT_OK(rdmx_chan_destroy(&x));
	cr_assert_eq(r.done, 1, "the call did not complete with its endpoint");
	kv_fix_wait_server_noticed(&f, y);
	*stored = kv_store_count(f.st.store) != 0;
	ASSERT_OK(rdmx_rpc_ep_destroy(&f.rb));
	ASSERT_OK(rdmx_chan_destroy(&y));
	/* reads of the dead client still in flight hold the buffer until they
	 * complete (failed): then it goes back to the cache */
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		srv_cache(&f, &st);
		if (!st.busy)
			break;
		cr_assert(now_ms() < guard, "a receive buffer left busy (failure guard)");
		rdmx_pe_progress(f.b.pe);
	}
	if (mid) {
		cr_assert_eq(f.st.puts, 0, "a put half read reached the handler");
		cr_assert_eq(st.handovers, 0, "a buffer handed over for a put never completed");
		cr_assert(!*stored, "something was stored");
	}
	rpc_pair(&f.a, &f.b, NULL, f.srv, &kv_fix_conf, &kv_fix_conf, &f.ra, &f.rb);
	put_sync(&f, "next", src, 2 * MIB);
	get_sync(&f, "next", &r);
	cr_assert_eq(r.sum, checksum64(src, 2 * MIB));
	kv_fix_close(&f);
	return mid;
}

Test(kv_bigput, client_gone_mid_put_leaves_nothing, .timeout = 900)
{
	uint8_t *src = malloc(BIG);
	bool stored = false;
	int hits = 0;

	cr_assert_not_null(src);
	pattern_fill(src, BIG, 3);
	/* a 64 MiB read is far from done when its first progress call ends;
	 * a few attempts in case one went through anyway */
	for (int i = 0; i < 5 && !hits; i++)
		hits += put_then_vanish(src, &stored);
	cr_assert(hits > 0, "no attempt caught the put mid-transfer");
	free(src);
}

static void late_done(const struct rdmx_rpc_result *res, void *arg)
{
	*(int *)arg = res->code == RDMX_RPC_OK ? 1 : -1;
}

Test(kv_bigput, take_outside_the_handler_refused)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("x", 1);
	void *owned = (void *)1;
	struct kv_fix f;
	int done = 0, rc;

	kv_fix_open(&f, "test.Late/Late", on_late);
	late_call = NULL;
	ASSERT_OK(rdmx_rpc_call_async(f.ra, rdmx_rpc_method_id("test.Late/Late"), &p, NULL,
	                              late_done, &done, NULL));
	DRIVE_UNTIL(&f.a, &f.b, late_call != NULL);
	rc = rdmx_rpc_server_call_take_request(late_call, &owned, NULL);
	cr_assert_eq(rc, RDMX_E_BAD_STATE, "taken outside its handler: %d", rc);
	cr_assert_null(owned);
	ASSERT_OK(rdmx_rpc_respond(late_call, RDMX_RPC_OK, NULL, NULL));
	DRIVE_UNTIL(&f.a, &f.b, done != 0);
	cr_assert_eq(done, 1);
	kv_fix_close(&f);
}
