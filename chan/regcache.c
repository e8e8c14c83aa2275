/* The worker's registration cache: registered buffers for rendezvous
 * messages (the sender's copy of a large message, the receiver's read
 * destination), kept pinned between messages instead of being allocated,
 * registered, deregistered and freed once per message.
 *
 * An entry is one buffer and its registration (REMOTE_READ for the sending
 * side, LOCAL_WRITE for the receiving side). rdmx__regcache_get takes a
 * reference: a hit reuses an idle entry of the kind big enough (and not
 * much bigger), a miss makes a new one. rdmx__regcache_put drops it; an
 * idle entry stays cached while the cache's total size is within its limit,
 * least recently used ones go first when it is over. Entries still
 * referenced are never evicted: the cache goes over its limit instead and
 * frees them as they come back.
 *
 * A receiver may keep the buffer a message was read into
 * (rdmx__chan_take_rx): rdmx__regcache_detach deregisters it and lets it
 * go, so what the cache holds stays bounded however many are kept.
 *
 * A sender's buffer is granted per message to one connection, for the
 * message's bytes only; where the device has no connection-bound grants
 * (its descriptor reaches the whole buffer from any connection, for as long
 * as it is registered) the buffer is deregistered when its message is done,
 * as before the cache. */
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include "chan_internal.h"

#define REGC_GRANULE (64u << 10) /* entry sizes are multiples of this */
/* Entries of this size or more are made of 2 MiB pages where the kernel
 * has transparent huge pages (its madvise mode, Debian's default): the
 * first touch of a fresh 64 MiB buffer (the sender's copy being filled, the
 * receiver's read landing) costs 16 Ki page faults on 4 KiB pages (about
 * 400 ms on a loaded 2-core VM, most of a 64 MiB kv put), 32 on 2 MiB
 * ones (about 11 ms). Where there are none the buffer is an ordinary one. */
#define REGC_HUGE (2u << 20)

static void list_unlink(struct regc_ent **head, struct regc_ent **tail, struct regc_ent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		*head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		*tail = e->prev;
	e->prev = e->next = NULL;
}

static void list_push(struct regc_ent **head, struct regc_ent **tail, struct regc_ent *e)
{
	e->next = NULL;
	e->prev = *tail;
	if (*tail)
		(*tail)->next = e;
	else
		*head = e;
	*tail = e;
}

void rdmx__regcache_init(struct rdmx__regcache *c, struct rdmx_dev *dev, uint64_t limit)
{
	memset(c, 0, sizeof(*c));
	c->dev = dev;
	c->limit = limit;
}

static void ent_destroy(struct rdmx__regcache *c, struct regc_ent *e)
{
	rdmx_mr_dereg(&e->mr);
	free(e->buf);
	c->bytes -= e->size;
	c->st.regs--;
	free(e);
}

/* Frees idle entries, oldest first, until the cache is within its limit. */
static void regcache_trim(struct rdmx__regcache *c)
{
	while (c->bytes > c->limit && c->idle_head) {
		struct regc_ent *e = c->idle_head;

		list_unlink(&c->idle_head, &c->idle_tail, e);
		ent_destroy(c, e);
		c->st.evictions++;
	}
}

void rdmx__regcache_set_limit(struct rdmx__regcache *c, uint64_t limit)
{
	c->limit = limit;
	regcache_trim(c);
}

void rdmx__regcache_fini(struct rdmx__regcache *c)
{
	while (c->idle_head) {
		struct regc_ent *e = c->idle_head;

		list_unlink(&c->idle_head, &c->idle_tail, e);
		ent_destroy(c, e);
	}
	if (c->st.regs)
		RDMX_ERR("chan: registration cache: %llu entries still referenced at worker "
		         "destroy",
		         (unsigned long long)c->st.regs);
}

static int ent_new(struct rdmx__regcache *c, struct rdmx_chan *chan, enum regc_kind kind,
                   size_t size, struct regc_ent **out)
{
	struct regc_ent *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return RDMX_E_NOMEM;
	if (size >= REGC_HUGE) {
		e->buf = aligned_alloc(REGC_HUGE, size); /* size is a multiple of it */
		/* advice only: refused (no THP), the buffer works the same */
		if (e->buf)
			(void)madvise(e->buf, size, MADV_HUGEPAGE);
	} else {
		e->buf = aligned_alloc(4096, size);
	}
	if (!e->buf) {
		free(e);
		return RDMX_E_NOMEM;
	}
	if (kind == REGC_TX)
		rc = rdmx__chan_reg_remote(chan, e->buf, size, RDMX_ACCESS_REMOTE_READ, &e->mr);
	else
		rc = rdmx_mr_reg(c->dev, e->buf, size, RDMX_ACCESS_LOCAL_WRITE, &e->mr);
	if (rc) {
		free(e->buf);
		free(e);
		return rc;
	}
	/* a sender's buffer reachable device-wide (no connection-bound
	 * grants here) is never reused: a descriptor of an earlier message
	 * would read the later ones */
	if (kind == REGC_TX) {
		uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];

		/* a grant-only region has no device-wide descriptor */
		e->no_reuse = rdmx_mr_get_descriptor(e->mr, desc) == 0;
	}
	e->kind = kind;
	e->size = size;
	c->bytes += size;
	c->st.regs++;
	if (c->st.regs > c->st.peak_regs)
		c->st.peak_regs = c->st.regs;
	*out = e;
	return 0;
}

int rdmx__regcache_get(struct rdmx__regcache *c, struct rdmx_chan *chan, enum regc_kind kind,
                       size_t len, struct regc_ent **out)
{
	struct regc_ent *best = NULL;
	size_t size;
	int rc;

	if (!len || len > SIZE_MAX - REGC_GRANULE)
		return RDMX_E_INVAL;
	size = (len + REGC_GRANULE - 1) / REGC_GRANULE * REGC_GRANULE;
	if (size >= REGC_HUGE && size <= SIZE_MAX - REGC_HUGE)
		size = (size + REGC_HUGE - 1) / REGC_HUGE * REGC_HUGE; /* whole huge pages */
	/* best fit among the idle entries of the kind: at least len, at most
	 * half again as big (a 1 MiB message does not hold a 64 MiB buffer) */
	for (struct regc_ent *e = c->idle_head; e; e = e->next)
		if (e->kind == kind && e->size >= size && e->size - size <= size / 2 &&
		    (!best || e->size < best->size))
			best = e;
	if (best) {
		list_unlink(&c->idle_head, &c->idle_tail, best);
		c->st.hits++;
	} else {
		rc = ent_new(c, chan, kind, size, &best);
		if (rc)
			return rc;
		c->st.misses++;
		regcache_trim(c); /* idle entries make room for the new one */
	}
	best->refs = 1;
	c->busy++;
	*out = best;
	return 0;
}

void rdmx__regcache_ref(struct regc_ent *e)
{
	e->refs++;
}

void *rdmx__regcache_detach(struct rdmx__regcache *c, struct regc_ent *e)
{
	void *buf;

	/* only a receive buffer held by its message alone may leave: another
	 * holder (a read in flight, a second reference) would use freed memory */
	if (!e || e->kind != REGC_RX || e->refs != 1) {
		RDMX_ERR("chan: registration cache: handover refused: %s",
		         !e                   ? "no entry"
		         : e->kind != REGC_RX ? "a sender's buffer"
		                              : "the buffer is held more than once");
		return NULL;
	}
	buf = e->buf;
	rdmx_mr_dereg(&e->mr);
	c->bytes -= e->size;
	c->st.regs--;
	c->busy--;
	c->st.handovers++;
	free(e);
	return buf;
}

void rdmx__regcache_put(struct rdmx__regcache *c, struct regc_ent *e)
{
	if (!e || --e->refs)
		return;
	c->busy--;
	if (e->no_reuse) {
		ent_destroy(c, e);
		c->st.evictions++;
		return;
	}
	list_push(&c->idle_head, &c->idle_tail, e);
	regcache_trim(c);
}

void rdmx__regcache_stats(const struct rdmx__regcache *c, struct rdmx_chan_reg_cache_stats *st)
{
	*st = c->st;
	st->bytes = c->bytes;
	st->limit = c->limit;
	st->busy = c->busy;
}
