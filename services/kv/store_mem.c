/* The memory backend of the kv store (store.h): a sorted array, O(log n)
 * lookups, O(n) pointer moves per insert or delete, which is fine for the
 * demo's and tests' sizes and keeps scans trivial. Keys and values are
 * copied in, except by kv_store_put_owned: then the entry keeps the
 * caller's allocation (a large value's receive buffer) and points into it. */
#include <stdlib.h>
#include <string.h>

#include <rdmx/status.h>

#include "store_backend.h"

struct mem_entry {
	char *key;
	size_t klen;
	uint8_t *val;
	size_t vlen;
	void *mem; /* what holds val, freed with the entry (val itself when copied) */
};

struct mem_store {
	struct kv_store base;
	struct mem_entry *v;
	size_t n, cap;
	uint64_t bytes, max_bytes;
};

static int key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* index of the first entry whose key is >= key (after: > key) */
static size_t seek(const struct mem_store *m, const char *key, size_t klen, bool after)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(m->v[mid].key, m->v[mid].klen, key, klen);

		if (c < 0 || (after && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool found_at(const struct mem_store *m, size_t i, const char *key, size_t klen)
{
	return i < m->n && key_cmp(m->v[i].key, m->v[i].klen, key, klen) == 0;
}

static void fill(struct kv_entry *e, const struct mem_entry *me)
{
	e->key = me->key;
	e->klen = me->klen;
	e->val = me->val;
	e->vlen = me->vlen;
}

static void mem_destroy(struct kv_store *s)
{
	struct mem_store *m = (struct mem_store *)s;

	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].key);
		free(m->v[i].mem);
	}
	free(m->v);
	free(m);
}

static int mem_begin_read(struct kv_store *s)
{
	(void)s;
	return 0;
}

static void mem_end_read(struct kv_store *s)
{
	(void)s;
}

static int mem_get(struct kv_store *s, const char *key, size_t klen, struct kv_entry *e)
{
	struct mem_store *m = (struct mem_store *)s;
	size_t i = seek(m, key, klen, false);

	if (!found_at(m, i, key, klen))
		return RDMX_E_NOT_FOUND;
	fill(e, &m->v[i]);
	return 0;
}

static int mem_scan(struct kv_store *s, const char *from, size_t flen, bool after,
                    kv_store_visit_fn visit, void *arg)
{
	struct mem_store *m = (struct mem_store *)s;
	struct kv_entry e;

	for (size_t i = seek(m, from, flen, after); i < m->n; i++) {
		fill(&e, &m->v[i]);
		if (!visit(&e, arg))
			break;
	}
	return 0;
}

/* Stores val (inside mem, which the entry then owns) under key; on an
 * error mem is freed. */
static int mem_insert(struct mem_store *m, const char *key, size_t klen, uint8_t *val, size_t vlen,
                      void *mem, bool *replaced)
{
	size_t i = seek(m, key, klen, false);
	bool found = found_at(m, i, key, klen);
	uint64_t old = found ? m->v[i].klen + m->v[i].vlen : 0;
	void *copy = mem;

	if (m->max_bytes && m->bytes - old + klen + vlen > m->max_bytes) {
		free(mem);
		return RDMX_E_FULL;
	}
	if (found) {
		free(m->v[i].mem);
		m->v[i].val = val;
		m->v[i].vlen = vlen;
		m->v[i].mem = mem;
	} else {
		char *k = malloc(klen + 1);

		if (!k) {
			free(copy);
			return RDMX_E_NOMEM;
		}
		memcpy(k, key, klen);
		k[klen] = '\0';
		if (m->n == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 64;
			struct mem_entry *v = realloc(m->v, cap * sizeof(*v));

			if (!v) {
				free(k);
				free(copy);
				return RDMX_E_NOMEM;
			}
			m->v = v;
			m->cap = cap;
		}
		memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
		m->v[i].key = k;
		m->v[i].klen = klen;
		m->v[i].val = val;
		m->v[i].vlen = vlen;
		m->v[i].mem = mem;
		m->n++;
	}
	m->bytes = m->bytes - old + klen + vlen;
	*replaced = found;
	return 0;
}

static int mem_put(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
                   bool *replaced)
{
	struct mem_store *m = (struct mem_store *)s;
	uint8_t *copy;

	if (m->max_bytes && vlen > m->max_bytes)
		return RDMX_E_FULL;
	copy = malloc(vlen ? vlen : 1);
	if (!copy)
		return RDMX_E_NOMEM;
	if (vlen)
		memcpy(copy, val, vlen);
	return mem_insert(m, key, klen, copy, vlen, copy, replaced);
}

static int mem_put_owned(struct kv_store *s, const char *key, size_t klen, const void *val,
                         size_t vlen, void *owned, bool *replaced)
{
	return mem_insert((struct mem_store *)s, key, klen, (uint8_t *)val, vlen, owned, replaced);
}

static int mem_del(struct kv_store *s, const char *key, size_t klen, bool *deleted)
{
	struct mem_store *m = (struct mem_store *)s;
	size_t i = seek(m, key, klen, false);

	*deleted = found_at(m, i, key, klen);
	if (!*deleted)
		return 0;
	m->bytes -= m->v[i].klen + m->v[i].vlen;
	free(m->v[i].key);
	free(m->v[i].mem);
	memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(*m->v));
	m->n--;
	return 0;
}

static size_t mem_count(struct kv_store *s)
{
	return ((struct mem_store *)s)->n;
}

static uint64_t mem_bytes(struct kv_store *s)
{
	return ((struct mem_store *)s)->bytes;
}

static const struct kv_store_ops mem_ops = {
    "memory", mem_destroy, mem_begin_read, mem_end_read, mem_get,       mem_scan,
    mem_put,  mem_del,     mem_count,      mem_bytes,    mem_put_owned,
};

int kv_store_open_memory(uint64_t max_bytes, struct kv_store **store)
{
	struct mem_store *m;

	if (!store)
		return RDMX_E_INVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return RDMX_E_NOMEM;
	kv__store_init(&m->base, &mem_ops);
	m->max_bytes = max_bytes;
	*store = &m->base;
	return 0;
}
