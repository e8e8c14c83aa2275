/* Messages of the rw/ corpus files with every field kind set, against
 * protobuf's python json_format: json/corpus_golden.json (written once by
 * json/make_corpus_golden.py, not run here) holds each message as
 * MessageToJson prints it. Each one is read with rdmx-call's JSON mapping
 * (pbjson) into rdmx's wire, decoded by the generated decoder, encoded by
 * the generated encoder and printed back by pbjson: the JSON must be the
 * one protobuf printed (proto2 groups, defaults and required fields,
 * extreme numbers, maps of every key type, oneofs of every member kind,
 * proto3 presence, every well-known type, renamed C members). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rdmx/codec.h>
#include <rdmx/status.h>

#include "json.h"
#include "pbjson_check.h"
#include "pbjson.h"
#include "rw/lang/c_keywords.rdmx.h"
#include "rw/lang/deep_nesting.rdmx.h"
#include "rw/lang/mangle_clash.rdmx.h"
#include "rw/lang/maps.rdmx.h"
#include "rw/lang/numbers_limits.rdmx.h"
#include "rw/lang/oneof_options.rdmx.h"
#include "rw/lang/presence.rdmx.h"
#include "rw/otel/trace/v1/trace.rdmx.h"
#include "rw/pb2/unittest.rdmx.h"
#include "rw/wkt/everything.rdmx.h"

/* the generated codecs of each type, behind one signature */
#define TYPE_OPS(T)                                                                                \
	static int dec_##T(void *m, const void *src, size_t n, struct rdmx_arena *a)               \
	{                                                                                          \
		return T##_decode(m, src, n, a, NULL);                                             \
	}                                                                                          \
	static size_t size_##T(const void *m)                                                      \
	{                                                                                          \
		return T##_encoded_size(m);                                                        \
	}                                                                                          \
	static int enc_##T(const void *m, void *dst, size_t n)                                     \
	{                                                                                          \
		return T##_encode(m, dst, n);                                                      \
	}
TYPE_OPS(rw_pb2_unittest_TestAllTypes)
TYPE_OPS(rw_pb2_unittest_TestMaps)
TYPE_OPS(rw_pb2_unittest_TestRequired)
TYPE_OPS(rw_pb2_unittest_TestReallyLargeTagNumber)
TYPE_OPS(rw_pb2_unittest_TestMutualRecursionA)
TYPE_OPS(rw_lang_presence_Presence)
TYPE_OPS(rw_lang_oneofs_Choice)
TYPE_OPS(rw_lang_maps_Maps)
TYPE_OPS(rw_otel_trace_v1_Span)
TYPE_OPS(rw_wkt_AllKnown)
TYPE_OPS(rw_lang_limits_Edges)
TYPE_OPS(rw_lang_mangle_Fields)
TYPE_OPS(rw_lang_mangle_Mixed)
TYPE_OPS(rw_lang_ckw_union)
TYPE_OPS(rw_lang_deep_Outside)

#define OPS(full, T)                                                                               \
	{                                                                                          \
		full, sizeof(T), dec_##T, size_##T, enc_##T                                        \
	}
static const struct type_ops types[] = {
    OPS("rw.pb2.unittest.TestAllTypes", rw_pb2_unittest_TestAllTypes),
    OPS("rw.pb2.unittest.TestMaps", rw_pb2_unittest_TestMaps),
    OPS("rw.pb2.unittest.TestRequired", rw_pb2_unittest_TestRequired),
    OPS("rw.pb2.unittest.TestReallyLargeTagNumber", rw_pb2_unittest_TestReallyLargeTagNumber),
    OPS("rw.pb2.unittest.TestMutualRecursionA", rw_pb2_unittest_TestMutualRecursionA),
    OPS("rw.lang.presence.Presence", rw_lang_presence_Presence),
    OPS("rw.lang.oneofs.Choice", rw_lang_oneofs_Choice),
    OPS("rw.lang.maps.Maps", rw_lang_maps_Maps),
    OPS("rw.otel.trace.v1.Span", rw_otel_trace_v1_Span),
    OPS("rw.wkt.AllKnown", rw_wkt_AllKnown),
    OPS("rw.lang.limits.Edges", rw_lang_limits_Edges),
    OPS("rw.lang.mangle.Fields", rw_lang_mangle_Fields),
    OPS("rw.lang.mangle.Mixed", rw_lang_mangle_Mixed),
    OPS("rw.lang.ckw.union", rw_lang_ckw_union),
    OPS("rw.lang.deep.Outside", rw_lang_deep_Outside),
};

/* Known differences, each a golden case that still fails and why ({NULL}
 * ends the list); the test fails when one of them passes (take it out
 * then). */
static const struct {
	const char *name, *why;
} known[] = {
    {NULL, NULL},
};

static const char *known_why(const char *name)
{
	for (size_t i = 0; known[i].name; i++)
		if (strcmp(known[i].name, name) == 0)
			return known[i].why;
	return NULL;
}

/* one schema per corpus file named by the cases */
#define MAX_SCHEMAS 16
static struct {
	char file[128];
	struct pbschema s;
} schemas[MAX_SCHEMAS];
static int n_schemas;
static json_t *golden;

static void setup(void)
{
	json_error_t e;
	golden =
	    json_load_file(JSON_GOLDEN_DIR "/corpus_golden.json", JSON_DECODE_INT_AS_REAL * 0, &e);
	cr_assert_not_null(golden, "corpus_golden.json: line %d: %s", e.line, e.text);
}

static void teardown(void)
{
	for (int i = 0; i < n_schemas; i++)
		pbschema_fini(&schemas[i].s);
	n_schemas = 0;
	json_decref(golden);
}

TestSuite(corpus_rw, .init = setup, .fini = teardown);

static const struct gen_message *message_of(const char *file, const char *type)
{
	const char *inc[] = {CORPUS_DIR, CORPUS_DIR "/third_party"};
	char path[512];
	int i;
	for (i = 0; i < n_schemas; i++)
		if (strcmp(schemas[i].file, file) == 0)
			break;
	if (i == n_schemas) {
		cr_assert_lt(n_schemas, MAX_SCHEMAS);
		snprintf(path, sizeof(path), "%s/%s", CORPUS_DIR, file);
		snprintf(schemas[i].file, sizeof(schemas[i].file), "%s", file);
		cr_assert_eq(pbschema_load(&schemas[i].s, path, inc, 2, stderr), 0, "%s", file);
		n_schemas++;
	}
	return pbschema_message(&schemas[i].s, type);
}

/* the round trip's printed JSON, or NULL with the reason in why */
static json_t *through(const struct gen_message *m, const struct type_ops *ops, const char *input,
                       char *why, size_t wlen)
{
	struct jbuf out;
	json_t *printed;
	json_error_t e;

	if (pbjson_round_trip(m, ops, input, &out, why, wlen))
		return NULL;
	printed = json_loadb(out.data, out.len, 0, &e);
	if (!printed)
		snprintf(why, wlen, "printed text is not JSON (%s): %.*s", e.text, (int)out.len,
		         out.data);
	jbuf_free(&out);
	return printed;
}

Test(corpus_rw, every_field_kind_round_trips_as_protobuf_prints_it)
{
	const json_t *cases = json_object_get(golden, "cases");
	const json_t *c;
	size_t i;
	int failed = 0;

	cr_assert_geq(json_array_size(cases), 30);
	json_array_foreach((json_t *)cases, i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *file = json_string_value(json_object_get(c, "file"));
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *input = json_string_value(json_object_get(c, "input"));
		const struct gen_message *m = message_of(file, type);
		const struct type_ops *ops = NULL;
		char why[1024] = "", path[512] = "";
		json_t *printed;
		bool ok;

		cr_assert_not_null(m, "%s: no message %s in %s", name, type, file);
		for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
			if (strcmp(types[k].name, type) == 0)
				ops = &types[k];
		cr_assert_not_null(ops, "%s: no generated codec for %s", name, type);
		printed = through(m, ops, input, why, sizeof(why));
		ok = printed && json_same(printed, json_object_get(c, "canonical"), true, path,
		                          sizeof(path), why, sizeof(why));
		if (known_why(name)) {
			cr_expect(!ok, "%s: known difference (%s) is gone: take it out of known[]",
			          name, known_why(name));
		} else if (!ok) {
			char *text = printed ? json_dumps(printed, JSON_COMPACT) : NULL;
			cr_log_error("%s (%s): %s\n  input:   %s\n  printed: %s", name, type, why,
			             input, text ? text : "-");
			free(text);
			failed++;
		}
		json_decref(printed);
	}
	cr_expect_eq(failed, 0, "%d of %zu cases differ from protobuf's JSON", failed,
	             json_array_size(cases));
}

/* proto2 fields that meet after C mangling (int, int_, int__: int___,
 * int_, int__) each keep their own member and number through the codecs */
Test(corpus_rw, renamed_members_keep_their_own_fields)
{
	rw_lang_mangle_Fields f, back;
	rw_lang_mangle_Mixed x, xback;
	int32_t c1[] = {6}, c2[] = {7, 8};
	struct rdmx_bytes u[] = {{(const uint8_t *)"u", 1}};
	struct rdmx_arena arena;
	uint8_t buf[256];
	size_t n;

	rdmx_arena_init(&arena, NULL, 0, 0);
	rw_lang_mangle_Fields_init(&f);
	f.has_bool__ = true;
	f.bool__ = 1;
	f.has_bool_ = true;
	f.bool_ = 2;
	f.has_int___ = true;
	f.int___ = 3;
	f.has_int_ = true;
	f.int_ = 4;
	f.has_int__ = true;
	f.int__ = 5;
	f.n_class__ = 1;
	f.class__ = c1;
	f.n_class_ = 2;
	f.class_ = c2;
	n = rw_lang_mangle_Fields_encoded_size(&f);
	cr_assert_leq(n, sizeof(buf));
	cr_assert_eq(rw_lang_mangle_Fields_encode(&f, buf, n), 0);
	cr_assert_eq(rw_lang_mangle_Fields_decode(&back, buf, n, &arena, NULL), 0);
	cr_expect(back.has_bool__ && back.bool__ == 1 && back.has_bool_ && back.bool_ == 2);
	cr_expect(back.has_int___ && back.int___ == 3 && back.int_ == 4 && back.int__ == 5);
	cr_expect(back.n_class__ == 1 && back.class__[0] == 6);
	cr_expect(back.n_class_ == 2 && back.class_[0] == 7 && back.class_[1] == 8);

	rw_lang_mangle_Mixed_init(&x);
	x.pick_case = rw_lang_mangle_Mixed_pick_default_;
	x.default_ = (struct rdmx_str){"e", 1};
	x.has_static___ = true;
	x.static___ = (struct rdmx_str){"a", 1};
	x.has_static__ = true;
	x.static__ = (struct rdmx_str){"c", 1};
	x.has_static_ = true;
	x.static_ = (struct rdmx_str){"b", 1};
	x.n_union__ = 1;
	x.union__ = u;
	x.has_union_ = true;
	x.union_ = (struct rdmx_str){"d", 1};
	n = rw_lang_mangle_Mixed_encoded_size(&x);
	cr_assert_leq(n, sizeof(buf));
	cr_assert_eq(rw_lang_mangle_Mixed_encode(&x, buf, n), 0);
	cr_assert_eq(rw_lang_mangle_Mixed_decode(&xback, buf, n, &arena, NULL), 0);
	cr_expect_eq(xback.pick_case, rw_lang_mangle_Mixed_pick_default_);
	cr_expect(xback.default_.len == 1 && xback.default_.data[0] == 'e');
	cr_expect(xback.static___.len == 1 && xback.static___.data[0] == 'a');
	cr_expect(xback.static__.len == 1 && xback.static__.data[0] == 'c');
	cr_expect(xback.static_.len == 1 && xback.static_.data[0] == 'b');
	cr_expect(xback.n_union__ == 1 && xback.union__[0].len == 1 && xback.union_.len == 1 &&
	          xback.union_.data[0] == 'd');
	rdmx_arena_fini(&arena);
}

/* proto2 string defaults holding NULs are kept whole, as protoc reads them
 * ("hel\000lo" is 6 bytes, not "hel"), by X_init and by the decoder for an
 * absent field; unit.codegen.plugin checks protoc-gen-rdmx writes the same */
Test(corpus_rw, string_defaults_keep_their_nuls)
{
	rw_pb2_unittest_TestExtremeDefaultValues m, d;
	struct rdmx_arena arena;
	uint8_t buf[16];
	size_t n;

	rw_pb2_unittest_TestExtremeDefaultValues_init(&m);
	cr_expect(m.string_with_zero.len == 6 &&
	          memcmp(m.string_with_zero.data, "hel\0lo", 6) == 0);
	cr_expect(m.bytes_with_zero.len == 6 && memcmp(m.bytes_with_zero.data, "wor\0ld", 6) == 0);
	cr_expect(m.string_piece_with_zero.len == 4 &&
	          memcmp(m.string_piece_with_zero.data, "ab\0c", 4) == 0);
	cr_expect(m.cord_with_zero.len == 4 && memcmp(m.cord_with_zero.data, "12\0003", 4) == 0);
	cr_expect(m.escaped_bytes.len == 13 &&
	          memcmp(m.escaped_bytes.data, "\0\001\a\b\f\n\r\t\v\\'\"\xfe", 13) == 0);

	/* an empty message: every field absent, so at its default */
	rdmx_arena_init(&arena, NULL, 0, 0);
	n = rw_pb2_unittest_TestEmptyMessage_encoded_size(&(rw_pb2_unittest_TestEmptyMessage){0});
	cr_assert_leq(n, sizeof(buf));
	cr_assert_eq(
	    rw_pb2_unittest_TestEmptyMessage_encode(&(rw_pb2_unittest_TestEmptyMessage){0}, buf, n),
	    0);
	cr_assert_eq(rw_pb2_unittest_TestExtremeDefaultValues_decode(&d, buf, n, &arena, NULL), 0);
	cr_expect(d.string_with_zero.len == 6 &&
	          memcmp(d.string_with_zero.data, "hel\0lo", 6) == 0);
	cr_expect(d.cord_with_zero.len == 4);
	rdmx_arena_fini(&arena);
}
