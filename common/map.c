/* A small open-addressing hash map (uint64 -> pointer) for the channel and
 * RPC tables: connection -> channel, call id -> call, method id -> handler.
 * Linear probing with backward-shift deletion keeps lookups short without
 * tombstones; the table doubles at 50% load. */
#include <stdlib.h>
#include <string.h>

#include "common/byteorder.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"

static inline uint32_t map_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	key *= 0xc4ceb9fe1a85ec53ull;
	key ^= key >> 33;
	return (uint32_t)key;
}

void rdmx__map_init(struct rdmx__map *m)
{
	m->slots = NULL;
	m->cap = 0;
	m->len = 0;
}

void rdmx__map_fini(struct rdmx__map *m)
{
	free(m->slots);
	rdmx__map_init(m);
}

void *rdmx__map_get(const struct rdmx__map *m, uint64_t key)
{
	uint32_t mask, i;

	if (!m->len)
		return NULL;
	mask = m->cap - 1;
	for (i = map_hash(key) & mask;; i = (i + 1) & mask) {
		const struct rdmx__map_slot *s = &m->slots[i];

		if (!s->val)
			return NULL;
		if (s->key == key)
			return s->val;
	}
}

static void map_insert_raw(struct rdmx__map_slot *slots, uint32_t cap, uint64_t key, void *val)
{
	uint32_t mask = cap - 1, i;

	for (i = map_hash(key) & mask; slots[i].val; i = (i + 1) & mask)
		;
	slots[i].key = key;
	slots[i].val = val;
}

static int map_grow(struct rdmx__map *m)
{
	uint32_t ncap = m->cap ? m->cap * 2 : 16;
	struct rdmx__map_slot *ns;

	if (ncap < m->cap)
		return RDMX_E_NOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return RDMX_E_NOMEM;
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->slots[i].val)
			map_insert_raw(ns, ncap, m->slots[i].key, m->slots[i].val);
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

int rdmx__map_put(struct rdmx__map *m, uint64_t key, void *val)
{
	int rc;

	if (!val)
		return RDMX_E_INVAL;
	if (rdmx__map_get(m, key))
		return RDMX_E_EXISTS;
	if ((m->len + 1) * 2 > m->cap) {
		rc = map_grow(m);
		if (rc)
			return rc;
	}
	map_insert_raw(m->slots, m->cap, key, val);
	m->len++;
	return 0;
}

void *rdmx__map_del(struct rdmx__map *m, uint64_t key)
{
	uint32_t mask, i, j;
	void *val;

	if (!m->len)
		return NULL;
	mask = m->cap - 1;
	for (i = map_hash(key) & mask;; i = (i + 1) & mask) {
		if (!m->slots[i].val)
			return NULL;
		if (m->slots[i].key == key)
			break;
	}
	val = m->slots[i].val;
	/* backward shift: move later members of the cluster into the hole when
	 * their home slot is not between the hole and their position */
	for (j = (i + 1) & mask; m->slots[j].val; j = (j + 1) & mask) {
		uint32_t home = map_hash(m->slots[j].key) & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].val = NULL;
	m->slots[i].key = 0;
	m->len--;
	return val;
}

void *rdmx__map_next(const struct rdmx__map *m, uint32_t *pos, uint64_t *key)
{
	for (; *pos < m->cap; (*pos)++) {
		const struct rdmx__map_slot *s = &m->slots[*pos];

		if (s->val) {
			(*pos)++;
			if (key)
				*key = s->key;
			return s->val;
		}
	}
	return NULL;
}
