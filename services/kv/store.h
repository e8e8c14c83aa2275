/* The kv service's storage, one interface over two backends:
 * - memory (kv_store_open_memory): a map kept sorted by key (bytewise),
 *   bounded by a byte budget (keys + values), gone with the process;
 * - LMDB (kv_store_open_lmdb): the same map in an LMDB environment in a
 *   folder, so that what a put or delete acknowledged survives a crash.
 * Keys compare bytewise in both, so scans give the same order.
 * Not thread-safe: the server runs on one thread.
 *
 * Reads (get, scan) run inside a read view, kv_store_begin_read() ..
 * kv_store_end_read(): the entries they give point into the store (for
 * LMDB: into its memory map, no copy) and stay valid until the view ends.
 * No put or delete inside a view. */
#ifndef RDMX_KV_STORE_H
#define RDMX_KV_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_entry {
	const char *key;
	size_t klen;
	const uint8_t *val;
	size_t vlen;
};

struct kv_store;

/* max_bytes 0: no budget. Errors: RDMX_E_INVAL, RDMX_E_NOMEM. */
int kv_store_open_memory(uint64_t max_bytes, struct kv_store **store);
/* dir holds data.mdb and lock.mdb; it is made (mode 0700) when missing,
 * its parent must exist. map_bytes is the most
 * the data may take (LMDB's map size, rounded to pages). Errors:
 * RDMX_E_INVAL, RDMX_E_NOMEM, RDMX_E_PROVIDER (LMDB said why; logged). */
int kv_store_open_lmdb(const char *dir, uint64_t map_bytes, struct kv_store **store);
void kv_store_destroy(struct kv_store **store);

/* "memory" or "lmdb" */
const char *kv_store_kind(const struct kv_store *s);

/* 0, or RDMX_E_PROVIDER (logged). Views do not nest. */
int kv_store_begin_read(struct kv_store *s);
void kv_store_end_read(struct kv_store *s);

/* Inside a view: 0 and *e, RDMX_E_NOT_FOUND, RDMX_E_PROVIDER (logged). */
int kv_store_get(struct kv_store *s, const char *key, size_t klen, struct kv_entry *e);

/* false stops the walk */
typedef bool (*kv_store_visit_fn)(const struct kv_entry *e, void *arg);
/* Inside a view: calls visit on each entry in key order, from the first
 * whose key is >= from (after = false) or > from (after = true), until it
 * returns false or the keys run out. 0, or RDMX_E_PROVIDER (logged). */
int kv_store_scan(struct kv_store *s, const char *from, size_t flen, bool after,
                  kv_store_visit_fn visit, void *arg);

/* Returns 0 only once the write is durable (LMDB: its transaction
 * committed and synced). Errors: RDMX_E_FULL (over --max-bytes, or the
 * LMDB map is full), RDMX_E_NOMEM, RDMX_E_PROVIDER (logged); the store is
 * then unchanged. */
int kv_store_put(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
                 bool *replaced);
/* kv_store_put without a copy where the backend can: val (vlen bytes) lies
 * inside `owned`, a malloc'd block the store takes on every return, success
 * or not (it is freed with free()). The memory backend keeps `owned` as the
 * value's storage (gets then point into it) until the value is replaced or
 * deleted; LMDB copies the value into its map (its one copy) and frees
 * `owned`. Same errors as kv_store_put. */
int kv_store_put_owned(struct kv_store *s, const char *key, size_t klen, const void *val,
                       size_t vlen, void *owned, bool *replaced);
/* *deleted: the key was there. Same errors as kv_store_put. */
int kv_store_del(struct kv_store *s, const char *key, size_t klen, bool *deleted);

size_t kv_store_count(struct kv_store *s);
/* memory: keys + values; LMDB: the bytes of the map in use */
uint64_t kv_store_bytes(struct kv_store *s);

#endif
