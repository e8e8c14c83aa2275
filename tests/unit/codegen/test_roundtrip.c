/* Round trips through generated code (protos/all.proto) over every type and
 * edge value: defaults, extremes, NaN, -0.0, infinities, unicode, embedded
 * NULs, every msgpack length class (fix/8/16/32), deep-but-allowed nesting. */
#include <math.h>
#include <stdint.h>

#include <msgpack.h>

#include "all.rdmx.h"
#include "codegen_test.h"

DEFINE_ENCODE_NEW(rt_Scalars)
DEFINE_ENCODE_NEW(rt_Optionals)
DEFINE_ENCODE_NEW(rt_Repeated)
DEFINE_ENCODE_NEW(rt_Maps)
DEFINE_ENCODE_NEW(rt_Oneofs)
DEFINE_ENCODE_NEW(rt_Tree)
DEFINE_ENCODE_NEW(rt_BigKeys)
DEFINE_ENCODE_NEW(rt_Wide)
DEFINE_ENCODE_NEW(rt_Empty)
DEFINE_ENCODE_NEW(rt_Reserved)

static struct rdmx_arena arena;

static void setup(void)
{
	rdmx_arena_init(&arena, NULL, 0, 0);
}

static void teardown(void)
{
	rdmx_arena_fini(&arena);
}

TestSuite(roundtrip, .init = setup, .fini = teardown);

static const char unicode[] = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9d\x84\x9e "
                              "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e";

static bool same_bits_f(float a, float b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static bool same_bits_d(double a, double b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static bool str_eq(struct rdmx_str a, struct rdmx_str b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

static bool bytes_eq(struct rdmx_bytes a, struct rdmx_bytes b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

static void assert_scalars_eq(const rt_Scalars *a, const rt_Scalars *b)
{
	cr_assert_eq(a->i32, b->i32);
	cr_assert_eq(a->i64, b->i64);
	cr_assert_eq(a->u32, b->u32);
	cr_assert_eq(a->u64, b->u64);
	cr_assert_eq(a->s32, b->s32);
	cr_assert_eq(a->s64, b->s64);
	cr_assert_eq(a->fx32, b->fx32);
	cr_assert_eq(a->fx64, b->fx64);
	cr_assert_eq(a->sfx32, b->sfx32);
	cr_assert_eq(a->sfx64, b->sfx64);
	cr_assert_eq(a->b, b->b);
	cr_assert(same_bits_f(a->fl, b->fl), "float %a vs %a", (double)a->fl, (double)b->fl);
	cr_assert(same_bits_d(a->db, b->db), "double %a vs %a", a->db, b->db);
	cr_assert(str_eq(a->str, b->str));
	cr_assert(bytes_eq(a->byt, b->byt));
	cr_assert_eq(a->lvl, b->lvl);
}

Test(roundtrip, default_message_is_an_empty_map)
{
	rt_Scalars in, out;
	size_t n;
	uint8_t *b;
	rt_Scalars_init(&in);
	b = ENCODE_NEW(rt_Scalars, &in, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(b[0], 0x80);
	memset(&out, 0x5a, sizeof(out));
	cr_assert_eq(rt_Scalars_decode(&out, b, n, NULL, NULL), 0, "no arena needed");
	assert_scalars_eq(&in, &out);
	free(b);
	cr_assert_eq(rt_Empty_encoded_size(NULL), 1);
}

Test(roundtrip, scalars_max)
{
	static uint8_t all[256];
	rt_Scalars in, out;
	uint8_t *b;
	size_t i;
	for (i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	rt_Scalars_init(&in);
	in.i32 = INT32_MAX;
	in.i64 = INT64_MAX;
	in.u32 = UINT32_MAX;
	in.u64 = UINT64_MAX;
	in.s32 = INT32_MAX;
	in.s64 = INT64_MAX;
	in.fx32 = UINT32_MAX;
	in.fx64 = UINT64_MAX;
	in.sfx32 = INT32_MAX;
	in.sfx64 = INT64_MAX;
	in.b = true;
	in.fl = 3.4028235e38f;
	in.db = 1.7976931348623157e308;
	in.str = rdmx_str_c(unicode);
	in.byt = rdmx_bytes_n(all, sizeof(all));
	in.lvl = rt_Level_LEVEL_MAX;
	b = ROUNDTRIP(rt_Scalars, &in, &out, &arena, NULL);
	assert_scalars_eq(&in, &out);
	free(b);
}

Test(roundtrip, scalars_min_and_special_floats)
{
	rt_Scalars in, out;
	uint8_t *b;
	rt_Scalars_init(&in);
	in.i32 = INT32_MIN;
	in.i64 = INT64_MIN;
	in.s32 = INT32_MIN;
	in.s64 = INT64_MIN;
	in.sfx32 = INT32_MIN;
	in.sfx64 = INT64_MIN;
	in.fl = -0.0f;
	in.db = NAN;
	in.lvl = rt_Level_LEVEL_MIN;
	in.str = rdmx_str_n("a\0b", 3);
	b = ROUNDTRIP(rt_Scalars, &in, &out, &arena, NULL);
	assert_scalars_eq(&in, &out);
	cr_assert(signbit(out.fl) && out.fl == 0.0f, "-0.0 is kept (and written)");
	cr_assert(isnan(out.db));
	cr_assert_eq(out.str.len, 3);
	free(b);

	in.fl = INFINITY;
	in.db = -INFINITY;
	b = ROUNDTRIP(rt_Scalars, &in, &out, &arena, NULL);
	cr_assert(isinf(out.fl) && out.fl > 0);
	cr_assert(isinf(out.db) && out.db < 0);
	free(b);

	in.fl = 1.401298464e-45f; /* denormals */
	in.db = 4.9406564584124654e-324;
	b = ROUNDTRIP(rt_Scalars, &in, &out, &arena, NULL);
	assert_scalars_eq(&in, &out);
	free(b);
}

Test(roundtrip, unknown_enum_values_are_kept)
{
	rt_Scalars in, out;
	rt_Scalars_init(&in);
	in.lvl = (rt_Level)12345;
	free(ROUNDTRIP(rt_Scalars, &in, &out, &arena, NULL));
	cr_assert_eq((int)out.lvl, 12345);
	in.lvl = (rt_Level)-7;
	free(ROUNDTRIP(rt_Scalars, &in, &out, &arena, NULL));
	cr_assert_eq((int)out.lvl, -7);
}

/* the wire is plain msgpack: msgpack-c reads it as a map of field numbers */
Test(roundtrip, encoding_is_msgpack_keyed_by_field_number)
{
	rt_Scalars in;
	msgpack_unpacked u;
	size_t n, off = 0, i;
	uint8_t *b;
	rt_Scalars_init(&in);
	in.i32 = -3;
	in.u64 = 1ull << 40;
	in.b = true;
	in.fl = 1.5f;
	in.db = 2.5;
	in.str = rdmx_str_c("hi");
	in.byt = rdmx_bytes_n("\x00\x01", 2);
	b = ENCODE_NEW(rt_Scalars, &in, &n);
	msgpack_unpacked_init(&u);
	cr_assert_eq(msgpack_unpack_next(&u, (const char *)b, n, &off), MSGPACK_UNPACK_SUCCESS);
	cr_assert_eq(off, n);
	cr_assert_eq(u.data.type, MSGPACK_OBJECT_MAP);
	cr_assert_eq(u.data.via.map.size, 7);
	for (i = 0; i < u.data.via.map.size; i++) {
		msgpack_object_kv *kv = &u.data.via.map.ptr[i];
		cr_assert_eq(kv->key.type, MSGPACK_OBJECT_POSITIVE_INTEGER);
		switch (kv->key.via.u64) {
		case 1:
			cr_assert_eq(kv->val.type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
			cr_assert_eq(kv->val.via.i64, -3);
			break;
		case 4:
			cr_assert_eq(kv->val.via.u64, 1ull << 40);
			break;
		case 11:
			cr_assert_eq(kv->val.type, MSGPACK_OBJECT_BOOLEAN);
			break;
		case 12:
			cr_assert_eq(kv->val.type, MSGPACK_OBJECT_FLOAT32);
			break;
		case 13:
			cr_assert_eq(kv->val.type, MSGPACK_OBJECT_FLOAT64);
			break;
		case 14:
			cr_assert_eq(kv->val.type, MSGPACK_OBJECT_STR);
			break;
		case 15:
			cr_assert_eq(kv->val.type, MSGPACK_OBJECT_BIN);
			break;
		default:
			cr_assert_fail("unexpected key %llu", (unsigned long long)kv->key.via.u64);
		}
	}
	msgpack_unpacked_destroy(&u);
	free(b);
}

Test(roundtrip, optionals_present_with_default_values)
{
	rt_Optionals in, out;
	rt_Scalars sub;
	size_t n;
	uint8_t *b;
	rt_Optionals_init(&in);
	b = ENCODE_NEW(rt_Optionals, &in, &n);
	cr_assert_eq(n, 1);
	free(b);
	rt_Scalars_init(&sub);
	in.has_i32 = in.has_i64 = in.has_u32 = in.has_u64 = in.has_b = true;
	in.has_fl = in.has_db = in.has_str = in.has_byt = in.has_lvl = true;
	in.msg = &sub; /* present although empty */
	b = ROUNDTRIP(rt_Optionals, &in, &out, &arena, NULL);
	cr_assert(out.has_i32 && out.has_i64 && out.has_u32 && out.has_u64 && out.has_b);
	cr_assert(out.has_fl && out.has_db && out.has_str && out.has_byt && out.has_lvl);
	cr_assert_eq(out.i32, 0);
	cr_assert_eq(out.str.len, 0);
	cr_assert_not_null(out.msg);
	free(b);

	in.has_str = false;
	in.has_i32 = false;
	in.msg = NULL;
	b = ROUNDTRIP(rt_Optionals, &in, &out, &arena, NULL);
	cr_assert(!out.has_i32 && !out.has_str && out.has_i64);
	cr_assert_null(out.msg);
	free(b);
}

static void fill_repeated(rt_Repeated *r, size_t n, struct rdmx_arena *a)
{
	size_t i;
	rt_Repeated_init(r);
#define ARR(f, T)                                                                                  \
	do {                                                                                       \
		r->n_##f = n;                                                                      \
		r->f = rdmx_arena_alloc(a, sizeof(T) * (n ? n : 1));                               \
	} while (0)
	ARR(i32, int32_t);
	ARR(i64, int64_t);
	ARR(u32, uint32_t);
	ARR(u64, uint64_t);
	ARR(s32, int32_t);
	ARR(s64, int64_t);
	ARR(fx32, uint32_t);
	ARR(fx64, uint64_t);
	ARR(sfx32, int32_t);
	ARR(sfx64, int64_t);
	ARR(b, bool);
	ARR(fl, float);
	ARR(db, double);
	ARR(str, struct rdmx_str);
	ARR(byt, struct rdmx_bytes);
	ARR(lvl, rt_Level);
	ARR(msgs, rt_Scalars);
#undef ARR
	for (i = 0; i < n; i++) {
		int64_t v = (int64_t)(i * 2654435761u) - (int64_t)(i * i * 7919);
		r->i32[i] = (int32_t)v;
		r->i64[i] = (int64_t)((uint64_t)v * 1000003u);
		r->u32[i] = (uint32_t)v;
		r->u64[i] = (uint64_t)v * 31;
		r->s32[i] = -(int32_t)i;
		r->s64[i] = -(int64_t)i * 100000;
		r->fx32[i] = (uint32_t)i;
		r->fx64[i] = (uint64_t)i << 33;
		r->sfx32[i] = (int32_t)i - 5;
		r->sfx64[i] = INT64_MIN + (int64_t)i;
		r->b[i] = i % 3 == 0;
		r->fl[i] = i % 5 == 0 ? -0.0f : (float)i / 3;
		r->db[i] = i % 7 == 0 ? NAN : (double)i * 1e-3;
		r->str[i] = rdmx_str_c(i % 4 ? unicode : "");
		r->byt[i] = rdmx_bytes_n(unicode, i % 17);
		r->lvl[i] = (rt_Level)(i % 2 ? rt_Level_LEVEL_NEG : rt_Level_LEVEL_ONE);
		rt_Scalars_init(&r->msgs[i]);
		r->msgs[i].i32 = (int32_t)i;
		r->msgs[i].str = rdmx_str_c("m");
	}
}

Test(roundtrip, repeated_all_types_and_array_length_classes)
{
	const size_t ns[] = {0, 1, 15, 16, 65535, 65536};
	size_t k, i;
	struct rdmx_arena src;
	rdmx_arena_init(&src, NULL, 0, 0);
	for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		rt_Repeated in, out;
		uint8_t *b;
		fill_repeated(&in, ns[k], &src);
		b = ROUNDTRIP(rt_Repeated, &in, &out, &arena, NULL);
		cr_assert_eq(out.n_i32, ns[k]);
		cr_assert_eq(out.n_msgs, ns[k]);
		for (i = 0; i < ns[k]; i++) {
			cr_assert_eq(out.i64[i], in.i64[i]);
			cr_assert_eq(out.sfx64[i], in.sfx64[i]);
			cr_assert(same_bits_f(out.fl[i], in.fl[i]));
			cr_assert_eq(out.msgs[i].i32, (int32_t)i);
			cr_assert(str_eq(out.str[i], in.str[i]));
		}
		free(b);
		rdmx_arena_reset(&src);
		rdmx_arena_reset(&arena);
	}
	rdmx_arena_fini(&src);
}

Test(roundtrip, string_and_bytes_length_classes_copy_and_zero_copy)
{
	const size_t lens[] = {0, 1, 31, 32, 255, 256, 65535, 65536, 1u << 20};
	char *s = malloc((1u << 20) + 1);
	size_t k;
	memset(s, 'q', 1u << 20);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		rt_Scalars in, out;
		struct rdmx_decode_opts copy = {0, true, 0};
		size_t n;
		uint8_t *b;
		rt_Scalars_init(&in);
		in.str = rdmx_str_n(s, lens[k]);
		in.byt = rdmx_bytes_n(s, lens[k]);
		b = ROUNDTRIP(rt_Scalars, &in, &out, &arena, NULL);
		cr_assert(str_eq(in.str, out.str));
		cr_assert(bytes_eq(in.byt, out.byt));
		if (lens[k])
			cr_assert((const uint8_t *)out.str.data > b &&
			              (const uint8_t *)out.str.data <
			                  b + rt_Scalars_encoded_size(&in),
			          "zero copy points into the input");
		free(b);
		b = ENCODE_NEW(rt_Scalars, &in, &n);
		cr_assert_eq(rt_Scalars_decode(&out, b, n, &arena, &copy), 0);
		memset(b, 0, n); /* the copies do not depend on the input */
		free(b);
		cr_assert(str_eq(in.str, out.str));
		cr_assert(bytes_eq(in.byt, out.byt));
		if (lens[k]) {
			cr_assert_eq(out.str.data[out.str.len], 0, "copies are NUL-terminated");
			cr_assert_eq(out.byt.data[out.byt.len], 0);
		} else {
			cr_assert_eq(out.str.len, 0, "absent: {NULL, 0}");
		}
		rdmx_arena_reset(&arena);
	}
	free(s);
}

Test(roundtrip, maps_all_key_kinds_and_map32)
{
	rt_Maps in, out;
	rt_Maps_SsEntry ss[3];
	rt_Maps_IiEntry *ii;
	rt_Maps_UmEntry um[2];
	rt_Maps_BbEntry bb[2];
	rt_Maps_SeEntry se[2];
	rt_Maps_SdEntry sd[1];
	rt_Maps_FfEntry ff[1];
	rt_Scalars v;
	size_t i, n = 70000;
	uint8_t *b;
	rt_Maps_init(&in);
	rt_Scalars_init(&v);
	v.str = rdmx_str_c("value");
	ss[0].key = rdmx_str_c("");
	ss[0].value = rdmx_str_c("empty key");
	ss[1].key = rdmx_str_c(unicode);
	ss[1].value = rdmx_str_c("");
	ss[2].key = rdmx_str_c("dup");
	ss[2].value = rdmx_str_c("x");
	in.ss = ss;
	in.n_ss = 3;
	ii = calloc(n, sizeof(*ii));
	for (i = 0; i < n; i++) {
		ii[i].key = (int32_t)i - 35000;
		ii[i].value = (int64_t)i * -3;
	}
	in.ii = ii;
	in.n_ii = n;
	um[0].key = UINT64_MAX;
	um[0].value = &v;
	um[1].key = 0;
	um[1].value = NULL; /* an absent message value is sent as the default */
	in.um = um;
	in.n_um = 2;
	bb[0].key = true;
	bb[0].value = rdmx_bytes_n("\xff", 1);
	bb[1].key = false;
	bb[1].value = rdmx_bytes_n("", 0);
	in.bb = bb;
	in.n_bb = 2;
	se[0].key = INT64_MIN;
	se[0].value = rt_Level_LEVEL_NEG;
	se[1].key = -1;
	se[1].value = (rt_Level)99;
	in.se = se;
	in.n_se = 2;
	sd[0].key = rdmx_str_c("nan");
	sd[0].value = NAN;
	in.sd = sd;
	in.n_sd = 1;
	ff[0].key = UINT32_MAX;
	ff[0].value = -0.0f;
	in.ff = ff;
	in.n_ff = 1;
	b = rt_Maps_roundtrip_(&in, &out, &arena, NULL);
	cr_assert_eq(out.n_ss, 3);
	cr_assert(str_eq(out.ss[1].key, ss[1].key));
	cr_assert_eq(out.n_ii, n);
	cr_assert_eq(out.ii[n - 1].key, ii[n - 1].key);
	cr_assert_eq(out.ii[n - 1].value, ii[n - 1].value);
	cr_assert_eq(out.um[0].key, UINT64_MAX);
	cr_assert(rdmx_str_eq(out.um[0].value->str, "value"));
	cr_assert_not_null(out.um[1].value);
	cr_assert_eq(out.um[1].value->i32, 0);
	cr_assert(out.bb[0].key && !out.bb[1].key);
	cr_assert_eq(out.se[0].key, INT64_MIN);
	cr_assert_eq((int)out.se[1].value, 99);
	cr_assert(isnan(out.sd[0].value));
	cr_assert(signbit(out.ff[0].value));
	free(b);
	free(ii);
}

Test(roundtrip, oneofs)
{
	rt_Oneofs in, out;
	rt_Scalars c;
	uint8_t *b;
	rt_Oneofs_init(&in);
	b = ROUNDTRIP(rt_Oneofs, &in, &out, &arena, NULL);
	cr_assert_eq(out.choice_case, rt_Oneofs_choice_NOT_SET);
	cr_assert_eq(out.other_case, rt_Oneofs_other_NOT_SET);
	free(b);

	in.choice_case = rt_Oneofs_choice_a;
	in.a = 0; /* a set member is sent even with its default value */
	in.other_case = rt_Oneofs_other_y;
	in.y = UINT64_MAX;
	in.after = -1;
	b = ROUNDTRIP(rt_Oneofs, &in, &out, &arena, NULL);
	cr_assert_eq(out.choice_case, rt_Oneofs_choice_a);
	cr_assert_eq(out.a, 0);
	cr_assert_eq(out.other_case, rt_Oneofs_other_y);
	cr_assert_eq(out.y, UINT64_MAX);
	cr_assert_eq(out.after, -1);
	free(b);

	in.choice_case = rt_Oneofs_choice_b;
	in.b = rdmx_str_c(unicode);
	b = ROUNDTRIP(rt_Oneofs, &in, &out, &arena, NULL);
	cr_assert(rdmx_str_eq(out.b, unicode));
	free(b);

	rt_Scalars_init(&c);
	c.i64 = 77;
	in.choice_case = rt_Oneofs_choice_c;
	in.c = &c;
	b = ROUNDTRIP(rt_Oneofs, &in, &out, &arena, NULL);
	cr_assert_eq(out.choice_case, rt_Oneofs_choice_c);
	cr_assert_eq(out.c->i64, 77);
	free(b);

	in.choice_case = rt_Oneofs_choice_f;
	in.f = -0.0;
	b = ROUNDTRIP(rt_Oneofs, &in, &out, &arena, NULL);
	cr_assert(signbit(out.f));
	free(b);

	in.choice_case = rt_Oneofs_choice_e;
	in.e = rt_Level_LEVEL_ZERO;
	b = ROUNDTRIP(rt_Oneofs, &in, &out, &arena, NULL);
	cr_assert_eq(out.choice_case, rt_Oneofs_choice_e);
	free(b);
}

Test(roundtrip, recursion_within_the_depth_limit)
{
	rt_Tree nodes[31], out;
	rt_Tree_Leaf leaf;
	const rt_Tree *t;
	int i, depth = 0;
	uint8_t *b;
	struct rdmx_decode_opts shallow = {30, false, 0};
	rt_Tree_Leaf_init(&leaf);
	leaf.value = -1;
	leaf.kind = rt_Tree_Leaf_Kind_KIND_SOME;
	for (i = 0; i < 31; i++) {
		rt_Tree_init(&nodes[i]);
		nodes[i].name = rdmx_str_c("n");
		if (i + 1 < 31)
			nodes[i].left = &nodes[i + 1];
	}
	nodes[30].leaf = &leaf;
	nodes[0].children = &nodes[29];
	nodes[0].n_children = 2; /* nodes 29 and 30 */
	b = ROUNDTRIP(rt_Tree, &nodes[0], &out, &arena, NULL);
	for (t = &out; t->left; t = t->left)
		depth++;
	cr_assert_eq(depth, 30);
	cr_assert_eq(t->leaf->kind, rt_Tree_Leaf_Kind_KIND_SOME);
	cr_assert_eq(out.n_children, 2);
	cr_assert_eq(out.children[1].leaf->value, -1);
	{
		size_t n = rt_Tree_encoded_size(&nodes[0]);
		cr_assert_eq(rt_Tree_decode(&out, b, n, &arena, &shallow), RDMX_E_PROTOCOL,
		             "31 levels (leaf included) exceed a limit of 30");
	}
	free(b);
}

Test(roundtrip, big_field_numbers_and_wide_messages)
{
	rt_BigKeys in, out;
	rt_Wide w, wo;
	uint8_t *b;
	rt_BigKeys_init(&in);
	in.k1 = 1;
	in.k127 = 2;
	in.k128 = 3;
	in.k255 = 4;
	in.k256 = 5;
	in.k65535 = 6;
	in.k65536 = 7;
	in.kmax = -8;
	b = ROUNDTRIP(rt_BigKeys, &in, &out, &arena, NULL);
	cr_assert_eq(out.k65536, 7);
	cr_assert_eq(out.kmax, -8);
	free(b);

	rt_Wide_init(&w);
	w.f1 = 1;
	w.f16 = 16;
	w.f19 = 19;
	w.f20 = rdmx_str_c("twenty");
	b = ROUNDTRIP(rt_Wide, &w, &wo, &arena, NULL);
	cr_assert_eq(b[0], 0x84);
	cr_assert_eq(wo.f16, 16);
	free(b);
	w.f2 = w.f3 = w.f4 = w.f5 = w.f6 = w.f7 = w.f8 = w.f9 = w.f10 = 1;
	w.f11 = w.f12 = w.f13 = w.f14 = w.f15 = w.f17 = w.f18 = 1;
	b = ROUNDTRIP(rt_Wide, &w, &wo, &arena, NULL);
	cr_assert_eq(b[0], 0xde, "20 keys: map 16");
	cr_assert_eq(wo.f18, 1);
	free(b);
}

Test(roundtrip, empty_and_reserved_messages)
{
	rt_Empty e, eo;
	rt_Reserved r, ro;
	rt_Empty_init(&e);
	free(ROUNDTRIP(rt_Empty, &e, &eo, NULL, NULL));
	rt_Reserved_init(&r);
	r.ok = 5;
	free(ROUNDTRIP(rt_Reserved, &r, &ro, NULL, NULL));
	cr_assert_eq(ro.ok, 5);
}

Test(roundtrip, duplicate_keys_last_wins_and_nil_is_absent)
{
	/* {1: 5, 1: 6, 14: nil, 2: nil} */
	const uint8_t in[] = {0x84, 0x01, 0x05, 0x01, 0x06, 0x0e, 0xc0, 0x02, 0xc0};
	rt_Scalars out;
	cr_assert_eq(rt_Scalars_decode(&out, in, sizeof(in), NULL, NULL), 0);
	cr_assert_eq(out.i32, 6);
	cr_assert_eq(out.str.len, 0);
	cr_assert_eq(out.i64, 0);
}

Test(roundtrip, payload_encodes_exactly)
{
	rt_Scalars in;
	struct rdmx_rpc_payload p;
	uint8_t buf[64];
	rt_Scalars_init(&in);
	in.str = rdmx_str_c("x");
	p = rt_Scalars_payload(&in);
	cr_assert_eq(p.obj, &in);
	cr_assert_eq(p.len, rt_Scalars_encoded_size(&in));
	cr_assert_eq(p.encode(p.obj, buf, p.len), 0);
	cr_assert_eq(buf[0], 0x81);
}
