/* rdma_cm style connections: listen / connect_to_addr / accept / reject,
 * private data both ways, connection ids, user data, peer addresses, max
 * connections on incoming requests, a second request while one connection
 * is served. Side a (RDMX_TEST_DEVICE) listens on
 * RDMX_TEST_ADDR; side b (the peer device) connects. */
#include "conformance.h"

#include <stdlib.h>
#include <string.h>

static struct side A, B;

TestSuite(cm, .timeout = 120);

static const char client_pd[] = "request from the client side"; /* 29 bytes with NUL */
static const char server_pd[] = "accepted!";

static void check_addr(const struct rdmx_conn *c, const char *want_text, int want_port,
                       const char *who)
{
	const struct rdmx_addr *ad = NULL;
	int rc = rdmx_conn_get_addr(c, &ad);
	cr_assert_eq(rc, 0, "%s: rdmx_conn_get_addr -> %s", who, rdmx_err_name(rc));
	enum rdmx_addr_type ty;
	const char *text = NULL;
	uint16_t port = 0;
	ASSERT_OK(rdmx_addr_get_params(ad, &ty, &text, &port));
	cr_assert_str_eq(text, want_text, "%s: peer address %s, expected %s", who, text, want_text);
	if (want_port >= 0)
		cr_assert_eq(port, (uint16_t)want_port, "%s: peer port %u, expected %d", who, port,
		             want_port);
}

Test(cm, private_data_ids_user_data_and_addresses)
{
	static int cmark, smark;
	leak_begin();
	pair_open(&A, &B, 16);
	uint16_t port = listen_any(&A);
	struct rdmx_addr *ad = addr_of(&A, port);
	A.policy = REQ_ACCEPT;
	memcpy(A.accept_pd, server_pd, sizeof(server_pd));
	A.accept_pd_len = sizeof(server_pd);
	A.accept_ud = &smark;
	struct rdmx_conn *cc = NULL;
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, client_pd, sizeof(client_pd), &cmark, &cc));
	cr_assert_not_null(cc);
	ASSERT_OK(rdmx_addr_destroy(&ad));
	void *ud = NULL;
	ASSERT_OK(rdmx_conn_get_user_data(cc, &ud));
	cr_assert_eq(ud, &cmark, "connect_to_addr user data not set on the connection");
	DRIVE_UNTIL(&A, &B, A.established == 1 && B.established == 1);
	drive_for(&A, &B, NULL, 20);

	/* server: one request, with the client's private data */
	cr_assert_eq(A.requests, 1);
	ASSERT_OK(A.accept_rc);
	ASSERT_OK(A.req_pd_rc);
	cr_assert_eq(A.req_pd_len, sizeof(client_pd), "request private data length %zu, sent %zu",
	             A.req_pd_len, sizeof(client_pd));
	cr_assert_arr_eq(A.req_pd, client_pd, sizeof(client_pd), "request private data differs");
	/* client: the accept's private data */
	ASSERT_OK(B.est_pd_rc);
	cr_assert_eq(B.est_pd_len, sizeof(server_pd), "accept private data length %zu, sent %zu",
	             B.est_pd_len, sizeof(server_pd));
	cr_assert_arr_eq(B.est_pd, server_pd, sizeof(server_pd), "accept private data differs");

	/* the same connection objects, ids and user data through the events */
	struct conn_ev *sreq = NULL, *sest = NULL, *cest = NULL;
	for (int i = 0; i < A.nevents; i++) {
		if (A.events[i].kind == CEV_REQUEST)
			sreq = &A.events[i];
		if (A.events[i].kind == CEV_ESTABLISHED)
			sest = &A.events[i];
	}
	for (int i = 0; i < B.nevents; i++)
		if (B.events[i].kind == CEV_ESTABLISHED)
			cest = &B.events[i];
	cr_assert(sreq && sest && cest);
	struct rdmx_conn *sc = sest->conn;
	cr_assert_eq(sreq->conn, sc, "request and established name different connections");
	cr_assert_eq(sest->conn_ud, &smark, "server established callback got user data %p",
	             sest->conn_ud);
	cr_assert_eq(cest->conn, cc, "client established callback names another connection");
	cr_assert_eq(cest->conn_ud, &cmark, "client established callback got user data %p",
	             cest->conn_ud);
	uint32_t sid, cid;
	ASSERT_OK(rdmx_conn_get_id(sc, &sid));
	ASSERT_OK(rdmx_conn_get_id(cc, &cid));
	cr_assert_eq(sest->id, sid);
	cr_assert_eq(cest->id, cid);
	cr_assert_eq(conn_state(sc), RDMX_CONN_ESTABLISHED);
	cr_assert_eq(conn_state(cc), RDMX_CONN_ESTABLISHED);
	struct rdmx_ctx *owner = NULL;
	ASSERT_OK(rdmx_conn_get_ctx(sc, &owner));
	cr_assert_eq(owner, A.ctx);
	ASSERT_OK(rdmx_conn_get_ctx(cc, &owner));
	cr_assert_eq(owner, B.ctx);

	/* peer addresses */
	check_addr(cc, A.addr, port, "client");
	check_addr(sc, B.addr, -1, "server");

	/* the connection carries traffic both ways */
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(&B, 4096, RDMX_ACCESS_ALL, 0);
	pattern_fill(ra->mem, 256, 100);
	pattern_fill(rb->mem + 1024, 256, 101);
	struct rdmx_buf da = lbuf(ra, 2048, 1024), db = lbuf(rb, 2048, 1024);
	struct rdmx_buf sa = lbuf(ra, 0, 256), sb = lbuf(rb, 1024, 256);
	struct tinfo tra = {0}, trb = {0}, tsa = {0}, tsb = {0};
	struct rdmx_task *t;
	post_recv(&A, &da, &tra);
	post_recv(&B, &db, &trb);
	ASSERT_OK(rdmx_task_send_alloc(A.ctx, sc, &sa, &tsa, &t));
	ASSERT_OK(rdmx_task_submit(t));
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cc, &sb, &tsb, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, A.completions == 2 && B.completions == 2);
	ASSERT_DONE_OK(&tra);
	ASSERT_DONE_OK(&trb);
	cr_assert_eq(tra.conn, sc);
	cr_assert_eq(trb.conn, cc);
	cr_assert(pattern_check(db.addr, 256, 100));
	cr_assert(pattern_check(da.addr, 256, 101));

	/* client disconnects: both sides get the disconnected callback with their user data */
	ASSERT_OK(rdmx_conn_disconnect(cc));
	DRIVE_UNTIL(&A, &B, A.disconnects == 1 && B.disconnects == 1);
	drive_for(&A, &B, NULL, 20);
	cr_assert_eq(A.disconnects, 1);
	cr_assert_eq(B.disconnects, 1);
	for (int i = 0; i < A.nevents; i++)
		if (A.events[i].kind == CEV_DISCONNECTED)
			cr_assert_eq(A.events[i].conn_ud, &smark);
	for (int i = 0; i < B.nevents; i++)
		if (B.events[i].kind == CEV_DISCONNECTED)
			cr_assert_eq(B.events[i].conn_ud, &cmark);
	ASSERT_OK(rdmx_ctx_stop_listen(A.ctx));
	pair_close(&A, &B);
	leak_end();
}

Test(cm, reject_reaches_initiator_failure_callback)
{
	static int cmark;
	leak_begin();
	pair_open(&A, &B, 4);
	uint16_t port = listen_any(&A);
	struct rdmx_addr *ad = addr_of(&A, port);
	A.policy = REQ_REJECT;
	struct rdmx_conn *cc = NULL;
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, client_pd, 5, &cmark, &cc));
	DRIVE_UNTIL(&A, &B, B.failures == 1);
	drive_for(&A, &B, NULL, 50);
	cr_assert_eq(A.requests, 1);
	ASSERT_OK(A.accept_rc);
	cr_assert_eq(A.req_pd_len, 5u);
	cr_assert_eq(B.failures, 1, "failure callback ran %d times", B.failures);
	cr_assert_eq(B.established, 0);
	cr_assert_eq(A.established, 0);
	cr_assert_eq(B.events[B.nevents - 1].conn, cc);
	cr_assert_eq(B.events[B.nevents - 1].conn_ud, &cmark);
	/* the listener still serves the next request */
	A.policy = REQ_ACCEPT;
	struct rdmx_conn *c2 = NULL;
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, NULL, &c2));
	DRIVE_UNTIL(&A, &B, A.established == 1 && B.established == 1);
	ASSERT_OK(B.est_pd_rc);
	cr_assert_eq(B.est_pd_len, 0u, "accept without private data delivered %zu bytes",
	             B.est_pd_len);
	ASSERT_OK(rdmx_addr_destroy(&ad));
	pair_close(&A, &B);
	leak_end();
}

/* A listening context that serves one connection reads it without looking
 * at its listener on every poll (tcp provider: once every few polls, and
 * after every wake-up): a second request is still accepted while the first
 * connection carries traffic, and both connections work. */
Test(cm, second_request_while_serving_one)
{
	struct rdmx_conn *c1 = NULL, *c2 = NULL, *s1, *s2;
	/* tcp: the soft NIC thread stays away from contexts that progress
	 * for a whole second (it would accept in their place after 200 us):
	 * the server's own polls must find the requests */
	setenv("RDMX_TCP_NIC_GRACE_US", "1000000", 1);
	leak_begin();
	pair_open(&A, &B, 16);
	uint16_t port = listen_any(&A);
	struct rdmx_addr *ad = addr_of(&A, port);
	A.policy = REQ_ACCEPT;
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, NULL, &c1));
	DRIVE_UNTIL(&A, &B, A.established == 1 && B.established == 1);
	s1 = latest_conn(&A, CEV_ESTABLISHED);
	cr_assert_not_null(s1);
	write_checked(&A, &B, c1, 512, 201);
	write_checked(&B, &A, s1, 512, 202);

	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, NULL, &c2));
	write_checked(&A, &B, c1, 1024, 203); /* the first one, meanwhile */
	DRIVE_UNTIL(&A, &B, A.established == 2 && B.established == 2);
	cr_assert_eq(A.requests, 2);
	s2 = latest_conn(&A, CEV_ESTABLISHED);
	cr_assert(s2 && s2 != s1, "the second request established no new connection");
	write_checked(&A, &B, c2, 512, 204);
	write_checked(&B, &A, s2, 512, 205);
	write_checked(&B, &A, s1, 512, 206);
	ASSERT_OK(rdmx_addr_destroy(&ad));
	ASSERT_OK(rdmx_ctx_stop_listen(A.ctx));
	pair_close(&A, &B);
	leak_end();
}

Test(cm, private_data_too_long)
{
	leak_begin();
	pair_open(&A, &B, 4);
	uint16_t port = listen_any(&A);
	struct rdmx_addr *ad = addr_of(&A, port);
	uint8_t big[RDMX_PRIVATE_DATA_MAX + 1];
	pattern_fill(big, sizeof(big), 110);
	struct rdmx_conn *cc = NULL;
	ASSERT_RC(rdmx_ctx_connect_to_addr(B.ctx, ad, big, sizeof(big), NULL, &cc), RDMX_E_INVAL);
	cr_assert_null(cc);
	ASSERT_RC(rdmx_ctx_connect_to_addr(B.ctx, NULL, NULL, 0, NULL, &cc), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 4, NULL, &cc), RDMX_E_INVAL);
	/* the limit itself goes through, both ways; accept too long is refused */
	A.policy = REQ_HOLD;
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, big, RDMX_PRIVATE_DATA_MAX, NULL, &cc));
	DRIVE_UNTIL(&A, &B, A.held != NULL);
	cr_assert_eq(A.req_pd_len, RDMX_PRIVATE_DATA_MAX);
	cr_assert_arr_eq(A.req_pd, big, RDMX_PRIVATE_DATA_MAX);
	cr_assert_eq(conn_state(A.held), RDMX_CONN_REQUESTED);
	ASSERT_RC(rdmx_conn_accept(A.held, big, sizeof(big)), RDMX_E_INVAL);
	/* accepted later, outside the request callback */
	ASSERT_OK(rdmx_conn_accept(A.held, big + 1, RDMX_PRIVATE_DATA_MAX));
	DRIVE_UNTIL(&A, &B, A.established == 1 && B.established == 1);
	cr_assert_eq(B.est_pd_len, RDMX_PRIVATE_DATA_MAX);
	cr_assert_arr_eq(B.est_pd, big + 1, RDMX_PRIVATE_DATA_MAX);
	/* accept twice */
	ASSERT_RC(rdmx_conn_accept(A.held, NULL, 0), RDMX_E_BAD_STATE);
	ASSERT_OK(rdmx_addr_destroy(&ad));
	pair_close(&A, &B);
	leak_end();
}

Test(cm, max_connections_rejects_extra_requests)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	side_conf(&A, 4);
	side_conf(&B, 4);
	ASSERT_OK(rdmx_ctx_set_max_connections(A.ctx, 1));
	side_start(&A);
	side_start(&B);
	uint16_t port = listen_any(&A);
	struct rdmx_addr *ad = addr_of(&A, port);
	static int first, second;
	struct rdmx_conn *c1 = NULL, *c2 = NULL;
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, &first, &c1));
	DRIVE_UNTIL(&A, &B, A.established == 1 && B.established == 1);
	ASSERT_OK(rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, &second, &c2));
	DRIVE_UNTIL(&A, &B, B.failures == 1);
	drive_for(&A, &B, NULL, 50);
	cr_assert_eq(B.failures, 1);
	cr_assert_eq(B.events[B.nevents - 1].conn, c2);
	cr_assert_eq(B.events[B.nevents - 1].conn_ud, &second);
	cr_assert_eq(A.requests, 1, "a request beyond max connections reached the application");
	cr_assert_eq(A.established, 1);
	cr_assert_eq(B.established, 1);
	/* the first connection is untouched */
	cr_assert_eq(conn_state(c1), RDMX_CONN_ESTABLISHED);
	struct rdmx_conn *sc = latest_conn(&A, CEV_ESTABLISHED);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(&B, 4096, RDMX_ACCESS_ALL, 0);
	struct rdmx_buf d = lbuf(ra, 0, 4096), s = lbuf(rb, 0, 77);
	struct tinfo tr = {0}, ts = {0};
	struct rdmx_task *t;
	post_recv(&A, &d, &tr);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, c1, &s, &ts, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(&tr) && TI_DONE(&ts));
	ASSERT_DONE_OK(&tr);
	cr_assert_eq(tr.conn, sc);
	cr_assert_eq(tr.len, 77u);
	ASSERT_OK(rdmx_addr_destroy(&ad));
	pair_close(&A, &B);
	leak_end();
}

Test(cm, connect_to_nobody_fails)
{
	static int mark;
	leak_begin();
	pair_open(&A, &B, 4);
	uint16_t port = listen_any(&A);
	ASSERT_OK(rdmx_ctx_stop_listen(A.ctx));
	struct rdmx_addr *ad = addr_of(&A, port);
	struct rdmx_conn *c = NULL;
	int rc = rdmx_ctx_connect_to_addr(B.ctx, ad, NULL, 0, &mark, &c);
	/* refused at once, or reported through the failure callback */
	if (rc == 0) {
		DRIVE_UNTIL(&A, &B, B.failures == 1);
		drive_for(&A, &B, NULL, 20);
		cr_assert_eq(B.failures, 1);
		cr_assert_eq(B.events[B.nevents - 1].conn, c);
		cr_assert_eq(B.events[B.nevents - 1].conn_ud, &mark);
	} else {
		cr_assert(rc == RDMX_E_CONN_REFUSED || rc == RDMX_E_PROVIDER,
		          "connect_to_addr to a closed port -> %s", rdmx_err_name(rc));
	}
	cr_assert_eq(A.requests, 0, "a stopped listener delivered a request");
	cr_assert_eq(B.established, 0);
	ASSERT_OK(rdmx_addr_destroy(&ad));
	pair_close(&A, &B);
	leak_end();
}
