/* tools/common/mp.h against msgpack-c, the oracle: the writer's bytes are
 * msgpack-c's for the same values, the reader gives back what msgpack-c
 * wrote, and truncated, malformed or too deep input is refused. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "mp.h"

struct sink {
	char buf[1 << 19];
	size_t len;
	int fail_at; /* the write that answers -1 (0: none) */
	int writes;
};

static int sink_write(void *data, const char *p, size_t n)
{
	struct sink *s = data;

	if (s->fail_at && ++s->writes == s->fail_at)
		return -1;
	cr_assert(s->len + n <= sizeof(s->buf));
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	return 0;
}

static const int64_t ints[] = {
    0,         1,  127, 128, 255,  256,  65535,  65536,  INT32_MAX, (int64_t)1 << 32,
    INT64_MAX, -1, -32, -33, -128, -129, -32768, -32769, INT32_MIN, (int64_t)INT32_MIN - 1,
    INT64_MIN};
static const size_t lens[] = {0, 1, 31, 32, 255, 256, 65535, 65536};

/* every kind of value through both writers */
static void write_all(struct rdmx_mp_writer *w, msgpack_packer *pk, const char *text)
{
	size_t n_ints = sizeof(ints) / sizeof(ints[0]), n_lens = sizeof(lens) / sizeof(lens[0]);

	cr_assert_eq(rdmx_mp_pack_array(w, 5 + 2 * n_ints + 2 * n_lens), 0);
	msgpack_pack_array(pk, 5 + 2 * n_ints + 2 * n_lens);
	cr_assert_eq(rdmx_mp_pack_nil(w), 0);
	msgpack_pack_nil(pk);
	cr_assert_eq(rdmx_mp_pack_bool(w, true), 0);
	msgpack_pack_true(pk);
	cr_assert_eq(rdmx_mp_pack_bool(w, false), 0);
	msgpack_pack_false(pk);
	cr_assert_eq(rdmx_mp_pack_f32(w, 1.5f), 0);
	msgpack_pack_float(pk, 1.5f);
	cr_assert_eq(rdmx_mp_pack_f64(w, -2.25), 0);
	msgpack_pack_double(pk, -2.25);
	for (size_t i = 0; i < n_ints; i++) {
		cr_assert_eq(rdmx_mp_pack_int(w, ints[i]), 0);
		msgpack_pack_int64(pk, ints[i]);
		cr_assert_eq(rdmx_mp_pack_uint(w, (uint64_t)ints[i]), 0);
		msgpack_pack_uint64(pk, (uint64_t)ints[i]);
	}
	for (size_t i = 0; i < n_lens; i++) {
		cr_assert_eq(rdmx_mp_pack_str(w, text, lens[i]), 0);
		msgpack_pack_str(pk, lens[i]);
		msgpack_pack_str_body(pk, text, lens[i]);
		cr_assert_eq(rdmx_mp_pack_bin(w, text, lens[i]), 0);
		msgpack_pack_bin(pk, lens[i]);
		msgpack_pack_bin_body(pk, text, lens[i]);
	}
}

Test(mp, writer_matches_msgpack_c)
{
	static struct sink ours;
	static char text[65536];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct rdmx_mp_writer w;

	memset(text, 'x', sizeof(text));
	memset(&ours, 0, sizeof(ours));
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	rdmx_mp_writer_init(&w, &ours, sink_write);
	write_all(&w, &pk, text);
	/* maps' headers of every size class too */
	for (size_t n = 0; n < 70000; n += n < 20 ? 1 : 9999) {
		cr_assert_eq(rdmx_mp_pack_map(&w, n), 0);
		msgpack_pack_map(&pk, n);
		cr_assert_eq(rdmx_mp_pack_array(&w, n), 0);
		msgpack_pack_array(&pk, n);
	}
	cr_assert_eq(ours.len, sb.size);
	cr_assert_eq(memcmp(ours.buf, sb.data, sb.size), 0);
	msgpack_sbuffer_destroy(&sb);
}

Test(mp, writer_passes_on_the_sink_failure)
{
	static struct sink s;
	struct rdmx_mp_writer w;

	memset(&s, 0, sizeof(s));
	s.fail_at = 2;
	rdmx_mp_writer_init(&w, &s, sink_write);
	cr_assert_eq(rdmx_mp_pack_map(&w, 1), 0);
	cr_assert_eq(rdmx_mp_pack_str(&w, "k", 1), -1);
}

Test(mp, reader_gives_back_what_msgpack_c_wrote)
{
	static char text[65536];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct rdmx_mp_doc d;
	size_t off = 0, k = 5;
	const struct rdmx_mp_obj *a;

	memset(text, 'y', sizeof(text));
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	{
		static struct sink unused;
		struct rdmx_mp_writer w;

		memset(&unused, 0, sizeof(unused));
		rdmx_mp_writer_init(&w, &unused, sink_write);
		write_all(&w, &pk, text);
	}
	rdmx_mp_doc_init(&d);
	cr_assert_eq(rdmx_mp_parse(&d, sb.data, sb.size, &off), 0);
	cr_assert_eq(off, sb.size);
	cr_assert_eq(d.data.type, RDMX_MP_ARRAY);
	a = d.data.via.array.ptr;
	cr_assert_eq(a[0].type, RDMX_MP_NIL);
	cr_assert(a[1].type == RDMX_MP_BOOL && a[1].via.boolean);
	cr_assert(a[2].type == RDMX_MP_BOOL && !a[2].via.boolean);
	cr_assert(a[3].type == RDMX_MP_F32 && a[3].via.f64 == 1.5);
	cr_assert(a[4].type == RDMX_MP_F64 && a[4].via.f64 == -2.25);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++, k += 2) {
		if (ints[i] >= 0)
			cr_assert(a[k].type == RDMX_MP_UINT && a[k].via.u64 == (uint64_t)ints[i],
			          "int %zu", i);
		else
			cr_assert(a[k].type == RDMX_MP_INT && a[k].via.i64 == ints[i], "int %zu",
			          i);
		cr_assert(a[k + 1].type == RDMX_MP_UINT && a[k + 1].via.u64 == (uint64_t)ints[i]);
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++, k += 2) {
		cr_assert(a[k].type == RDMX_MP_STR && a[k].via.str.size == lens[i]);
		cr_assert(a[k + 1].type == RDMX_MP_BIN && a[k + 1].via.bin.size == lens[i]);
		cr_assert(lens[i] == 0 || memcmp(a[k].via.str.ptr, text, lens[i]) == 0);
	}
	/* every proper prefix is refused, and leaves nil */
	for (size_t cut = 0; cut < sb.size; cut += 1 + cut / 3) {
		off = 0;
		cr_assert_eq(rdmx_mp_parse(&d, sb.data, cut, &off), -1, "prefix %zu", cut);
		cr_assert_eq(d.data.type, RDMX_MP_NIL);
	}
	rdmx_mp_doc_fini(&d);
	msgpack_sbuffer_destroy(&sb);
}

Test(mp, reader_maps_ext_and_trailing_bytes)
{
	/* {1: "a", -1: [true]}, then fixext 1, then one byte more */
	static const unsigned char in[] = {0x82, 0x01, 0xa1, 'a',  0xff, 0x91,
	                                   0xc3, 0xd4, 0x05, 0x07, 0x00};
	struct rdmx_mp_doc d;
	size_t off = 0;

	rdmx_mp_doc_init(&d);
	cr_assert_eq(rdmx_mp_parse(&d, in, sizeof(in), &off), 0);
	cr_assert_eq(off, 7);
	cr_assert_eq(d.data.type, RDMX_MP_MAP);
	cr_assert_eq(d.data.via.map.size, 2);
	cr_assert(d.data.via.map.ptr[0].key.type == RDMX_MP_UINT);
	cr_assert(d.data.via.map.ptr[1].key.type == RDMX_MP_INT &&
	          d.data.via.map.ptr[1].key.via.i64 == -1);
	cr_assert(d.data.via.map.ptr[1].val.type == RDMX_MP_ARRAY);
	cr_assert_eq(rdmx_mp_parse(&d, in, sizeof(in), &off), 0);
	cr_assert(d.data.type == RDMX_MP_EXT && d.data.via.bin.size == 1 &&
	          d.data.via.bin.ptr[0] == 0x07);
	cr_assert_eq(off, 10);
	rdmx_mp_doc_fini(&d);
}

Test(mp, reader_refuses_hostile_input)
{
	static unsigned char deep[RDMX_MP_MAX_DEPTH + 2];
	/* counts larger than the bytes left, the never-used byte, a huge str */
	static const unsigned char big_array[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0};
	static const unsigned char big_map[] = {0xdf, 0x7f, 0xff, 0xff, 0xff, 0xc0, 0xc0};
	static const unsigned char never[] = {0xc1};
	static const unsigned char big_str[] = {0xdb, 0xff, 0xff, 0xff, 0xf0, 'a'};
	struct rdmx_mp_doc d;
	size_t off;

	rdmx_mp_doc_init(&d);
	memset(deep, 0x91, sizeof(deep)); /* [[[...]]] deeper than allowed */
	deep[sizeof(deep) - 1] = 0xc0;
	off = 0;
	cr_assert_eq(rdmx_mp_parse(&d, deep, sizeof(deep), &off), -1);
	off = 0;
	cr_assert_eq(rdmx_mp_parse(&d, deep + 2, sizeof(deep) - 2, &off), 0); /* at the limit */
	cr_assert_eq(rdmx_mp_parse(&d, big_array, sizeof(big_array), &(size_t){0}), -1);
	cr_assert_eq(rdmx_mp_parse(&d, big_map, sizeof(big_map), &(size_t){0}), -1);
	cr_assert_eq(rdmx_mp_parse(&d, never, sizeof(never), &(size_t){0}), -1);
	cr_assert_eq(rdmx_mp_parse(&d, big_str, sizeof(big_str), &(size_t){0}), -1);
	off = 5;
	cr_assert_eq(rdmx_mp_parse(&d, never, sizeof(never), &off), -1); /* offset past the end */
	cr_assert_eq(d.data.type, RDMX_MP_NIL);
	rdmx_mp_doc_fini(&d);
}
