/* proto2 schemas through generated code (protos/proto2.proto): groups are
 * message fields (the group's type is the nested message protoc defines,
 * the field is its lower-case name), on the wire a nested map like any
 * message. */
#include "codegen_test.h"
#include "proto2.rdmx.h"

DEFINE_ENCODE_NEW(p2_Doc)

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
	static const uint8_t want[] = {0x81, 0x02, 0x81, 0x01, 0xa1, 'a'};
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
