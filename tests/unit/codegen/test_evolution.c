/* Schema evolution (protos/evo_v1.proto, evo_v2.proto): a v2 peer adds
 * fields, a message, a map, a oneof, an enum value, widens int32 to int64 and
 * drops an optional field; v1 and v2 still read each other. */
#include <math.h>

#include "codegen_test.h"
#include "evo_v1.rdmx.h"
#include "evo_v2.rdmx.h"

DEFINE_ENCODE_NEW(evo_v1_User)
DEFINE_ENCODE_NEW(evo_v2_User)

static struct rdmx_arena arena;

static void setup(void)
{
	rdmx_arena_init(&arena, NULL, 0, 0);
}

static void teardown(void)
{
	rdmx_arena_fini(&arena);
}

TestSuite(evolution, .init = setup, .fini = teardown);

Test(evolution, new_writer_old_reader_skips_unknown_fields)
{
	evo_v2_User u;
	evo_v2_Address home, office;
	evo_v2_User_ScoresEntry scores[2];
	struct rdmx_str emails[2], lines[2];
	int64_t ids[3] = {1, -2, INT64_MAX};
	evo_v1_User old;
	size_t n;
	uint8_t *b;
	evo_v2_User_init(&u);
	evo_v2_Address_init(&home);
	evo_v2_Address_init(&office);
	u.name = rdmx_str_c("ada");
	u.age = 36;
	u.status = evo_v2_Status_STATUS_BANNED; /* a value v1 does not know */
	u.ids = ids;
	u.n_ids = 3;
	emails[0] = rdmx_str_c("ada@example.org");
	emails[1] = rdmx_str_c("a@b.c");
	u.emails = emails;
	u.n_emails = 2;
	lines[0] = rdmx_str_c("12 Analytical St");
	lines[1] = rdmx_str_c("London");
	home.city = rdmx_str_c("London");
	home.lines = lines;
	home.n_lines = 2;
	u.addr = &home;
	scores[0].key = rdmx_str_c("chess");
	scores[0].value = 2100;
	scores[1].key = rdmx_str_c("go");
	scores[1].value = -1;
	u.scores = scores;
	u.n_scores = 2;
	office.city = rdmx_str_c("Cambridge");
	u.contact_case = evo_v2_User_contact_office;
	u.office = &office;
	u.rating = 4.5;

	b = ENCODE_NEW(evo_v2_User, &u, &n);
	cr_assert_eq(evo_v1_User_decode(&old, b, n, &arena, NULL), 0);
	cr_assert(rdmx_str_eq(old.name, "ada"));
	cr_assert_eq(old.age, 36);
	cr_assert_eq((int)old.status, 2, "unknown enum values pass through");
	cr_assert_eq(old.n_ids, 3);
	cr_assert_eq(old.ids[2], INT64_MAX);
	cr_assert(!old.has_nick);
	free(b);
}

Test(evolution, old_writer_new_reader_gets_defaults)
{
	evo_v1_User old;
	evo_v2_User u;
	size_t n;
	uint8_t *b;
	evo_v1_User_init(&old);
	old.name = rdmx_str_c("bob");
	old.age = INT32_MIN;
	old.has_nick = true; /* a field v2 removed (reserved 3) */
	old.nick = rdmx_str_c("bobby");
	old.status = evo_v1_Status_STATUS_ACTIVE;
	b = ENCODE_NEW(evo_v1_User, &old, &n);
	cr_assert_eq(evo_v2_User_decode(&u, b, n, &arena, NULL), 0);
	cr_assert(rdmx_str_eq(u.name, "bob"));
	cr_assert_eq(u.age, INT32_MIN, "int32 -> int64 keeps the value");
	cr_assert_eq(u.status, evo_v2_Status_STATUS_ACTIVE);
	cr_assert_eq(u.n_emails, 0);
	cr_assert_null(u.addr);
	cr_assert_eq(u.n_scores, 0);
	cr_assert_eq(u.contact_case, evo_v2_User_contact_NOT_SET);
	cr_assert(u.rating == 0.0 && !signbit(u.rating));
	free(b);
}

Test(evolution, v2_values_v1_cannot_hold_are_refused_not_truncated)
{
	evo_v2_User u;
	evo_v1_User old;
	size_t n;
	uint8_t *b;
	evo_v2_User_init(&u);
	u.age = (int64_t)INT32_MAX + 1;
	b = ENCODE_NEW(evo_v2_User, &u, &n);
	cr_assert_eq(evo_v1_User_decode(&old, b, n, &arena, NULL), RDMX_E_PROTOCOL);
	free(b);
}

Test(evolution, round_trip_through_an_old_peer_loses_only_unknown_fields)
{
	evo_v2_User u, back;
	evo_v1_User old;
	size_t n, n1;
	uint8_t *b, *b1;
	evo_v2_User_init(&u);
	u.name = rdmx_str_c("eve");
	u.age = 7;
	u.rating = 1.0;
	u.contact_case = evo_v2_User_contact_phone;
	u.phone = rdmx_str_c("+44");
	b = ENCODE_NEW(evo_v2_User, &u, &n);
	cr_assert_eq(evo_v1_User_decode(&old, b, n, &arena, NULL), 0);
	b1 = ENCODE_NEW(evo_v1_User, &old, &n1);
	cr_assert_eq(evo_v2_User_decode(&back, b1, n1, &arena, NULL), 0);
	cr_assert(rdmx_str_eq(back.name, "eve"));
	cr_assert_eq(back.age, 7);
	cr_assert_eq(back.contact_case, evo_v2_User_contact_NOT_SET);
	cr_assert(back.rating == 0.0);
	free(b);
	free(b1);
}
