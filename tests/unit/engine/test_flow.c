/* Engine behaviour on the scripted mock provider: connection life cycle,
 * completion order, deferred aborts on a connection in error, stop
 * cancellation, notification fd, nested-call guards, task reuse. */
#include <malloc.h>
#include <poll.h>
#include <string.h>

#include "helpers.h"
#include "internal.h"

#define MAX_LOG 64

struct rec {
	struct rdmx_task *task;
	int status;
};

static struct {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_mr *mr;
	uint8_t mem[4096];
	struct rec log[MAX_LOG];
	unsigned nlog;
	unsigned established, failures, disconnects, requests;
	struct rdmx_conn *last_conn;
	/* behaviour switches for callbacks */
	struct rdmx_task *resubmit_on_error; /* submitted from the first error cb */
	bool accept_requests, reject_requests;
	int nested_rc, stop_rc;
	bool try_nested;
	bool submit_in_disconnect;
	struct rdmx_task *disc_task;
	int disc_submit_rc;
} s;

static void record(struct rdmx_task *t, void *u, void *c)
{
	(void)u;
	cr_assert_eq(c, &s, "ctx user data not passed");
	if (s.nlog < MAX_LOG)
		s.log[s.nlog] = (struct rec){t, rdmx_task_get_status(t)};
	s.nlog++;
	if (s.try_nested) {
		s.try_nested = false;
		s.nested_rc = rdmx_pe_progress(s.pe);
		s.stop_rc = rdmx_ctx_stop(s.ctx);
	}
}

static void record_err(struct rdmx_task *t, void *u, void *c)
{
	record(t, u, c);
	if (s.resubmit_on_error) {
		struct rdmx_task *r = s.resubmit_on_error;

		s.resubmit_on_error = NULL;
		assert_ok(rdmx_task_submit(r)); /* conn in error: accepted, aborted later */
	}
}

static void on_request(struct rdmx_conn *conn, void *cu)
{
	cr_assert_eq(cu, &s);
	s.requests++;
	s.last_conn = conn;
	if (s.accept_requests)
		assert_ok(rdmx_conn_accept(conn, "ok", 2));
	else if (s.reject_requests)
		assert_ok(rdmx_conn_reject(conn));
}

static void on_established(struct rdmx_conn *conn, void *u, void *cu)
{
	(void)u;
	(void)cu;
	s.established++;
	s.last_conn = conn;
}

static void on_failure(struct rdmx_conn *conn, void *u, void *cu)
{
	(void)conn;
	(void)u;
	(void)cu;
	s.failures++;
}

static void on_disconnected(struct rdmx_conn *conn, void *u, void *cu)
{
	enum rdmx_conn_state st;

	(void)u;
	(void)cu;
	s.disconnects++;
	/* the connection is still valid inside its final callback */
	assert_ok(rdmx_conn_get_state(conn, &st));
	cr_assert_eq(st, RDMX_CONN_DISCONNECTED);
	if (s.submit_in_disconnect && s.disc_task) {
		s.disc_submit_rc = rdmx_task_submit(s.disc_task);
	}
}

static void setup(void)
{
	memset(&s, 0, sizeof(s));
	mock_stats_reset();
	assert_ok(mock_dev_open(&s.dev));
	assert_ok(rdmx_pe_create(&s.pe));
	assert_ok(rdmx_ctx_create(s.dev, s.pe, &s.ctx));
	assert_ok(rdmx_ctx_set_user_data(s.ctx, &s));
	for (int t = 0; t < RDMX_TASK_TYPE_COUNT; t++)
		assert_ok(
		    rdmx_ctx_set_task_conf(s.ctx, (enum rdmx_task_type)t, record, record_err, 8));
	assert_ok(rdmx_ctx_set_conn_callbacks(s.ctx, on_request, on_established, on_failure,
	                                      on_disconnected));
	assert_ok(rdmx_ctx_start(s.ctx));
	assert_ok(rdmx_mr_reg(s.dev, s.mem, sizeof(s.mem), RDMX_ACCESS_ALL, &s.mr));
}

static void teardown(void)
{
	enum rdmx_ctx_state st;

	assert_ok(rdmx_ctx_get_state(s.ctx, &st));
	if (st == RDMX_CTX_RUNNING)
		assert_ok(rdmx_ctx_stop(s.ctx));
	assert_ok(rdmx_ctx_destroy(&s.ctx));
	assert_ok(rdmx_pe_destroy(&s.pe));
	assert_ok(rdmx_mr_dereg(&s.mr));
	assert_ok(rdmx_dev_close(&s.dev));
}

TestSuite(flow, .init = setup, .fini = teardown);

/* Drives progress until it returns 0 (bounded). */
static int drain(void)
{
	int total = 0;

	for (int i = 0; i < 1000; i++) {
		int n = rdmx_pe_progress(s.pe);

		cr_assert_geq(n, 0, "progress failed: %s", rdmx_err_name(n));
		if (n == 0)
			return total;
		total += n;
	}
	cr_assert_fail("progress never settled");
	return total;
}

static struct rdmx_conn *connect_one(void)
{
	struct rdmx_conn *conn;
	const void *details;
	size_t len;

	assert_ok(rdmx_ctx_export(s.ctx, &details, &len, &conn));
	assert_ok(rdmx_ctx_connect(s.ctx, details, len, conn));
	assert_rc(rdmx_ctx_connect(s.ctx, details, len, conn), RDMX_E_BAD_STATE);
	return conn;
}

static struct rdmx_task *send_task(struct rdmx_conn *conn, size_t off)
{
	static struct rdmx_buf bufs[32];
	static unsigned next;
	struct rdmx_buf *b = &bufs[next++ % 32];
	struct rdmx_task *t;

	*b = (struct rdmx_buf){.mr = s.mr, .addr = s.mem + off, .len = 16};
	assert_ok(rdmx_task_send_alloc(s.ctx, conn, b, NULL, &t));
	return t;
}

Test(flow, export_connect_established_and_ordered_completions)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t[4];
	enum rdmx_conn_state st;
	uint32_t id;

	assert_ok(rdmx_conn_get_state(conn, &st));
	cr_assert_eq(st, RDMX_CONN_CONNECTING);
	/* tasks may be submitted as soon as connect returned */
	for (int i = 0; i < 4; i++) {
		t[i] = send_task(conn, (size_t)i * 16);
		assert_ok(rdmx_task_submit(t[i]));
	}
	cr_assert_eq(drain(), 5); /* established + 4 completions */
	cr_assert_eq(s.established, 1);
	assert_ok(rdmx_conn_get_state(conn, &st));
	cr_assert_eq(st, RDMX_CONN_ESTABLISHED);
	cr_assert_eq(s.nlog, 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(s.log[i].task, t[i], "completion %d out of order", i);
		cr_assert_eq(s.log[i].status, 0);
	}
	assert_ok(rdmx_conn_get_id(conn, &id));
	cr_assert_gt(id, 0);
}

Test(flow, connection_ids_are_unique)
{
	struct rdmx_conn *a = connect_one(), *b = connect_one();
	uint32_t ia, ib;

	assert_ok(rdmx_conn_get_id(a, &ia));
	assert_ok(rdmx_conn_get_id(b, &ib));
	cr_assert_neq(ia, ib);
}

Test(flow, error_flushes_then_deferred_in_order)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t[4], *late, *later;
	enum rdmx_conn_state st;

	drain();
	for (int i = 0; i < 4; i++)
		t[i] = send_task(conn, (size_t)i * 16);
	late = send_task(conn, 128);
	later = send_task(conn, 144);
	for (int i = 0; i < 4; i++)
		assert_ok(rdmx_task_submit(t[i]));
	/* the first fails; its error callback submits `late` on the broken
	 * connection while t[1..3] are still held by the provider */
	mock_fail_next(conn, RDMX_E_REMOTE_ACCESS);
	mock_poll_limit(s.ctx, 1);
	s.resubmit_on_error = late;
	cr_assert_eq(rdmx_pe_progress(s.pe), 1);
	assert_ok(rdmx_conn_get_state(conn, &st));
	cr_assert_eq(st, RDMX_CONN_ERROR);
	cr_assert_eq(s.nlog, 1, "the aborted submit overtook the provider's flush");
	assert_ok(rdmx_task_submit(later)); /* a submit on a conn in error returns 0 */
	drain();
	cr_assert_eq(s.nlog, 6);
	cr_assert_eq(s.log[0].task, t[0]);
	cr_assert_eq(s.log[0].status, RDMX_E_REMOTE_ACCESS);
	for (int i = 1; i < 4; i++) {
		cr_assert_eq(s.log[i].task, t[i]);
		cr_assert_eq(s.log[i].status, RDMX_E_CONN_ABORTED);
	}
	cr_assert_eq(s.log[4].task, late);
	cr_assert_eq(s.log[4].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(s.log[5].task, later);
	cr_assert_eq(s.log[5].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(mock_stats()->posts, 4, "aborted tasks reached the provider");
}

Test(flow, stop_cancels_everything_once)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t[3], *rx[2];
	struct rdmx_buf rb = {.mr = s.mr, .addr = s.mem + 1024, .len = 64};

	drain();
	mock_hold(s.ctx, true);
	for (int i = 0; i < 3; i++) {
		t[i] = send_task(conn, (size_t)i * 16);
		assert_ok(rdmx_task_submit(t[i]));
	}
	for (int i = 0; i < 2; i++) {
		assert_ok(rdmx_task_receive_alloc(s.ctx, &rb, NULL, &rx[i]));
		assert_ok(rdmx_task_submit(rx[i]));
	}
	cr_assert_eq(drain(), 0);
	assert_ok(rdmx_ctx_stop(s.ctx));
	cr_assert_eq(s.nlog, 5);
	for (unsigned i = 0; i < s.nlog; i++)
		cr_assert_eq(s.log[i].status, RDMX_E_CANCELED);
	/* the established connection saw its disconnected callback, and was freed */
	cr_assert_eq(s.disconnects, 1);
	cr_assert_eq(mock_stats()->conn_releases, 1);
}

Test(flow, disconnect_aborts_later_submits_and_frees_after_callback)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *a, *b;

	drain();
	a = send_task(conn, 0);
	b = send_task(conn, 16);
	s.disc_task = send_task(conn, 32);
	s.submit_in_disconnect = true;
	assert_ok(rdmx_task_submit(a));
	assert_ok(rdmx_conn_disconnect(conn));
	assert_ok(rdmx_conn_disconnect(conn)); /* idempotent */
	assert_ok(rdmx_task_submit(b));        /* after disconnect: aborted */
	drain();
	cr_assert_eq(s.disconnects, 1);
	cr_assert_eq(s.disc_submit_rc, 0);
	cr_assert_eq(s.nlog, 3);
	cr_assert_eq(s.log[0].task, a);
	cr_assert_eq(s.log[0].status, 0);
	cr_assert_eq(s.log[1].task, b);
	cr_assert_eq(s.log[1].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(s.log[2].task, s.disc_task);
	cr_assert_eq(s.log[2].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(mock_stats()->conn_releases, 1);
	/* tasks forgot the freed connection: a resubmit is refused, not a crash */
	cr_assert_null(rdmx_task_get_conn(b));
	assert_rc(rdmx_task_submit(b), RDMX_E_BAD_STATE);
}

Test(flow, peer_disconnect)
{
	struct rdmx_conn *conn = connect_one();

	drain();
	mock_peer_disconnect(s.ctx, conn);
	drain();
	cr_assert_eq(s.disconnects, 1);
	cr_assert_eq(mock_stats()->conn_releases, 1);
}

Test(flow, cm_accept_reject_refuse)
{
	struct rdmx_addr *addr;
	struct rdmx_conn *conn = NULL;
	const struct rdmx_addr *peer;
	const void *pd;
	size_t pd_len;
	uint8_t big[RDMX_PRIVATE_DATA_MAX + 1] = {0};

	assert_ok(rdmx_ctx_listen(s.ctx, 7471));
	assert_rc(rdmx_ctx_listen(s.ctx, 7471), RDMX_E_BAD_STATE);

	/* accepted from the request callback */
	s.accept_requests = true;
	mock_incoming_request(s.ctx);
	drain();
	cr_assert_eq(s.requests, 1);
	cr_assert_eq(s.established, 1);
	assert_ok(rdmx_conn_get_private_data(s.last_conn, &pd, &pd_len));
	cr_assert_eq(pd_len, 5);
	cr_assert_arr_eq(pd, "hello", 5);
	assert_rc(rdmx_conn_get_addr(s.last_conn, &peer), RDMX_E_NOT_FOUND);
	assert_rc(rdmx_conn_accept(s.last_conn, NULL, 0), RDMX_E_BAD_STATE);

	/* rejected from the request callback: released, no other callback */
	s.accept_requests = false;
	s.reject_requests = true;
	mock_incoming_request(s.ctx);
	drain();
	cr_assert_eq(s.requests, 2);
	cr_assert_eq(mock_stats()->conn_releases, 1);

	/* accepted later, outside the callback */
	s.reject_requests = false;
	mock_incoming_request(s.ctx);
	drain();
	conn = s.last_conn;
	assert_rc(rdmx_conn_accept(conn, big, sizeof(big)), RDMX_E_INVAL);
	assert_rc(rdmx_conn_disconnect(conn), RDMX_E_BAD_STATE); /* reject it instead */
	assert_ok(rdmx_conn_accept(conn, NULL, 0));
	drain();
	cr_assert_eq(s.established, 2);
	assert_ok(rdmx_ctx_stop_listen(s.ctx));
	assert_rc(rdmx_ctx_stop_listen(s.ctx), RDMX_E_BAD_STATE);

	/* active side: refused -> failure callback, then freed */
	assert_ok(rdmx_addr_create(RDMX_ADDR_IPV4, "127.0.0.1", 7471, &addr));
	assert_rc(rdmx_ctx_connect_to_addr(s.ctx, addr, big, sizeof(big), NULL, &conn),
	          RDMX_E_INVAL);
	mock_refuse(s.ctx, true);
	assert_ok(rdmx_ctx_connect_to_addr(s.ctx, addr, "pd", 2, (void *)0x9, &conn));
	assert_ok(rdmx_conn_get_addr(conn, &peer));
	cr_assert_str_eq(peer->text, "127.0.0.1");
	drain();
	cr_assert_eq(s.failures, 1);
	cr_assert_eq(mock_stats()->conn_releases, 2);
	mock_refuse(s.ctx, false);
	assert_ok(rdmx_ctx_connect_to_addr(s.ctx, addr, NULL, 0, NULL, &conn));
	/* not established yet: a task cannot be submitted */
	{
		struct rdmx_task *t = send_task(conn, 0);
		assert_rc(rdmx_task_submit(t), RDMX_E_BAD_STATE);
		drain();
		assert_ok(rdmx_task_submit(t));
		drain();
		cr_assert_eq(rdmx_task_get_status(t), 0);
	}
	assert_ok(rdmx_addr_destroy(&addr));
}

Test(flow, listen_needs_request_callback)
{
	assert_ok(rdmx_ctx_stop(s.ctx));
	assert_ok(rdmx_ctx_set_conn_callbacks(s.ctx, NULL, NULL, NULL, NULL));
	assert_ok(rdmx_ctx_start(s.ctx));
	assert_rc(rdmx_ctx_listen(s.ctx, 1), RDMX_E_BAD_STATE);
}

Test(flow, max_connections)
{
	struct rdmx_conn *c;
	const void *d;
	size_t len;

	assert_ok(rdmx_ctx_stop(s.ctx));
	assert_ok(rdmx_ctx_set_max_connections(s.ctx, 2));
	assert_ok(rdmx_ctx_start(s.ctx));
	assert_ok(rdmx_ctx_export(s.ctx, &d, &len, &c));
	assert_ok(rdmx_ctx_export(s.ctx, &d, &len, &c));
	assert_rc(rdmx_ctx_export(s.ctx, &d, &len, &c), RDMX_E_FULL);
	assert_ok(rdmx_conn_disconnect(c));
	drain();
	assert_ok(rdmx_ctx_export(s.ctx, &d, &len, &c));
}

Test(flow, receive_reports_connection_and_opcode)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_buf rb = {.mr = s.mr, .addr = s.mem, .len = 64};
	struct rdmx_task *rx;

	drain();
	assert_ok(rdmx_task_receive_alloc(s.ctx, &rb, NULL, &rx));
	mock_incoming(s.ctx, conn, RDMX_OPCODE_WRITE_WITH_IMM, 100, 0xabcd);
	cr_assert_eq(drain(), 0, "a message completed without a posted receive");
	assert_ok(rdmx_task_submit(rx));
	cr_assert_eq(drain(), 1);
	cr_assert_eq(rdmx_task_receive_get_opcode(rx), RDMX_OPCODE_WRITE_WITH_IMM);
	cr_assert_eq(rdmx_task_receive_get_len(rx), 100);
	cr_assert_eq(rdmx_task_receive_get_imm(rx), 0xabcd);
	cr_assert_eq(rdmx_task_receive_get_conn(rx), conn);
	/* once the connection is freed, the receive forgets it */
	mock_peer_disconnect(s.ctx, conn);
	drain();
	cr_assert_null(rdmx_task_receive_get_conn(rx));
}

Test(flow, notification_fd)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t;
	struct pollfd pfd = {.events = POLLIN};

	assert_ok(rdmx_pe_get_fd(s.pe, &pfd.fd));
	drain();
	/* idle: an armed fd stays quiet */
	assert_ok(rdmx_pe_request_notification(s.pe));
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	t = send_task(conn, 0);
	assert_ok(rdmx_task_submit(t));
	cr_assert_eq(poll(&pfd, 1, 1000), 1, "a completion did not wake the fd");
	assert_ok(rdmx_pe_clear_notification(s.pe));
	cr_assert_eq(drain(), 1);
	cr_assert_eq(poll(&pfd, 1, 0), 0);

	/* an engine-level completion (abort on a broken connection) wakes it too */
	mock_fail_next(conn, RDMX_E_REMOTE_ACCESS);
	assert_ok(rdmx_task_submit(t));
	drain();
	assert_ok(rdmx_pe_request_notification(s.pe));
	assert_ok(rdmx_task_submit(t));
	cr_assert_eq(poll(&pfd, 1, 1000), 1, "a deferred completion did not wake the fd");
	assert_ok(rdmx_pe_clear_notification(s.pe));
	cr_assert_eq(drain(), 1);
	cr_assert_eq(rdmx_task_get_status(t), RDMX_E_CONN_ABORTED);
	cr_assert_geq(mock_stats()->arms, 2);
	cr_assert_geq(mock_stats()->disarms, 2);
}

Test(flow, wait_modes_return_completions)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t;
	enum rdmx_poll_mode modes[] = {RDMX_POLL_BUSY, RDMX_POLL_BLOCK, RDMX_POLL_HYBRID};

	drain();
	t = send_task(conn, 0);
	for (size_t i = 0; i < 3; i++) {
		assert_ok(rdmx_pe_set_poll_mode(s.pe, modes[i], 5));
		assert_ok(rdmx_task_submit(t));
		cr_assert_eq(rdmx_pe_wait(s.pe, 5000), 1, "mode %zu", i);
		cr_assert_eq(rdmx_task_get_status(t), 0);
		cr_assert_eq(rdmx_pe_wait(s.pe, 0), 0);
	}
}

/* Arming is exact (provider.h), so a blocking wait polls once per
 * wake-up: not before sleeping (on the tcp provider that poll was a recv
 * answering EAGAIN on every call), and not again when what it found is
 * ready at arming. */
Test(flow, block_wait_polls_once_per_wake_up)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t;

	drain();
	assert_ok(rdmx_pe_set_poll_mode(s.pe, RDMX_POLL_BLOCK, 0));
	mock_stats_reset();
	cr_assert_eq(rdmx_pe_wait(s.pe, 1), 0);
	cr_assert_eq(mock_stats()->polls, 1, "%u polls for one timed-out wait",
	             mock_stats()->polls);
	t = send_task(conn, 0);
	assert_ok(rdmx_task_submit(t));
	mock_stats_reset();
	cr_assert_eq(rdmx_pe_wait(s.pe, 5000), 1);
	cr_assert_eq(mock_stats()->polls, 1, "%u polls for one completion", mock_stats()->polls);
	cr_assert_eq(mock_stats()->arms, 1);
	cr_assert_eq(mock_stats()->disarms, 1);
}

Test(flow, nested_calls_from_callbacks_are_refused)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t;

	drain();
	t = send_task(conn, 0);
	s.try_nested = true;
	assert_ok(rdmx_task_submit(t));
	drain();
	cr_assert_eq(s.nested_rc, RDMX_E_BAD_STATE);
	cr_assert_eq(s.stop_rc, RDMX_E_BAD_STATE);
}

Test(flow, resubmit_allocates_nothing)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_task *t, *again;

	drain();
	t = send_task(conn, 0);
	/* warm up: the mock recycles its own queue items after the first round */
	assert_ok(rdmx_task_submit(t));
	drain();
#if !defined(__SANITIZE_ADDRESS__)
	struct mallinfo2 before = mallinfo2(), after;
#endif
	for (int i = 0; i < 1000; i++) {
		assert_ok(rdmx_task_submit(t));
		cr_assert_eq(rdmx_pe_progress(s.pe), 1);
	}
#if !defined(__SANITIZE_ADDRESS__)
	after = mallinfo2();
	cr_assert_eq(after.uordblks, before.uordblks, "resubmission allocated %zd bytes",
	             (ssize_t)(after.uordblks - before.uordblks));
#endif
	cr_assert_eq(s.nlog, 1001);
	/* the pool hands the same task back after free */
	assert_ok(rdmx_task_free(t));
	assert_ok(rdmx_task_send_alloc(s.ctx, conn, NULL, NULL, &again));
	cr_assert_eq(again, t);
}

Test(flow, submit_revalidates_changed_buffers)
{
	struct rdmx_conn *conn = connect_one();
	struct rdmx_buf b = {.mr = s.mr, .addr = s.mem, .len = 16};
	struct rdmx_rbuf r = {.len = 16};
	struct rdmx_task *t;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	struct rdmx_mr_remote *remote;

	drain();
	assert_ok(rdmx_mr_get_descriptor(s.mr, desc));
	assert_ok(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote));
	r.mr = remote;
	assert_ok(rdmx_task_write_alloc(s.ctx, conn, &b, &r, NULL, &t));
	b.len = sizeof(s.mem) + 1; /* changed in place, now out of its region */
	assert_rc(rdmx_task_submit(t), RDMX_E_INVAL);
	b.len = 32; /* inside, but no longer the rbuf's length */
	assert_rc(rdmx_task_submit(t), RDMX_E_INVAL);
	b.len = 16;
	assert_ok(rdmx_task_submit(t));
	drain();
	cr_assert_eq(rdmx_task_get_status(t), 0);
	assert_ok(rdmx_mr_remote_delete(&remote));
}

/* A submit after a good one skips the checks only while the chain reads as
 * it was checked: each in-place change below is caught. */
Test(flow, a_buffer_changed_after_a_good_submit_is_checked_again)
{
	struct rdmx_conn *conn = connect_one();
	static uint8_t other[64];
	struct rdmx_buf b = {.mr = s.mr, .addr = s.mem, .len = 16};
	struct rdmx_buf tail = {.mr = s.mr, .addr = s.mem + sizeof(s.mem) - 8, .len = 16};
	struct rdmx_task *t, *recv;
	struct rdmx_mr *mr2, *mr3, *ro;

	drain();
	assert_ok(rdmx_task_send_alloc(s.ctx, conn, &b, NULL, &t));
	assert_ok(rdmx_task_submit(t));
	drain();
	cr_assert_eq(rdmx_task_get_status(t), 0);
	b.addr = s.mem + sizeof(s.mem) - 8; /* runs past the region's end */
	assert_rc(rdmx_task_submit(t), RDMX_E_INVAL);
	b.addr = s.mem;
	assert_ok(rdmx_task_submit(t));
	drain();
	b.next = &tail; /* a second entry, out of its region */
	assert_rc(rdmx_task_submit(t), RDMX_E_INVAL);
	b.next = NULL;
	/* a region freed and another registered over other memory: glibc hands
	 * the same chunk back, so only the serial tells them apart */
	assert_ok(rdmx_mr_reg(s.dev, other, sizeof(other), RDMX_ACCESS_ALL, &mr2));
	b.mr = mr2;
	b.addr = other;
	assert_ok(rdmx_task_submit(t));
	drain();
	assert_ok(rdmx_mr_dereg(&mr2));
	assert_ok(rdmx_mr_reg(s.dev, other, 8, RDMX_ACCESS_ALL, &mr3));
	b.mr = mr3; /* 16 bytes no longer fit */
	assert_rc(rdmx_task_submit(t), RDMX_E_INVAL);
	b.len = 8;
	assert_ok(rdmx_task_submit(t));
	drain();
	/* a receive's buffer moved to a region it may not write */
	assert_ok(rdmx_mr_reg(s.dev, other, sizeof(other), RDMX_ACCESS_REMOTE_READ, &ro));
	b = (struct rdmx_buf){.mr = s.mr, .addr = s.mem, .len = 16};
	assert_ok(rdmx_task_receive_alloc(s.ctx, &b, NULL, &recv));
	b.mr = ro;
	b.addr = other;
	assert_rc(rdmx_task_submit(recv), RDMX_E_INVAL);
	assert_ok(rdmx_task_free(recv));
	assert_ok(rdmx_mr_dereg(&ro));
	assert_ok(rdmx_mr_dereg(&mr3));
}
