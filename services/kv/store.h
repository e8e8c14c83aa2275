/* The kv service's storage: an in-memory map kept sorted by key (bytewise),
 * so that a prefix scan is a binary search and a walk. Keys and values are
 * copied in. Bounded by a byte budget (keys + values). Not thread-safe: the
 * server runs on one thread. */
#ifndef RDMX_KV_STORE_H
#define RDMX_KV_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_entry {
	char *key;
	size_t klen;
	uint8_t *val;
	size_t vlen;
};

struct kv_store;

int kv_store_create(uint64_t max_bytes, struct kv_store **store);
void kv_store_destroy(struct kv_store **store);

/* NULL when absent. */
const struct kv_entry *kv_store_get(const struct kv_store *s, const char *key, size_t klen);
/* 0, RDMX_E_FULL (over the byte budget), RDMX_E_NOMEM. */
int kv_store_put(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
                 bool *replaced);
/* true when the key was there. */
bool kv_store_del(struct kv_store *s, const char *key, size_t klen);

size_t kv_store_count(const struct kv_store *s);
uint64_t kv_store_bytes(const struct kv_store *s);
/* Index of the first entry whose key is >= key (after = false) or > key
 * (after = true); kv_store_count() when none. */
size_t kv_store_seek(const struct kv_store *s, const char *key, size_t klen, bool after);
const struct kv_entry *kv_store_at(const struct kv_store *s, size_t i);

#endif
