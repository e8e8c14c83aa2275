/* cm.c, the passive side: a connection request the context cannot take is
 * refused (rdma_reject, then rdma_destroy_id) and leaves nothing behind:
 * not the engine's connection when the provider's part of it could not be
 * allocated (rdmx_conn_reject: retired by the engine, freed once), nothing
 * at all when the context is at its max_connections. */
#include "mock.h"

#include <stdio.h>
#include <string.h>

struct request {
	struct ibv_device dev;
	struct ibv_context ibv;
	struct rdma_cm_id id;
	struct verbs_cm_ev e;
};

/* The fixture and a connect request on its device ("mock0"); conn: the
 * engine's connection rdmx__conn_new hands out (NULL: the context is full). */
static void setup(struct fixture *f, struct request *r, struct rdmx_conn *conn)
{
	fixture_init(f, 8);
	if (conn)
		memset(conn, 0, sizeof(*conn));
	M.conn_new = conn;
	memset(r, 0, sizeof(*r));
	snprintf(r->dev.name, sizeof(r->dev.name), "mock0");
	r->ibv.device = &r->dev;
	r->id.verbs = &r->ibv;
	r->e.type = RDMA_CM_EVENT_CONNECT_REQUEST;
	r->e.id = &r->id;
}

static void assert_refused(const struct request *r)
{
	cr_assert_eq(M.nrejected, 1);
	cr_assert_eq(M.rejected[0], &r->id);
	cr_assert_eq(M.ndestroyed, 1);
	cr_assert_eq(M.destroyed[0], &r->id, "the refused request's id is destroyed");
	cr_assert_null(r->id.context, "no verbs connection points at the id");
	cr_assert_eq(M.nevents, 0, "no request event reaches the engine");
}

Test(cm, a_request_without_memory_for_its_connection_is_refused)
{
	struct fixture f;
	struct request r;
	struct rdmx_conn conn;

	setup(&f, &r, &conn);
	M.calloc_fails = 1; /* the verbs connection's */
	cr_assert_eq(rdmx__verbs_cm_request(f.vctx, &r.e), 0);
	cr_assert_eq(M.calloc_fails, 0, "the verbs connection was asked for");
	assert_refused(&r);
	cr_assert_eq(M.nconn_rejects, 1, "the engine's connection is given back once");
	cr_assert_eq(M.conn_rejected[0], &conn);
	cr_assert_null(conn.prov, "with no provider part");
	cr_assert_null(f.vctx->conns);
	fixture_fini(&f);
}

Test(cm, a_request_over_max_connections_is_refused)
{
	struct fixture f;
	struct request r;

	setup(&f, &r, NULL);
	cr_assert_eq(rdmx__verbs_cm_request(f.vctx, &r.e), 0);
	assert_refused(&r);
	cr_assert_eq(M.nconn_rejects, 0, "no engine connection was made");
	cr_assert_null(f.vctx->conns);
	fixture_fini(&f);
}

Test(cm, a_request_becomes_a_requested_connection)
{
	struct fixture f;
	struct request r;
	struct rdmx_conn conn;

	setup(&f, &r, &conn);
	cr_assert_eq(rdmx__verbs_cm_request(f.vctx, &r.e), 1);
	cr_assert_eq(M.nrejected, 0);
	cr_assert_eq(M.ndestroyed, 0);
	cr_assert_not_null(conn.prov);
	cr_assert_eq(r.id.context, conn.prov);
	cr_assert_eq(M.nevents, 1);
	cr_assert_eq(M.events[0].conn, &conn);
	cr_assert_eq(M.events[0].ev, RDMX__CONN_EV_REQUEST);
	rdmx__verbs_conn_release(&conn); /* as the engine's reap */
	cr_assert_null(f.vctx->conns);
	fixture_fini(&f);
}
