/* The store interface (store.h): argument checks and the read-view rule,
 * then the backend's ops (store_mem.c, store_lmdb.c). */
#include "store.h"

#include <stdlib.h>

#include <rdmx/status.h>

#include "store_backend.h"

/* The store whose read view this thread holds (and so its lock), if any:
 * a thread that asks again gets its error instead of waiting on itself. */
static _Thread_local const struct kv_store *my_view;

static bool mine(const struct kv_store *s)
{
	return my_view == s;
}

void kv__store_init(struct kv_store *s, const struct kv_store_ops *ops)
{
	s->ops = ops;
	pthread_mutex_init(&s->lock, NULL);
}

void kv_store_destroy(struct kv_store **store)
{
	struct kv_store *s;

	if (!store || !*store)
		return;
	s = *store;
	if (mine(s))
		kv_store_end_read(s);
	pthread_mutex_destroy(&s->lock);
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

	if (mine(s))
		return RDMX_E_BAD_STATE;
	pthread_mutex_lock(&s->lock);
	rc = s->ops->begin_read(s);
	if (rc) {
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	s->reading = true;
	my_view = s;
	return 0;
}

void kv_store_end_read(struct kv_store *s)
{
	if (!mine(s))
		return;
	s->ops->end_read(s);
	s->reading = false;
	my_view = NULL;
	pthread_mutex_unlock(&s->lock);
}

int kv_store_get(struct kv_store *s, const char *key, size_t klen, struct kv_entry *e)
{
	if (!mine(s) || !key || !klen || !e)
		return RDMX_E_INVAL;
	return s->ops->get(s, key, klen, e);
}

int kv_store_scan(struct kv_store *s, const char *from, size_t flen, bool after,
                  kv_store_visit_fn visit, void *arg)
{
	if (!mine(s) || (flen && !from) || !visit)
		return RDMX_E_INVAL;
	return s->ops->scan(s, from ? from : "", flen, after, visit, arg);
}

int kv_store_put(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
                 bool *replaced)
{
	bool dummy;
	int rc;

	if (mine(s) || !key || !klen || (vlen && !val))
		return RDMX_E_INVAL;
	pthread_mutex_lock(&s->lock);
	rc = s->ops->put(s, key, klen, vlen ? val : "", vlen, replaced ? replaced : &dummy);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int kv_store_put_owned(struct kv_store *s, const char *key, size_t klen, const void *val,
                       size_t vlen, void *owned, bool *replaced)
{
	bool dummy;
	int rc;

	if (mine(s) || !key || !klen || !owned || (vlen && !val)) {
		free(owned);
		return RDMX_E_INVAL;
	}
	pthread_mutex_lock(&s->lock);
	if (s->ops->put_owned) {
		rc = s->ops->put_owned(s, key, klen, vlen ? val : "", vlen, owned,
		                       replaced ? replaced : &dummy);
	} else {
		rc = s->ops->put(s, key, klen, vlen ? val : "", vlen, replaced ? replaced : &dummy);
		free(owned);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int kv_store_del(struct kv_store *s, const char *key, size_t klen, bool *deleted)
{
	bool dummy;
	int rc;

	if (mine(s) || !key || !klen)
		return RDMX_E_INVAL;
	pthread_mutex_lock(&s->lock);
	rc = s->ops->del(s, key, klen, deleted ? deleted : &dummy);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

size_t kv_store_count(struct kv_store *s)
{
	size_t n;

	if (mine(s))
		return s->ops->count(s);
	pthread_mutex_lock(&s->lock);
	n = s->ops->count(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t kv_store_bytes(struct kv_store *s)
{
	uint64_t n;

	if (mine(s))
		return s->ops->bytes(s);
	pthread_mutex_lock(&s->lock);
	n = s->ops->bytes(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}
