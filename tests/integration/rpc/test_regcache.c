/* The channel worker's registration cache (chan/regcache.c): hits reuse a
 * registration, misses make one, idle entries are evicted by total size,
 * entries in use never are; and many large RPC calls and channel messages
 * keep the rendezvous registrations bounded. */
#include "rpcfix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

#define MIB (1u << 20)

static void cache_stats(struct node *n, struct rdmx_chan_reg_cache_stats *st)
{
	ASSERT_OK(rdmx_chan_worker_get_reg_cache_stats(n->worker, st));
}

Test(regcache, hit_miss_and_evict_under_use)
{
	struct rdmx_chan_worker_attr attr;
	struct rdmx_chan_reg_cache_stats st;
	struct rdmx__regcache *c;
	struct regc_ent *e[4], *x;
	struct rdmx_mr *mr0;
	struct node a;

	rdmx_chan_worker_attr_init(&attr);
	cr_assert_eq(attr.reg_cache_bytes, 0, "default: 0 means the built-in limit");
	attr.reg_cache_bytes = 3 * MIB;
	node_open(&a, "a", 0, &attr);
	c = &a.worker->regc;
	cache_stats(&a, &st);
	cr_assert_eq(st.limit, 3 * MIB);
	cr_assert_eq(st.regs, 0);

	/* a miss registers; the next get of that size is a hit on the same
	 * buffer and registration */
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, MIB, &e[0]));
	mr0 = e[0]->mr;
	cr_assert_not_null(mr0);
	cr_assert(e[0]->size >= MIB);
	rdmx__regcache_put(c, e[0]);
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, MIB - 100, &x));
	cr_assert_eq(x, e[0]);
	cr_assert_eq(x->mr, mr0, "a hit reuses the registration");
	cache_stats(&a, &st);
	cr_assert_eq(st.misses, 1);
	cr_assert_eq(st.hits, 1);
	cr_assert_eq(st.regs, 1);
	cr_assert_eq(st.busy, 1);

	/* not a fit: another kind, a bigger size, a much smaller one */
	rdmx__regcache_put(c, x);
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, 2 * MIB, &x));
	cr_assert_neq(x, e[0], "a 1 MiB buffer cannot hold 2 MiB");
	rdmx__regcache_put(c, x);
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, 4096, &e[1]));
	cr_assert(e[1] != e[0] && e[1]->size < MIB, "a small message gets a small buffer");
	rdmx__regcache_put(c, e[1]);
	cache_stats(&a, &st);
	cr_assert_eq(st.misses, 3);
	cr_assert_eq(st.hits, 1);

	/* drop everything idle, then fill the cache with busy entries */
	ASSERT_OK(rdmx_chan_worker_set_reg_cache_limit(a.worker, 1));
	cache_stats(&a, &st);
	cr_assert_eq(st.regs, 0);
	cr_assert_eq(st.bytes, 0);
	cr_assert_eq(st.evictions, 3);
	ASSERT_OK(rdmx_chan_worker_set_reg_cache_limit(a.worker, 3 * MIB));
	for (int i = 0; i < 4; i++) {
		ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, MIB, &e[i]));
		memset(e[i]->buf, i, MIB);
	}
	/* over the limit by one entry, every one in use: none is evicted */
	cache_stats(&a, &st);
	cr_assert_eq(st.regs, 4);
	cr_assert_eq(st.busy, 4);
	cr_assert_eq(st.bytes, 4 * MIB);
	cr_assert_eq(st.evictions, 3, "an entry in use was evicted");
	/* a second reference keeps an entry alive through one put */
	rdmx__regcache_ref(e[0]);
	rdmx__regcache_put(c, e[0]);
	cache_stats(&a, &st);
	cr_assert_eq(st.regs, 4);
	cr_assert_eq(st.evictions, 3);
	for (int i = 0; i < 4; i++)
		for (size_t k = 0; k < MIB; k += 4096)
			cr_assert_eq(((uint8_t *)e[i]->buf)[k], (uint8_t)i, "entry %d overwritten",
			             i);
	/* the last reference of one: it is idle and over the limit, so it goes */
	rdmx__regcache_put(c, e[0]);
	cache_stats(&a, &st);
	cr_assert_eq(st.evictions, 4);
	cr_assert_eq(st.regs, 3);
	cr_assert_eq(st.bytes, 3 * MIB);
	/* within the limit again: the others stay cached when released */
	for (int i = 1; i < 4; i++)
		rdmx__regcache_put(c, e[i]);
	cache_stats(&a, &st);
	cr_assert_eq(st.evictions, 4);
	cr_assert_eq(st.regs, 3);
	cr_assert_eq(st.busy, 0);
	cr_assert_eq(st.peak_regs, 4);
	ASSERT_RC(rdmx__regcache_get(c, NULL, REGC_RX, 0, &x), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_worker_get_reg_cache_stats(NULL, &st), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_worker_get_reg_cache_stats(a.worker, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_worker_set_reg_cache_limit(NULL, 1), RDMX_E_INVAL);
	node_close(&a);
}

/* ---- many large messages: the registrations stay bounded ---- */

static uint32_t ECHO;

struct big_rec {
	int done;
	enum rdmx_rpc_code code;
	uint64_t sum;
	size_t len;
};

static void big_cb(const struct rdmx_rpc_result *r, void *arg)
{
	struct big_rec *x = arg;

	x->done++;
	x->code = r->code;
	x->len = r->len;
	x->sum = r->len ? checksum64(r->data, r->len) : 0;
}

Test(regcache, large_rpc_calls_keep_registrations_bounded, .timeout = 600)
{
	enum { N = 200, INFLIGHT = 16 };
	const size_t len = MIB;
	struct rdmx_chan_reg_cache_stats sa, sb;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	static struct big_rec r[N];
	uint8_t *src;
	uint64_t want;
	struct node a, b;
	int sent = 0;

	ECHO = rdmx_rpc_method_id(ECHO_NAME);
	memset(r, 0, sizeof(r));
	src = malloc(len);
	cr_assert_not_null(src);
	pattern_fill(src, len, 77);
	want = checksum64(src, len);
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	for (uint64_t guard = now_ms() + GUARD_MS;;) {
		int done = 0;

		for (int i = 0; i < sent; i++)
			done += r[i].done;
		if (done == N)
			break;
		while (sent < N && sent - done < INFLIGHT) {
			struct rdmx_rpc_payload p = rdmx_rpc_bytes(src, len);

			ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &p, NULL, big_cb, &r[sent], NULL));
			sent++;
		}
		cr_assert(now_ms() < guard, "timed out (failure guard) with %d of %d done", done,
		          N);
		drive_once(&a, &b);
	}
	for (int i = 0; i < N; i++) {
		cr_assert_eq(r[i].done, 1, "call %d", i);
		cr_assert_eq(r[i].code, RDMX_RPC_OK, "call %d", i);
		cr_assert_eq(r[i].len, len, "call %d", i);
		cr_assert_eq(r[i].sum, want, "call %d: payload differs", i);
	}
	/* the last answers' buffers are released when their readers' acks
	 * come: an ack posted behind unanswered messages leaves at its
	 * sender's next poll (tcp: ops.c), so both sides poll until then */
	for (uint64_t guard = now_ms() + GUARD_MS;; drive_once(&a, &b)) {
		cache_stats(&a, &sa);
		cache_stats(&b, &sb);
		if (!sa.busy && !sb.busy)
			break;
		cr_assert(now_ms() < guard,
		          "buffers not released after their messages: %llu / %llu",
		          (unsigned long long)sa.busy, (unsigned long long)sb.busy);
	}
	/* each side sent N and received N large messages: 2N rendezvous
	 * buffers, served by a few registrations (at most the calls in flight
	 * each way plus the sources awaiting their ack), not 2N */
	cr_assert_eq(sa.hits + sa.misses, 2 * N, "client: %llu hits %llu misses",
	             (unsigned long long)sa.hits, (unsigned long long)sa.misses);
	cr_assert_eq(sb.hits + sb.misses, 2 * N);
	cr_assert(sa.misses <= CHAN_RDV_MAX_TX + INFLIGHT, "client registered %llu times",
	          (unsigned long long)sa.misses);
	cr_assert(sb.misses <= CHAN_RDV_MAX_TX + INFLIGHT, "server registered %llu times",
	          (unsigned long long)sb.misses);
	cr_assert(sa.peak_regs <= CHAN_RDV_MAX_TX + INFLIGHT);
	cr_assert(sb.peak_regs <= CHAN_RDV_MAX_TX + INFLIGHT);
	cr_assert(sa.bytes <= sa.limit && sb.bytes <= sb.limit);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
	free(src);
}

struct count_sink {
	uint32_t n, bad;
};

static void count_recv(struct rdmx_chan *chan, const void *data, size_t len, void *arg)
{
	struct count_sink *s = arg;

	(void)chan;
	if (len != 3 * MIB / 2 || !pattern_check(data, len, 5))
		s->bad++;
	s->n++;
}

/* A small cache limit: messages still go, the cache stays within it when
 * idle, and a limit below one message evicts each buffer after use. */
Test(regcache, channel_messages_small_limit, .timeout = 600)
{
	enum { N = 60 };
	const size_t len = 3 * MIB / 2;
	struct rdmx_chan_worker_attr attr;
	struct rdmx_chan_reg_cache_stats sa, sb;
	struct count_sink sink = {0};
	struct chan_conf cb = {.recv_cb = count_recv, .arg = &sink};
	struct rdmx_chan *x, *y;
	struct node a, b;
	uint8_t *src;

	rdmx_chan_worker_attr_init(&attr);
	attr.reg_cache_bytes = 4 * MIB;
	src = malloc(len);
	cr_assert_not_null(src);
	pattern_fill(src, len, 5);
	node_open(&a, "a", 0, &attr);
	node_open(&b, "b", 1, &attr);
	chan_pair(&a, &b, NULL, &cb, &x, &y, true);
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_chan_send(x, src, len, NULL, NULL));
	DRIVE_UNTIL(&a, &b, sink.n == N);
	DRIVE_UNTIL(&a, &b, rdmx_chan_get_queued(x) == 0 && rdmx__chan_is_idle(x));
	cr_assert_eq(sink.bad, 0);
	cache_stats(&a, &sa);
	cache_stats(&b, &sb);
	cr_assert_eq(sa.hits + sa.misses, N);
	cr_assert_eq(sb.hits + sb.misses, N);
	cr_assert(sa.bytes <= 4 * MIB && sb.bytes <= 4 * MIB);
	cr_assert_eq(sa.busy + sb.busy, 0);
	/* below one message: every buffer is evicted once released */
	ASSERT_OK(rdmx_chan_worker_set_reg_cache_limit(a.worker, 4096));
	ASSERT_OK(rdmx_chan_worker_set_reg_cache_limit(b.worker, 4096));
	cache_stats(&a, &sa);
	cr_assert_eq(sa.regs, 0);
	for (int i = 0; i < 4; i++)
		ASSERT_OK(rdmx_chan_send(x, src, len, NULL, NULL));
	DRIVE_UNTIL(&a, &b, sink.n == N + 4);
	DRIVE_UNTIL(&a, &b, rdmx_chan_get_queued(x) == 0 && rdmx__chan_is_idle(x));
	cr_assert_eq(sink.bad, 0);
	cache_stats(&a, &sa);
	cache_stats(&b, &sb);
	cr_assert_eq(sa.regs, 0, "%llu registrations left over the limit",
	             (unsigned long long)sa.regs);
	cr_assert_eq(sb.regs, 0);
	chan_pair_close(&x, &y, &a, &b);
	free(src);
}

/* A handover (rdmx__regcache_detach) is for a receive buffer held by its
 * message alone: one held twice, or a sender's buffer, is refused (NULL,
 * logged) and stays in the cache, registered, for its holders. */
Test(regcache, detach_refuses_an_entry_held_twice)
{
	struct rdmx_chan_reg_cache_stats st;
	struct rdmx__regcache *c;
	struct regc_ent *e;
	struct node a;
	void *buf;

	node_open(&a, "a", 0, NULL);
	c = &a.worker->regc;
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, MIB, &e));
	rdmx__regcache_ref(e);
	log_capture_begin();
	cr_assert_null(rdmx__regcache_detach(c, e), "an entry held twice was handed over");
	cr_assert_eq(log_capture_count("handover refused: the buffer is held more than once"), 1);
	log_capture_end();
	cr_assert_eq(e->refs, 2);
	cr_assert_not_null(e->mr, "a refused entry lost its registration");
	cache_stats(&a, &st);
	cr_assert_eq(st.handovers, 0);
	cr_assert_eq(st.regs, 1);
	cr_assert_eq(st.busy, 1);
	cr_assert_null(rdmx__regcache_detach(c, NULL));
	/* the holders let go: idle again, reusable */
	rdmx__regcache_put(c, e);
	cache_stats(&a, &st);
	cr_assert_eq(st.busy, 1);
	rdmx__regcache_put(c, e);
	cache_stats(&a, &st);
	cr_assert_eq(st.busy, 0);
	cr_assert_eq(st.regs, 1);
	/* held once: handed over */
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, MIB, &e));
	buf = rdmx__regcache_detach(c, e);
	cr_assert_not_null(buf);
	free(buf);
	cache_stats(&a, &st);
	cr_assert_eq(st.handovers, 1);
	cr_assert_eq(st.regs, 0);
	cr_assert_eq(st.busy, 0);
	node_close(&a);
}

/* Whether the kernel gives 2 MiB pages to a range advised MADV_HUGEPAGE. */
static bool thp_madvise_on(void)
{
	char line[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	return strstr(line, "[always]") || strstr(line, "[madvise]");
}

/* The VmFlags of the mapping of this process that holds addr ("" if none). */
static void vm_flags_of(const void *addr, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	uintptr_t a = (uintptr_t)addr;
	bool in = false;
	char line[512];

	cr_assert_not_null(f);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = a >= lo && a < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(out, len, "%s", line + 8);
			break;
		}
	}
	fclose(f);
}

/* A large buffer is made of whole 2 MiB pages, advised MADV_HUGEPAGE:
 * its first touch costs a page fault per 2 MiB, not per 4 KiB (the largest
 * cost of a 64 MiB kv put on a fresh buffer). A small one stays on 4 KiB. */
Test(regcache, large_buffers_on_huge_pages)
{
	struct regc_ent *big, *small;
	struct rdmx__regcache *c;
	char flags[512];
	struct node a;

	node_open(&a, "a", 0, NULL);
	c = &a.worker->regc;
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, 4 * MIB + 1, &big));
	cr_assert_eq((uintptr_t)big->buf % (2 * MIB), 0, "not 2 MiB aligned");
	cr_assert_eq(big->size, 6 * MIB, "whole huge pages: %zu bytes", big->size);
	ASSERT_OK(rdmx__regcache_get(c, NULL, REGC_RX, 64 * 1024, &small));
	cr_assert_eq(small->size, 64 * 1024);
	if (thp_madvise_on()) {
		vm_flags_of(big->buf, flags, sizeof(flags));
		cr_assert(strstr(flags, " hg"), "the large buffer is not advised: %s", flags);
	}
	memset(big->buf, 1, big->size); /* usable as any buffer */
	rdmx__regcache_put(c, small);
	rdmx__regcache_put(c, big);
	node_close(&a);
}
