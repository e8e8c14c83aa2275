/* rdmx__lgroup_remove (provider.h): the member table both providers' listen
 * groups keep. A member leaves, the later ones move down in order, the
 * member whose turn it was keeps it, the turn stays in range; a context
 * that is not a member changes nothing. */
#include "helpers.h"
#include "provider.h"

Test(lgroup_remove, members_move_down_and_the_turn_stays_in_range)
{
	int a, b, c, d, e;
	int *m[4] = {&a, &b, &c, &d};
	int *gone = &b, *stranger = &e;
	unsigned n = 4, next = 3;

	rdmx__lgroup_remove(m, sizeof(m[0]), &n, &next, &gone);
	cr_assert_eq(n, 3);
	cr_assert(m[0] == &a && m[1] == &c && m[2] == &d, "order kept");
	cr_assert_eq(next, 2, "d's turn: d, now at 2, keeps it");
	rdmx__lgroup_remove(m, sizeof(m[0]), &n, &next, &stranger);
	cr_assert_eq(n, 3, "not a member: nothing removed");
	next = 1;
	gone = &d;
	rdmx__lgroup_remove(m, sizeof(m[0]), &n, &next, &gone);
	cr_assert_eq(n, 2);
	cr_assert_eq(next, 1);
	cr_assert(m[0] == &a && m[1] == &c);
	gone = &c; /* whose turn it is, the last one, leaves: the turn wraps */
	rdmx__lgroup_remove(m, sizeof(m[0]), &n, &next, &gone);
	cr_assert_eq(n, 1);
	cr_assert_eq(next, 0);
	m[1] = &c;
	n = 2;
	next = 1;
	gone = &a; /* before c, whose turn it is: c keeps it */
	rdmx__lgroup_remove(m, sizeof(m[0]), &n, &next, &gone);
	cr_assert_eq(next, 0);
	cr_assert(m[0] == &c);
	gone = &c;
	rdmx__lgroup_remove(m, sizeof(m[0]), &n, &next, &gone);
	cr_assert_eq(n, 0, "the last member left");
}
