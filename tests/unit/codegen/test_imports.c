/* Types from an imported file (protos/imp_main.proto imports imp_dep.proto). */
#include "codegen_test.h"
#include "imp_dep.rdmx.h"

/* imp_main has a service: its messages are exercised through the encoder of
 * imp_dep only here (the stubs are linked by test_services). */

DEFINE_ENCODE_NEW(imp_dep_Point)

Test(imports, dependency_types)
{
	imp_dep_Point p, q;
	struct rdmx_arena a;
	rdmx_arena_init(&a, NULL, 0, 0);
	imp_dep_Point_init(&p);
	p.x = -1;
	p.y = 1 << 30;
	free(ROUNDTRIP(imp_dep_Point, &p, &q, &a, NULL));
	cr_assert_eq(q.x, -1);
	cr_assert_eq(q.y, 1 << 30);
	cr_assert_eq(imp_dep_Shape_SHAPE_CIRCLE, 1);
	rdmx_arena_fini(&a);
}
