/* The LMDB backend of the kv store (store.h): one environment in a folder,
 * its unnamed database holding key -> value, LMDB's default comparison
 * (bytewise, shorter first on a tie: the memory backend's order).
 *
 * Each put or delete is one write transaction, committed with LMDB's default
 * sync before the call returns, so what was acknowledged is on disk.
 * MDB_NOSYNC / MDB_NOMETASYNC are not used: they would trade that guarantee
 * (an OS crash or power cut loses the last commits) for write speed.
 * A read view is one read-only transaction (reset and renewed, not
 * reallocated), whose entries point into the memory map: a Get's value goes
 * from the map into the reply without a copy of ours.
 *
 * LMDB bounds a key (mdb_env_get_maxkeysize, 511 bytes in Debian's build):
 * a longer key cannot be stored (RDMX_E_TOO_BIG) and is never found. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>
#include <sys/stat.h>

#include <rdmx/status.h>

#include "store_backend.h"

struct lmdb_store {
	struct kv_store base;
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *rd; /* the read view's transaction, reset between views */
	size_t max_key;
};

/* one log line, and the status code the caller returns */
static int lmdb_fail(const char *what, int err)
{
	fprintf(stderr, "rdmx-kv: lmdb: %s: %s\n", what, mdb_strerror(err));
	if (err == MDB_MAP_FULL)
		return RDMX_E_FULL;
	if (err == ENOMEM)
		return RDMX_E_NOMEM;
	return RDMX_E_PROVIDER;
}

static void lmdb_destroy(struct kv_store *s)
{
	struct lmdb_store *l = (struct lmdb_store *)s;

	if (l->rd)
		mdb_txn_abort(l->rd);
	if (l->env)
		mdb_env_close(l->env);
	free(l);
}

static int lmdb_begin_read(struct kv_store *s)
{
	struct lmdb_store *l = (struct lmdb_store *)s;
	int err;

	if (l->rd)
		err = mdb_txn_renew(l->rd);
	else
		err = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &l->rd);
	if (err) {
		if (l->rd) {
			mdb_txn_abort(l->rd);
			l->rd = NULL;
		}
		return lmdb_fail("starting a read transaction", err);
	}
	return 0;
}

static void lmdb_end_read(struct kv_store *s)
{
	struct lmdb_store *l = (struct lmdb_store *)s;

	if (l->rd)
		mdb_txn_reset(l->rd);
}

static void fill(struct kv_entry *e, const MDB_val *k, const MDB_val *v)
{
	e->key = k->mv_data;
	e->klen = k->mv_size;
	e->val = v->mv_data;
	e->vlen = v->mv_size;
}

static int lmdb_get(struct kv_store *s, const char *key, size_t klen, struct kv_entry *e)
{
	struct lmdb_store *l = (struct lmdb_store *)s;
	MDB_val k = {klen, (void *)key}, v;
	int err;

	if (klen > l->max_key)
		return RDMX_E_NOT_FOUND;
	err = mdb_get(l->rd, l->dbi, &k, &v);
	if (err == MDB_NOTFOUND)
		return RDMX_E_NOT_FOUND;
	if (err)
		return lmdb_fail("get", err);
	fill(e, &k, &v);
	return 0;
}

static int key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

static int lmdb_scan(struct kv_store *s, const char *from, size_t flen, bool after,
                     kv_store_visit_fn visit, void *arg)
{
	struct lmdb_store *l = (struct lmdb_store *)s;
	/* a start longer than any stored key: position at its head, then skip
	 * what sorts before it */
	size_t head = flen > l->max_key ? l->max_key : flen;
	MDB_val k = {head, (void *)from}, v;
	MDB_cursor *cur;
	struct kv_entry e;
	int err, op = MDB_SET_RANGE;

	err = mdb_cursor_open(l->rd, l->dbi, &cur);
	if (err)
		return lmdb_fail("opening a cursor", err);
	if (head == 0)
		op = MDB_FIRST;
	for (;;) {
		int c;

		err = mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op);
		op = MDB_NEXT;
		if (err)
			break;
		c = key_cmp(k.mv_data, k.mv_size, from, flen);
		if (c < 0 || (after && c == 0))
			continue;
		fill(&e, &k, &v);
		if (!visit(&e, arg))
			break;
	}
	mdb_cursor_close(cur);
	if (err && err != MDB_NOTFOUND)
		return lmdb_fail("scan", err);
	return 0;
}

/* one write transaction: found tells whether the key was there; put (val
 * not NULL) or delete; committed before it returns */
static int lmdb_write(struct lmdb_store *l, const char *key, size_t klen, const void *val,
                      size_t vlen, bool *found)
{
	MDB_val k = {klen, (void *)key}, v;
	MDB_txn *txn;
	int err;

	err = mdb_txn_begin(l->env, NULL, 0, &txn);
	if (err)
		return lmdb_fail("starting a write transaction", err);
	err = mdb_get(txn, l->dbi, &k, &v);
	if (err && err != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return lmdb_fail(val ? "put" : "delete", err);
	}
	*found = err == 0;
	if (val) {
		v.mv_size = vlen;
		v.mv_data = (void *)val;
		err = mdb_put(txn, l->dbi, &k, &v, 0);
	} else if (*found) {
		err = mdb_del(txn, l->dbi, &k, NULL);
	} else {
		mdb_txn_abort(txn);
		return 0;
	}
	if (err) {
		mdb_txn_abort(txn);
		return lmdb_fail(
		    val ? (err == MDB_MAP_FULL ? "put (raise --data-max-bytes)" : "put") : "delete",
		    err);
	}
	err = mdb_txn_commit(txn); /* frees txn, also on failure */
	if (err)
		return lmdb_fail(err == MDB_MAP_FULL ? "commit (raise --data-max-bytes)" : "commit",
		                 err);
	return 0;
}

static int lmdb_put(struct kv_store *s, const char *key, size_t klen, const void *val, size_t vlen,
                    bool *replaced)
{
	struct lmdb_store *l = (struct lmdb_store *)s;

	if (klen > l->max_key)
		return RDMX_E_TOO_BIG;
	return lmdb_write(l, key, klen, val, vlen, replaced);
}

static int lmdb_del(struct kv_store *s, const char *key, size_t klen, bool *deleted)
{
	struct lmdb_store *l = (struct lmdb_store *)s;

	*deleted = false;
	if (klen > l->max_key)
		return 0;
	return lmdb_write(l, key, klen, NULL, 0, deleted);
}

static size_t lmdb_count(struct kv_store *s)
{
	struct lmdb_store *l = (struct lmdb_store *)s;
	MDB_stat st;

	if (mdb_env_stat(l->env, &st))
		return 0;
	return st.ms_entries;
}

static uint64_t lmdb_bytes(struct kv_store *s)
{
	struct lmdb_store *l = (struct lmdb_store *)s;
	MDB_envinfo info;
	MDB_stat st;

	if (mdb_env_info(l->env, &info) || mdb_env_stat(l->env, &st))
		return 0;
	return ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

static const struct kv_store_ops lmdb_ops = {
    "lmdb",    lmdb_destroy, lmdb_begin_read, lmdb_end_read, lmdb_get,
    lmdb_scan, lmdb_put,     lmdb_del,        lmdb_count,    lmdb_bytes,
};

int kv_store_open_lmdb(const char *dir, uint64_t map_bytes, struct kv_store **store)
{
	struct lmdb_store *l;
	MDB_txn *txn;
	int err, dead = 0;

	if (!dir || !*dir || !map_bytes || !store)
		return RDMX_E_INVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return RDMX_E_NOMEM;
	kv__store_init(&l->base, &lmdb_ops);
	/* the folder itself, not its parents */
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = errno;
		goto fail;
	}
	err = mdb_env_create(&l->env);
	if (err) {
		l->env = NULL;
		goto fail;
	}
	err = mdb_env_set_mapsize(l->env, (size_t)map_bytes);
	if (!err)
		err = mdb_env_open(l->env, dir, 0, 0600);
	if (err)
		goto fail;
	/* reader slots a killed server left behind */
	mdb_reader_check(l->env, &dead);
	l->max_key = (size_t)mdb_env_get_maxkeysize(l->env);
	err = mdb_txn_begin(l->env, NULL, 0, &txn);
	if (err)
		goto fail;
	err = mdb_dbi_open(txn, NULL, 0, &l->dbi);
	if (err) {
		mdb_txn_abort(txn);
		goto fail;
	}
	err = mdb_txn_commit(txn);
	if (err)
		goto fail;
	*store = &l->base;
	return 0;
fail:
	fprintf(stderr, "rdmx-kv: lmdb: opening %s: %s\n", dir, mdb_strerror(err));
	lmdb_destroy(&l->base);
	return err == ENOMEM ? RDMX_E_NOMEM : RDMX_E_PROVIDER;
}
