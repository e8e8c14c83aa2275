/* proto2 schemas through generated code (protos/proto2.proto): groups are
 * message fields (the group's type is the nested message protoc defines,
 * the field is its lower-case name), on the wire a nested map like any
 * message; [default = ...] values are what X_init and the decoder give a
 * field (a closed enum's first value when none is given); a required field
 * is always written and a message without one does not decode, and an
 * optional one at its default is not written unless it is present. */
#include <math.h>

#include "codegen_test.h"
#include "proto2.rdmx.h"

DEFINE_ENCODE_NEW(p2_Doc)
DEFINE_ENCODE_NEW(p2_Defaults)
DEFINE_ENCODE_NEW(p2_Envelope)
DEFINE_ENCODE_NEW(p2_Choice)

static struct rdmx_arena arena;

static void setup(void)
{
	rdmx_arena_init(&arena, NULL, 0, 0);
}

static void teardown(void)
{
	rdmx_arena_fini(&arena);
}

TestSuite(proto2, .init = setup, .fini = teardown);

Test(proto2, group_is_a_nested_message_on_the_wire)
{
	p2_Doc d;
	p2_Doc_Meta meta;
	/* {1: "" (required: written at its default), 2: {1: "a"}} */
	static const uint8_t want[] = {0x82, 0x01, 0xa0, 0x02, 0x81, 0x01, 0xa1, 'a'};
	uint8_t *b;
	size_t n;

	p2_Doc_init(&d);
	p2_Doc_Meta_init(&meta);
	meta.has_author = true;
	meta.author = rdmx_str_c("a");
	d.meta = &meta;
	b = ENCODE_NEW(p2_Doc, &d, &n);
	cr_assert_eq(n, sizeof(want));
	cr_assert_eq(memcmp(b, want, n), 0);
	free(b);
}

Test(proto2, groups_round_trip)
{
	p2_Doc d, back;
	p2_Doc_Meta meta;
	p2_Doc_Section sec[2];
	p2_Doc_Blob blob;
	struct rdmx_str tags[2] = {{"x", 1}, {"yz", 2}};
	static const uint8_t raw[] = {0, 1, 2};
	uint8_t *b;

	p2_Doc_init(&d);
	d.title = rdmx_str_c("t");
	p2_Doc_Meta_init(&meta);
	meta.n_tags = 2;
	meta.tags = tags;
	d.meta = &meta;
	p2_Doc_Section_init(&sec[0]);
	p2_Doc_Section_init(&sec[1]);
	sec[0].level = 1;
	sec[1].level = 2;
	sec[1].has_heading = true;
	sec[1].heading = rdmx_str_c("two");
	d.n_section = 2;
	d.section = sec;
	p2_Doc_Blob_init(&blob);
	blob.has_data = true;
	blob.data.data = raw;
	blob.data.len = sizeof(raw);
	d.body_case = p2_Doc_body_blob;
	d.blob = &blob;

	b = ROUNDTRIP(p2_Doc, &d, &back, &arena, NULL); /* back points into b */
	cr_assert(rdmx_str_eq(back.title, "t"));
	cr_assert_not_null(back.meta);
	cr_assert_eq(back.meta->has_author, false);
	cr_assert_eq(back.meta->n_tags, 2);
	cr_assert(rdmx_str_eq(back.meta->tags[1], "yz"));
	cr_assert_eq(back.n_section, 2);
	cr_assert_eq(back.section[0].level, 1);
	cr_assert_eq(back.section[1].level, 2);
	cr_assert(back.section[1].has_heading);
	cr_assert(rdmx_str_eq(back.section[1].heading, "two"));
	cr_assert_eq(back.body_case, p2_Doc_body_blob);
	cr_assert_eq(back.blob->data.len, sizeof(raw));
	cr_assert_eq(memcmp(back.blob->data.data, raw, sizeof(raw)), 0);
	free(b);
}

static void assert_defaults(const p2_Defaults *d)
{
	static const uint8_t raw[] = {0, 1, '\\', 'z'};
	cr_assert(rdmx_str_eq(d->unit, "kg"));
	cr_assert_eq(d->on, true);
	cr_assert_eq(d->big, UINT64_MAX);
	cr_assert_eq(d->min, INT64_MIN);
	cr_assert_eq(d->perm, 0777);
	cr_assert_eq(d->level, p2_Level_LOW);
	cr_assert_eq(d->ratio, 1.5e-3f);
	cr_assert_eq(d->worst, p2_Level_NEG);
	cr_assert_eq(d->has_count, false);
	cr_assert_eq(d->count, -42);
	cr_assert(isinf(d->low) && d->low < 0);
	cr_assert(isnan(d->missing));
	cr_assert_eq(d->raw.len, sizeof(raw));
	cr_assert_eq(memcmp(d->raw.data, raw, sizeof(raw)), 0);
	cr_assert_eq(d->empty.len, 0);
	cr_assert_eq(d->zero, 0);
	cr_assert_eq(d->pick_case, p2_Defaults_pick_NOT_SET);
	cr_assert_eq(d->n_levels, 0);
	cr_assert_eq(d->octal, 8.0, "010 is octal, as protoc reads it");
	cr_assert_eq(d->hex, -16.0f);
	cr_assert(isnan(d->unknown));
}

Test(proto2, init_sets_the_defaults)
{
	p2_Defaults d;
	p2_Doc doc;
	p2_Defaults_init(&d);
	assert_defaults(&d);
	p2_Doc_init(&doc); /* nothing to set: all zero */
	cr_assert_eq(doc.title.len, 0);
	cr_assert_null(doc.meta);
}

Test(proto2, required_fields_are_written_at_their_defaults_optional_ones_are_not)
{
	p2_Defaults d;
	uint8_t *b;
	size_t n;
	p2_Defaults_init(&d);
	b = ENCODE_NEW(p2_Defaults, &d, &n);
	cr_assert_eq(b[0], 0x8b, "a map of the 11 required fields");
	cr_assert_eq(b[1], 0x01, "unit first");
	cr_assert_eq(b[2], 0xa2);
	cr_assert_eq(memcmp(b + 3, "kg", 2), 0);
	free(b);
}

Test(proto2, absent_fields_decode_to_their_defaults)
{
	p2_Defaults d, back;
	uint8_t *b;
	size_t n;
	p2_Defaults_init(&d);
	b = ENCODE_NEW(p2_Defaults, &d, &n); /* the required fields only */
	memset(&back, 0x5a, sizeof(back));
	cr_assert_eq(p2_Defaults_decode(&back, b, n, &arena, NULL), 0);
	assert_defaults(&back);
	free(b);
}

Test(proto2, a_message_without_a_required_field_does_not_decode)
{
	static const uint8_t empty[] = {0x80};
	/* {1: nil, 2: {}}: a nil value is an absent field */
	static const uint8_t nil_title[] = {0x82, 0x01, 0xc0, 0x02, 0x80};
	/* {1: "t", 3: [{2: "h"}]}: the section lacks its level */
	static const uint8_t deep[] = {0x82, 0x01, 0xa1, 't', 0x03, 0x91, 0x81, 0x02, 0xa1, 'h'};
	/* the same with the level: fine */
	static const uint8_t ok[] = {0x82, 0x01, 0xa1, 't',  0x03, 0x91,
	                             0x82, 0x01, 0x05, 0x02, 0xa1, 'h'};
	p2_Defaults d;
	p2_Doc doc;
	uint8_t before[sizeof(d)];
	memset(&d, 0x5a, sizeof(d));
	memcpy(before, &d, sizeof(d));
	cr_assert_eq(p2_Defaults_decode(&d, empty, sizeof(empty), &arena, NULL), RDMX_E_PROTOCOL);
	cr_assert_eq(memcmp(before, &d, sizeof(d)), 0, "*out untouched");
	cr_assert_eq(p2_Doc_decode(&doc, empty, sizeof(empty), &arena, NULL), RDMX_E_PROTOCOL);
	cr_assert_eq(p2_Doc_decode(&doc, nil_title, sizeof(nil_title), &arena, NULL),
	             RDMX_E_PROTOCOL);
	cr_assert_eq(p2_Doc_decode(&doc, deep, sizeof(deep), &arena, NULL), RDMX_E_PROTOCOL);
	cr_assert_eq(p2_Doc_decode(&doc, ok, sizeof(ok), &arena, NULL), 0);
	cr_assert_eq(doc.n_section, 1);
	cr_assert_eq(doc.section[0].level, 5);
}

Test(proto2, an_unset_required_message_fails_the_encode)
{
	p2_Envelope env, back;
	p2_Doc doc;
	p2_Envelope_ByNameEntry entry = {{"x", 1}, NULL};
	uint8_t buf[64], *b;
	size_t n;

	p2_Envelope_init(&env);
	n = p2_Envelope_encoded_size(&env);
	cr_assert_leq(n, sizeof(buf));
	cr_assert_eq(p2_Envelope_encode(&env, buf, n), RDMX_E_INVAL, "doc is NULL");

	p2_Doc_init(&doc);
	env.doc = &doc;
	env.n_by_name = 1;
	env.by_name = &entry;
	n = p2_Envelope_encoded_size(&env);
	cr_assert_leq(n, sizeof(buf));
	cr_assert_eq(p2_Envelope_encode(&env, buf, n), RDMX_E_INVAL,
	             "a NULL map value is a Doc without its title");

	entry.value = &doc;
	b = ROUNDTRIP(p2_Envelope, &env, &back, &arena, NULL);
	cr_assert_not_null(back.doc);
	cr_assert_eq(back.n_by_name, 1);
	cr_assert_not_null(back.by_name[0].value);
	free(b);
}

Test(proto2, values_other_than_the_defaults_round_trip)
{
	p2_Defaults d, back;
	uint8_t *b;
	p2_Defaults_init(&d);
	d.unit = rdmx_str_c("");
	d.on = false;
	d.big = 0;
	d.min = 0;
	d.perm = 0;
	d.level = p2_Level_HIGH;
	d.ratio = 0;
	d.worst = p2_Level_LOW;
	d.has_count = true;
	d.count = -42; /* present, at its default: written */
	d.unknown = 1;
	b = ROUNDTRIP(p2_Defaults, &d, &back, &arena, NULL);
	cr_assert_eq(back.unit.len, 0);
	cr_assert_eq(back.on, false);
	cr_assert_eq(back.big, 0);
	cr_assert_eq(back.min, 0);
	cr_assert_eq(back.perm, 0);
	cr_assert_eq(back.level, p2_Level_HIGH);
	cr_assert_eq(back.ratio, 0);
	cr_assert_eq(back.worst, p2_Level_LOW);
	cr_assert(back.has_count);
	cr_assert_eq(back.count, -42);
	cr_assert(isinf(back.low), "unset optional fields keep their defaults");
	cr_assert_eq(back.unknown, 1);
	free(b);
}

Test(proto2, a_oneof_member_at_its_default_is_written_when_set)
{
	p2_Choice c, back;
	uint8_t *b;
	size_t n;
	p2_Choice_init(&c);
	cr_assert_eq(c.value_case, p2_Choice_value_NOT_SET, "the default keeps the oneof unset");
	b = ENCODE_NEW(p2_Choice, &c, &n);
	cr_assert_eq(n, 1);
	free(b);
	c.value_case = p2_Choice_value_level;
	c.level = p2_Level_HIGH; /* its default */
	b = ROUNDTRIP(p2_Choice, &c, &back, &arena, NULL);
	cr_assert_eq(back.value_case, p2_Choice_value_level);
	cr_assert_eq(back.level, p2_Level_HIGH);
	free(b);
}
