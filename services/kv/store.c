/* The store interface (store.h): argument checks and the read-view rule,
 * then the backend's ops (store_mem.c, store_lmdb.c). */
#include "store.h"

#include <stdlib.h>

#include <rdmx/status.h>

#include "store_backend.h"

void kv_store_destroy(struct kv_store **store)
{
	struct kv_store *s;

	if (!store || !*store)
		return;
	s = *store;
	if (s->reading)
		s->ops->end_read(s);
	s->ops->destroy(s);
	*store = NULL;
}

const char *kv_store_kind(const struct kv_store *s)
{
	return s->ops->kind;
}

int kv_store_begin_read(struct kv_store *s)
{
	int rc;

	if (s->reading)
		return RDMX_E_BAD_STATE;
	rc = s->ops->begin_read(s);
	if (!rc)
		s->reading = true;
	return rc;
}

void kv_store_end_read(struct kv_store *s)
{
	if (!s->reading)
		return;
	s->ops->end_read(s);
	s->reading = false;
}

int kv_store_get(struct kv_store *s, const char *key, size_t klen, struct kv_entry *e)
{
	if (!s->reading || !key || !klen || !e)
		return RDMX_E_INVAL;
	return s->ops->get(s, key, klen, e);
}

int kv_store_scan(struct kv_store *s, const char *from, size_t flen, bool after,
                  kv_store_visit_fn visit, void *arg)
{
	if (!s->reading || (flen && !from) || !visit)
		return RDMX_E_INVAL;
	return s->ops->scan(s, from ? from : "", flen, after, visit, arg);
}

int kv_store_put(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
                 bool *replaced)
{
	bool dummy;

	if (s->reading || !key || !klen || (vlen && !val))
		return RDMX_E_INVAL;
	return s->ops->put(s, key, klen, vlen ? val : "", vlen, replaced ? replaced : &dummy);
}

int kv_store_del(struct kv_store *s, const char *key, size_t klen, bool *deleted)
{
	bool dummy;

	if (s->reading || !key || !klen)
		return RDMX_E_INVAL;
	return s->ops->del(s, key, klen, deleted ? deleted : &dummy);
}

size_t kv_store_count(struct kv_store *s)
{
	return s->ops->count(s);
}

uint64_t kv_store_bytes(struct kv_store *s)
{
	return s->ops->bytes(s);
}
