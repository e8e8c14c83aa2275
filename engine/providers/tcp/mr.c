/* tcp provider: memory registration and the per-device key table.
 *
 * A remote key is 32 random bits (never 0, unique on the device); the table
 * maps it to a copy of the region's address, length, access flags and a
 * registration serial. The soft NIC and the application thread look keys up
 * under the read lock and keep it while they copy into or out of the region,
 * so mr_dereg (write lock) returns only once no copy touches the memory, and
 * from then on the key is unknown: remote access fails. A key that happens to
 * be drawn again later names a new region with a new serial, which a copy
 * that spans several reads (a streamed write) notices.
 *
 * A grant (rdmx_mr_grant) is one more entry: a fresh random key for its
 * range and access, with the connection it is bound to as owner. A request
 * naming it through another connection finds no region (the owner is not a
 * secret: a plain comparison); revoke and the connection's end remove the
 * entry under the write lock, so a copy in progress finishes first and
 * nothing reaches the memory afterwards. The lookup itself is a hash probe,
 * not constant-time: a key is 32 bits the network can guess, and what makes
 * a guess useless is that every miss moves the guessing connection to error
 * (one guess per connection) and that a grant works only through the one
 * connection it was made for. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "tcp.h"

#define KT_MIN_SLOTS 64u

static uint32_t hash32(uint32_t k)
{
	k ^= k >> 16;
	k *= 0x7feb352du;
	k ^= k >> 15;
	k *= 0x846ca68bu;
	k ^= k >> 16;
	return k;
}

int rdmx__tcp_keytab_init(struct rdmx__tcp_keytab *kt)
{
	pthread_rwlockattr_t attr;
	int rc;

	memset(kt, 0, sizeof(*kt));
	kt->slots = calloc(KT_MIN_SLOTS, sizeof(*kt->slots));
	if (!kt->slots)
		return RDMX_E_NOMEM;
	kt->mask = KT_MIN_SLOTS - 1;
	kt->next_serial = 1;
	pthread_rwlockattr_init(&attr);
	/* a stream of soft-NIC readers must not starve a deregistration */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	rc = pthread_rwlock_init(&kt->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (rc) {
		RDMX_ERR("tcp: rwlock init failed: %s", strerror(rc));
		free(kt->slots);
		kt->slots = NULL;
		return RDMX_E_PROVIDER;
	}
	return 0;
}

void rdmx__tcp_keytab_fini(struct rdmx__tcp_keytab *kt)
{
	if (!kt->slots)
		return;
	if (kt->count)
		RDMX_WARN("tcp: %u regions still registered at device close", kt->count);
	pthread_rwlock_destroy(&kt->lock);
	free(kt->slots);
	kt->slots = NULL;
}

void rdmx__tcp_keytab_rdlock(struct rdmx__tcp_keytab *kt)
{
	pthread_rwlock_rdlock(&kt->lock);
}

void rdmx__tcp_keytab_unlock(struct rdmx__tcp_keytab *kt)
{
	pthread_rwlock_unlock(&kt->lock);
}

const struct rdmx__tcp_region *rdmx__tcp_keytab_find(const struct rdmx__tcp_keytab *kt,
                                                     uint32_t key)
{
	uint32_t i;

	if (key == 0)
		return NULL;
	for (i = hash32(key) & kt->mask;; i = (i + 1) & kt->mask) {
		const struct rdmx__tcp_region *r = &kt->slots[i];

		if (r->key == key)
			return r;
		if (r->key == 0)
			return NULL;
	}
}

/* Places r into slots (no duplicate check). */
static void place(struct rdmx__tcp_region *slots, uint32_t mask, const struct rdmx__tcp_region *r)
{
	uint32_t i = hash32(r->key) & mask;

	while (slots[i].key)
		i = (i + 1) & mask;
	slots[i] = *r;
}

static int grow(struct rdmx__tcp_keytab *kt)
{
	uint32_t n = (kt->mask + 1) * 2;
	struct rdmx__tcp_region *s = calloc(n, sizeof(*s));

	if (!s)
		return RDMX_E_NOMEM;
	for (uint32_t i = 0; i <= kt->mask; i++)
		if (kt->slots[i].key)
			place(s, n - 1, &kt->slots[i]);
	free(kt->slots);
	kt->slots = s;
	kt->mask = n - 1;
	return 0;
}

int rdmx__tcp_keytab_insert(struct rdmx__tcp_keytab *kt, uint32_t key, void *addr, uint64_t len,
                            unsigned access, uint64_t *serial)
{
	return rdmx__tcp_keytab_insert_bound(kt, key, addr, len, access, NULL, 0, 0, serial);
}

int rdmx__tcp_keytab_insert_bound(struct rdmx__tcp_keytab *kt, uint32_t key, void *addr,
                                  uint64_t len, unsigned access, const struct tcp_conn *owner,
                                  uint32_t owner_id, uint64_t owner_ctx, uint64_t *serial)
{
	struct rdmx__tcp_region r;
	int rc = 0;

	if (key == 0)
		return RDMX_E_INVAL;
	pthread_rwlock_wrlock(&kt->lock);
	if (rdmx__tcp_keytab_find(kt, key)) {
		rc = RDMX_E_EXISTS;
		goto unlock;
	}
	/* keep the load under one half so probes stay short */
	if ((uint64_t)(kt->count + 1) * 2 > (uint64_t)kt->mask + 1) {
		rc = grow(kt);
		if (rc)
			goto unlock;
	}
	memset(&r, 0, sizeof(r));
	r.addr = addr;
	r.len = len;
	r.key = key;
	r.access = access;
	r.owner = owner;
	r.owner_id = owner_id;
	r.owner_ctx = owner_ctx;
	r.serial = kt->next_serial++;
	place(kt->slots, kt->mask, &r);
	kt->count++;
	*serial = r.serial;
unlock:
	pthread_rwlock_unlock(&kt->lock);
	return rc;
}

int rdmx__tcp_keytab_remove(struct rdmx__tcp_keytab *kt, uint32_t key)
{
	uint32_t i, j;
	int rc = 0;

	if (key == 0)
		return RDMX_E_NOT_FOUND;
	pthread_rwlock_wrlock(&kt->lock);
	for (i = hash32(key) & kt->mask;; i = (i + 1) & kt->mask) {
		if (kt->slots[i].key == key)
			break;
		if (kt->slots[i].key == 0) {
			rc = RDMX_E_NOT_FOUND;
			goto unlock;
		}
	}
	/* backward-shift deletion: no tombstones, probes stay exact */
	memset(&kt->slots[i], 0, sizeof(kt->slots[i]));
	for (j = (i + 1) & kt->mask; kt->slots[j].key; j = (j + 1) & kt->mask) {
		uint32_t home = hash32(kt->slots[j].key) & kt->mask;

		/* move j into the hole at i unless its home lies cyclically in (i, j] */
		if (((j - home) & kt->mask) >= ((j - i) & kt->mask)) {
			kt->slots[i] = kt->slots[j];
			memset(&kt->slots[j], 0, sizeof(kt->slots[j]));
			i = j;
		}
	}
	kt->count--;
unlock:
	pthread_rwlock_unlock(&kt->lock);
	return rc;
}

bool rdmx__tcp_region_allows(const struct rdmx__tcp_region *r, uint64_t off, uint64_t len,
                             unsigned need, unsigned ctx_perm)
{
	if (!r)
		return false;
	if ((r->access & need) != need || (ctx_perm & need) != need)
		return false;
	return !(off > r->len || len > r->len - off);
}

const struct rdmx__tcp_region *rdmx__tcp_remote_access(const struct tcp_conn *via, uint32_t key,
                                                       uint64_t off, uint64_t len, unsigned need)
{
	const struct rdmx__tcp_region *r = rdmx__tcp_keytab_find(&via->td->keys, key);
	uint32_t id = via->conn ? via->conn->id : 0;
	uint64_t cs = via->tc ? via->tc->serial : 0;

	if (!r) {
		RDMX_WARN("tcp: connection %u (context %" PRIu64 ") named an unknown remote key "
		          "(never issued, deregistered, revoked or its connection ended): refused",
		          id, cs);
		return NULL;
	}
	if (r->owner && r->owner != via) {
		RDMX_WARN("tcp: connection %u (context %" PRIu64 ") named a remote key granted to "
		          "connection %u (context %" PRIu64 "): refused",
		          id, cs, r->owner_id, r->owner_ctx);
		return NULL;
	}
	if (!rdmx__tcp_region_allows(r, off, len, need, via->tc->ctx->props.permissions)) {
		RDMX_WARN("tcp: connection %u (context %" PRIu64 "): %" PRIu64
		          " bytes at offset %" PRIu64 " of a %" PRIu64
		          "-byte region with access 0x%x, needed 0x%x: refused",
		          id, cs, len, off, r->len, r->access, need);
		return NULL;
	}
	return r;
}

/* ---- ops ---- */

/* A fresh random key for [addr, addr+len) in the table. */
static int new_key(struct tcp_dev *td, void *addr, uint64_t len, unsigned access,
                   const struct tcp_conn *owner, uint32_t owner_id, uint64_t owner_ctx,
                   uint32_t *out)
{
	uint64_t serial;
	uint32_t key;
	int rc;

	/* a collision with a live key is rare; a few fresh draws settle it */
	for (int tries = 0; tries < 16; tries++) {
		rc = rdmx__tcp_random(&key, sizeof(key));
		if (rc)
			return rc;
		if (key == 0)
			continue;
		rc = rdmx__tcp_keytab_insert_bound(&td->keys, key, addr, len, access, owner,
		                                   owner_id, owner_ctx, &serial);
		if (rc == RDMX_E_EXISTS)
			continue;
		if (rc)
			return rc;
		*out = key;
		return 0;
	}
	RDMX_ERR("tcp: no free remote key after 16 draws");
	return RDMX_E_FULL;
}

int rdmx__tcp_mr_reg(struct rdmx_mr *mr)
{
	/* a grant-only region's own key reaches nothing remotely */
	unsigned access = mr->grant_only ? (mr->access & RDMX_ACCESS_LOCAL_WRITE) : mr->access;
	uint32_t key;
	int rc;

	rc = new_key(TCP_DEV(mr->dev), mr->addr, mr->len, access, NULL, 0, 0, &key);
	if (rc)
		return rc;
	mr->lkey = key;
	mr->rkey = key;
	mr->prov = NULL;
	return 0;
}

int rdmx__tcp_mr_grant(struct rdmx_mr_grant *g)
{
	struct tcp_conn *c = TCP_CONN(g->conn);

	if (!c || !c->tc)
		return RDMX_E_BAD_STATE;
	return new_key(TCP_DEV(g->mr->dev), (uint8_t *)g->mr->addr + g->offset, g->len, g->access,
	               c, g->conn->id, c->tc->serial, &g->rkey);
}

void rdmx__tcp_mr_revoke(struct rdmx_mr_grant *g)
{
	if (rdmx__tcp_keytab_remove(&TCP_DEV(g->mr->dev)->keys, g->rkey))
		RDMX_WARN("tcp: revoking an unknown grant (%" PRIu64 " bytes)", g->len);
}

void rdmx__tcp_mr_dereg(struct rdmx_mr *mr)
{
	struct tcp_dev *td = TCP_DEV(mr->dev);

	if (rdmx__tcp_keytab_remove(&td->keys, mr->rkey))
		RDMX_WARN("tcp: deregistering an unknown region (%zu bytes)", mr->len);
}

int rdmx__tcp_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			RDMX_ERR("tcp: getrandom failed: %s", strerror(errno));
			return RDMX_E_PROVIDER;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

bool rdmx__tcp_ct_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	volatile uint8_t diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= (uint8_t)(a[i] ^ b[i]);
	return diff == 0;
}
