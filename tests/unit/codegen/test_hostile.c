/* Hostile msgpack through generated decoders: huge declared lengths and
 * counts, deep nesting, wrong types, truncation, trailing bytes, invalid
 * UTF-8. Each is rejected, and the arena never holds more than a small bound
 * of the input size. */
#include <stdint.h>

#include "all.rdmx.h"
#include "codegen_test.h"

DEFINE_ENCODE_NEW(rt_Repeated)
DEFINE_ENCODE_NEW(rt_Maps)
DEFINE_ENCODE_NEW(rt_Tree)

static struct rdmx_arena arena;

static void setup(void)
{
	rdmx_arena_init(&arena, NULL, 0, 0);
}

static void teardown(void)
{
	rdmx_arena_fini(&arena);
}

TestSuite(hostile, .init = setup, .fini = teardown);

/* Decodes `in` as each message type: must fail with `want` (0: any error)
 * and allocate at most `bound` arena bytes. */
#define REJECT(T, in, len, want, bound)                                                            \
	do {                                                                                       \
		T out_;                                                                            \
		int rc_;                                                                           \
		rdmx_arena_reset(&arena);                                                          \
		memset(&out_, 0x5a, sizeof(out_));                                                 \
		rc_ = T##_decode(&out_, (in), (len), &arena, NULL);                                \
		if (want)                                                                          \
			cr_assert_eq(rc_, (want), #T ": %s, wanted %s", rdmx_err_name(rc_),        \
			             rdmx_err_name(want));                                         \
		else                                                                               \
			cr_assert_lt(rc_, 0, #T " accepted bad input");                            \
		cr_assert_leq(rdmx_arena_used(&arena), (bound), #T ": %zu arena bytes",            \
		              rdmx_arena_used(&arena));                                            \
		cr_assert_eq(((unsigned char *)&out_)[0], 0x5a, "output written on error");        \
	} while (0)

#define REJECT_ALL(in, len, want, bound)                                                           \
	do {                                                                                       \
		REJECT(rt_Scalars, in, len, want, bound);                                          \
		REJECT(rt_Repeated, in, len, want, bound);                                         \
		REJECT(rt_Maps, in, len, want, bound);                                             \
		REJECT(rt_Oneofs, in, len, want, bound);                                           \
		REJECT(rt_Tree, in, len, want, bound);                                             \
		REJECT(rt_Optionals, in, len, want, bound);                                        \
	} while (0)

Test(hostile, huge_counts_at_the_top)
{
	const uint8_t arr32[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
	const uint8_t map32[] = {0xdf, 0xff, 0xff, 0xff, 0xff};
	const uint8_t map16[] = {0xde, 0xff, 0xff, 0x01, 0x01};
	const uint8_t str32[] = {0xdb, 0xff, 0xff, 0xff, 0xff};
	REJECT_ALL(arr32, sizeof(arr32), RDMX_E_PROTOCOL, 0);
	REJECT_ALL(map32, sizeof(map32), RDMX_E_PROTOCOL, 0);
	REJECT_ALL(map16, sizeof(map16), RDMX_E_PROTOCOL, 0);
	REJECT_ALL(str32, sizeof(str32), RDMX_E_PROTOCOL, 0);
}

Test(hostile, huge_counts_and_lengths_in_fields)
{
	/* {1: array32 of 4G int32} ... into the repeated fields of every type */
	uint8_t buf[16];
	unsigned key;
	for (key = 1; key <= 17; key++) {
		const uint8_t heads[][5] = {
		    {0xdd, 0xff, 0xff, 0xff, 0xff}, {0xdc, 0xff, 0xff, 0, 0},
		    {0xdf, 0xff, 0xff, 0xff, 0xff}, {0xdb, 0xff, 0xff, 0xff, 0xff},
		    {0xc6, 0xff, 0xff, 0xff, 0xff}, {0xc9, 0xff, 0xff, 0xff, 0xff}};
		size_t h;
		for (h = 0; h < sizeof(heads) / sizeof(heads[0]); h++) {
			buf[0] = 0x81;
			buf[1] = (uint8_t)key;
			memcpy(buf + 2, heads[h], 5);
			buf[7] = 0x01;
			REJECT_ALL(buf, 8, RDMX_E_PROTOCOL, 0);
		}
	}
}

Test(hostile, counts_need_bytes_per_element)
{
	/* {2: [16 x ?]} with only 15 bytes of elements: no allocation */
	uint8_t buf[2 + 3 + 15];
	buf[0] = 0x81;
	buf[1] = 0x11; /* msgs */
	buf[2] = 0xdc;
	buf[3] = 0x00;
	buf[4] = 0x10;
	memset(buf + 5, 0x80, 15);
	REJECT(rt_Repeated, buf, sizeof(buf), RDMX_E_PROTOCOL, 0);
	/* map entries need two bytes each */
	buf[1] = 0x02;
	buf[2] = 0xde;
	buf[4] = 0x08;
	memset(buf + 5, 0x01, 15);
	REJECT(rt_Maps, buf, sizeof(buf), RDMX_E_PROTOCOL, 0);
}

Test(hostile, deep_nesting)
{
	/* {3: {3: {3: ... }}} a thousand levels of Tree.left */
	size_t levels = 1000, i;
	uint8_t *buf = malloc(levels * 2 + 1);
	for (i = 0; i < levels; i++) {
		buf[2 * i] = 0x81;
		buf[2 * i + 1] = 0x03;
	}
	buf[2 * levels] = 0x80;
	REJECT(rt_Tree, buf, levels * 2 + 1, RDMX_E_PROTOCOL, 33 * sizeof(rt_Tree));
	/* the same through repeated children: {2: [{2: [{...}]}]} */
	for (i = 0; i < levels; i++) {
		buf[2 * i] = i % 2 ? 0x91 : 0x81;
		buf[2 * i + 1] = i % 2 ? 0x81 : 0x02;
	}
	buf[2 * levels - 1] = 0x80;
	REJECT(rt_Tree, buf, levels * 2, RDMX_E_PROTOCOL, 40 * sizeof(rt_Tree));
	/* and inside an unknown field: {99: [[[[...]]]]} */
	buf[0] = 0x81;
	buf[1] = 99;
	memset(buf + 2, 0x91, levels * 2 - 3);
	buf[levels * 2 - 1] = 0x90;
	REJECT_ALL(buf, levels * 2, RDMX_E_PROTOCOL, 0);
	free(buf);
}

Test(hostile, wrong_types)
{
	static const struct {
		uint8_t b[12];
		size_t n;
	} cases[] = {
	    {{0x81, 0x01, 0xa1, 'x'}, 4},                 /* i32 <- str */
	    {{0x81, 0x01, 0xca, 0, 0, 0, 0}, 7},          /* i32 <- float */
	    {{0x81, 0x01, 0xce, 0x80, 0, 0, 0}, 7},       /* i32 <- 2^31 */
	    {{0x81, 0x03, 0xff}, 3},                      /* u32 <- -1 */
	    {{0x81, 0x03, 0xcf, 0, 0, 0, 1, 0, 0, 0}, 3}, /* truncated uint64 */
	    {{0x81, 0x0b, 0x01}, 3},                      /* bool <- int */
	    {{0x81, 0x0c, 0x01}, 3},                      /* float <- int */
	    {{0x81, 0x0e, 0xc4, 0x01, 'x'}, 5},           /* string <- bin */
	    {{0x81, 0x0f, 0xa1, 'x'}, 4},                 /* bytes <- str */
	    {{0x81, 0x10, 0xc3}, 3},                      /* enum <- bool */
	    {{0x81, 0xa1, 'k', 0x01}, 4},                 /* key is a string */
	    {{0x81, 0xc0, 0x01}, 3},                      /* key is nil */
	    {{0x81, 0x01, 0xc1}, 3},                      /* 0xc1 never used */
	    {{0x91, 0x01}, 2},                            /* message <- array */
	    {{0xc0}, 1},                                  /* message <- nil */
	    {{0x81, 0x0e, 0xa2, 0xc3, 0x28}, 5},          /* invalid UTF-8 */
	    {{0x81, 0x0e, 0xa3, 0xed, 0xa0, 0x80}, 6},    /* a surrogate */
	};
	size_t i;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		REJECT(rt_Scalars, cases[i].b, cases[i].n, RDMX_E_PROTOCOL, 0);
	{
		const uint8_t msg_int[] = {0x81, 0x0b, 0x05};             /* Optionals.msg <- int */
		const uint8_t arr_int[] = {0x81, 0x01, 0x05};             /* Repeated.i32 <- int */
		const uint8_t arr_str[] = {0x81, 0x01, 0x91, 0xa0};       /* [""] as int32s */
		const uint8_t map_arr[] = {0x81, 0x01, 0x90};             /* Maps.ss <- array */
		const uint8_t key_int[] = {0x81, 0x01, 0x81, 0x01, 0xa0}; /* string key <- int */
		REJECT(rt_Optionals, msg_int, sizeof(msg_int), RDMX_E_PROTOCOL, 0);
		REJECT(rt_Repeated, arr_int, sizeof(arr_int), RDMX_E_PROTOCOL, 0);
		REJECT(rt_Repeated, arr_str, sizeof(arr_str), RDMX_E_PROTOCOL, 8);
		REJECT(rt_Maps, map_arr, sizeof(map_arr), RDMX_E_PROTOCOL, 0);
		REJECT(rt_Maps, key_int, sizeof(key_int), RDMX_E_PROTOCOL, 64);
	}
}

Test(hostile, empty_input_trailing_bytes_and_every_truncation)
{
	rt_Repeated r;
	rt_Tree t, kids[3];
	int32_t ints[40];
	struct rdmx_str strs[3];
	size_t n, i;
	uint8_t *b, *b2;
	REJECT_ALL((const uint8_t *)"", 0, RDMX_E_PROTOCOL, 0);
	rt_Repeated_init(&r);
	for (i = 0; i < 40; i++)
		ints[i] = (int32_t)(i * 1000003);
	r.i32 = ints;
	r.n_i32 = 40;
	strs[0] = rdmx_str_c("one");
	strs[1] = rdmx_str_c("");
	strs[2] = rdmx_str_c("three \xe2\x9c\x93");
	r.str = strs;
	r.n_str = 3;
	b = ENCODE_NEW(rt_Repeated, &r, &n);
	for (i = 0; i < n; i++)
		REJECT(rt_Repeated, b, i, RDMX_E_PROTOCOL, 64 * (i + 1));
	b2 = malloc(n + 1);
	memcpy(b2, b, n);
	b2[n] = 0x00;
	REJECT(rt_Repeated, b2, n + 1, RDMX_E_PROTOCOL, 64 * (n + 1));
	free(b);
	free(b2);

	rt_Tree_init(&t);
	for (i = 0; i < 3; i++) {
		rt_Tree_init(&kids[i]);
		kids[i].name = rdmx_str_c("kid");
	}
	kids[0].left = &kids[1];
	t.children = kids;
	t.n_children = 3;
	t.name = rdmx_str_c("root");
	b = ENCODE_NEW(rt_Tree, &t, &n);
	for (i = 0; i < n; i++)
		REJECT(rt_Tree, b, i, RDMX_E_PROTOCOL, 4 * sizeof(rt_Tree) + 8 * i);
	free(b);
}

Test(hostile, allocation_budget)
{
	/* 1000 empty trees: 1003 bytes of input, 1000 * sizeof(rt_Tree) of arena */
	size_t n = 1000, i;
	uint8_t *buf = malloc(n + 5);
	rt_Tree out;
	struct rdmx_decode_opts small = {0, false, 4096};
	buf[0] = 0x81;
	buf[1] = 0x02;
	buf[2] = 0xdc;
	buf[3] = (uint8_t)(n >> 8);
	buf[4] = (uint8_t)n;
	for (i = 0; i < n; i++)
		buf[5 + i] = 0x80;
	cr_assert_eq(rt_Tree_decode(&out, buf, n + 5, &arena, &small), RDMX_E_TOO_BIG);
	cr_assert_leq(rdmx_arena_used(&arena), 4096);
	rdmx_arena_reset(&arena);
	cr_assert_eq(rt_Tree_decode(&out, buf, n + 5, &arena, NULL), 0, "the default budget fits");
	cr_assert_eq(out.n_children, n);
	cr_assert_leq(rdmx_arena_used(&arena), sizeof(rt_Tree) * (n + 5) + RDMX_DECODE_ALLOC_FLOOR);
	/* without an arena, memory-needing input is refused */
	cr_assert_eq(rt_Tree_decode(&out, buf, n + 5, NULL, NULL), RDMX_E_INVAL);
	/* a limited arena answers TOO_BIG */
	{
		struct rdmx_arena tiny;
		rdmx_arena_init(&tiny, NULL, 0, 256);
		cr_assert_eq(rt_Tree_decode(&out, buf, n + 5, &tiny, NULL), RDMX_E_TOO_BIG);
		rdmx_arena_fini(&tiny);
	}
	free(buf);
}

/* Random corruption of valid encodings: nothing crashes (ASan/UBSan in the
 * sanitizer run), nothing allocates beyond the default budget. */
Test(hostile, random_mutations)
{
	rt_Maps m;
	rt_Maps_SsEntry ss[4];
	rt_Maps_UmEntry um[2];
	rt_Scalars v;
	size_t n, i, k;
	uint8_t *b, *c;
	uint32_t seed = 12345;
	rt_Maps_init(&m);
	rt_Scalars_init(&v);
	v.str = rdmx_str_c("value");
	v.db = 1.25;
	v.i64 = -99999;
	for (i = 0; i < 4; i++) {
		ss[i].key = rdmx_str_c(i % 2 ? "k" : "key");
		ss[i].value = rdmx_str_c("v\xc3\xa9");
	}
	um[0].key = 7;
	um[0].value = &v;
	um[1].key = 1ull << 60;
	um[1].value = &v;
	m.ss = ss;
	m.n_ss = 4;
	m.um = um;
	m.n_um = 2;
	b = ENCODE_NEW(rt_Maps, &m, &n);
	c = malloc(n);
	for (k = 0; k < 20000; k++) {
		rt_Maps out;
		int flips = 1 + (int)(k % 3);
		memcpy(c, b, n);
		while (flips--) {
			seed = seed * 1103515245u + 12345u;
			c[(seed >> 8) % n] = (uint8_t)(seed >> 20);
		}
		rt_Tree tree;
		rdmx_arena_reset(&arena);
		(void)rt_Maps_decode(&out, c, n, &arena, NULL);
		cr_assert_leq(rdmx_arena_used(&arena),
		              sizeof(rt_Scalars) * n + RDMX_DECODE_ALLOC_FLOOR);
		rdmx_arena_reset(&arena);
		(void)rt_Tree_decode(&tree, c, n, &arena, NULL);
		cr_assert_leq(rdmx_arena_used(&arena), RDMX_DECODE_ALLOC_FACTOR * n +
		                                           sizeof(rt_Tree) * n +
		                                           RDMX_DECODE_ALLOC_FLOOR);
	}
	free(b);
	free(c);
}
