/* What a kv store backend fills in (store.h): each backend's object begins
 * with struct kv_store, whose ops store.c calls. */
#ifndef RDMX_KV_STORE_BACKEND_H
#define RDMX_KV_STORE_BACKEND_H

#include <pthread.h>

#include "store.h"

struct kv_store_ops {
	const char *kind;
	void (*destroy)(struct kv_store *s);
	int (*begin_read)(struct kv_store *s);
	void (*end_read)(struct kv_store *s);
	int (*get)(struct kv_store *s, const char *key, size_t klen, struct kv_entry *e);
	int (*scan)(struct kv_store *s, const char *from, size_t flen, bool after,
	            kv_store_visit_fn visit, void *arg);
	int (*put)(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
	           bool *replaced);
	int (*del)(struct kv_store *s, const char *key, size_t klen, bool *deleted);
	size_t (*count)(struct kv_store *s);
	uint64_t (*bytes)(struct kv_store *s);
	/* kv_store_put_owned; NULL: store.c puts a copy and frees owned */
	int (*put_owned)(struct kv_store *s, const char *key, size_t klen, const void *val,
	                 size_t vlen, void *owned, bool *replaced);
};

/* The store is shared by the server's worker threads (rdmx-kv serve
 * --workers): store.c holds `lock` from begin_read to end_read and around
 * every change, so a backend's ops never run on two threads at once (the
 * LMDB read transaction begins and ends on one thread, inside one hold). */
struct kv_store {
	const struct kv_store_ops *ops;
	bool reading;
	pthread_mutex_t lock;
};

/* Sets ops and the lock up; the backend's open calls it first. */
void kv__store_init(struct kv_store *s, const struct kv_store_ops *ops);

#endif
