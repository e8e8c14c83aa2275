/* Sorted-array map (store.h): O(log n) lookups, O(n) pointer moves per
 * insert or delete, which is fine for the demo's and tests' sizes and keeps
 * scans trivial. */
#include "store.h"

#include <stdlib.h>
#include <string.h>

#include <rdmx/status.h>

struct kv_store {
	struct kv_entry *v;
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

int kv_store_create(uint64_t max_bytes, struct kv_store **store)
{
	struct kv_store *s;

	if (!store)
		return RDMX_E_INVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return RDMX_E_NOMEM;
	s->max_bytes = max_bytes;
	*store = s;
	return 0;
}

void kv_store_destroy(struct kv_store **store)
{
	struct kv_store *s;

	if (!store || !*store)
		return;
	s = *store;
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].key);
		free(s->v[i].val);
	}
	free(s->v);
	free(s);
	*store = NULL;
}

size_t kv_store_seek(const struct kv_store *s, const char *key, size_t klen, bool after)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(s->v[mid].key, s->v[mid].klen, key, klen);

		if (c < 0 || (after && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct kv_entry *kv_store_get(const struct kv_store *s, const char *key, size_t klen)
{
	size_t i = kv_store_seek(s, key, klen, false);

	if (i < s->n && key_cmp(s->v[i].key, s->v[i].klen, key, klen) == 0)
		return &s->v[i];
	return NULL;
}

int kv_store_put(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
                 bool *replaced)
{
	size_t i = kv_store_seek(s, key, klen, false);
	bool found = i < s->n && key_cmp(s->v[i].key, s->v[i].klen, key, klen) == 0;
	uint64_t old = found ? s->v[i].klen + s->v[i].vlen : 0;
	uint8_t *copy;

	if (s->max_bytes && s->bytes - old + klen + vlen > s->max_bytes)
		return RDMX_E_FULL;
	copy = malloc(vlen ? vlen : 1);
	if (!copy)
		return RDMX_E_NOMEM;
	if (vlen)
		memcpy(copy, val, vlen);
	if (found) {
		free(s->v[i].val);
		s->v[i].val = copy;
		s->v[i].vlen = vlen;
	} else {
		char *k = malloc(klen + 1);

		if (!k) {
			free(copy);
			return RDMX_E_NOMEM;
		}
		memcpy(k, key, klen);
		k[klen] = '\0';
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 64;
			struct kv_entry *v = realloc(s->v, cap * sizeof(*v));

			if (!v) {
				free(k);
				free(copy);
				return RDMX_E_NOMEM;
			}
			s->v = v;
			s->cap = cap;
		}
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(*s->v));
		s->v[i].key = k;
		s->v[i].klen = klen;
		s->v[i].val = copy;
		s->v[i].vlen = vlen;
		s->n++;
	}
	s->bytes = s->bytes - old + klen + vlen;
	if (replaced)
		*replaced = found;
	return 0;
}

bool kv_store_del(struct kv_store *s, const char *key, size_t klen)
{
	size_t i = kv_store_seek(s, key, klen, false);

	if (i >= s->n || key_cmp(s->v[i].key, s->v[i].klen, key, klen) != 0)
		return false;
	s->bytes -= s->v[i].klen + s->v[i].vlen;
	free(s->v[i].key);
	free(s->v[i].val);
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
	s->n--;
	return true;
}

size_t kv_store_count(const struct kv_store *s)
{
	return s->n;
}

uint64_t kv_store_bytes(const struct kv_store *s)
{
	return s->bytes;
}

const struct kv_entry *kv_store_at(const struct kv_store *s, size_t i)
{
	return i < s->n ? &s->v[i] : NULL;
}
