/* rdmx_ctx_get_stats: the engine's per-operation task counters, bytes and
 * connection counters, and rdmx_ctx_set_max_inline (a ctx attribute within
 * the device caps). Run per device like the rest of the battery. */
#include "conformance.h"

#include <string.h>

static struct side A, B;
static struct rdmx_conn *ca, *cb;

TestSuite(stats, .timeout = 120);

static struct rdmx_ctx_stats stats_of(const struct side *s)
{
	struct rdmx_ctx_stats st;

	ASSERT_OK(rdmx_ctx_get_stats(s->ctx, &st));
	return st;
}

/* Once nothing is in flight every submitted task has completed once. */
static void assert_balanced(const struct side *s)
{
	struct rdmx_ctx_stats st = stats_of(s);

	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++)
		cr_assert_eq(st.submitted[t], st.completed[t] + st.failed[t],
		             "side %s, %s: %llu submitted, %llu completed + %llu failed", s->name,
		             rdmx_task_type_name(t), (unsigned long long)st.submitted[t],
		             (unsigned long long)st.completed[t], (unsigned long long)st.failed[t]);
}

Test(stats, writes_reads_sends_counted)
{
	enum { N = 25, LEN = 1000, RN = 7, RLEN = 300 };
	leak_begin();
	pair_open(&A, &B, 16);
	struct rdmx_ctx_stats st = stats_of(&B);
	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++)
		cr_assert(st.submitted[t] == 0 && st.completed[t] == 0 && st.failed[t] == 0 &&
		              st.bytes[t] == 0,
		          "fresh context has counts for %s", rdmx_task_type_name(t));
	connect_pair(&A, &B, &ca, &cb);
	st = stats_of(&B);
	cr_assert_eq(st.conns_established, 1u, "established %llu",
	             (unsigned long long)st.conns_established);

	struct region *ra = region_new(&A, 8192, RDMX_ACCESS_ALL | RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 8192, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	struct rdmx_buf src = lbuf(rb, 0, LEN);
	struct rdmx_rbuf dst = rbuf(m, 0, 0);
	struct tinfo tw = {0};
	struct rdmx_task *t = NULL;

	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &src, &dst, &tw, &t));
	for (int i = 0; i < N; i++)
		submit_wait(&A, &B, t, &tw);
	cr_assert_eq(tw.ok, N);
	ASSERT_OK(rdmx_task_free(t));

	struct rdmx_buf rdst = lbuf(rb, 4096, RLEN);
	struct rdmx_rbuf rsrc = rbuf(m, 0, RLEN);
	struct tinfo tr = {0};
	ASSERT_OK(rdmx_task_read_alloc(B.ctx, cb, &rsrc, &rdst, &tr, &t));
	for (int i = 0; i < RN; i++)
		submit_wait(&A, &B, t, &tr);
	cr_assert_eq(tr.ok, RN);
	ASSERT_OK(rdmx_task_free(t));

	/* a send and the receive that takes it: one each, the bytes on both */
	struct rdmx_buf rcv = lbuf(ra, 4096, 4096), snd = lbuf(rb, 0, 123);
	struct tinfo trc = {0}, tsn = {0};
	post_recv(&A, &rcv, &trc);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &snd, &tsn, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(&trc) && TI_DONE(&tsn));
	ASSERT_DONE_OK(&tsn);

	/* a write the target refuses (out of the region) fails and is counted so */
	struct rdmx_rbuf bad = rbuf(m, 8192 - 10, 0);
	struct tinfo tb = {0};
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &src, &bad, &tb, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(&tb));
	cr_assert_eq(tb.err, 1, "a write past the region end succeeded");

	st = stats_of(&B);
	cr_assert_eq(st.submitted[RDMX_TASK_WRITE], N + 1u, "write submitted %llu",
	             (unsigned long long)st.submitted[RDMX_TASK_WRITE]);
	cr_assert_eq(st.completed[RDMX_TASK_WRITE], (uint64_t)N, "write completed %llu",
	             (unsigned long long)st.completed[RDMX_TASK_WRITE]);
	cr_assert_eq(st.failed[RDMX_TASK_WRITE], 1u);
	cr_assert_eq(st.bytes[RDMX_TASK_WRITE], (uint64_t)N * LEN);
	cr_assert_eq(st.submitted[RDMX_TASK_READ], (uint64_t)RN);
	cr_assert_eq(st.completed[RDMX_TASK_READ], (uint64_t)RN);
	cr_assert_eq(st.bytes[RDMX_TASK_READ], (uint64_t)RN * RLEN);
	cr_assert_eq(st.submitted[RDMX_TASK_SEND], 1u);
	cr_assert_eq(st.completed[RDMX_TASK_SEND], 1u);
	cr_assert_eq(st.bytes[RDMX_TASK_SEND], 123u);
	cr_assert_eq(st.submitted[RDMX_TASK_RECEIVE], 0u);
	cr_assert_eq(st.failed[RDMX_TASK_READ] + st.failed[RDMX_TASK_SEND], 0u);

	struct rdmx_ctx_stats sa = stats_of(&A);
	cr_assert_eq(sa.submitted[RDMX_TASK_RECEIVE], 1u);
	cr_assert_eq(sa.completed[RDMX_TASK_RECEIVE], 1u);
	cr_assert_eq(sa.bytes[RDMX_TASK_RECEIVE], 123u, "received bytes %llu",
	             (unsigned long long)sa.bytes[RDMX_TASK_RECEIVE]);
	/* one-sided operations leave the target's counters alone */
	cr_assert_eq(sa.submitted[RDMX_TASK_WRITE] + sa.submitted[RDMX_TASK_READ], 0u);
	assert_balanced(&A);
	assert_balanced(&B);

	pair_close(&A, &B);
	leak_end();
}

Test(stats, connections_and_canceled_tasks)
{
	leak_begin();
	pair_open(&A, &B, 16);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_buf rcv = lbuf(ra, 0, 4096);
	struct tinfo tr = {0};
	post_recv(&A, &rcv, &tr);

	ASSERT_OK(rdmx_conn_disconnect(cb));
	DRIVE_UNTIL(&A, &B, A.disconnects == 1 && B.disconnects == 1);
	struct rdmx_ctx_stats sa = stats_of(&A), sb = stats_of(&B);
	cr_assert_eq(sa.conns_established, 1u);
	cr_assert_eq(sa.conns_disconnected, 1u);
	cr_assert_eq(sb.conns_disconnected, 1u);
	cr_assert_eq(sa.conns_failed + sb.conns_failed, 0u);
	/* the receive nobody sent to completes with an error at stop */
	ASSERT_OK(rdmx_ctx_stop(A.ctx));
	cr_assert_eq(tr.err, 1);
	sa = stats_of(&A);
	cr_assert_eq(sa.failed[RDMX_TASK_RECEIVE], 1u);
	cr_assert_eq(sa.completed[RDMX_TASK_RECEIVE], 0u);
	/* counters survive stop */
	cr_assert_eq(sa.conns_established, 1u);
	assert_balanced(&A);
	pair_close(&A, &B);
	leak_end();
}

Test(stats, bad_arguments_and_names)
{
	struct rdmx_ctx_stats st;

	ASSERT_RC(rdmx_ctx_get_stats(NULL, &st), RDMX_E_INVAL);
	cr_assert_str_eq(rdmx_task_type_name(RDMX_TASK_WRITE), "write");
	cr_assert_str_eq(rdmx_task_type_name(RDMX_TASK_RECEIVE), "receive");
	cr_assert_str_eq(rdmx_task_type_name(RDMX_TASK_SYNC_EVENT_NOTIFY_ADD),
	                 "sync_event_notify_add");
	cr_assert_str_eq(rdmx_task_type_name(RDMX_TASK_TYPE_COUNT), "unknown");
	leak_begin();
	side_open(&A, "a", 0);
	ASSERT_RC(rdmx_ctx_get_stats(A.ctx, NULL), RDMX_E_INVAL);
	side_close(&A);
	leak_end();
}

Test(stats, max_inline_round_trips_within_caps)
{
	uint32_t v = 99;

	leak_begin();
	side_open(&A, "a", 0);
	ASSERT_OK(rdmx_ctx_get_max_inline(A.ctx, &v));
	cr_assert_eq(v, 0u, "inline is off by default (got %u)", v);
	if (A.caps.max_inline) {
		ASSERT_OK(rdmx_ctx_set_max_inline(A.ctx, A.caps.max_inline));
		ASSERT_OK(rdmx_ctx_get_max_inline(A.ctx, &v));
		cr_assert_eq(v, A.caps.max_inline);
		ASSERT_OK(rdmx_ctx_set_max_inline(A.ctx, 64));
		ASSERT_OK(rdmx_ctx_get_max_inline(A.ctx, &v));
		cr_assert_eq(v, 64u);
	}
	ASSERT_RC(rdmx_ctx_set_max_inline(A.ctx, A.caps.max_inline + 1), RDMX_E_INVAL);
	ASSERT_OK(rdmx_ctx_get_max_inline(A.ctx, &v));
	cr_assert(v == 64u || A.caps.max_inline == 0, "a refused value changed the attribute");
	ASSERT_RC(rdmx_ctx_set_max_inline(NULL, 1), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_get_max_inline(A.ctx, NULL), RDMX_E_INVAL);
	side_conf(&A, 4);
	side_start(&A);
	ASSERT_RC(rdmx_ctx_set_max_inline(A.ctx, 0), RDMX_E_BAD_STATE);
	side_close(&A);
	leak_end();
}

Test(stats, inline_writes_and_sends_deliver)
{
	enum { LEN = 48 };
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	if (B.caps.max_inline)
		ASSERT_OK(rdmx_ctx_set_max_inline(B.ctx, B.caps.max_inline));
	side_conf(&A, 16);
	side_conf(&B, 16);
	side_start(&A);
	side_start(&B);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 8192, RDMX_ACCESS_ALL | RDMX_ACCESS_LOCAL_WRITE, 0xee);
	struct region *rb = region_new(&B, 8192, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	pattern_fill(rb->mem, 8192, 9);
	/* small (inline when the device has it) and large (never inline) writes */
	struct rdmx_buf small = lbuf(rb, 0, LEN), large = lbuf(rb, 0, 4000);
	struct rdmx_rbuf d1 = rbuf(m, 0, 0), d2 = rbuf(m, 4096, 0);
	struct tinfo t1 = {0}, t2 = {0}, tr = {0}, ts = {0};
	struct rdmx_task *t = NULL;
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &small, &d1, &t1, &t));
	submit_wait(&A, &B, t, &t1);
	ASSERT_DONE_OK(&t1);
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &large, &d2, &t2, &t));
	submit_wait(&A, &B, t, &t2);
	ASSERT_DONE_OK(&t2);
	cr_assert(pattern_check(ra->mem, LEN, 9));
	cr_assert_eq(ra->mem[LEN], 0xee);
	cr_assert(pattern_check(ra->mem + 4096, 4000, 9));
	struct rdmx_buf rcv = lbuf(ra, 0, 4096), snd = lbuf(rb, 0, LEN);
	post_recv(&A, &rcv, &tr);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &snd, &ts, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(&tr) && TI_DONE(&ts));
	ASSERT_DONE_OK(&ts);
	ASSERT_DONE_OK(&tr);
	cr_assert_eq(tr.len, (uint32_t)LEN);
	pair_close(&A, &B);
	leak_end();
}
