/* tcp provider: the per-device key table and the access check of every
 * one-sided operation (bounds without wrap-around, region flags, context
 * permissions). No network. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "providers/tcp/tcp.h"

TestSuite(tcp_keytab);

Test(tcp_keytab, insert_find_remove)
{
	struct rdmx__tcp_keytab kt;
	uint8_t mem[64];
	uint64_t s1, s2;

	cr_assert_eq(rdmx__tcp_keytab_init(&kt), 0);
	cr_assert_eq(rdmx__tcp_keytab_insert(&kt, 0, mem, 64, 0, &s1), RDMX_E_INVAL, "key 0");
	cr_assert_eq(rdmx__tcp_keytab_insert(&kt, 7, mem, 64, RDMX_ACCESS_REMOTE_READ, &s1), 0);
	cr_assert_eq(rdmx__tcp_keytab_insert(&kt, 7, mem, 64, 0, &s2), RDMX_E_EXISTS);
	rdmx__tcp_keytab_rdlock(&kt);
	const struct rdmx__tcp_region *r = rdmx__tcp_keytab_find(&kt, 7);
	cr_assert_not_null(r);
	cr_assert_eq(r->addr, mem);
	cr_assert_eq(r->len, 64);
	cr_assert_eq(r->serial, s1);
	cr_assert_null(rdmx__tcp_keytab_find(&kt, 8));
	cr_assert_null(rdmx__tcp_keytab_find(&kt, 0));
	rdmx__tcp_keytab_unlock(&kt);
	cr_assert_eq(rdmx__tcp_keytab_remove(&kt, 7), 0);
	cr_assert_eq(rdmx__tcp_keytab_remove(&kt, 7), RDMX_E_NOT_FOUND);
	rdmx__tcp_keytab_rdlock(&kt);
	cr_assert_null(rdmx__tcp_keytab_find(&kt, 7), "key alive after removal");
	rdmx__tcp_keytab_unlock(&kt);
	/* the same key again is a new registration */
	cr_assert_eq(rdmx__tcp_keytab_insert(&kt, 7, mem, 64, 0, &s2), 0);
	cr_assert_neq(s1, s2);
	cr_assert_eq(rdmx__tcp_keytab_remove(&kt, 7), 0);
	rdmx__tcp_keytab_fini(&kt);
}

/* Random inserts and removals against a plain array: growth and the
 * backward-shift deletion keep every live key findable, no dead one. */
Test(tcp_keytab, churn_matches_a_reference)
{
	enum { N = 3000 };
	struct rdmx__tcp_keytab kt;
	static uint32_t keys[N];
	static bool live[N];
	uint32_t x = 99;
	uint64_t s;

	cr_assert_eq(rdmx__tcp_keytab_init(&kt), 0);
	for (int i = 0; i < N; i++) {
		/* clustered keys: many share home slots */
		x = x * 1664525u + 1013904223u;
		keys[i] = (x & 0xffu) ? (x & 0xfff0ffffu) | 1u : (uint32_t)i + 1u;
	}
	for (int round = 0; round < 20000; round++) {
		x = x * 1664525u + 1013904223u;
		int i = (int)((x >> 8) % N);
		if (live[i]) {
			cr_assert_eq(rdmx__tcp_keytab_remove(&kt, keys[i]), 0);
			live[i] = false;
		} else {
			int rc = rdmx__tcp_keytab_insert(&kt, keys[i], &keys[i], 4, 0, &s);
			if (rc == RDMX_E_EXISTS)
				continue; /* a duplicate key value in the sample */
			cr_assert_eq(rc, 0);
			live[i] = true;
		}
		if (round % 997 == 0) {
			rdmx__tcp_keytab_rdlock(&kt);
			for (int k = 0; k < N; k++) {
				const struct rdmx__tcp_region *r =
				    rdmx__tcp_keytab_find(&kt, keys[k]);
				if (live[k])
					cr_assert(r && r->key == keys[k], "live key %u lost",
					          keys[k]);
			}
			rdmx__tcp_keytab_unlock(&kt);
		}
	}
	for (int k = 0; k < N; k++)
		if (live[k])
			cr_assert_eq(rdmx__tcp_keytab_remove(&kt, keys[k]), 0);
	cr_assert_eq(kt.count, 0);
	rdmx__tcp_keytab_fini(&kt);
}

Test(tcp_keytab, bounds_never_wrap)
{
	struct rdmx__tcp_region r = {
	    .addr = (uint8_t *)0x1000, .len = 4000, .key = 1, .access = RDMX_ACCESS_ALL};
	const unsigned W = RDMX_ACCESS_REMOTE_WRITE, all = RDMX_ACCESS_ALL;

	cr_assert(rdmx__tcp_region_allows(&r, 0, 4000, W, all));
	cr_assert(rdmx__tcp_region_allows(&r, 3999, 1, W, all));
	cr_assert(rdmx__tcp_region_allows(&r, 4000, 0, W, all), "empty range at the end");
	cr_assert_not(rdmx__tcp_region_allows(&r, 3990, 20, W, all));
	cr_assert_not(rdmx__tcp_region_allows(&r, 4000, 1, W, all));
	cr_assert_not(rdmx__tcp_region_allows(&r, 4001, 0, W, all));
	cr_assert_not(rdmx__tcp_region_allows(&r, UINT64_MAX - 7, 16, W, all), "offset+len wraps");
	cr_assert_not(rdmx__tcp_region_allows(&r, 8, UINT64_MAX, W, all), "len wraps");
	cr_assert_not(rdmx__tcp_region_allows(&r, 1ull << 63, 16, W, all));
	cr_assert_not(rdmx__tcp_region_allows(NULL, 0, 1, W, all), "unknown key");
}

Test(tcp_keytab, region_flags_and_context_permissions)
{
	struct rdmx__tcp_region r = {.addr = (uint8_t *)0x1000, .len = 64, .key = 1};
	const unsigned R = RDMX_ACCESS_REMOTE_READ, W = RDMX_ACCESS_REMOTE_WRITE,
	               A = RDMX_ACCESS_REMOTE_ATOMIC;

	r.access = R;
	cr_assert(rdmx__tcp_region_allows(&r, 0, 8, R, R | W | A));
	cr_assert_not(rdmx__tcp_region_allows(&r, 0, 8, W, R | W | A));
	cr_assert_not(rdmx__tcp_region_allows(&r, 0, 8, A, R | W | A));
	r.access = R | W | A | RDMX_ACCESS_LOCAL_WRITE;
	cr_assert_not(rdmx__tcp_region_allows(&r, 0, 8, W, R | A), "context forbids writes");
	cr_assert_not(rdmx__tcp_region_allows(&r, 0, 8, A, 0), "context forbids everything");
	cr_assert(rdmx__tcp_region_allows(&r, 0, 8, A, A));
	r.access = RDMX_ACCESS_LOCAL_WRITE;
	cr_assert_not(rdmx__tcp_region_allows(&r, 0, 8, R, R | W | A), "local-only region");
}

Test(tcp_keytab, constant_time_compare)
{
	uint8_t a[16] = {0}, b[16] = {0};

	cr_assert(rdmx__tcp_ct_equal(a, b, 16));
	b[15] = 1;
	cr_assert_not(rdmx__tcp_ct_equal(a, b, 16));
	b[15] = 0;
	b[0] = 0x80;
	cr_assert_not(rdmx__tcp_ct_equal(a, b, 16));
}
