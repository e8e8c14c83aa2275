/* lgroup.c: the verbs provider's shared cm listener. Connection requests
 * are dealt in turn (the listener first, then its members in the order
 * they joined); one dealt to a member moves to the member's cm channel and
 * waits in its dealt list, with its eventfd kicked; a failed move leaves it
 * with the listener; a member that leaves is dealt nothing more and rejects
 * what it had not taken. rdma_migrate_id is redefined here and records its
 * calls (rdma_reject / rdma_destroy_id: mock.c). */
#include "mock.h"

#include <string.h>

static struct rdma_event_channel *migrated_to[8];
static int n_migrated, migrate_fails;

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	(void)id;
	if (migrate_fails) {
		errno = EINVAL;
		return -1;
	}
	migrated_to[n_migrated++] = channel;
	return 0;
}

struct member {
	struct rdmx_ctx ctx;
	struct verbs_ctx vc;
	struct rdma_event_channel cm;
};

static void member_init(struct member *m)
{
	memset(m, 0, sizeof(*m));
	m->ctx.prov = &m->vc;
	m->vc.ctx = &m->ctx;
	m->vc.cm = &m->cm; /* the mock's cm_channel answers 0 for a channel */
	m->vc.dealt_tail = &m->vc.dealt;
}

static struct verbs_cm_ev request(struct rdma_cm_id *id)
{
	struct verbs_cm_ev e;

	memset(&e, 0, sizeof(e));
	e.type = RDMA_CM_EVENT_CONNECT_REQUEST;
	e.id = id;
	return e;
}

static void reset(void)
{
	mock_reset();
	n_migrated = migrate_fails = 0;
}

Test(lgroup, requests_are_dealt_in_turn_listener_first)
{
	struct member l, a, b;
	struct rdma_cm_id ids[6];
	bool dealt[6];

	reset();
	member_init(&l);
	member_init(&a);
	member_init(&b);
	cr_assert_eq(rdmx__verbs_listen_join(&a.ctx, &l.ctx), 0);
	cr_assert_eq(rdmx__verbs_listen_join(&b.ctx, &l.ctx), 0);
	cr_assert_eq(rdmx__verbs_listen_join(&a.ctx, &l.ctx), RDMX_E_BAD_STATE, "joined twice");
	for (int i = 0; i < 6; i++) {
		struct verbs_cm_ev e = request(&ids[i]);

		dealt[i] = rdmx__verbs_lgroup_deal(&l.vc, &e);
	}
	/* l serves 0 and 3 itself; a gets 1 and 4, b gets 2 and 5 */
	cr_assert(!dealt[0] && dealt[1] && dealt[2] && !dealt[3] && dealt[4] && dealt[5]);
	cr_assert_eq(n_migrated, 4);
	cr_assert(migrated_to[0] == &a.cm && migrated_to[1] == &b.cm && migrated_to[2] == &a.cm &&
	          migrated_to[3] == &b.cm);
	cr_assert(atomic_load(&a.vc.dealt_due) && atomic_load(&b.vc.dealt_due));
	cr_assert(!atomic_load(&l.vc.dealt_due));
	cr_assert_eq(M.kicks, 4, "a member's eventfd is kicked per request");
	cr_assert(a.vc.dealt && a.vc.dealt->e.id == &ids[1] && a.vc.dealt->next->e.id == &ids[4],
	          "oldest first");
	cr_assert_null(a.vc.dealt->next->next);
	/* b leaves: rejects what it had not taken; a and l share from now on */
	rdmx__verbs_lgroup_leave(&b.vc);
	cr_assert_null(b.vc.lgroup);
	cr_assert_eq(M.nrejected, 2);
	cr_assert(M.rejected[0] == &ids[2] && M.rejected[1] == &ids[5]);
	cr_assert(M.destroyed[0] == &ids[2] && M.destroyed[1] == &ids[5]);
	cr_assert_null(b.vc.dealt);
	cr_assert(!atomic_load(&b.vc.dealt_due));
	for (int i = 0; i < 4; i++) {
		struct verbs_cm_ev e = request(&ids[i]);

		rdmx__verbs_lgroup_deal(&l.vc, &e);
	}
	cr_assert_eq(n_migrated, 6);
	cr_assert(migrated_to[4] == &a.cm && migrated_to[5] == &a.cm, "only a is left to deal to");
	rdmx__verbs_lgroup_leave(&a.vc); /* its two first requests and two new ones */
	cr_assert_eq(M.nrejected, 6);
	rdmx__verbs_lgroup_leave(&l.vc);
	cr_assert_null(l.vc.lgroup);
}

Test(lgroup, a_request_that_cannot_move_stays_with_the_listener)
{
	struct member l, a;
	struct rdma_cm_id id;
	struct verbs_cm_ev e = request(&id);

	reset();
	member_init(&l);
	member_init(&a);
	cr_assert_eq(rdmx__verbs_listen_join(&a.ctx, &l.ctx), 0);
	cr_assert(!rdmx__verbs_lgroup_deal(&l.vc, &e), "the listener's turn");
	migrate_fails = 1;
	cr_assert(!rdmx__verbs_lgroup_deal(&l.vc, &e), "a's turn, but the id did not move");
	cr_assert_null(a.vc.dealt);
	cr_assert(!atomic_load(&a.vc.dealt_due));
	cr_assert_eq(M.kicks, 0);
	rdmx__verbs_lgroup_leave(&a.vc);
	rdmx__verbs_lgroup_leave(&l.vc);
	cr_assert_eq(M.nrejected, 0);
}

Test(lgroup, without_a_group_the_listener_serves_everything)
{
	struct member l;
	struct rdma_cm_id id;
	struct verbs_cm_ev e = request(&id);

	reset();
	member_init(&l);
	cr_assert(!rdmx__verbs_lgroup_deal(&l.vc, &e));
	cr_assert_eq(n_migrated, 0);
	rdmx__verbs_lgroup_leave(&l.vc); /* not in a group: nothing to do */
	cr_assert_eq(M.nrejected, 0);
}
