/* Corpus files through the generated codecs and through rdmx-call's JSON
 * mapping: C structs round-trip; JSON -> msgpack (pbjson) decodes with the
 * generated decoder, and what the generated encoder writes prints as the
 * proto3 JSON form (well-known types, json_name, keywords as field names,
 * a proto2 file's groups and defaults). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rdmx/codec.h>
#include <rdmx/status.h>

#include "edge/deep_nesting.rdmx.h"
#include "edge/keywords.rdmx.h"
#include "edge/numbers.rdmx.h"
#include "edge/options_everywhere.rdmx.h"
#include "edge/wkt_all.rdmx.h"
#include "gen.h"
#include "legacy2/store/inventory.rdmx.h"
#include "json.h"
#include "pbjson.h"

#define ASSERT_OK(x)                                                                               \
	do {                                                                                       \
		int rc_ = (x);                                                                     \
		cr_assert_eq(rc_, 0, "%s: %s", #x, rdmx_err_name(rc_));                            \
	} while (0)

static struct pbschema schema;
static struct rdmx_arena arena;

static void setup(void)
{
	const char *inc[] = {CORPUS_DIR};
	cr_assert_eq(pbschema_load(&schema, CORPUS_DIR "/edge/wkt_all.proto", inc, 1, stderr), 0);
	rdmx_arena_init(&arena, NULL, 0, 0);
}

static void teardown(void)
{
	rdmx_arena_fini(&arena);
	pbschema_fini(&schema);
}

TestSuite(corpus, .init = setup, .fini = teardown);

static const struct gen_message *msg_of(struct pbschema *s, const char *method)
{
	const struct gen_method *m = pbschema_method(s, method);
	cr_assert_not_null(m, "%s", method);
	return m->in;
}

Test(corpus, recursive_and_nested_messages_round_trip)
{
	edge_deep_Outer o, back;
	edge_deep_Outer_Middle mid;
	edge_deep_Outer_Middle_Inner in;
	edge_deep_Outer_Middle_Inner_Core core;
	edge_deep_Outer_InnersEntry ent;
	uint8_t buf[512];
	size_t n;

	edge_deep_Outer_init(&o);
	edge_deep_Outer_Middle_init(&mid);
	edge_deep_Outer_Middle_Inner_init(&in);
	edge_deep_Outer_Middle_Inner_Core_init(&core);
	core.x = -7;
	in.core = &core;
	in.top = &o; /* not encoded: the cycle is broken below */
	in.top = NULL;
	mid.inner = &in;
	mid.level = edge_deep_Outer_Middle_Level_LEVEL_DEEP;
	o.middle = &mid;
	ent.key = rdmx_str_c("k");
	ent.value = &in;
	o.inners = &ent;
	o.n_inners = 1;
	n = edge_deep_Outer_encoded_size(&o);
	cr_assert(n <= sizeof(buf));
	ASSERT_OK(edge_deep_Outer_encode(&o, buf, n));
	ASSERT_OK(edge_deep_Outer_decode(&back, buf, n, &arena, NULL));
	cr_assert_not_null(back.middle);
	cr_assert_eq(back.middle->level, edge_deep_Outer_Middle_Level_LEVEL_DEEP);
	cr_assert_eq(back.middle->inner->core->x, -7);
	cr_assert_eq(back.n_inners, 1);
	cr_assert(rdmx_str_eq(back.inners[0].key, "k"));
	cr_assert_eq(back.inners[0].value->core->x, -7);
}

Test(corpus, keyword_fields_and_c_type_names_round_trip)
{
	edge_keywords_Everything e, back;
	edge_keywords_int32_t w;
	uint8_t buf[512];
	size_t n;

	edge_keywords_Everything_init(&e);
	edge_keywords_int32_t_init(&w);
	w.value = 5;
	e.default_ = 1;
	e.register_ = 2;
	e.int_ = 3;
	e.class_ = rdmx_str_c("cls");
	e.NULL_ = rdmx_str_c("null");
	e.INT_MAX_ = 9;
	e.wrapped = &w;
	e.switch_case = edge_keywords_Everything_switch_goto;
	e.goto_ = 4;
	e.has_volatile_ = true;
	e.volatile_ = 0;
	n = edge_keywords_Everything_encoded_size(&e);
	cr_assert(n <= sizeof(buf));
	ASSERT_OK(edge_keywords_Everything_encode(&e, buf, n));
	ASSERT_OK(edge_keywords_Everything_decode(&back, buf, n, &arena, NULL));
	cr_assert_eq(back.default_, 1);
	cr_assert_eq(back.register_, 2);
	cr_assert_eq(back.int_, 3);
	cr_assert(rdmx_str_eq(back.class_, "cls"));
	cr_assert(rdmx_str_eq(back.NULL_, "null"));
	cr_assert_eq(back.INT_MAX_, 9);
	cr_assert_eq(back.wrapped->value, 5);
	cr_assert_eq(back.switch_case, edge_keywords_Everything_switch_goto);
	cr_assert_eq(back.goto_, 4);
	cr_assert(back.has_volatile_);
}

Test(corpus, enum_aliases_and_negative_values)
{
	cr_assert_eq(edge_numbers_Alias_ALIAS_STARTED, edge_numbers_Alias_ALIAS_RUNNING);
	cr_assert_eq(edge_numbers_Alias_ALIAS_NEG, -1);
	cr_assert_eq((long long)edge_numbers_Alias_ALIAS_MIN, -2147483648LL);
	cr_assert_eq(edge_numbers_Alias_ALIAS_HEX, 16);
	cr_assert_eq(edge_numbers_Alias_ALIAS_OCT, 17);
}

Test(corpus, json_well_known_types_through_the_generated_decoder)
{
	const struct gen_message *m = pbschema_message(&schema, "edge.wkt.AllWkt");
	struct jbuf wire = {0}, out = {0};
	edge_wkt_AllWkt a;
	char err[256];
	const char *in;

	cr_assert_not_null(m);
	in = "{\"any\": {\"@type\": \"type.googleapis.com/google.protobuf.Duration\", \"value\": "
	     "\"2s\"},"
	     " \"duration\": \"-1.500s\", \"empty\": {}, \"mask\": \"displayName,address.zipCode\","
	     " \"struct\": {\"a\": [1, \"x\", true, null, {\"b\": 2.5}]}, \"value\": \"str\","
	     " \"list\": [1, 2], \"time\": \"2024-05-01T12:00:00.250+02:00\", \"i32\": \"42\","
	     " \"str\": \"wrapped\", \"times\": [\"1970-01-01T00:00:01Z\"], \"values\": {\"k\": "
	     "null},"
	     " \"null\": null}";
	cr_assert_eq(pbjson_encode_text(m, in, &wire, err, 256), 0, "%s", err);
	ASSERT_OK(edge_wkt_AllWkt_decode(&a, wire.data, wire.len, &arena, NULL));
	cr_assert_not_null(a.duration);
	cr_assert_eq(a.duration->seconds, -1);
	cr_assert_eq(a.duration->nanos, -500000000);
	cr_assert_not_null(a.time);
	cr_assert_eq(a.time->seconds, 1714564800 - 7200);
	cr_assert_eq(a.time->nanos, 250000000);
	cr_assert_not_null(a.i32);
	cr_assert_eq(a.i32->value, 42);
	cr_assert(rdmx_str_eq(a.str->value, "wrapped"));
	cr_assert_eq(a.mask->n_paths, 2);
	cr_assert(rdmx_str_eq(a.mask->paths[0], "display_name"));
	cr_assert(rdmx_str_eq(a.mask->paths[1], "address.zip_code"));
	cr_assert(rdmx_str_eq(a.any->type_url, "type.googleapis.com/google.protobuf.Duration"));
	cr_assert_eq(a.struct_->n_fields, 1);
	cr_assert(rdmx_str_eq(a.struct_->fields[0].key, "a"));
	cr_assert_eq(a.struct_->fields[0].value->kind_case, google_protobuf_Value_kind_list_value);
	cr_assert_eq(a.struct_->fields[0].value->list_value->n_values, 5);
	cr_assert_eq(a.value->kind_case, google_protobuf_Value_kind_string_value);
	cr_assert_eq(a.n_values, 1);
	cr_assert_eq(a.values[0].value->kind_case, google_protobuf_Value_kind_null_value);

	/* and back: the generated encoder's bytes print as proto3 JSON */
	{
		size_t n = edge_wkt_AllWkt_encoded_size(&a);
		uint8_t *b = malloc(n);
		cr_assert_not_null(b);
		ASSERT_OK(edge_wkt_AllWkt_encode(&a, b, n));
		cr_assert_eq(pbjson_decode(m, b, n, &out, err, sizeof(err)), 0, "%s", err);
		free(b);
	}
	cr_assert_str_eq(out.data,
	                 "{\n"
	                 "  \"any\": {\n"
	                 "    \"@type\": \"type.googleapis.com/google.protobuf.Duration\",\n"
	                 "    \"value\": \"2s\"\n"
	                 "  },\n"
	                 "  \"duration\": \"-1.500s\",\n"
	                 "  \"empty\": {},\n"
	                 "  \"mask\": \"displayName,address.zipCode\",\n"
	                 "  \"struct\": {\n"
	                 "    \"a\": [\n"
	                 "      1.0,\n"
	                 "      \"x\",\n"
	                 "      true,\n"
	                 "      null,\n"
	                 "      {\n"
	                 "        \"b\": 2.5\n"
	                 "      }\n"
	                 "    ]\n"
	                 "  },\n"
	                 "  \"value\": \"str\",\n"
	                 "  \"list\": [\n"
	                 "    1.0,\n"
	                 "    2.0\n"
	                 "  ],\n"
	                 "  \"time\": \"2024-05-01T10:00:00.250Z\",\n"
	                 "  \"i32\": 42,\n"
	                 "  \"str\": \"wrapped\",\n"
	                 "  \"times\": [\n"
	                 "    \"1970-01-01T00:00:01Z\"\n"
	                 "  ],\n"
	                 "  \"values\": {\n"
	                 "    \"k\": null\n"
	                 "  }\n"
	                 "}");
	jbuf_free(&wire);
	jbuf_free(&out);
}

Test(corpus, json_errors_name_the_field_path)
{
	const struct gen_message *m = pbschema_message(&schema, "edge.wkt.AllWkt");
	const struct {
		const char *json, *why;
	} cases[] = {
	    {"{\"time\": \"yesterday\"}", "time: \"yesterday\" is not an RFC 3339 time"},
	    {"{\"duration\": \"5 minutes\"}", "duration: \"5 minutes\" is not a duration"},
	    {"{\"i32\": \"12x\"}", "i32: \"12x\" is not an integer"},
	    {"{\"i32\": 3000000000}", "i32: the value is out of the int32 range"},
	    {"{\"times\": [\"1970-01-01T00:00:00Z\", 5]}", "times[1]: a Timestamp is an RFC 3339"},
	    {"{\"any\": {\"@type\": \"type.googleapis.com/no.Such\"}}", "any: \"@type\""},
	    {"{\"values\": {\"k\": {\"a\": [1, {\"b\": []}]}}, \"nope\": 1}", "no field \"nope\""},
	    {"{\"mask\": 5}", "mask: a FieldMask is a string"},
	};
	struct jbuf out = {0};
	char err[256];

	cr_assert_not_null(m);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		cr_assert_neq(pbjson_encode_text(m, cases[i].json, &out, err, 256), 0,
		              "%s was accepted", cases[i].json);
		cr_assert(strstr(err, cases[i].why), "%s: '%s' lacks '%s'", cases[i].json, err,
		          cases[i].why);
		jbuf_free(&out);
	}
}

Test(corpus, json_name_and_camel_case)
{
	struct pbschema s;
	const char *inc[] = {CORPUS_DIR};
	const struct gen_message *m;
	struct jbuf wire = {0}, out = {0};
	char err[256];
	edge_opts_Options o;

	cr_assert_eq(pbschema_load(&s, CORPUS_DIR "/edge/options_everywhere.proto", inc, 1, stderr),
	             0);
	m = msg_of(&s, "edge.opts.Svc/Get");
	/* the proto name and the JSON names are all accepted on input */
	cr_assert_eq(
	    pbjson_encode_text(m,
	                       "{\"renamed\": \"a\", \"defaultJson\": \"b\", \"packedScalars\": 3,"
	                       " \"ints_unpacked\": [1, \"2\"], \"big\": \"-9007199254740993\","
	                       " \"status\": \"STATUS_FINE\"}",
	                       &wire, err, 256),
	    0, "%s", err);
	ASSERT_OK(edge_opts_Options_decode(&o, wire.data, wire.len, &arena, NULL));
	cr_assert(rdmx_str_eq(o.renamed, "a"));
	cr_assert_eq(o.packed_scalars, 3);
	cr_assert_eq(o.n_ints_unpacked, 2);
	cr_assert_eq(o.ints_unpacked[1], 2);
	cr_assert_eq(o.big, -9007199254740993LL);
	cr_assert_eq(o.status, edge_opts_Options_Status_STATUS_OK); /* an alias */
	cr_assert_eq(pbjson_decode(m, wire.data, wire.len, &out, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out.data, "{\n"
	                           "  \"packedScalars\": 3,\n"
	                           "  \"intsUnpacked\": [\n"
	                           "    1,\n"
	                           "    2\n"
	                           "  ],\n"
	                           "  \"renamedField\": \"a\",\n"
	                           "  \"defaultJson\": \"b\",\n"
	                           "  \"big\": \"-9007199254740993\",\n"
	                           "  \"status\": \"STATUS_OK\"\n"
	                           "}");
	jbuf_free(&wire);
	jbuf_free(&out);
	pbschema_fini(&s);
}

Test(corpus, proto2_groups_and_defaults_through_json_and_the_generated_codecs)
{
	struct pbschema s;
	const char *inc[] = {CORPUS_DIR};
	const struct gen_message *m;
	struct jbuf wire = {0}, out = {0};
	char err[256];
	legacy2_store_Item it;

	cr_assert_eq(pbschema_load(&s, CORPUS_DIR "/legacy2/store/inventory.proto", inc, 1, stderr),
	             0);
	m = pbschema_message(&s, "legacy2.store.Item");
	cr_assert_not_null(m);
	cr_assert_eq(pbjson_encode_text(m,
	                                "{\"id\": \"7\", \"sku\": \"A-1\", \"shelf\": 3,"
	                                " \"dimensions\": {\"width\": 2.5, \"height\": 1},"
	                                " \"note\": [{\"author\": \"x\"}, {\"text\": \"y\"}],"
	                                " \"manufactured\": {\"plant\": \"P\"}}",
	                                &wire, err, 256),
	             0, "%s", err);
	ASSERT_OK(legacy2_store_Item_decode(&it, wire.data, wire.len, &arena, NULL));
	cr_assert_eq(it.id, 7);
	cr_assert(rdmx_str_eq(it.sku, "A-1"));
	cr_assert(it.has_shelf);
	cr_assert_eq(it.shelf, 3);
	/* absent: the proto2 defaults */
	cr_assert(!it.has_title);
	cr_assert(rdmx_str_eq(it.title, "untitled \"item\"\t!!"));
	cr_assert_eq(it.condition, legacy2_store_Condition_NEW);
	cr_assert(isinf(it.weight_kg) && it.weight_kg > 0);
	cr_assert(isnan(it.ratio));
	cr_assert_eq(it.bin, 0xBEEF);
	cr_assert_eq(it.barcode, UINT64_MAX);
	/* groups: message fields */
	cr_assert_not_null(it.dimensions);
	cr_assert_eq(it.dimensions->width, 2.5);
	cr_assert_eq(it.dimensions->depth, 1, "a group's own default");
	cr_assert_eq(it.n_note, 2);
	cr_assert(rdmx_str_eq(it.note[1].text, "y"));
	cr_assert_eq(it.source_case, legacy2_store_Item_source_manufactured);
	cr_assert(rdmx_str_eq(it.manufactured->plant, "P"));
	cr_assert_eq(it.manufactured->line, 1);
	{
		size_t n = legacy2_store_Item_encoded_size(&it);
		uint8_t *b = malloc(n);
		cr_assert_not_null(b);
		ASSERT_OK(legacy2_store_Item_encode(&it, b, n));
		cr_assert_eq(pbjson_decode(m, b, n, &out, err, sizeof(err)), 0, "%s", err);
		free(b);
	}
	cr_assert_str_eq(out.data, "{\n"
	                           "  \"id\": \"7\",\n"
	                           "  \"sku\": \"A-1\",\n"
	                           "  \"shelf\": 3,\n"
	                           "  \"dimensions\": {\n"
	                           "    \"width\": 2.5,\n"
	                           "    \"height\": 1.0\n"
	                           "  },\n"
	                           "  \"note\": [\n"
	                           "    {\n"
	                           "      \"author\": \"x\"\n"
	                           "    },\n"
	                           "    {\n"
	                           "      \"text\": \"y\"\n"
	                           "    }\n"
	                           "  ],\n"
	                           "  \"manufactured\": {\n"
	                           "    \"plant\": \"P\"\n"
	                           "  }\n"
	                           "}");
	jbuf_free(&wire);
	jbuf_free(&out);
	pbschema_fini(&s);
}

/* the reflection text of a proto2 file is proto2 text protoc would take
 * (required fields say so) and reads back as the same model */
Test(corpus, proto2_reflection_text_reads_back)
{
	struct gen_ctx ctx, back;
	struct gen_file *f;
	struct gen_buf text = {0};
	const struct gen_message *item;

	gen_ctx_init(&ctx, stderr);
	ctx.diag = NULL; /* the extension warnings */
	gen_vec_push(&ctx.pool, &ctx.include_dirs, (void *)CORPUS_DIR);
	f = gen_load(&ctx, CORPUS_DIR "/legacy2/store/inventory.proto", true);
	cr_assert(f && gen_resolve(&ctx));
	gen_print_proto(&ctx, f, &text);
	cr_assert(strstr(text.data, "syntax = \"proto2\";\n"), "%s", text.data);
	cr_assert(strstr(text.data, "  required uint64 id = 1;\n"), "%s", text.data);
	cr_assert(strstr(text.data, "  optional .legacy2.store.Item.Dimensions dimensions = 20;\n"),
	          "%s", text.data);
	cr_assert(strstr(text.data, "    .legacy2.store.Item.Manufactured manufactured = 23;\n"),
	          "a oneof member has no label: %s", text.data);

	gen_ctx_init(&back, stderr);
	back.mem_path = "legacy2/store/inventory.proto";
	back.mem_text = text.data;
	back.mem_len = text.len;
	f = gen_load(&back, back.mem_path, true);
	cr_assert(f && gen_resolve(&back), "%s", text.data);
	item = f->messages.items[1];
	cr_assert_str_eq(item->full_name, "legacy2.store.Item");
	cr_assert_eq(((const struct gen_field *)item->fields.items[0])->label, GL_NONE);
	gen_buf_free(&text);
	gen_ctx_fini(&back);
	gen_ctx_fini(&ctx);
}
