/* RPC statistics: counters per endpoint and per method, and log-linear
 * latency histograms (4 buckets per power of two: ~19% resolution, fixed
 * size, no allocation on the hot path).
 *
 * Per-method stats of an endpoint exist for the methods its server has
 * registered (and the ids its own calls name); every id a peer names that
 * the server does not know shares one "unknown" bucket, so a peer cannot
 * grow the endpoint's memory by naming ids. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_priv.h"

static unsigned hist_index(uint64_t v)
{
	unsigned msb, idx;

	if (v < 4)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	idx = (msb - 1) * 4 + (unsigned)((v >> (msb - 2)) & 3u);
	return idx < RDMX_RPC_HIST_BUCKETS ? idx : RDMX_RPC_HIST_BUCKETS - 1;
}

uint64_t rdmx_rpc_hist_bucket_low(unsigned i)
{
	unsigned msb;

	if (i < 4)
		return i;
	if (i >= RDMX_RPC_HIST_BUCKETS)
		return UINT64_MAX;
	msb = i / 4 + 1;
	return (uint64_t)(4 + i % 4) << (msb - 2);
}

void rdmx__hist_add(struct rdmx_rpc_hist *h, uint64_t ns)
{
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
	h->buckets[hist_index(ns)]++;
}

uint64_t rdmx_rpc_hist_percentile(const struct rdmx_rpc_hist *h, double pct)
{
	uint64_t target, cum = 0;

	if (!h || !h->count)
		return 0;
	if (pct <= 0)
		return h->min_ns;
	if (pct >= 100)
		return h->max_ns;
	target = (uint64_t)((double)h->count * pct / 100.0);
	if ((double)target < (double)h->count * pct / 100.0)
		target++;
	if (!target)
		target = 1;
	for (unsigned i = 0; i < RDMX_RPC_HIST_BUCKETS; i++) {
		cum += h->buckets[i];
		if (cum >= target) {
			uint64_t hi = rdmx_rpc_hist_bucket_low(i + 1);

			if (hi > h->max_ns)
				hi = h->max_ns;
			if (hi < h->min_ns)
				hi = h->min_ns;
			return hi;
		}
	}
	return h->max_ns;
}

void rdmx__stats_done(struct rdmx_rpc_stats *s, enum rdmx_rpc_code code, uint64_t ns)
{
	s->completed++;
	if ((unsigned)code < RDMX_RPC_CODE_COUNT)
		s->by_code[code]++;
	if (code != RDMX_RPC_OK)
		s->errors++;
	rdmx__hist_add(&s->latency, ns);
}

/* The unknown bucket's key: above every 32-bit method id. */
#define UNKNOWN_KEY (1ull << 32)

static uint64_t stats_key(uint32_t method, bool known)
{
	return known ? method : UNKNOWN_KEY;
}

struct rpc_mstats *rdmx__mstats_get(struct rdmx__map *m, uint32_t method, bool known)
{
	uint64_t key = stats_key(method, known);
	struct rpc_mstats *ms = rdmx__map_get(m, key);

	if (RDMX_LIKELY(ms != NULL))
		return ms;
	ms = calloc(1, sizeof(*ms));
	if (!ms)
		return NULL;
	if (rdmx__map_put(m, key, ms)) {
		free(ms);
		return NULL;
	}
	return ms;
}

void rdmx__mstats_free_all(struct rdmx__map *m)
{
	uint32_t pos = 0;
	void *v;

	while ((v = rdmx__map_next(m, &pos, NULL)))
		free(v);
	rdmx__map_fini(m);
}

/* a method was used: a unary call or a stream */
static bool stats_used(const struct rdmx_rpc_stats *s)
{
	return s->calls || s->streams_opened;
}

int rdmx_rpc_ep_get_stats(const struct rdmx_rpc_ep *ep, enum rdmx_rpc_role role,
                          struct rdmx_rpc_stats *stats)
{
	if (!ep || !stats || (role != RDMX_RPC_ROLE_CLIENT && role != RDMX_RPC_ROLE_SERVER))
		return RDMX_E_INVAL;
	*stats = ep->st[role];
	return 0;
}

int rdmx_rpc_ep_get_method_stats(const struct rdmx_rpc_ep *ep, enum rdmx_rpc_role role,
                                 uint32_t method_id, struct rdmx_rpc_stats *stats)
{
	const struct rpc_mstats *ms;

	if (!ep || !stats || (role != RDMX_RPC_ROLE_CLIENT && role != RDMX_RPC_ROLE_SERVER))
		return RDMX_E_INVAL;
	ms = rdmx__map_get(&ep->mstats, method_id);
	if ((!ms || !stats_used(&ms->st[role])) && method_id == RDMX_RPC_METHOD_UNKNOWN)
		ms = rdmx__map_get(&ep->mstats, UNKNOWN_KEY);
	if (!ms || !stats_used(&ms->st[role]))
		return RDMX_E_NOT_FOUND;
	*stats = ms->st[role];
	return 0;
}

int rdmx_rpc_ep_list_methods(const struct rdmx_rpc_ep *ep, enum rdmx_rpc_role role, uint32_t *ids,
                             size_t max, size_t *count)
{
	const struct rpc_mstats *ms;
	uint32_t pos = 0;
	uint64_t key;
	size_t n = 0;

	if (!ep || !count || (max && !ids) ||
	    (role != RDMX_RPC_ROLE_CLIENT && role != RDMX_RPC_ROLE_SERVER))
		return RDMX_E_INVAL;
	while ((ms = rdmx__map_next(&ep->mstats, &pos, &key))) {
		if (!stats_used(&ms->st[role]))
			continue;
		if (n < max)
			ids[n] = key == UNKNOWN_KEY ? RDMX_RPC_METHOD_UNKNOWN : (uint32_t)key;
		n++;
	}
	*count = n;
	return 0;
}

int rdmx_rpc_server_get_method_stats(const struct rdmx_rpc_server *server, uint32_t method_id,
                                     struct rdmx_rpc_stats *stats)
{
	const struct rpc_method *m;

	if (!server || !stats)
		return RDMX_E_INVAL;
	m = rdmx__map_get(&server->methods, method_id);
	if (!m)
		return RDMX_E_NOT_FOUND;
	rdmx__method_stats_sum(m, stats);
	return 0;
}

/* ---- a method's server counters, one slot per serving thread ---- */

#define SHARED_SLOT (RPC_STAT_SLOTS - 1u)

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static bool slot_used[SHARED_SLOT];
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static pthread_key_t slot_key;
static bool slot_key_ok;
/* 0: none yet, else slot + 1. Initial-exec: read twice per call, one
 * %fs-relative load instead of a __tls_get_addr call (4 bytes of the static
 * TLS surplus glibc keeps for libraries, also when librdmx is dlopen()ed). */
static _Thread_local unsigned thread_slot __attribute__((tls_model("initial-exec")));

static void slot_release(void *p)
{
	unsigned i = (unsigned)((uintptr_t)p - 1u);

	pthread_mutex_lock(&slot_lock);
	if (i < SHARED_SLOT)
		slot_used[i] = false;
	pthread_mutex_unlock(&slot_lock);
}

static void slot_key_make(void)
{
	slot_key_ok = pthread_key_create(&slot_key, slot_release) == 0;
}

/* A thread keeps its slot until it exits; the next thread to take it adds
 * to the same sums, which is what a sum over time means. */
static unsigned my_slot(void)
{
	unsigned i;

	if (thread_slot)
		return thread_slot - 1u;
	pthread_once(&slot_once, slot_key_make);
	pthread_mutex_lock(&slot_lock);
	for (i = 0; i < SHARED_SLOT && (slot_used[i] || !slot_key_ok); i++)
		;
	if (i < SHARED_SLOT) {
		if (pthread_setspecific(slot_key, (void *)(uintptr_t)(i + 1u)))
			i = SHARED_SLOT;
		else
			slot_used[i] = true;
	}
	pthread_mutex_unlock(&slot_lock);
	thread_slot = i + 1u;
	return i;
}

struct rdmx_rpc_stats *rdmx__method_stats_get(struct rpc_method *m)
{
	unsigned i = my_slot();
	struct rdmx_rpc_stats *s;

	if (i == SHARED_SLOT)
		pthread_mutex_lock(&shared_lock);
	s = atomic_load_explicit(&m->stats[i], memory_order_acquire);
	if (!s) {
		/* only this thread (or the shared slot's lock holder) fills it */
		s = calloc(1, sizeof(*s));
		if (s)
			atomic_store_explicit(&m->stats[i], s, memory_order_release);
	}
	if (!s && i == SHARED_SLOT)
		pthread_mutex_unlock(&shared_lock);
	return s;
}

void rdmx__method_stats_put(struct rdmx_rpc_stats *s)
{
	if (s && thread_slot - 1u == SHARED_SLOT)
		pthread_mutex_unlock(&shared_lock);
}

static void stats_add(struct rdmx_rpc_stats *d, const struct rdmx_rpc_stats *s)
{
	const struct rdmx_rpc_hist *h = &s->latency;

	d->calls += s->calls;
	d->completed += s->completed;
	for (unsigned c = 0; c < RDMX_RPC_CODE_COUNT; c++)
		d->by_code[c] += s->by_code[c];
	d->errors += s->errors;
	d->oneway += s->oneway;
	d->bytes_sent += s->bytes_sent;
	d->bytes_received += s->bytes_received;
	d->credit_stalls += s->credit_stalls;
	d->rendezvous += s->rendezvous;
	d->cancels += s->cancels;
	d->late_replies += s->late_replies;
	d->streams_opened += s->streams_opened;
	d->streams_ended += s->streams_ended;
	for (unsigned c = 0; c < RDMX_RPC_CODE_COUNT; c++)
		d->streams_by_code[c] += s->streams_by_code[c];
	d->stream_msgs_sent += s->stream_msgs_sent;
	d->stream_msgs_received += s->stream_msgs_received;
	d->stream_bytes_sent += s->stream_bytes_sent;
	d->stream_bytes_received += s->stream_bytes_received;
	d->stream_late_frames += s->stream_late_frames;
	if (h->count) {
		if (!d->latency.count || h->min_ns < d->latency.min_ns)
			d->latency.min_ns = h->min_ns;
		if (h->max_ns > d->latency.max_ns)
			d->latency.max_ns = h->max_ns;
	}
	d->latency.count += h->count;
	d->latency.sum_ns += h->sum_ns;
	for (unsigned b = 0; b < RDMX_RPC_HIST_BUCKETS; b++)
		d->latency.buckets[b] += h->buckets[b];
}

void rdmx__method_stats_sum(const struct rpc_method *m, struct rdmx_rpc_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < RPC_STAT_SLOTS; i++) {
		struct rdmx_rpc_stats *s =
		    atomic_load_explicit(&((struct rpc_method *)m)->stats[i], memory_order_acquire);

		if (!s)
			continue;
		if (i == SHARED_SLOT) {
			pthread_mutex_lock(&shared_lock);
			stats_add(out, s);
			pthread_mutex_unlock(&shared_lock);
		} else {
			/* another thread may be adding: each counter is read
			 * whole (aligned 64-bit words), the set may lag by the
			 * calls in progress */
			stats_add(out, s);
		}
	}
}

void rdmx__method_stats_free(struct rpc_method *m)
{
	for (unsigned i = 0; i < RPC_STAT_SLOTS; i++)
		free(atomic_exchange(&m->stats[i], NULL));
}
