/* tcp provider: light messages (engine/msg.h) between two contexts of the
 * loopback device: placed and handed over in order, held back behind an
 * unanswered request, queued whole when the socket is full, and refused
 * (the connection ends) when the receiving context takes none or the target
 * memory is not the sender's to write. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdmx/rdmx.h>

#include "msg.h"
#include "providers/tcp/tcp.h"

#define REGION (16u * RDMX__MSG_MAX)
#define MAX_SEEN 256u

struct side {
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	bool up, down;
};

static struct {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_pe *pe_a; /* a's own engine, not driven (pair_apart), or NULL */
	struct side a, b;     /* a receives, b sends */
	uint8_t *mem;
	struct rdmx_mr *mr;
	struct rdmx_mr_remote *remote;
	uint32_t seen, imm[MAX_SEEN], len[MAX_SEEN];
	uint32_t writes_done;
} s;

static void on_msg(void *arg, struct rdmx_conn *conn, uint32_t imm, uint32_t len)
{
	(void)arg;
	cr_assert_eq(conn, s.a.conn);
	if (s.seen < MAX_SEEN) {
		s.imm[s.seen] = imm;
		s.len[s.seen] = len;
	}
	s.seen++;
}

static void task_ok(struct rdmx_task *t, void *u, void *c)
{
	(void)c;
	/* a receive on a's side goes into the order of what a was handed */
	if (u == &s.a && s.seen < MAX_SEEN) {
		s.imm[s.seen] = rdmx_task_receive_get_imm(t);
		s.len[s.seen] = rdmx_task_receive_get_len(t);
		s.seen++;
	}
	s.writes_done++;
	rdmx_task_free(t);
}

static void task_err(struct rdmx_task *t, void *u, void *c)
{
	(void)u;
	(void)c;
	rdmx_task_free(t);
}

static struct side *side_of(struct rdmx_conn *conn)
{
	return conn == s.a.conn ? &s.a : &s.b;
}

static void on_up(struct rdmx_conn *conn, void *u, void *cu)
{
	(void)u;
	(void)cu;
	side_of(conn)->up = true;
}

static void on_down(struct rdmx_conn *conn, void *u, void *cu)
{
	(void)u;
	(void)cu;
	side_of(conn)->down = true;
}

static void side_make(struct side *x, bool handler)
{
	cr_assert_eq(rdmx_ctx_create(s.dev, x == &s.a && s.pe_a ? s.pe_a : s.pe, &x->ctx), 0);
	cr_assert_eq(rdmx_ctx_set_task_conf(x->ctx, RDMX_TASK_WRITE_IMM, task_ok, task_err, 16), 0);
	cr_assert_eq(rdmx_ctx_set_task_conf(x->ctx, RDMX_TASK_RECEIVE, task_ok, task_err, 16), 0);
	cr_assert_eq(rdmx_ctx_set_conn_callbacks(x->ctx, NULL, on_up, on_down, on_down), 0);
	if (handler)
		cr_assert_eq(rdmx__ctx_set_msg_handler(x->ctx, on_msg, NULL), 0);
	cr_assert_eq(rdmx_ctx_start(x->ctx), 0);
}

/* A connection in error stays until disconnected (RC): its state says it;
 * or it ended already (its peer closed the stream: the final event came,
 * and the engine freed it). */
static void progress_until_error(struct side *x)
{
	enum rdmx_conn_state st = RDMX_CONN_ESTABLISHED;

	for (unsigned i = 0; st != RDMX_CONN_ERROR && !x->down; i++) {
		cr_assert_lt(i, 10000000u, "connection not in error (state %d)", st);
		rdmx_pe_progress(s.pe);
		if (!x->down)
			cr_assert_eq(rdmx_conn_get_state(x->conn, &st), 0);
	}
}

/* a receives (with a handler when a_handler), b sends; both connected.
 * apart: a runs on an engine of its own (s.pe_a), which the tests drive
 * only when they say so (its NIC thread serves it meanwhile). */
static void pair_on(bool a_handler, bool apart)
{
	const void *da, *db;
	uint8_t desc[64];
	size_t la = 0, lb = 0, dlen = 0;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(rdmx_dev_open("tcp", &s.dev), 0);
	cr_assert_eq(rdmx_pe_create(&s.pe), 0);
	if (apart)
		cr_assert_eq(rdmx_pe_create(&s.pe_a), 0);
	side_make(&s.a, a_handler);
	side_make(&s.b, true);
	cr_assert_eq(rdmx_ctx_export(s.a.ctx, &da, &la, &s.a.conn), 0);
	cr_assert_eq(rdmx_ctx_export(s.b.ctx, &db, &lb, &s.b.conn), 0);
	cr_assert_eq(rdmx_ctx_connect(s.a.ctx, db, lb, s.a.conn), 0);
	cr_assert_eq(rdmx_ctx_connect(s.b.ctx, da, la, s.b.conn), 0);
	for (unsigned i = 0; !s.a.up || !s.b.up; i++) {
		cr_assert_lt(i, 10000000u, "no connection");
		rdmx_pe_progress(s.pe);
		if (s.pe_a)
			rdmx_pe_progress(s.pe_a);
	}
	s.mem = calloc(1, REGION);
	cr_assert_not_null(s.mem);
	cr_assert_eq(rdmx_mr_reg(s.dev, s.mem, REGION, RDMX_ACCESS_REMOTE_WRITE, &s.mr), 0);
	cr_assert_eq(rdmx_mr_get_descriptor_size(s.mr, &dlen), 0);
	cr_assert_eq(rdmx_mr_get_descriptor(s.mr, desc), 0);
	cr_assert_eq(rdmx_mr_remote_from_descriptor(desc, dlen, &s.remote), 0);
}

static void pair(bool a_handler)
{
	pair_on(a_handler, false);
}

static void unpair(void)
{
	rdmx_mr_remote_delete(&s.remote);
	cr_assert_eq(rdmx_mr_dereg(&s.mr), 0);
	free(s.mem);
	cr_assert_eq(rdmx_ctx_stop(s.a.ctx), 0);
	cr_assert_eq(rdmx_ctx_stop(s.b.ctx), 0);
	cr_assert_eq(rdmx_ctx_destroy(&s.a.ctx), 0);
	cr_assert_eq(rdmx_ctx_destroy(&s.b.ctx), 0);
	cr_assert_eq(rdmx_pe_destroy(&s.pe), 0);
	if (s.pe_a)
		cr_assert_eq(rdmx_pe_destroy(&s.pe_a), 0);
	cr_assert_eq(rdmx_dev_close(&s.dev), 0);
}

/* Posts len bytes of `fill` at off as a light message from b; the answer. */
static int post(uint64_t off, uint8_t fill, uint32_t len, uint32_t imm)
{
	static uint8_t src[RDMX__MSG_MAX + 1];
	struct rdmx_buf b = {.addr = src, .len = len};
	struct rdmx_rbuf dst = {.mr = s.remote, .offset = off, .len = len};

	memset(src, fill, len);
	return rdmx__conn_post_msg(s.b.conn, &b, &dst, imm);
}

/* The statistics count n messages of 0, 64, 128... bytes as the ring
 * writes they stand for: write_imm tasks submitted and completed on the
 * sender, receives submitted and completed on the receiver (never more
 * completed than submitted: a gauge of the two stays whole). */
static void expect_counted(uint32_t n)
{
	struct rdmx_ctx_stats sa, sb;
	uint64_t bytes = 64ull * n * (n - 1) / 2;

	cr_assert_eq(rdmx_ctx_get_stats(s.a.ctx, &sa), 0);
	cr_assert_eq(rdmx_ctx_get_stats(s.b.ctx, &sb), 0);
	cr_assert_eq(sb.submitted[RDMX_TASK_WRITE_IMM], n);
	cr_assert_eq(sb.completed[RDMX_TASK_WRITE_IMM], n);
	cr_assert_eq(sb.bytes[RDMX_TASK_WRITE_IMM], bytes);
	cr_assert_eq(sa.submitted[RDMX_TASK_RECEIVE], n, "%llu receives submitted",
	             (unsigned long long)sa.submitted[RDMX_TASK_RECEIVE]);
	cr_assert_eq(sa.completed[RDMX_TASK_RECEIVE], n);
	cr_assert_eq(sa.bytes[RDMX_TASK_RECEIVE], bytes);
}

Test(tcp_msg, placed_and_handed_over_in_order)
{
	uint32_t n = 0;

	pair(true);
	/* sizes 0..RDMX__MSG_MAX, each into its own bytes; a full frame queue
	 * answers RDMX_E_AGAIN until a progress sent it */
	for (uint32_t len = 0; len <= RDMX__MSG_MAX; len += 64) {
		int rc;

		while ((rc = post(n * RDMX__MSG_MAX, (uint8_t)(n + 1), len, 1000 + n)) ==
		       RDMX_E_AGAIN)
			rdmx_pe_progress(s.pe);
		cr_assert_eq(rc, 0, "post of %u bytes: %s", len, rdmx_err_name(rc));
		n++;
	}
	for (unsigned i = 0; s.seen < n; i++) {
		cr_assert_lt(i, 10000000u, "%u of %u messages arrived", s.seen, n);
		rdmx_pe_progress(s.pe);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = i * 64;
		const uint8_t *p = s.mem + i * RDMX__MSG_MAX;

		cr_assert_eq(s.imm[i], 1000 + i, "message %u out of order", i);
		cr_assert_eq(s.len[i], len);
		for (uint32_t k = 0; k < len; k++)
			cr_assert_eq(p[k], (uint8_t)(i + 1), "message %u byte %u", i, k);
	}
	cr_assert(!s.a.down && !s.b.down);
	expect_counted(n);
	unpair();
}

/* A write with immediate to a context with no receive posted is answered
 * "receiver not ready" and retried until a receive is posted: until then it
 * stays unanswered whatever the NIC threads do, and a light message posted
 * meanwhile would pass its retry. */
Test(tcp_msg, waits_behind_an_unanswered_request)
{
	static uint8_t src[64], sink[64];
	struct rdmx_buf b = {.addr = src, .len = sizeof(src)};
	struct rdmx_buf rb = {.addr = sink, .len = sizeof(sink)};
	struct rdmx_rbuf dst = {.mr = NULL, .offset = 0, .len = sizeof(src)};
	struct rdmx_task *t = NULL, *r = NULL;

	pair(true);
	cr_assert_eq(rdmx_mr_reg(s.dev, src, sizeof(src), 0, &b.mr), 0);
	cr_assert_eq(rdmx_mr_reg(s.dev, sink, sizeof(sink), RDMX_ACCESS_LOCAL_WRITE, &rb.mr), 0);
	dst.mr = s.remote;
	cr_assert_eq(rdmx_task_write_imm_alloc(s.b.ctx, s.b.conn, &b, &dst, 7, NULL, &t), 0);
	cr_assert_eq(rdmx_task_submit(t), 0);
	for (unsigned i = 0; i < 1000; i++) {
		rdmx_pe_progress(s.pe);
		cr_assert_eq(post(128, 9, 64, 8), RDMX_E_AGAIN, "a light message passed a request");
	}
	cr_assert_eq(rdmx_task_receive_alloc(s.a.ctx, &rb, NULL, &r), 0);
	cr_assert_eq(rdmx_task_submit(r), 0);
	for (unsigned i = 0; s.writes_done < 2; i++) { /* the write and the receive */
		cr_assert_lt(i, 10000000u, "the write never completed");
		rdmx_pe_progress(s.pe);
	}
	cr_assert_eq(post(128, 9, 64, 8), 0);
	for (unsigned i = 0; s.seen < 1; i++) {
		cr_assert_lt(i, 10000000u, "the light message never arrived");
		rdmx_pe_progress(s.pe);
	}
	cr_assert_eq(s.imm[0], 8);
	cr_assert_eq(rdmx_mr_dereg(&b.mr), 0);
	cr_assert_eq(rdmx_mr_dereg(&rb.mr), 0);
	unpair();
}

Test(tcp_msg, a_context_without_a_handler_ends_the_connection)
{
	pair(false);
	cr_assert_eq(post(0, 1, 64, 1), 0);
	progress_until_error(&s.a);
	progress_until_error(&s.b);
	cr_assert_eq(s.seen, 0);
	unpair();
}

Test(tcp_msg, memory_not_granted_ends_the_connection)
{
	pair(true);
	cr_assert_eq(post(REGION - 8, 1, 64, 1), 0); /* runs past the region */
	progress_until_error(&s.a);
	progress_until_error(&s.b);
	cr_assert_eq(s.seen, 0);
	unpair();
}

Test(tcp_msg, bad_arguments)
{
	static uint8_t src[RDMX__MSG_MAX + 1];
	struct rdmx_buf b = {.addr = src, .len = sizeof(src)};
	struct rdmx_rbuf dst = {.mr = NULL};

	pair(true);
	cr_assert_eq(rdmx__ctx_set_msg_handler(s.a.ctx, on_msg, NULL), RDMX_E_BAD_STATE);
	cr_assert_eq(rdmx__ctx_set_msg_handler(NULL, on_msg, NULL), RDMX_E_INVAL);
	cr_assert_eq(rdmx__conn_post_msg(s.b.conn, &b, &dst, 0), RDMX_E_INVAL);
	dst.mr = s.remote;
	cr_assert_eq(rdmx__conn_post_msg(s.b.conn, &b, &dst, 0), RDMX_E_INVAL); /* too long */
	cr_assert_eq(rdmx__conn_post_msg(NULL, &b, &dst, 0), RDMX_E_INVAL);
	unpair();
}

/* Light messages held for the next poll (a burst) go before a write task
 * posted after them, and the receiver hands them over in that order: the
 * handler's messages, then the write's receive. */
Test(tcp_msg, held_messages_go_before_a_later_write)
{
	static uint8_t src[64], sink[64];
	struct rdmx_buf b = {.addr = src, .len = sizeof(src)};
	struct rdmx_buf rb = {.addr = sink, .len = sizeof(sink)};
	struct rdmx_rbuf dst = {.offset = 4096, .len = sizeof(src)};
	struct rdmx_task *t = NULL, *r = NULL;

	pair(true);
	cr_assert_eq(rdmx_mr_reg(s.dev, src, sizeof(src), 0, &b.mr), 0);
	cr_assert_eq(rdmx_mr_reg(s.dev, sink, sizeof(sink), RDMX_ACCESS_LOCAL_WRITE, &rb.mr), 0);
	dst.mr = s.remote;
	cr_assert_eq(rdmx_task_receive_alloc(s.a.ctx, &rb, &s.a, &r), 0);
	cr_assert_eq(rdmx_task_submit(r), 0);
	for (uint32_t i = 1; i <= 3; i++)
		cr_assert_eq(post(i * 64, (uint8_t)i, 64, i), 0);
	cr_assert_eq(rdmx_task_write_imm_alloc(s.b.ctx, s.b.conn, &b, &dst, 4, NULL, &t), 0);
	cr_assert_eq(rdmx_task_submit(t), 0);
	for (unsigned i = 0; s.seen < 4 || s.writes_done < 2; i++) {
		cr_assert_lt(i, 10000000u, "%u of 4 handed over", s.seen);
		rdmx_pe_progress(s.pe);
	}
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(s.imm[i], i + 1, "place %u: imm %u", i, s.imm[i]);
	cr_assert_eq(rdmx_mr_dereg(&b.mr), 0);
	cr_assert_eq(rdmx_mr_dereg(&rb.mr), 0);
	unpair();
}

/* Whether x's connection is in error or ended (then freed: not read). */
static bool conn_in_error(const struct side *x)
{
	enum rdmx_conn_state st = RDMX_CONN_ESTABLISHED;

	if (x->down)
		return true;
	cr_assert_eq(rdmx_conn_get_state(x->conn, &st), 0);
	return st != RDMX_CONN_ESTABLISHED;
}

/* A receiver whose application does not poll: its NIC thread places the
 * messages and queues them. Past RDMX__MSG_BACKLOG_MAX the connection ends;
 * those queued before are still handed over, never more than the cap. */
Test(tcp_msg, backlog_cap_of_a_receiver_that_does_not_poll, .timeout = 60)
{
	uint32_t sent = 0;

	pair_on(true, true);
	for (unsigned i = 0; sent < RDMX__MSG_BACKLOG_MAX + 64 && !conn_in_error(&s.b); i++) {
		int rc = post(0, 1, 16, sent);

		cr_assert_lt(i, 100000000u, "stuck at %u sent", sent);
		if (rc == 0)
			sent++;
		else
			cr_assert_eq(rc, RDMX_E_AGAIN, "post: %s", rdmx_err_name(rc));
		rdmx_pe_progress(s.pe);
	}
	for (unsigned i = 0; !conn_in_error(&s.b); i++) {
		cr_assert_lt(i, 100000000u, "the sender's connection never ended");
		rdmx_pe_progress(s.pe);
	}
	for (unsigned i = 0; !conn_in_error(&s.a); i++) {
		cr_assert_lt(i, 100000000u, "the receiver's connection never ended");
		rdmx_pe_progress(s.pe_a);
	}
	for (unsigned i = 0; i < 1000; i++)
		rdmx_pe_progress(s.pe_a);
	cr_assert_leq(s.seen, RDMX__MSG_BACKLOG_MAX, "%u handed over", s.seen);
	cr_assert_geq(s.seen, RDMX__MSG_BACKLOG_MAX - 64, "%u handed over", s.seen);
	for (uint32_t i = 0; i < MAX_SEEN; i++)
		cr_assert_eq(s.imm[i], i);
	unpair();
}

/* A context stopped with light messages in its completion queue (placed by
 * the NIC thread while the application did not poll): they are dropped with
 * the connection, the handler does not run. */
Test(tcp_msg, stop_with_messages_queued)
{
	struct rdmx_ctx_stats st;

	pair_on(true, true);
	for (uint32_t n = 0; n < 100;) {
		int rc = post(0, 1, 16, n);

		if (rc == 0)
			n++;
		rdmx_pe_progress(s.pe);
	}
	for (unsigned i = 0; i < 200; i++) { /* the NIC thread reads them */
		rdmx_pe_progress(s.pe);
		usleep(1000);
	}
	cr_assert_eq(rdmx_ctx_stop(s.a.ctx), 0);
	cr_assert_eq(s.seen, 0);
	cr_assert_eq(rdmx_ctx_get_stats(s.b.ctx, &st), 0);
	cr_assert_eq(st.submitted[RDMX_TASK_WRITE_IMM], 100);
	cr_assert_eq(st.completed[RDMX_TASK_WRITE_IMM], 100);
	cr_assert_eq(rdmx_ctx_start(s.a.ctx), 0); /* unpair stops it */
	unpair();
}

/* A light message sent at once (tx.c rdmx__tcp_tx_msg_now) that the socket
 * does not take whole: the rest is queued as its frame and goes when the
 * socket has room, in order with the messages queued behind it. The
 * receiver reads nothing meanwhile: its application does not poll and its
 * NIC thread cannot take the context lock this test holds. Every message is
 * posted as the first since the peer's last frame (as in a ping-pong), so
 * each goes by the direct path until the socket is full. */
Test(tcp_msg, the_rest_of_a_message_the_socket_did_not_take_is_queued)
{
	const uint32_t len = RDMX__MSG_MAX - 12, slots = REGION / RDMX__MSG_MAX;
	struct tcp_conn *bc;
	struct tcp_ctx *atc, *btc;
	bool cut = false; /* a post from an empty queue that the socket took part of */
	int small = 1024;
	uint32_t n = 0;
	int rc = 0;

	pair_on(true, true);
	bc = TCP_CONN(s.b.conn);
	atc = TCP_CTX(s.a.ctx);
	btc = TCP_CTX(s.b.ctx);
	cr_assert_eq(setsockopt(bc->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	cr_assert_eq(
	    setsockopt(TCP_CONN(s.a.conn)->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	pthread_mutex_lock(&atc->lock);
	while (rc == 0) {
		bool was_empty;

		cr_assert_lt(n, MAX_SEEN, "the socket never filled");
		pthread_mutex_lock(&btc->lock);
		bc->msgs_unheard = 0;
		was_empty = bc->tx.count == 0;
		pthread_mutex_unlock(&btc->lock);
		rc = post((uint64_t)(n % slots) * RDMX__MSG_MAX, (uint8_t)n, len, n);
		if (rc == 0)
			n++;
		pthread_mutex_lock(&btc->lock);
		if (rc == 0 && was_empty && bc->tx.count == 1) {
			const struct tcp_frame *f = &bc->tx.q[bc->tx.head];

			cut = cut || f->hdr_off > 0;
		}
		pthread_mutex_unlock(&btc->lock);
		rdmx_pe_progress(s.pe);
	}
	cr_assert_eq(rc, RDMX_E_AGAIN, "post: %s", rdmx_err_name(rc));
	cr_assert(cut, "no post was cut short by the full socket");
	pthread_mutex_unlock(&atc->lock);
	for (unsigned i = 0; s.seen < n; i++) {
		cr_assert_lt(i, 10000000u, "%u of %u messages arrived", s.seen, n);
		rdmx_pe_progress(s.pe);
		rdmx_pe_progress(s.pe_a);
	}
	cr_assert_eq(s.seen, n);
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(s.imm[i], i);
		cr_assert_eq(s.len[i], len);
	}
	for (uint32_t i = n > slots ? n - slots : 0; i < n; i++) {
		const uint8_t *at = s.mem + (size_t)(i % slots) * RDMX__MSG_MAX;

		for (uint32_t k = 0; k < len; k++)
			cr_assert_eq(at[k], (uint8_t)i, "message %u, byte %u", i, k);
	}
	cr_assert(!s.a.down && !s.b.down);
	unpair();
}

/* A light message whose target is refused at its first payload bytes (rx.c
 * sink_region_lock): the protocol error closes the stream from inside the
 * copy, and what the copy's caller does next must leave the receive state as
 * the close left it (nothing owed, no payload under way), not count the
 * refused bytes against a frame that is gone. */
Test(tcp_msg, a_message_refused_at_its_first_bytes_leaves_nothing_owed)
{
	struct tcp_ctx *atc;
	struct tcp_conn *ac;

	pair(true);
	atc = TCP_CTX(s.a.ctx);
	ac = TCP_CONN(s.a.conn);
	cr_assert_eq(post(REGION - 8, 1, 64, 1), 0); /* runs past the region */
	progress_until_error(&s.a);
	cr_assert(!s.a.down, "the receiver's connection ended instead of going to error");
	pthread_mutex_lock(&atc->lock);
	cr_assert_lt(ac->fd, 0, "the stream was not closed");
	cr_assert(!ac->rx.in_payload);
	cr_assert_eq(ac->rx.left, 0, "%llu payload bytes still owed by a closed stream",
	             (unsigned long long)ac->rx.left);
	pthread_mutex_unlock(&atc->lock);
	progress_until_error(&s.b);
	cr_assert_eq(s.seen, 0);
	unpair();
}

/* A light message sent at once on a socket that refuses it (EPIPE: the
 * sender's own side shut down): the frame queued for the rest goes with the
 * connection, which ends; nothing is sent twice or leaked. */
Test(tcp_msg, a_message_sent_at_once_on_a_broken_socket_ends_the_connection)
{
	struct tcp_conn *bc;
	struct tcp_ctx *atc, *btc;
	int rc;

	pair_on(true, true);
	bc = TCP_CONN(s.b.conn);
	atc = TCP_CTX(s.a.ctx);
	btc = TCP_CTX(s.b.ctx);
	/* the receiver holds still (its NIC thread cannot take its lock): no
	 * close of its side reaches the sender before the post */
	pthread_mutex_lock(&atc->lock);
	cr_assert_eq(shutdown(bc->fd, SHUT_WR), 0);
	bc->msgs_unheard = 0; /* the direct path: nothing before it */
	rc = post(0, 1, 64, 1);
	pthread_mutex_lock(&btc->lock);
	cr_assert_eq(rc, 0, "post: %s", rdmx_err_name(rc));
	cr_assert_lt(bc->fd, 0, "the connection kept its broken socket");
	cr_assert_eq(bc->tx.count, 0, "a frame stayed queued on a closed stream");
	pthread_mutex_unlock(&btc->lock);
	rc = post(0, 1, 64, 2);
	pthread_mutex_unlock(&atc->lock);
	cr_assert(rc == RDMX_E_AGAIN || rc == RDMX_E_BAD_STATE, "post: %s", rdmx_err_name(rc));
	for (unsigned i = 0; !s.b.down; i++) {
		cr_assert_lt(i, 10000000u, "the sender's connection never ended");
		rdmx_pe_progress(s.pe);
	}
	for (unsigned i = 0; !conn_in_error(&s.a); i++) {
		cr_assert_lt(i, 10000000u, "the receiver's connection never ended");
		rdmx_pe_progress(s.pe_a);
	}
	cr_assert_eq(s.seen, 0);
	unpair();
}
