/* The codec runtime (include/rdmx/codec.h): writes byte-identical to
 * msgpack-c's packer, reads of every form, skipping, UTF-8, the arena. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <msgpack.h>

#include <rdmx/codec.h>

struct pk {
	msgpack_sbuffer sb;
	msgpack_packer pk;
};

static void pk_init(struct pk *p)
{
	msgpack_sbuffer_init(&p->sb);
	msgpack_packer_init(&p->pk, &p->sb, msgpack_sbuffer_write);
}

static void pk_fini(struct pk *p)
{
	msgpack_sbuffer_destroy(&p->sb);
}

/* runs `write` on an exact-size rdmx_enc and compares with msgpack-c's bytes */
#define SAME_AS_MSGPACK(want_size, write, pack)                                                    \
	do {                                                                                       \
		struct pk ref_;                                                                    \
		struct rdmx_enc e_;                                                                \
		size_t n_ = (want_size);                                                           \
		uint8_t *b_ = malloc(n_ + 1);                                                      \
		pk_init(&ref_);                                                                    \
		pack;                                                                              \
		rdmx__enc_init(&e_, b_, n_);                                                       \
		{                                                                                  \
			struct rdmx_enc *e = &e_;                                                  \
			write;                                                                     \
		}                                                                                  \
		cr_assert_eq(rdmx__enc_finish(&e_), 0, "size %zu for %s", n_, #write);             \
		cr_assert_eq(ref_.sb.size, n_, "msgpack-c wrote %zu, we %zu (%s)", ref_.sb.size,   \
		             n_, #write);                                                          \
		cr_assert_eq(memcmp(ref_.sb.data, b_, n_), 0, "bytes differ for %s", #write);      \
		pk_fini(&ref_);                                                                    \
		free(b_);                                                                          \
	} while (0)

static const int64_t ints[] = {
    0,
    1,
    31,
    32,
    127,
    128,
    255,
    256,
    65535,
    65536,
    4294967295ll,
    4294967296ll,
    INT64_MAX,
    -1,
    -31,
    -32,
    -33,
    -127,
    -128,
    -129,
    -32767,
    -32768,
    -32769,
    INT32_MIN,
    (int64_t)INT32_MIN - 1,
    INT64_MIN,
};

Test(codec, ints_match_msgpack_c)
{
	size_t i;
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		int64_t v = ints[i];
		SAME_AS_MSGPACK(rdmx__size_int(v), rdmx__enc_int(e, v),
		                msgpack_pack_int64(&ref_.pk, v));
		if (v >= 0)
			SAME_AS_MSGPACK(rdmx__size_uint((uint64_t)v),
			                rdmx__enc_uint(e, (uint64_t)v),
			                msgpack_pack_uint64(&ref_.pk, (uint64_t)v));
	}
	SAME_AS_MSGPACK(rdmx__size_uint(UINT64_MAX), rdmx__enc_uint(e, UINT64_MAX),
	                msgpack_pack_uint64(&ref_.pk, UINT64_MAX));
}

Test(codec, floats_bools_match_msgpack_c)
{
	const double ds[] = {0.0, -0.0, 1.5, -1e300, INFINITY, -INFINITY, NAN, 5e-324};
	size_t i;
	for (i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
		double d = ds[i];
		float f = (float)d;
		SAME_AS_MSGPACK(9, rdmx__enc_f64(e, d), msgpack_pack_double(&ref_.pk, d));
		SAME_AS_MSGPACK(5, rdmx__enc_f32(e, f), msgpack_pack_float(&ref_.pk, f));
	}
	SAME_AS_MSGPACK(1, rdmx__enc_bool(e, true), msgpack_pack_true(&ref_.pk));
	SAME_AS_MSGPACK(1, rdmx__enc_bool(e, false), msgpack_pack_false(&ref_.pk));
}

Test(codec, str_bin_headers_match_msgpack_c)
{
	const size_t lens[] = {0, 1, 31, 32, 255, 256, 65535, 65536, 100000};
	char *data = malloc(100000);
	size_t i;
	memset(data, 'x', 100000);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t n = lens[i];
		SAME_AS_MSGPACK(rdmx__size_str(n), rdmx__enc_str(e, data, n), {
			msgpack_pack_str(&ref_.pk, n);
			msgpack_pack_str_body(&ref_.pk, data, n);
		});
		SAME_AS_MSGPACK(rdmx__size_bin(n), rdmx__enc_bin(e, (const uint8_t *)data, n), {
			msgpack_pack_bin(&ref_.pk, n);
			msgpack_pack_bin_body(&ref_.pk, data, n);
		});
	}
	free(data);
}

Test(codec, array_map_headers_match_msgpack_c)
{
	const size_t ns[] = {0, 1, 15, 16, 65535, 65536, 1u << 20};
	size_t i;
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		size_t n = ns[i];
		SAME_AS_MSGPACK(rdmx__size_hdr(n), rdmx__enc_array(e, n),
		                msgpack_pack_array(&ref_.pk, n));
		SAME_AS_MSGPACK(rdmx__size_hdr(n), rdmx__enc_map(e, n),
		                msgpack_pack_map(&ref_.pk, n));
	}
}

Test(codec, encoder_never_writes_past_the_buffer)
{
	uint8_t buf[8];
	struct rdmx_enc e;
	memset(buf, 0x55, sizeof(buf));
	rdmx__enc_init(&e, buf, 4);
	rdmx__enc_int(&e, 7);          /* 1 byte */
	rdmx__enc_str(&e, "hello", 5); /* 6 bytes: does not fit */
	rdmx__enc_bool(&e, true);      /* would fit, but the encoder stopped */
	cr_assert(e.overflow);
	cr_assert_eq(rdmx__enc_finish(&e), RDMX_E_INVAL);
	cr_assert_eq(buf[4], 0x55);
	cr_assert_eq(buf[1], 0x55);
	/* a short write is an error too */
	rdmx__enc_init(&e, buf, 4);
	rdmx__enc_int(&e, 7);
	cr_assert_eq(rdmx__enc_finish(&e), RDMX_E_INVAL);
}

static struct rdmx_dec dec(const void *p, size_t n)
{
	struct rdmx_dec d;
	cr_assert_eq(rdmx__dec_init(&d, p, n, NULL, NULL, 0), 0);
	return d;
}

Test(codec, ints_read_every_form_with_range_checks)
{
	size_t i;
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		int64_t v = ints[i], got = 0;
		uint8_t buf[16];
		struct rdmx_enc e;
		struct rdmx_dec d;
		int32_t i32;
		uint32_t u32;
		uint64_t u64;
		size_t n = rdmx__size_int(v);
		rdmx__enc_init(&e, buf, n);
		rdmx__enc_int(&e, v);
		d = dec(buf, n);
		cr_assert_eq(rdmx__dec_i64(&d, &got), 0);
		cr_assert_eq(got, v);
		cr_assert_eq(rdmx__dec_finish(&d), 0);
		d = dec(buf, n);
		cr_assert_eq(rdmx__dec_i32(&d, &i32),
		             v >= INT32_MIN && v <= INT32_MAX ? 0 : RDMX_E_PROTOCOL);
		d = dec(buf, n);
		cr_assert_eq(rdmx__dec_u32(&d, &u32),
		             v >= 0 && v <= UINT32_MAX ? 0 : RDMX_E_PROTOCOL);
		d = dec(buf, n);
		cr_assert_eq(rdmx__dec_u64(&d, &u64), v >= 0 ? 0 : RDMX_E_PROTOCOL);
		/* every truncation fails */
		while (n-- > 0) {
			d = dec(buf, n);
			cr_assert_eq(rdmx__dec_i64(&d, &got), RDMX_E_PROTOCOL);
		}
	}
	{
		/* uint64 above INT64_MAX: not an int64 */
		const uint8_t big[] = {0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
		struct rdmx_dec d = dec(big, sizeof(big));
		int64_t v;
		uint64_t u;
		cr_assert_eq(rdmx__dec_i64(&d, &v), RDMX_E_PROTOCOL);
		d = dec(big, sizeof(big));
		cr_assert_eq(rdmx__dec_u64(&d, &u), 0);
		cr_assert_eq(u, UINT64_MAX);
	}
	{
		/* signed forms holding non-negative values are fine for unsigned fields */
		const uint8_t pos[] = {0xd2, 0x00, 0x00, 0x01, 0x00};
		struct rdmx_dec d = dec(pos, sizeof(pos));
		uint32_t u;
		cr_assert_eq(rdmx__dec_u32(&d, &u), 0);
		cr_assert_eq(u, 256);
	}
}

Test(codec, wrong_types_are_protocol_errors)
{
	const uint8_t s[] = {0xa1, 'x'}, f[] = {0xca, 0, 0, 0, 0}, t[] = {0xc3}, n[] = {0xc0},
	              never[] = {0xc1};
	struct rdmx_dec d;
	int64_t v;
	bool b;
	double x;
	struct rdmx_str str;
	struct rdmx_bytes by;
	uint32_t cnt;
	d = dec(s, sizeof(s));
	cr_assert_eq(rdmx__dec_i64(&d, &v), RDMX_E_PROTOCOL);
	d = dec(f, sizeof(f));
	cr_assert_eq(rdmx__dec_i64(&d, &v), RDMX_E_PROTOCOL);
	d = dec(t, sizeof(t));
	cr_assert_eq(rdmx__dec_f64(&d, &x), RDMX_E_PROTOCOL);
	d = dec(s, sizeof(s));
	cr_assert_eq(rdmx__dec_bool(&d, &b), RDMX_E_PROTOCOL);
	d = dec(s, sizeof(s));
	cr_assert_eq(rdmx__dec_bin(&d, &by), RDMX_E_PROTOCOL);
	d = dec(t, sizeof(t));
	cr_assert_eq(rdmx__dec_str(&d, &str), RDMX_E_PROTOCOL);
	d = dec(n, sizeof(n));
	cr_assert_eq(rdmx__dec_map(&d, &cnt), RDMX_E_PROTOCOL);
	d = dec(never, sizeof(never));
	cr_assert_eq(rdmx__dec_skip(&d), RDMX_E_PROTOCOL);
}

Test(codec, counts_and_lengths_are_checked_against_the_input)
{
	const uint8_t arr[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
	const uint8_t map[] = {0xdf, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02};
	const uint8_t str[] = {0xdb, 0xff, 0xff, 0xff, 0xff, 'a'};
	const uint8_t bin[] = {0xc6, 0x00, 0x00, 0x00, 0x02, 'a'};
	const uint8_t ok[] = {0x92, 0x01, 0x02};
	struct rdmx_dec d;
	uint32_t n;
	struct rdmx_str s;
	struct rdmx_bytes b;
	d = dec(arr, sizeof(arr));
	cr_assert_eq(rdmx__dec_array(&d, &n, 1), RDMX_E_PROTOCOL);
	d = dec(arr, sizeof(arr));
	cr_assert_eq(rdmx__dec_skip(&d), RDMX_E_PROTOCOL);
	d = dec(map, sizeof(map));
	cr_assert_eq(rdmx__dec_map(&d, &n), RDMX_E_PROTOCOL);
	d = dec(map, sizeof(map));
	cr_assert_eq(rdmx__dec_skip(&d), RDMX_E_PROTOCOL);
	d = dec(str, sizeof(str));
	cr_assert_eq(rdmx__dec_str(&d, &s), RDMX_E_PROTOCOL);
	d = dec(str, sizeof(str));
	cr_assert_eq(rdmx__dec_skip(&d), RDMX_E_PROTOCOL);
	d = dec(bin, sizeof(bin));
	cr_assert_eq(rdmx__dec_bin(&d, &b), RDMX_E_PROTOCOL);
	d = dec(ok, sizeof(ok));
	cr_assert_eq(rdmx__dec_array(&d, &n, 1), 0);
	cr_assert_eq(n, 2);
	d = dec(ok, sizeof(ok));
	cr_assert_eq(rdmx__dec_array(&d, &n, 2), RDMX_E_PROTOCOL,
	             "2 elements of >= 2 bytes need 4");
}

/* every msgpack type, nested, packed by msgpack-c, is skipped exactly */
Test(codec, skip_handles_every_type)
{
	struct pk p;
	struct rdmx_dec d;
	static const char ext[20] = {0};
	size_t k;
	pk_init(&p);
	msgpack_pack_array(&p.pk, 26);
	msgpack_pack_nil(&p.pk);
	msgpack_pack_true(&p.pk);
	msgpack_pack_int64(&p.pk, -100000);
	msgpack_pack_uint64(&p.pk, UINT64_MAX);
	msgpack_pack_float(&p.pk, 1.0f);
	msgpack_pack_double(&p.pk, 2.0);
	msgpack_pack_str(&p.pk, 40);
	msgpack_pack_str_body(&p.pk, "0123456789012345678901234567890123456789", 40);
	msgpack_pack_str(&p.pk, 300);
	for (k = 0; k < 30; k++)
		msgpack_pack_str_body(&p.pk, "0123456789", 10);
	msgpack_pack_bin(&p.pk, 3);
	msgpack_pack_bin_body(&p.pk, "abc", 3);
	msgpack_pack_map(&p.pk, 2);
	msgpack_pack_int(&p.pk, 1);
	msgpack_pack_array(&p.pk, 0);
	msgpack_pack_str(&p.pk, 1);
	msgpack_pack_str_body(&p.pk, "k", 1);
	msgpack_pack_map(&p.pk, 1);
	msgpack_pack_int(&p.pk, 2);
	msgpack_pack_array(&p.pk, 17);
	for (k = 0; k < 17; k++)
		msgpack_pack_int(&p.pk, (int)k);
	/* ext of every size class: fixext 1/2/4/8/16, ext 8/16/32 */
	{
		const size_t sizes[] = {1, 2, 4, 8, 16, 3, 300, 70000};
		char *big = calloc(1, 70000);
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			msgpack_pack_ext(&p.pk, sizes[k], 5);
			msgpack_pack_ext_body(&p.pk, sizes[k] <= sizeof(ext) ? ext : big, sizes[k]);
		}
		free(big);
	}
	msgpack_pack_int64(&p.pk, INT64_MIN);
	msgpack_pack_int(&p.pk, -5);
	msgpack_pack_uint16(&p.pk, 1000);
	msgpack_pack_int16(&p.pk, -1000);
	msgpack_pack_int8(&p.pk, -100);
	msgpack_pack_int32(&p.pk, -70000);
	msgpack_pack_map(&p.pk, 0);
	msgpack_pack_uint8(&p.pk, 255);
	d = dec(p.sb.data, p.sb.size);
	cr_assert_eq(rdmx__dec_skip(&d), 0);
	cr_assert_eq(rdmx__dec_finish(&d), 0);
	/* and every truncation of it fails */
	for (k = 0; k < p.sb.size; k += 7) {
		d = dec(p.sb.data, k);
		cr_assert_eq(rdmx__dec_skip(&d), RDMX_E_PROTOCOL, "prefix %zu", k);
	}
	pk_fini(&p);
}

Test(codec, skip_depth_is_bounded)
{
	uint8_t buf[300];
	struct rdmx_dec d;
	struct rdmx_decode_opts o = {0};
	memset(buf, 0x91, sizeof(buf)); /* [[[[...]]]] */
	buf[sizeof(buf) - 1] = 0x90;
	d = dec(buf, sizeof(buf));
	cr_assert_eq(rdmx__dec_skip(&d), RDMX_E_PROTOCOL);
	o.max_depth = 1000; /* clamped to RDMX_DECODE_MAX_DEPTH */
	cr_assert_eq(rdmx__dec_init(&d, buf, sizeof(buf), NULL, &o, 0), 0);
	cr_assert_eq(rdmx__dec_skip(&d), RDMX_E_PROTOCOL);
	cr_assert_eq(rdmx__dec_init(&d, buf + sizeof(buf) - 20, 20, NULL, NULL, 0), 0);
	cr_assert_eq(rdmx__dec_skip(&d), 0, "20 levels fit in the default 32");
}

Test(codec, utf8_validation)
{
	const char *good[] = {"",
	                      "plain ascii that is longer than eight bytes",
	                      "h\xc3\xa9llo",
	                      "\xe2\x9c\x93",
	                      "\xf0\x9d\x84\x9e",
	                      "\xef\xbf\xbf",
	                      "\xf4\x8f\xbf\xbf",
	                      "\xed\x9f\xbf"};
	const char *bad[] = {"\xc0\x80",         "\xc1\xbf",         "\xe0\x80\x80", "\xed\xa0\x80",
	                     "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80",         "\xc3",
	                     "\xe2\x9c",         "abcdefgh\xff",     "\xf0\x9d\x84"};
	size_t i;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert(rdmx__utf8_valid((const uint8_t *)good[i], strlen(good[i])), "%zu", i);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(!rdmx__utf8_valid((const uint8_t *)bad[i], strlen(bad[i])), "%zu", i);
	cr_assert(rdmx__utf8_valid((const uint8_t *)"a\0b", 3), "U+0000 is valid UTF-8");
}

Test(arena, alloc_align_limit_reset)
{
	struct rdmx_arena a;
	unsigned char stack[100];
	void *p, *q;
	size_t i;
	rdmx_arena_init(&a, stack, sizeof(stack), 0);
	p = rdmx_arena_alloc(&a, 3);
	q = rdmx_arena_alloc(&a, 0);
	cr_assert(p && q && p != q);
	cr_assert_eq((uintptr_t)p % 8, 0);
	cr_assert_eq((uintptr_t)q % 8, 0);
	cr_assert((unsigned char *)p >= stack && (unsigned char *)p < stack + sizeof(stack));
	cr_assert_eq(a.heap, 0, "the caller's block first");
	for (i = 0; i < 100; i++)
		cr_assert_not_null(rdmx_arena_alloc(&a, 1000));
	cr_assert_geq(rdmx_arena_used(&a), 100000);
	rdmx_arena_reset(&a);
	cr_assert_eq(rdmx_arena_used(&a), 0);
	cr_assert_not_null(a.chunks, "the largest block is kept");
	cr_assert_lt(a.heap, 100000, "the others are freed");
	cr_assert_not_null(rdmx_arena_alloc(&a, 1000));
	rdmx_arena_fini(&a);
	rdmx_arena_fini(NULL);

	rdmx_arena_init(&a, NULL, 0, 64);
	cr_assert_not_null(rdmx_arena_alloc(&a, 60));
	cr_assert_null(rdmx_arena_alloc(&a, 8), "over the limit");
	cr_assert_null(rdmx_arena_alloc(&a, SIZE_MAX));
	rdmx_arena_fini(&a);
}

Test(codec, status_fill)
{
	struct rdmx_arena a;
	struct rdmx_rpc_status st;
	rdmx_arena_init(&a, NULL, 0, 0);
	cr_assert_eq(rdmx__rpc_status_fill(&st, &a, 5, "not here"), 0);
	cr_assert_eq(st.code, 5);
	cr_assert_str_eq(st.message, "not here");
	cr_assert_eq(rdmx__rpc_status_fill(&st, NULL, 3, "x"), 0);
	cr_assert_null(st.message);
	cr_assert_eq(rdmx__rpc_status_fill(NULL, &a, 3, "x"), 0);
	rdmx_arena_fini(&a);
}

Test(codec, bindings_are_released_per_server)
{
	struct rdmx_rpc_server *s1 = (struct rdmx_rpc_server *)(uintptr_t)0x1000;
	struct rdmx_rpc_server *s2 = (struct rdmx_rpc_server *)(uintptr_t)0x2000;
	cr_assert_eq(rdmx__codec_keep_binding(s1, malloc(16)), 0);
	cr_assert_eq(rdmx__codec_keep_binding(s2, malloc(16)), 0);
	cr_assert_eq(rdmx__codec_keep_binding(s1, malloc(16)), 0);
	rdmx_codec_release_bindings(s1);
	rdmx_codec_release_bindings(s2);
	rdmx_codec_release_bindings(s2);
}
