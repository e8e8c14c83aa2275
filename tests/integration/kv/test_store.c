/* The kv store's two backends (services/kv/store.h) give the same answers:
 * get / put / replace / delete, bytewise key order, scans from a key or
 * after it, the memory budget and the LMDB map size as RDMX_E_FULL, and the
 * LMDB data still there after the store is closed and opened again; and
 * both shared by threads (rdmx-kv serve --workers): changes and read views
 * of four threads at once, each view whole. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rdmx/status.h>

#include "store.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rdmx-kv-store-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", dir);
	unlink(path);
	rmdir(dir);
}

static struct kv_store *open_kind(bool lmdb)
{
	struct kv_store *s = NULL;

	if (lmdb)
		cr_assert_eq(kv_store_open_lmdb(dir, 64u << 20, &s), 0);
	else
		cr_assert_eq(kv_store_open_memory(0, &s), 0);
	return s;
}

static void put(struct kv_store *s, const char *k, const char *v, bool want_replaced)
{
	bool replaced = !want_replaced;

	cr_assert_eq(kv_store_put(s, k, strlen(k), v, strlen(v), &replaced), 0, "put %s", k);
	cr_assert_eq(replaced, want_replaced, "put %s: replaced", k);
}

struct walk {
	char keys[16][16];
	int n, stop_at;
};

static bool visit(const struct kv_entry *e, void *arg)
{
	struct walk *w = arg;

	if (w->n == w->stop_at)
		return false;
	cr_assert_lt(e->klen, sizeof(w->keys[0]));
	memcpy(w->keys[w->n], e->key, e->klen);
	w->keys[w->n][e->klen] = '\0';
	w->n++;
	return true;
}

static void scan(struct kv_store *s, const char *from, bool after, int stop_at, const char *want)
{
	struct walk w;
	char got[256] = "";

	memset(&w, 0, sizeof(w));
	w.stop_at = stop_at;
	cr_assert_eq(kv_store_begin_read(s), 0);
	cr_assert_eq(kv_store_scan(s, from, strlen(from), after, visit, &w), 0);
	kv_store_end_read(s);
	for (int i = 0; i < w.n; i++) {
		strcat(got, i ? " " : "");
		strcat(got, w.keys[i]);
	}
	cr_assert_str_eq(got, want, "scan from '%s' (after %d)", from, after);
}

static void same_semantics(bool lmdb)
{
	struct kv_store *s = open_kind(lmdb);
	struct kv_entry e;
	bool deleted;

	cr_assert_str_eq(kv_store_kind(s), lmdb ? "lmdb" : "memory");
	/* bytewise order: "a" < "a\x01"... < "ab" < "b" < "\xff" */
	put(s, "b", "2", false);
	put(s, "ab", "x", false);
	put(s, "a", "1", false);
	put(s, "abc", "3", false);
	put(s, "\xff", "high", false);
	put(s, "ab", "12", true);
	put(s, "c", "", false);
	cr_assert_eq(kv_store_count(s), 6);

	cr_assert_eq(kv_store_begin_read(s), 0);
	cr_assert_eq(kv_store_begin_read(s), RDMX_E_BAD_STATE, "views do not nest");
	cr_assert_eq(kv_store_get(s, "ab", 2, &e), 0);
	cr_assert_eq(e.vlen, 2);
	cr_assert_eq(memcmp(e.val, "12", 2), 0);
	cr_assert_eq(kv_store_get(s, "c", 1, &e), 0);
	cr_assert_eq(e.vlen, 0, "an empty value");
	cr_assert_eq(kv_store_get(s, "zz", 2, &e), RDMX_E_NOT_FOUND);
	cr_assert_eq(kv_store_put(s, "q", 1, "v", 1, NULL), RDMX_E_INVAL, "no write in a view");
	kv_store_end_read(s);

	scan(s, "", false, -1, "a ab abc b c \xff");
	scan(s, "ab", false, -1, "ab abc b c \xff");
	scan(s, "ab", true, -1, "abc b c \xff");
	scan(s, "aa", false, -1, "ab abc b c \xff");
	scan(s, "abc", true, 2, "b c");
	scan(s, "\xff", true, -1, "");

	cr_assert_eq(kv_store_del(s, "ab", 2, &deleted), 0);
	cr_assert(deleted);
	cr_assert_eq(kv_store_del(s, "ab", 2, &deleted), 0);
	cr_assert_not(deleted);
	scan(s, "a", false, -1, "a abc b c \xff");
	cr_assert_eq(kv_store_count(s), 5);
	cr_assert_gt(kv_store_bytes(s), 0);
	kv_store_destroy(&s);
	cr_assert_null(s);
}

TestSuite(kv_store, .init = make_dir, .fini = remove_dir);

Test(kv_store, memory_semantics)
{
	same_semantics(false);
}

Test(kv_store, lmdb_semantics)
{
	same_semantics(true);
}

Test(kv_store, lmdb_keeps_data_across_opens)
{
	struct kv_store *s = open_kind(true);
	size_t big = 3u << 20;
	uint8_t *v = malloc(big);
	struct kv_entry e;
	bool deleted;

	cr_assert_not_null(v);
	for (size_t i = 0; i < big; i++)
		v[i] = (uint8_t)(i * 2654435761u >> 13);
	cr_assert_eq(kv_store_put(s, "big", 3, v, big, NULL), 0);
	put(s, "small", "s", false);
	put(s, "gone", "g", false);
	cr_assert_eq(kv_store_del(s, "gone", 4, &deleted), 0);
	cr_assert(deleted);
	kv_store_destroy(&s);

	s = open_kind(true);
	cr_assert_eq(kv_store_count(s), 2);
	cr_assert_eq(kv_store_begin_read(s), 0);
	cr_assert_eq(kv_store_get(s, "big", 3, &e), 0);
	cr_assert_eq(e.vlen, big);
	cr_assert_eq(memcmp(e.val, v, big), 0);
	cr_assert_eq(kv_store_get(s, "gone", 4, &e), RDMX_E_NOT_FOUND);
	kv_store_end_read(s);
	kv_store_destroy(&s);
	free(v);
}

Test(kv_store, full_is_an_error_not_a_crash)
{
	struct kv_store *s = NULL;
	size_t big = 2u << 20;
	uint8_t *v = calloc(1, big);
	struct kv_entry e;

	cr_assert_not_null(v);
	cr_assert_eq(kv_store_open_memory(100, &s), 0);
	cr_assert_eq(kv_store_put(s, "k", 1, v, 100, NULL), RDMX_E_FULL);
	kv_store_destroy(&s);

	cr_assert_eq(kv_store_open_lmdb(dir, 1u << 20, &s), 0);
	cr_assert_eq(kv_store_put(s, "k", 1, v, big, NULL), RDMX_E_FULL);
	put(s, "after", "ok", false);
	cr_assert_eq(kv_store_begin_read(s), 0);
	cr_assert_eq(kv_store_get(s, "k", 1, &e), RDMX_E_NOT_FOUND, "a failed put left nothing");
	kv_store_end_read(s);
	kv_store_destroy(&s);
	free(v);
}

Test(kv_store, lmdb_long_keys)
{
	struct kv_store *s = open_kind(true);
	enum { LONG = 4096 };
	char key[LONG + 1]; /* NUL-terminated: scan() takes a C string */
	struct kv_entry e;
	bool deleted = true;

	memset(key, 'k', LONG);
	key[LONG] = '\0';
	cr_assert_eq(kv_store_put(s, key, LONG, "v", 1, NULL), RDMX_E_TOO_BIG);
	put(s, "kz", "1", false);
	cr_assert_eq(kv_store_del(s, key, LONG, &deleted), 0);
	cr_assert_not(deleted);
	cr_assert_eq(kv_store_begin_read(s), 0);
	cr_assert_eq(kv_store_get(s, key, LONG, &e), RDMX_E_NOT_FOUND);
	kv_store_end_read(s);
	/* a scan from a key longer than LMDB takes still starts at the right place */
	scan(s, key, false, -1, "kz");
	put(s, "kk", "0", false);
	scan(s, key, true, -1, "kz");
	kv_store_destroy(&s);
}

Test(kv_store, lmdb_bad_folder)
{
	struct kv_store *s = NULL;

	cr_assert_eq(kv_store_open_lmdb("/nonexistent/rdmx-kv", 1u << 20, &s), RDMX_E_PROVIDER);
	cr_assert_null(s);
	cr_assert_eq(kv_store_open_lmdb(dir, 0, &s), RDMX_E_INVAL);
}

/* ---- shared by worker threads (rdmx-kv serve --workers) ---- */

#define SHARE_THREADS 4
#define SHARE_KEYS 200

struct sharer {
	struct kv_store *s;
	int id;
	int errors;
};

/* Each thread puts its own keys, reads each back inside a read view while
 * the others write, deletes every other one; a read view held by one
 * thread never sees another's change half done (the lock spans it). */
static void *share_main(void *arg)
{
	struct sharer *t = arg;
	char k[32], v[32];

	for (int i = 0; i < SHARE_KEYS; i++) {
		struct kv_entry e;
		int n = snprintf(k, sizeof(k), "t%d-%04d", t->id, i);
		int m = snprintf(v, sizeof(v), "v%d-%d", t->id, i);

		if (kv_store_put(t->s, k, (size_t)n, v, (size_t)m, NULL))
			t->errors++;
		if (kv_store_begin_read(t->s)) {
			t->errors++;
			continue;
		}
		/* a second view on the same thread is refused, not a deadlock */
		if (kv_store_begin_read(t->s) != RDMX_E_BAD_STATE)
			t->errors++;
		if (kv_store_get(t->s, k, (size_t)n, &e) || e.vlen != (size_t)m ||
		    memcmp(e.val, v, (size_t)m))
			t->errors++;
		/* and a change inside one's own view is refused */
		if (kv_store_put(t->s, k, (size_t)n, v, (size_t)m, NULL) != RDMX_E_INVAL)
			t->errors++;
		kv_store_end_read(t->s);
		if (i % 2 && kv_store_del(t->s, k, (size_t)n, NULL))
			t->errors++;
	}
	return NULL;
}

static void shared_by_threads(bool lmdb)
{
	struct kv_store *s = open_kind(lmdb);
	struct sharer t[SHARE_THREADS];
	pthread_t th[SHARE_THREADS];

	for (int i = 0; i < SHARE_THREADS; i++) {
		t[i].s = s;
		t[i].id = i;
		t[i].errors = 0;
		cr_assert_eq(pthread_create(&th[i], NULL, share_main, &t[i]), 0);
	}
	for (int i = 0; i < SHARE_THREADS; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(t[i].errors, 0, "thread %d: %d errors", i, t[i].errors);
	}
	cr_assert_eq(kv_store_count(s), SHARE_THREADS * SHARE_KEYS / 2);
	kv_store_destroy(&s);
}

Test(kv_store, memory_store_shared_by_threads)
{
	shared_by_threads(false);
}

Test(kv_store, lmdb_store_shared_by_threads)
{
	shared_by_threads(true);
}

/* kv_store_put_owned: the memory store keeps the caller's block (a get
 * points into it), LMDB copies once and frees it; on an error the block is
 * freed too (the sanitizer stage would report a leak). */
static void owned_kind(bool lmdb)
{
	struct kv_store *s = open_kind(lmdb);
	struct kv_entry e;
	bool replaced = true;
	char *blk = malloc(64);

	cr_assert_not_null(blk);
	memcpy(blk, "hdr:value", 9);
	cr_assert_eq(kv_store_put_owned(s, "k", 1, blk + 4, 5, blk, &replaced), 0);
	cr_assert(!replaced);
	cr_assert_eq(kv_store_begin_read(s), 0);
	cr_assert_eq(kv_store_get(s, "k", 1, &e), 0);
	cr_assert_eq(e.vlen, 5);
	cr_assert(!memcmp(e.val, "value", 5));
	if (!lmdb)
		cr_assert_eq((const char *)e.val, blk + 4, "the memory store copied the value");
	kv_store_end_read(s);
	cr_assert_eq(kv_store_bytes(s) >= 6, true);
	/* replaced by a copied put: the block is freed with the old value */
	put(s, "k", "other", true);
	blk = malloc(8);
	cr_assert_not_null(blk);
	cr_assert_eq(kv_store_put_owned(s, "", 0, blk, 1, blk, NULL), RDMX_E_INVAL);
	kv_store_destroy(&s);
}

Test(kv_store, memory_put_owned_keeps_the_block)
{
	owned_kind(false);
}

Test(kv_store, lmdb_put_owned_copies_once)
{
	owned_kind(true);
}

Test(kv_store, memory_put_owned_over_budget_frees_it)
{
	struct kv_store *s = NULL;
	char *blk = malloc(4096);

	cr_assert_not_null(blk);
	cr_assert_eq(kv_store_open_memory(100, &s), 0);
	cr_assert_eq(kv_store_put_owned(s, "k", 1, blk, 4096, blk, NULL), RDMX_E_FULL);
	cr_assert_eq(kv_store_count(s), 0);
	kv_store_destroy(&s);
}
