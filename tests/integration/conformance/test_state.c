/* Wrong state -> RDMX_E_BAD_STATE, full pools -> RDMX_E_FULL, bad arguments
 * -> RDMX_E_INVAL / RDMX_E_NOT_SUPPORTED (and no crash), queue sizes rounded
 * to a power of two, max connections enforced. */
#include "conformance.h"

#include <string.h>

static struct side A, B;

TestSuite(state, .timeout = 120);
TestSuite(args, .timeout = 120);

static void noop_cb(struct rdmx_task *t, void *ud, void *cud)
{
	(void)t;
	(void)ud;
	(void)cud;
}

/* ---- wrong state ---- */

Test(state, ctx_setters_after_start)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_conf(&A, 4);
	side_start(&A);
	enum rdmx_ctx_state st;
	ASSERT_OK(rdmx_ctx_get_state(A.ctx, &st));
	cr_assert_eq(st, RDMX_CTX_RUNNING);
	ASSERT_RC(rdmx_ctx_set_send_queue_size(A.ctx, 64), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_recv_queue_size(A.ctx, 64), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_max_send_buf_list_len(A.ctx, 1), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_max_recv_buf_list_len(A.ctx, 1), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_permissions(A.ctx, RDMX_ACCESS_REMOTE_READ), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_mtu(A.ctx, 1024), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_gid_index(A.ctx, 0), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_sl(A.ctx, 1), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_grh(A.ctx, true), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_conn_request_timeout(A.ctx, 1000), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_rnr_retry_count(A.ctx, 3), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_max_connections(A.ctx, 2), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_transport_type(A.ctx, RDMX_TRANSPORT_TYPE_RC), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_task_conf(A.ctx, RDMX_TASK_SEND, noop_cb, noop_cb, 4),
	          RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_ctx_set_conn_callbacks(A.ctx, NULL, NULL, NULL, NULL), RDMX_E_BAD_STATE);
	/* user data may be set in any state */
	ASSERT_OK(rdmx_ctx_set_user_data(A.ctx, &A));
	void *ud = NULL;
	ASSERT_OK(rdmx_ctx_get_user_data(A.ctx, &ud));
	cr_assert_eq(ud, &A);
	/* start twice */
	ASSERT_RC(rdmx_ctx_start(A.ctx), RDMX_E_BAD_STATE);
	/* destroy while running: refused, the context keeps running */
	struct rdmx_ctx *keep = A.ctx;
	ASSERT_RC(rdmx_ctx_destroy(&A.ctx), RDMX_E_BAD_STATE);
	cr_assert_eq(A.ctx, keep, "refused destroy changed the pointer");
	ASSERT_OK(rdmx_ctx_get_state(A.ctx, &st));
	cr_assert_eq(st, RDMX_CTX_RUNNING);
	/* pe destroy with a context attached */
	struct rdmx_pe *pe = A.pe;
	ASSERT_RC(rdmx_pe_destroy(&A.pe), RDMX_E_BAD_STATE);
	cr_assert_eq(A.pe, pe);
	ASSERT_OK(rdmx_ctx_stop(A.ctx));
	ASSERT_RC(rdmx_ctx_stop(A.ctx), RDMX_E_BAD_STATE);
	/* IDLE again: setters allowed again */
	ASSERT_OK(rdmx_ctx_set_send_queue_size(A.ctx, 64));
	side_close(&A);
	leak_end();
}

Test(state, task_alloc_before_start_and_unconfigured_type)
{
	leak_begin();
	side_open(&A, "a", 0);
	struct region *r = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_buf b = lbuf(r, 0, 64);
	struct rdmx_task *t = NULL;
	struct tinfo ti = {0};
	ASSERT_OK(rdmx_ctx_set_task_conf(A.ctx, RDMX_TASK_SEND, noop_cb, noop_cb, 4));
	ASSERT_RC(rdmx_task_receive_alloc(A.ctx, &b, &ti, &t), RDMX_E_BAD_STATE);
	cr_assert_null(t);
	const void *d;
	size_t dl;
	struct rdmx_conn *c = NULL;
	ASSERT_RC(rdmx_ctx_export(A.ctx, &d, &dl, &c), RDMX_E_BAD_STATE);
	cr_assert_null(c);
	ASSERT_RC(rdmx_ctx_listen(A.ctx, 1), RDMX_E_BAD_STATE);
	side_start(&A);
	/* RECEIVE was never configured */
	ASSERT_RC(rdmx_task_receive_alloc(A.ctx, &b, &ti, &t), RDMX_E_BAD_STATE);
	cr_assert_null(t);
	side_close(&A);
	leak_end();
}

Test(state, in_flight_task_refuses_submit_setters_free)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, 8);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 4096, 0, 0);
	struct rdmx_buf d = lbuf(ra, 0, 1024), d2 = lbuf(ra, 2048, 1024), s = lbuf(rb, 0, 100);
	struct tinfo tr = {0}, ts = {0}, other = {0};
	struct rdmx_task *r = post_recv(&A, &d, &tr);

	/* a receive with no sender stays in flight */
	ASSERT_RC(rdmx_task_submit(r), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_task_set_local(r, &d2), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_task_set_user_data(r, &other), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_task_free(r), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_task_get_status(r), RDMX_E_AGAIN);

	/* a send with nothing posted (rnr retry 7 = forever) stays in flight too */
	struct rdmx_task *st;
	uint8_t rnr = 0;
	ASSERT_OK(rdmx_ctx_get_rnr_retry_count(B.ctx, &rnr));
	cr_assert_eq(rnr, 7, "default rnr retry count %u, documented 7", rnr);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &s, &ts, &st));
	/* let the receive above take a first message, then the second send waits */
	ASSERT_OK(rdmx_task_submit(st));
	DRIVE_UNTIL(&A, &B, TI_DONE(&tr) && TI_DONE(&ts));
	ASSERT_DONE_OK(&tr);
	ASSERT_DONE_OK(&ts);
	ASSERT_OK(rdmx_task_submit(st));
	drive_for(&A, &B, NULL, 100);
	cr_assert_eq(TI_DONE(&ts), 1, "a send with no receive posted completed");
	ASSERT_RC(rdmx_task_submit(st), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_task_set_conn(st, cb), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_task_set_local(st, &s), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_task_free(st), RDMX_E_BAD_STATE);
	/* post the receive (reused with a new buffer): the waiting send lands */
	ASSERT_OK(rdmx_task_set_local(r, &d2));
	ASSERT_OK(rdmx_task_submit(r));
	DRIVE_UNTIL(&A, &B, tr.ok + tr.err == 2 && ts.ok + ts.err == 2);
	cr_assert(tr.ok == 2 && ts.ok == 2, "recv %s send %s", rdmx_err_name(tr.status),
	          rdmx_err_name(ts.status));
	cr_assert_eq(tr.len, 100u);
	ASSERT_OK(rdmx_task_free(r));
	ASSERT_OK(rdmx_task_free(st));
	ASSERT_OK(rdmx_task_free(NULL));
	pair_close(&A, &B);
	leak_end();
}

Test(state, dev_close_and_pe_destroy_with_users)
{
	leak_begin();
	struct rdmx_dev *dev = NULL;
	struct rdmx_pe *pe = NULL;
	struct rdmx_ctx *ctx = NULL;
	struct rdmx_mr *mr = NULL;
	static uint8_t mem[4096];
	ASSERT_OK(side_open_dev(0, &dev));
	ASSERT_OK(rdmx_mr_reg(dev, mem, sizeof(mem), RDMX_ACCESS_REMOTE_WRITE, &mr));
	struct rdmx_dev *keep = dev;
	ASSERT_RC(rdmx_dev_close(&dev), RDMX_E_BAD_STATE);
	cr_assert_eq(dev, keep, "refused close changed the pointer");
	size_t sz = 0;
	ASSERT_OK(rdmx_mr_get_size(mr, &sz));
	cr_assert_eq(sz, sizeof(mem));
	void *p = NULL;
	ASSERT_OK(rdmx_mr_get_ptr(mr, &p));
	cr_assert_eq(p, mem);
	unsigned acc = 0;
	ASSERT_OK(rdmx_mr_get_access(mr, &acc));
	cr_assert_eq(acc, RDMX_ACCESS_REMOTE_WRITE);
	ASSERT_OK(rdmx_mr_dereg(&mr));
	ASSERT_OK(rdmx_pe_create(&pe));
	ASSERT_OK(rdmx_ctx_create(dev, pe, &ctx));
	ASSERT_RC(rdmx_dev_close(&dev), RDMX_E_BAD_STATE);
	struct rdmx_dev *got = NULL;
	ASSERT_OK(rdmx_ctx_get_dev(ctx, &got));
	cr_assert_eq(got, dev);
	ASSERT_OK(rdmx_ctx_destroy(&ctx));
	cr_assert_null(ctx);
	ASSERT_OK(rdmx_pe_destroy(&pe));
	ASSERT_OK(rdmx_dev_close(&dev));
	cr_assert_null(dev);
	leak_end();
}

/* A context created on a progress engine holds it from create to destroy
 * (rdmx_ctx_start attaches to it later): destroying the engine under an IDLE
 * context would leave the context a dangling pointer. */
Test(state, pe_destroy_with_idle_context)
{
	leak_begin();
	struct rdmx_dev *dev = NULL;
	struct rdmx_pe *pe = NULL;
	struct rdmx_ctx *ctx = NULL;
	ASSERT_OK(side_open_dev(0, &dev));
	ASSERT_OK(rdmx_pe_create(&pe));
	ASSERT_OK(rdmx_ctx_create(dev, pe, &ctx));
	struct rdmx_pe *keep = pe;
	ASSERT_RC(rdmx_pe_destroy(&pe), RDMX_E_BAD_STATE);
	cr_assert_eq(pe, keep);
	ASSERT_OK(rdmx_ctx_destroy(&ctx));
	ASSERT_OK(rdmx_pe_destroy(&pe));
	ASSERT_OK(rdmx_dev_close(&dev));
	leak_end();
}

Test(state, submit_on_unconnected_or_connected_twice)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, 8);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(&B, 4096, RDMX_ACCESS_ALL, 0);
	struct rdmx_mr_remote *m = remote_of(&A, rb);
	/* exported, never connected */
	const void *d;
	size_t dl;
	struct rdmx_conn *lone = NULL;
	ASSERT_OK(rdmx_ctx_export(A.ctx, &d, &dl, &lone));
	struct rdmx_buf s = lbuf(ra, 0, 8);
	struct rdmx_rbuf r = rbuf(m, 0, 0);
	struct tinfo ti = {0};
	struct rdmx_task *t = NULL;
	int rc = rdmx_task_write_alloc(A.ctx, lone, &s, &r, &ti, &t);
	if (rc == 0)
		rc = rdmx_task_submit(t);
	ASSERT_RC(rc, RDMX_E_BAD_STATE);
	drive_for(&A, &B, NULL, 20);
	cr_assert_eq(TI_DONE(&ti), 0);
	if (t)
		ASSERT_OK(rdmx_task_free(t));

	/* connect an already connected connection */
	connect_pair(&A, &B, &ca, &cb);
	const void *db;
	size_t dbl;
	struct rdmx_conn *y = NULL;
	ASSERT_OK(rdmx_ctx_export(B.ctx, &db, &dbl, &y));
	ASSERT_RC(rdmx_ctx_connect(A.ctx, db, dbl, ca), RDMX_E_BAD_STATE);
	pair_close(&A, &B);
	leak_end();
}

Test(state, ctx_restart_after_stop)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, 8);
	connect_pair(&A, &B, &ca, &cb);
	ASSERT_OK(rdmx_ctx_stop(A.ctx));
	ASSERT_OK(rdmx_ctx_start(A.ctx));
	connect_pair(&A, &B, &ca, &cb);
	write_checked(&A, &B, cb, 512, 70);
	pair_close(&A, &B);
	leak_end();
}

Test(state, full_task_pool)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_conf(&A, 2);
	side_start(&A);
	struct region *r = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_buf b = lbuf(r, 0, 64);
	struct rdmx_task *t1 = NULL, *t2 = NULL, *t3 = NULL;
	ASSERT_OK(rdmx_task_receive_alloc(A.ctx, &b, NULL, &t1));
	ASSERT_OK(rdmx_task_receive_alloc(A.ctx, &b, NULL, &t2));
	cr_assert_neq(t1, t2);
	ASSERT_RC(rdmx_task_receive_alloc(A.ctx, &b, NULL, &t3), RDMX_E_FULL);
	cr_assert_null(t3, "output written on failure");
	ASSERT_OK(rdmx_task_free(t2));
	ASSERT_OK(rdmx_task_receive_alloc(A.ctx, &b, NULL, &t3));
	ASSERT_RC(rdmx_task_receive_alloc(A.ctx, &b, NULL, &t2), RDMX_E_FULL);
	ASSERT_OK(rdmx_task_free(t1));
	ASSERT_OK(rdmx_task_free(t3));
	side_close(&A);
	leak_end();
}

Test(state, max_connections_export)
{
	struct rdmx_conn *a1, *b1, *a2, *b2;
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	side_conf(&A, 4);
	side_conf(&B, 4);
	ASSERT_OK(rdmx_ctx_set_max_connections(A.ctx, 2));
	uint32_t mx = 0;
	ASSERT_OK(rdmx_ctx_get_max_connections(A.ctx, &mx));
	cr_assert_eq(mx, 2u);
	side_start(&A);
	side_start(&B);
	connect_pair(&A, &B, &a1, &b1);
	connect_pair(&A, &B, &a2, &b2);
	const void *d;
	size_t dl;
	struct rdmx_conn *c3 = NULL;
	ASSERT_RC(rdmx_ctx_export(A.ctx, &d, &dl, &c3), RDMX_E_FULL);
	cr_assert_null(c3);
	/* a finished connection frees its slot */
	ASSERT_OK(rdmx_conn_disconnect(a1));
	DRIVE_UNTIL(&A, &B,
	            conn_events(&A, CEV_DISCONNECTED, a1) == 1 &&
	                conn_events(&B, CEV_DISCONNECTED, b1) == 1);
	ASSERT_OK(rdmx_ctx_export(A.ctx, &d, &dl, &c3));
	cr_assert_not_null(c3);
	pair_close(&A, &B);
	leak_end();
}

/* ---- properties ---- */

Test(args, queue_sizes_rounded_to_power_of_two)
{
	leak_begin();
	side_open(&A, "a", 0);
	uint32_t v = 0;
	struct {
		uint32_t set, want;
	} cases[] = {{1, 1}, {2, 2}, {3, 4}, {100, 128}, {128, 128}, {129, 256}, {1000, 1024}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].want <= A.caps.max_send_queue_size) {
			ASSERT_OK(rdmx_ctx_set_send_queue_size(A.ctx, cases[i].set));
			ASSERT_OK(rdmx_ctx_get_send_queue_size(A.ctx, &v));
			cr_assert_eq(v, cases[i].want,
			             "send queue size %u read back as %u, expected %u",
			             cases[i].set, v, cases[i].want);
		}
		if (cases[i].want <= A.caps.max_recv_queue_size) {
			ASSERT_OK(rdmx_ctx_set_recv_queue_size(A.ctx, cases[i].set));
			ASSERT_OK(rdmx_ctx_get_recv_queue_size(A.ctx, &v));
			cr_assert_eq(v, cases[i].want,
			             "recv queue size %u read back as %u, expected %u",
			             cases[i].set, v, cases[i].want);
		}
	}
	uint32_t before = 0;
	ASSERT_OK(rdmx_ctx_get_send_queue_size(A.ctx, &before));
	ASSERT_RC(rdmx_ctx_set_send_queue_size(A.ctx, 0), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_send_queue_size(A.ctx, UINT32_MAX), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_recv_queue_size(A.ctx, UINT32_MAX), RDMX_E_INVAL);
	/* a refused value leaves the previous one */
	ASSERT_OK(rdmx_ctx_get_send_queue_size(A.ctx, &v));
	cr_assert_eq(v, before, "refused set changed the queue size from %u to %u", before, v);
	/* task pools above the queue size are refused */
	ASSERT_OK(rdmx_ctx_set_send_queue_size(A.ctx, 4));
	ASSERT_RC(rdmx_ctx_set_task_conf(A.ctx, RDMX_TASK_WRITE, noop_cb, noop_cb, 1u << 30),
	          RDMX_E_INVAL);
	side_close(&A);
	leak_end();
}

Test(args, ctx_property_checks)
{
	leak_begin();
	side_open(&A, "a", 0);
	enum rdmx_transport_type tt;
	ASSERT_OK(rdmx_ctx_get_transport_type(A.ctx, &tt));
	cr_assert_eq(tt, RDMX_TRANSPORT_TYPE_RC);
	ASSERT_RC(rdmx_ctx_set_transport_type(A.ctx, RDMX_TRANSPORT_TYPE_DC), RDMX_E_NOT_SUPPORTED);
	ASSERT_RC(rdmx_ctx_set_transport_type(A.ctx, (enum rdmx_transport_type)7), RDMX_E_INVAL);
	ASSERT_OK(rdmx_ctx_get_transport_type(A.ctx, &tt));
	cr_assert_eq(tt, RDMX_TRANSPORT_TYPE_RC);
	ASSERT_RC(rdmx_ctx_set_rnr_retry_count(A.ctx, 8), RDMX_E_INVAL);
	ASSERT_OK(rdmx_ctx_set_rnr_retry_count(A.ctx, 1));
	uint8_t rnr;
	ASSERT_OK(rdmx_ctx_get_rnr_retry_count(A.ctx, &rnr));
	cr_assert_eq(rnr, 1);
	ASSERT_RC(rdmx_ctx_set_sl(A.ctx, 16), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_mtu(A.ctx, 1000), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_mtu(A.ctx, 0), RDMX_E_INVAL);
	ASSERT_OK(rdmx_ctx_set_mtu(A.ctx, 1024));
	uint32_t mtu;
	ASSERT_OK(rdmx_ctx_get_mtu(A.ctx, &mtu));
	cr_assert_eq(mtu, 1024u);
	ASSERT_RC(rdmx_ctx_set_gid_index(A.ctx, A.caps.gid_table_len), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_permissions(A.ctx, 1u << 4), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_max_send_buf_list_len(A.ctx, 0), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_max_send_buf_list_len(A.ctx, A.caps.max_buf_list_len + 1),
	          RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_max_connections(A.ctx, 0), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_task_conf(A.ctx, RDMX_TASK_SEND, NULL, noop_cb, 4), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_task_conf(A.ctx, RDMX_TASK_SEND, noop_cb, NULL, 4), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_task_conf(A.ctx, RDMX_TASK_SEND, noop_cb, noop_cb, 0), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_task_conf(A.ctx, RDMX_TASK_TYPE_COUNT, noop_cb, noop_cb, 4),
	          RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_set_send_queue_size(NULL, 4), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_get_send_queue_size(A.ctx, NULL), RDMX_E_INVAL);
	side_close(&A);
	leak_end();
}

Test(args, null_and_bad_arguments)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	side_conf(&A, 4);
	side_conf(&B, 4);
	side_start(&A);
	side_start(&B);
	struct rdmx_conn *ca, *cb;
	connect_pair(&A, &B, &ca, &cb);

	/* status names */
	cr_assert_str_eq(rdmx_err_name(RDMX_E_FULL), "E_FULL");
	cr_assert_str_eq(rdmx_err_name(0), "OK");
	cr_assert_str_eq(rdmx_err_name(-9999), "UNKNOWN");
	cr_assert_not_null(rdmx_strerror(12345));
	ASSERT_RC(rdmx_log_set_threshold((enum rdmx_log_level)99), RDMX_E_INVAL);

	/* devices */
	struct rdmx_dev *d = NULL;
	size_t count = 0;
	ASSERT_OK(rdmx_dev_list(NULL, 0, &count));
	cr_assert_geq(count, 1u, "the tcp device is always listed");
	ASSERT_RC(rdmx_dev_list(NULL, 0, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_dev_open("no-such-device-rdmx", &d), RDMX_E_NO_DEVICE);
	ASSERT_RC(rdmx_dev_open("tcp", NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_dev_open_by_addr("not an address", &d), RDMX_E_INVAL);
	ASSERT_RC(rdmx_dev_open_by_addr(NULL, &d), RDMX_E_INVAL);
	ASSERT_RC(rdmx_dev_open_by_addr("203.0.113.77", &d), RDMX_E_NO_DEVICE);
	cr_assert_null(d);
	struct rdmx_dev_caps caps;
	ASSERT_RC(rdmx_dev_query_caps(NULL, &caps), RDMX_E_INVAL);
	ASSERT_RC(rdmx_dev_query_caps(A.dev, NULL), RDMX_E_INVAL);
	uint8_t gid[16];
	ASSERT_RC(rdmx_dev_get_gid(A.dev, A.caps.gid_table_len, gid), RDMX_E_INVAL);
	cr_assert_null(rdmx_dev_provider(NULL));
	cr_assert_null(rdmx_dev_name(NULL));
	cr_assert_str_eq(rdmx_dev_name(A.dev), A.devname);

	/* memory */
	static uint8_t mem[4096];
	struct rdmx_mr *mr = NULL;
	ASSERT_RC(rdmx_mr_reg(NULL, mem, 64, 0, &mr), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_reg(A.dev, NULL, 64, 0, &mr), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_reg(A.dev, mem, 0, 0, &mr), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_reg(A.dev, mem, 64, 1u << 4, &mr), RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_reg(A.dev, mem, 64, 0, NULL), RDMX_E_INVAL);
	cr_assert_null(mr);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(&B, 4096, RDMX_ACCESS_ALL, 0);
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	size_t dsz = 0;
	ASSERT_OK(rdmx_mr_get_descriptor_size(ra->mr, &dsz));
	cr_assert_eq(dsz, RDMX_MR_DESCRIPTOR_SIZE);
	ASSERT_RC(rdmx_mr_get_descriptor(NULL, desc), RDMX_E_INVAL);
	struct rdmx_mr_remote *rm = NULL;
	ASSERT_RC(rdmx_mr_remote_from_descriptor(ra->desc, RDMX_MR_DESCRIPTOR_SIZE - 1, &rm),
	          RDMX_E_INVAL);
	ASSERT_RC(rdmx_mr_remote_from_descriptor(NULL, RDMX_MR_DESCRIPTOR_SIZE, &rm), RDMX_E_INVAL);
	memcpy(desc, ra->desc, sizeof(desc));
	desc[0] ^= 0xff; /* magic */
	ASSERT_RC(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm), RDMX_E_INVAL);
	memcpy(desc, ra->desc, sizeof(desc));
	desc[2] = 99; /* version */
	ASSERT_RC(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm), RDMX_E_INVAL);
	memcpy(desc, ra->desc, sizeof(desc));
	desc[3] = 77; /* provider */
	ASSERT_RC(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &rm), RDMX_E_INVAL);
	cr_assert_null(rm);
	/* the descriptor says what the header documents */
	cr_assert_eq(ra->desc[0] | (ra->desc[1] << 8), 0x5852);
	cr_assert_eq(ra->desc[2], 1);
	cr_assert_eq(ra->desc[3], A.tcp ? 1 : 2);
	struct rdmx_mr_remote *mb = remote_of(&A, rb);
	unsigned acc = 0;
	ASSERT_OK(rdmx_mr_remote_get_access(mb, &acc));
	cr_assert_eq(acc, RDMX_ACCESS_ALL);

	/* progress engine and context */
	ASSERT_RC(rdmx_pe_create(NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_pe_progress(NULL), RDMX_E_INVAL);
	struct rdmx_ctx *c = NULL;
	ASSERT_RC(rdmx_ctx_create(NULL, A.pe, &c), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_create(A.dev, NULL, &c), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_create(A.dev, A.pe, NULL), RDMX_E_INVAL);
	cr_assert_null(c);
	/* malformed connection details */
	const void *dd;
	size_t dl;
	struct rdmx_conn *x = NULL;
	ASSERT_OK(rdmx_ctx_export(A.ctx, &dd, &dl, &x));
	static const uint8_t junk[3] = {1, 2, 3};
	ASSERT_RC(rdmx_ctx_connect(A.ctx, junk, sizeof(junk), x), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_connect(A.ctx, NULL, 16, x), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_connect(A.ctx, junk, 0, x), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_connect(A.ctx, dd, dl, NULL), RDMX_E_INVAL);

	/* addresses */
	struct rdmx_addr *ad = NULL;
	ASSERT_RC(rdmx_addr_create(RDMX_ADDR_IPV4, NULL, 1, &ad), RDMX_E_INVAL);
	ASSERT_RC(rdmx_addr_create(RDMX_ADDR_IPV4, "", 1, &ad), RDMX_E_INVAL);
	ASSERT_RC(rdmx_addr_create(RDMX_ADDR_IPV4, "1.2.3.4", 1, NULL), RDMX_E_INVAL);
	cr_assert_null(ad);
	ASSERT_OK(rdmx_addr_create(RDMX_ADDR_IPV4, "198.18.0.9", 4791, &ad));
	enum rdmx_addr_type aty;
	const char *text;
	uint16_t port;
	ASSERT_OK(rdmx_addr_get_params(ad, &aty, &text, &port));
	cr_assert_eq(aty, RDMX_ADDR_IPV4);
	cr_assert_str_eq(text, "198.18.0.9");
	cr_assert_eq(port, 4791);
	ASSERT_OK(rdmx_addr_destroy(&ad));
	cr_assert_null(ad);

	/* tasks */
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	struct rdmx_buf s = lbuf(rb, 0, 64), s8 = lbuf(rb, 64, 8), s4 = lbuf(rb, 64, 4);
	struct rdmx_buf nomr = {.mr = NULL, .addr = rb->mem, .len = 8};
	struct rdmx_buf other_dev = lbuf(ra, 0, 64); /* A's region in B's context */
	struct rdmx_rbuf r = rbuf(m, 0, 0), r8 = rbuf(m, 8, 8), r4 = rbuf(m, 8, 4),
	                 rnull = rbuf(NULL, 0, 8), rlen = rbuf(m, 0, 63), rread = rbuf(m, 0, 128);
	struct rdmx_task *t = NULL;
	struct tinfo ti = {0};
	ASSERT_RC(rdmx_task_submit(NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_receive_alloc(NULL, &s, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_receive_alloc(B.ctx, &s, &ti, NULL), RDMX_E_INVAL);
	/* no connection: refused at alloc, or (to be set later) at submit */
	{
		struct rdmx_task *nc = NULL;
		int rc0 = rdmx_task_send_alloc(B.ctx, NULL, &s, &ti, &nc);
		cr_assert(rc0 == 0 || rc0 == RDMX_E_INVAL, "send_alloc without a connection -> %s",
		          rdmx_err_name(rc0));
		if (rc0 == 0) {
			ASSERT_RC2(rdmx_task_submit(nc), RDMX_E_BAD_STATE, RDMX_E_INVAL);
			ASSERT_OK(rdmx_task_free(nc));
		}
	}
	ASSERT_RC(rdmx_task_send_alloc(B.ctx, cb, &nomr, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_send_alloc(B.ctx, cb, &other_dev, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_send_alloc(B.ctx, ca, &s, &ti, &t), RDMX_E_INVAL); /* A's conn */
	ASSERT_RC(rdmx_task_write_alloc(B.ctx, cb, &s, NULL, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_write_alloc(B.ctx, cb, NULL, &r, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_write_alloc(B.ctx, cb, &s, &rnull, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_write_alloc(B.ctx, cb, &s, &rlen, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_read_alloc(B.ctx, cb, &rread, &s, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_read_alloc(B.ctx, cb, NULL, &s, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_flush_alloc(B.ctx, cb, NULL, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_atomic_cas_alloc(B.ctx, cb, &r4, &s8, 0, 1, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_atomic_cas_alloc(B.ctx, cb, &r8, &s4, 0, 1, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_atomic_cas_alloc(B.ctx, cb, &r8, NULL, 0, 1, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_atomic_fadd_alloc(B.ctx, cb, &r8, &s4, 1, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_atomic_write_alloc(B.ctx, cb, &r4, 1, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_sync_event_get_alloc(B.ctx, cb, NULL, &s8, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_sync_event_notify_add_alloc(B.ctx, cb, m, 1, &s4, &ti, &t),
	          RDMX_E_INVAL);
	cr_assert_null(t, "output written on failure");
	/* a local buffer that is not inside its region never succeeds */
	struct rdmx_buf past = lbuf(rb, 4000, 200);
	int rc = rdmx_task_write_alloc(B.ctx, cb, &past, &r, &ti, &t);
	if (rc == 0) {
		rc = rdmx_task_submit(t);
		if (rc == 0) {
			DRIVE_UNTIL(&A, &B, TI_DONE(&ti));
			cr_assert(ti.err == 1 && ti.ok == 0,
			          "a write from outside its local region succeeded");
			rc = RDMX_E_INVAL;
		}
	}
	cr_assert_neq(rc, 0);
	drive_for(&A, &B, NULL, 20);
	cr_assert_leq(TI_DONE(&ti), 1);
	pair_close(&A, &B);
	leak_end();
}

Test(args, destroy_null_is_noop)
{
	struct rdmx_ctx *c = NULL;
	struct rdmx_pe *p = NULL;
	struct rdmx_dev *d = NULL;
	struct rdmx_mr *m = NULL;
	struct rdmx_mr_remote *r = NULL;
	struct rdmx_addr *a = NULL;
	struct rdmx_sync_event *e = NULL;
	ASSERT_OK(rdmx_ctx_destroy(NULL));
	ASSERT_OK(rdmx_ctx_destroy(&c));
	ASSERT_OK(rdmx_pe_destroy(NULL));
	ASSERT_OK(rdmx_pe_destroy(&p));
	ASSERT_OK(rdmx_dev_close(NULL));
	ASSERT_OK(rdmx_dev_close(&d));
	ASSERT_OK(rdmx_mr_dereg(NULL));
	ASSERT_OK(rdmx_mr_dereg(&m));
	ASSERT_OK(rdmx_mr_remote_delete(NULL));
	ASSERT_OK(rdmx_mr_remote_delete(&r));
	ASSERT_OK(rdmx_addr_destroy(NULL));
	ASSERT_OK(rdmx_addr_destroy(&a));
	ASSERT_OK(rdmx_sync_event_destroy(NULL));
	ASSERT_OK(rdmx_sync_event_destroy(&e));
	ASSERT_OK(rdmx_task_free(NULL));
}

/* A full send or receive queue answers RDMX_E_FULL at submit; the refused
 * task stays usable. Sends that wait for receives (rnr retry forever) hold
 * their send queue slots, which makes the send side deterministic. */
Test(state, full_send_and_receive_queues)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	side_conf(&A, 16);
	side_conf(&B, 16);
	ASSERT_OK(rdmx_ctx_set_recv_queue_size(A.ctx, 4));
	ASSERT_OK(rdmx_ctx_set_send_queue_size(B.ctx, 4));
	side_start(&A);
	side_start(&B);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 16 * 1024, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 4096, 0, 0);
	static struct rdmx_buf d[5], s;
	static struct tinfo tr[5], ts[5];
	struct rdmx_task *r[5], *st[5];
	s = lbuf(rb, 0, 16);

	/* receive queue of 4: the fifth receive is refused */
	for (int i = 0; i < 5; i++) {
		d[i] = lbuf(ra, (size_t)i * 1024, 1024);
		ASSERT_OK(rdmx_task_receive_alloc(A.ctx, &d[i], &tr[i], &r[i]));
	}
	for (int i = 0; i < 4; i++)
		ASSERT_OK(rdmx_task_submit(r[i]));
	ASSERT_RC(rdmx_task_submit(r[4]), RDMX_E_FULL);
	ASSERT_RC(rdmx_task_get_status(r[4]), RDMX_E_AGAIN);
	/* four sends take them */
	for (int i = 0; i < 5; i++)
		ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &s, &ts[i], &st[i]));
	for (int i = 0; i < 4; i++)
		ASSERT_OK(rdmx_task_submit(st[i]));
	DRIVE_UNTIL(&A, &B, A.completions == 4 && B.completions == 4);
	/* four more sends, no receive posted: they hold the send queue */
	for (int i = 0; i < 4; i++)
		ASSERT_OK(rdmx_task_submit(st[i]));
	ASSERT_RC(rdmx_task_submit(st[4]), RDMX_E_FULL);
	drive_for(&A, &B, NULL, 50);
	cr_assert_eq(B.completions, 4, "a send completed with no receive posted");
	ASSERT_RC(rdmx_task_submit(st[4]), RDMX_E_FULL);
	/* receives posted: the queued sends complete, the refused one goes through */
	for (int i = 0; i < 4; i++)
		ASSERT_OK(rdmx_task_submit(r[i]));
	DRIVE_UNTIL(&A, &B, B.completions == 8 && A.completions == 8);
	ASSERT_OK(rdmx_task_submit(st[4]));
	ASSERT_OK(rdmx_task_submit(r[4]));
	DRIVE_UNTIL(&A, &B, B.completions == 9 && A.completions == 9);
	cr_assert_eq(A.errs + B.errs, 0);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(ts[i].ok, i < 4 ? 2 : 1);
		cr_assert_eq(tr[i].ok, i < 4 ? 2 : 1);
	}
	pair_close(&A, &B);
	leak_end();
}
