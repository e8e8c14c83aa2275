/* RPC: unary calls, status, async pipelining, deadlines, cancel races,
 * one-way, both directions, answering later, drain, peer loss, stats. */
#include "rpcfix.h"

#include "chan_internal.h" /* rdmx__chan_fail, rdv_tx */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t ECHO, FAIL, HOLD;

static void ids(void)
{
	ECHO = rdmx_rpc_method_id(ECHO_NAME);
	FAIL = rdmx_rpc_method_id(FAIL_NAME);
	HOLD = rdmx_rpc_method_id(HOLD_NAME);
}

Test(rpc, unary_status_and_unimplemented)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	const char *hello = "hello, rdmx";

	ids();
	leak_begin();
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	/* both nodes share this thread: async calls and drive both (the
	 * blocking call has its own test, with the server on a thread) */
	struct call_rec r = {0};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(hello, strlen(hello));
	ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &p, NULL, call_rec_cb, &r, NULL));
	cr_assert_eq(r.done, 0, "callback ran inside call_async");
	DRIVE_UNTIL(&a, &b, r.done);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	cr_assert_eq(r.len, strlen(hello));
	cr_assert_eq(r.sum, checksum64(hello, strlen(hello)));
	/* status with a message */
	struct call_rec f = {0};
	ASSERT_OK(rdmx_rpc_call_async(ra, FAIL, NULL, NULL, call_rec_cb, &f, NULL));
	DRIVE_UNTIL(&a, &b, f.done);
	cr_assert_eq(f.code, RDMX_RPC_NOT_FOUND);
	cr_assert_str_eq(f.msg, "no such key");
	/* unknown method */
	struct call_rec u = {0};
	ASSERT_OK(rdmx_rpc_call_async(ra, rdmx_rpc_method_id("test.Echo/Nope"), NULL, NULL,
	                              call_rec_cb, &u, NULL));
	DRIVE_UNTIL(&a, &b, u.done);
	cr_assert_eq(u.code, RDMX_RPC_UNIMPLEMENTED);
	/* a has no server: b's calls to a are UNIMPLEMENTED */
	struct call_rec v = {0};
	ASSERT_OK(rdmx_rpc_call_async(rb, ECHO, &p, NULL, call_rec_cb, &v, NULL));
	DRIVE_UNTIL(&a, &b, v.done);
	cr_assert_eq(v.code, RDMX_RPC_UNIMPLEMENTED);
	cr_assert_str_eq(rdmx_rpc_code_name(RDMX_RPC_UNAVAILABLE), "UNAVAILABLE");
	cr_assert_str_eq(rdmx_rpc_code_name((enum rdmx_rpc_code)99), "UNKNOWN");
	/* bad arguments */
	ASSERT_RC(rdmx_rpc_call_async(ra, ECHO, &p, NULL, NULL, NULL, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_call(ra, ECHO, &p, NULL, NULL), RDMX_E_INVAL);
	drive_for(&a, &b, 20);
	cr_assert_eq(r.done + f.done + u.done + v.done, 4, "a callback ran twice");
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
	leak_end();
}

/* The blocking call drives its own worker; the server side runs on a thread
 * of its own node here (node_serve_start). */
Test(rpc, blocking_call)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_rpc_reply rep;
	struct node_serve sa;
	char buf[3000];

	ids();
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	node_serve_start(&sa, &b);
	pattern_fill(buf, sizeof(buf), 3);
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, sizeof(buf));
	for (int i = 0; i < 100; i++) {
		ASSERT_OK(rdmx_rpc_call(ra, ECHO, &p, NULL, &rep));
		cr_assert_eq(rep.code, RDMX_RPC_OK);
		cr_assert_eq(rep.len, sizeof(buf));
		cr_assert(pattern_check(rep.data, rep.len, 3));
		rdmx_rpc_reply_fini(&rep);
	}
	ASSERT_OK(rdmx_rpc_call(ra, FAIL, NULL, NULL, &rep));
	cr_assert_eq(rep.code, RDMX_RPC_NOT_FOUND);
	cr_assert_str_eq(rep.message, "no such key");
	cr_assert_null(rep.data);
	rdmx_rpc_reply_fini(&rep);
	struct rdmx_rpc_call_opts o = {.timeout_us = 30000};
	ASSERT_OK(rdmx_rpc_call(ra, HOLD, NULL, &o, &rep));
	cr_assert_eq(rep.code, RDMX_RPC_DEADLINE_EXCEEDED);
	rdmx_rpc_reply_fini(&rep);
	node_serve_stop(&sa);
	for (uint32_t i = 0; i < st.held_n; i++)
		rdmx_rpc_respond(st.held[i], RDMX_RPC_OK, NULL, NULL);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* Many calls in flight on one connection, replies matched by id/checksum,
 * sizes across eager and rendezvous, with a small ring (credit stalls). */
Test(rpc, pipelined_inflight_and_stats, .timeout = 600)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct chan_conf small = {.slot_count = 16, .slot_size = 1024, .queue_len = 2048};
	enum { N = 1000 };
	static struct call_rec r[N];
	static uint8_t buf[N][64];

	ids();
	memset(r, 0, sizeof(r));
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	srv = echo_server(&st);
	rpc_pair(&a, &b, NULL, srv, &small, &small, &ra, &rb);
	for (int i = 0; i < N; i++) {
		size_t len = (size_t)(i % 64) + 1;
		struct rdmx_rpc_payload p;

		pattern_fill(buf[i], len, (uint32_t)i);
		r[i].want_len = len;
		r[i].want_sum = checksum64(buf[i], len);
		p = rdmx_rpc_bytes(buf[i], len);
		ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &p, NULL, call_rec_cb, &r[i], NULL));
	}
	/* a few big ones: rendezvous both ways */
	static uint8_t big[3][100000];
	static struct call_rec rbig[3];
	memset(rbig, 0, sizeof(rbig));
	for (int i = 0; i < 3; i++) {
		pattern_fill(big[i], sizeof(big[i]), 1000u + (uint32_t)i);
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(big[i], sizeof(big[i]));
		ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &p, NULL, call_rec_cb, &rbig[i], NULL));
	}
	cr_assert(rdmx_rpc_ep_get_inflight(ra) == N + 3);
	DRIVE_UNTIL(&a, &b, call_recs_done(r, N) == N && call_recs_done(rbig, 3) == 3);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(r[i].done, 1);
		cr_assert_eq(r[i].code, RDMX_RPC_OK);
		cr_assert_eq(r[i].len, r[i].want_len, "call %d", i);
		cr_assert_eq(r[i].sum, r[i].want_sum, "call %d: payload differs", i);
	}
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rbig[i].code, RDMX_RPC_OK);
		cr_assert_eq(rbig[i].sum, checksum64(big[i], sizeof(big[i])));
	}
	/* a failing call for the error counters */
	struct call_rec f = {0};
	ASSERT_OK(rdmx_rpc_call_async(ra, FAIL, NULL, NULL, call_rec_cb, &f, NULL));
	DRIVE_UNTIL(&a, &b, f.done);

	struct rdmx_rpc_stats cs, ss, ms;
	ASSERT_OK(rdmx_rpc_ep_get_stats(ra, RDMX_RPC_ROLE_CLIENT, &cs));
	cr_assert_eq(cs.calls, N + 4);
	cr_assert_eq(cs.completed, N + 4);
	cr_assert_eq(cs.by_code[RDMX_RPC_OK], N + 3);
	cr_assert_eq(cs.by_code[RDMX_RPC_NOT_FOUND], 1);
	cr_assert_eq(cs.errors, 1);
	cr_assert(cs.credit_stalls > 0, "16 slots, 1000 calls: some must have waited");
	cr_assert_eq(cs.rendezvous, 3);
	cr_assert_eq(cs.latency.count, N + 4);
	cr_assert(rdmx_rpc_hist_percentile(&cs.latency, 50) > 0);
	cr_assert(rdmx_rpc_hist_percentile(&cs.latency, 99) >=
	          rdmx_rpc_hist_percentile(&cs.latency, 50));
	ASSERT_OK(rdmx_rpc_ep_get_stats(rb, RDMX_RPC_ROLE_SERVER, &ss));
	cr_assert_eq(ss.calls, N + 4);
	cr_assert_eq(ss.completed, N + 4);
	cr_assert_eq(ss.rendezvous, 3);
	cr_assert_eq(ss.bytes_received, cs.bytes_sent);
	cr_assert_eq(ss.bytes_sent, cs.bytes_received);
	ASSERT_OK(rdmx_rpc_ep_get_method_stats(ra, RDMX_RPC_ROLE_CLIENT, ECHO, &ms));
	cr_assert_eq(ms.calls, N + 3);
	ASSERT_OK(rdmx_rpc_ep_get_method_stats(rb, RDMX_RPC_ROLE_SERVER, FAIL, &ms));
	cr_assert_eq(ms.by_code[RDMX_RPC_NOT_FOUND], 1);
	ASSERT_RC(rdmx_rpc_ep_get_method_stats(ra, RDMX_RPC_ROLE_SERVER, ECHO, &ms),
	          RDMX_E_NOT_FOUND);
	ASSERT_OK(rdmx_rpc_server_get_method_stats(srv, ECHO, &ms));
	cr_assert_eq(ms.calls, N + 3);
	uint32_t mids[8];
	size_t nm = 0;
	ASSERT_OK(rdmx_rpc_ep_list_methods(ra, RDMX_RPC_ROLE_CLIENT, mids, 8, &nm));
	cr_assert_eq(nm, 2);
	struct rdmx_chan_stats chs;
	ASSERT_OK(rdmx_chan_get_stats(rdmx_rpc_ep_get_chan(ra), &chs));
	cr_assert(chs.credit_stalls > 0);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

Test(rpc, deadline_exceeded_and_server_sees_it)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec r = {0}, ok = {0};
	struct rdmx_rpc_call_opts o = {.timeout_us = 50000};

	ids();
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, &o, call_rec_cb, &r, NULL));
	DRIVE_UNTIL(&a, &b, st.held_n == 1);
	cr_assert(st.held_deadline[0] != 0, "the handler sees the deadline");
	cr_assert(!rdmx_rpc_call_is_cancelled(st.held[0]) || r.done);
	DRIVE_UNTIL(&a, &b, r.done == 1);
	cr_assert_eq(r.code, RDMX_RPC_DEADLINE_EXCEEDED, "got %s", rdmx_rpc_code_name(r.code));
	/* the server learns it (its own timer or the client's cancel) */
	DRIVE_UNTIL(&a, &b, st.cancels == 1);
	cr_assert(rdmx_rpc_call_is_cancelled(st.held[0]));
	/* answering now sends nothing, the client sees nothing more */
	ASSERT_OK(rdmx_rpc_respond(st.held[0], RDMX_RPC_OK, NULL, NULL));
	drive_for(&a, &b, 50);
	cr_assert_eq(r.done, 1);
	/* a call with a deadline that is met */
	struct rdmx_rpc_call_opts lo = {.timeout_us = 20000000};
	ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, NULL, &lo, call_rec_cb, &ok, NULL));
	DRIVE_UNTIL(&a, &b, ok.done);
	cr_assert_eq(ok.code, RDMX_RPC_OK);
	struct rdmx_rpc_stats cs;
	ASSERT_OK(rdmx_rpc_ep_get_stats(ra, RDMX_RPC_ROLE_CLIENT, &cs));
	cr_assert_eq(cs.by_code[RDMX_RPC_DEADLINE_EXCEEDED], 1);
	cr_assert_eq(st.cancels, 1);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* The deadline is a timer of the client's progress engine: with keep-alives
 * off and the server holding the call, nothing arrives any more, and plain
 * rdmx_pe_wait(pe, -1) (no limit) must still wake for it and complete the
 * call (it would sleep forever otherwise). */
Test(rpc, deadline_fires_from_pe_wait_alone, .timeout = 120)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec r = {0};
	struct rdmx_rpc_call_opts o = {.timeout_us = 30000};
	struct rdmx_chan_worker_attr quiet;

	ids();
	rdmx_chan_worker_attr_init(&quiet);
	quiet.keepalive_ms = 0;
	echo_pair_open(&a, &b, &quiet, &st, &srv, &ra, &rb);
	ASSERT_OK(rdmx_pe_set_poll_mode(a.pe, RDMX_POLL_BLOCK, 0));
	ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, &o, call_rec_cb, &r, NULL));
	DRIVE_UNTIL(&a, &b, st.held_n == 1);
	if (!r.done) {
		int ms = rdmx_pe_next_timeout_ms(a.pe);

		cr_assert(ms >= 0 && ms <= 30, "the deadline is the engine's next timer (%d ms)",
		          ms);
	}
	while (!r.done) {
		int n = rdmx_pe_wait(a.pe, -1);

		cr_assert(n >= 0, "wait: %s", rdmx_err_name(n));
	}
	cr_assert_eq(r.code, RDMX_RPC_DEADLINE_EXCEEDED, "got %s", rdmx_rpc_code_name(r.code));
	rdmx_rpc_respond(st.held[0], RDMX_RPC_OK, NULL, NULL);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* Cancel against a reply in every interleaving we can produce: each call
 * completes exactly once, with OK or CANCELLED; a second cancel, or one
 * after completion, is NOT_FOUND. */
Test(rpc, cancel_races_reply, .timeout = 600)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	enum { N = 600 };
	static struct call_rec r[N];
	int oks = 0, cancelled = 0;

	ids();
	memset(r, 0, sizeof(r));
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	for (int i = 0; i < N; i++) {
		uint64_t id = 0;
		uint32_t x = (uint32_t)i;
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(&x, sizeof(x));

		ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &p, NULL, call_rec_cb, &r[i], &id));
		/* progress a varying amount before cancelling: before the
		 * request left, while the reply travels, after it arrived */
		for (int k = 0; k < i % 6; k++)
			drive_once(&a, &b);
		int rc = rdmx_rpc_cancel(ra, id);
		if (rc == 0) {
			cr_assert_eq(r[i].done, 1, "cancel runs the callback");
			cr_assert_eq(r[i].code, RDMX_RPC_CANCELLED);
		} else {
			cr_assert_eq(rc, RDMX_E_NOT_FOUND);
			cr_assert_eq(r[i].done, 1);
			cr_assert_eq(r[i].code, RDMX_RPC_OK);
		}
		ASSERT_RC(rdmx_rpc_cancel(ra, id), RDMX_E_NOT_FOUND);
	}
	drive_for(&a, &b, 200); /* late replies must be dropped */
	for (int i = 0; i < N; i++) {
		cr_assert_eq(r[i].done, 1, "call %d completed %d times", i, r[i].done);
		if (r[i].code == RDMX_RPC_OK)
			oks++;
		else
			cancelled++;
	}
	cr_assert(oks + cancelled == N);
	struct rdmx_rpc_stats cs;
	ASSERT_OK(rdmx_rpc_ep_get_stats(ra, RDMX_RPC_ROLE_CLIENT, &cs));
	cr_assert_eq(cs.cancels, (uint64_t)cancelled);
	cr_assert_eq(rdmx_rpc_ep_get_inflight(ra), 0);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* A held call the client cancels: the handler's cancel callback runs once. */
Test(rpc, server_sees_cancel)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec r = {0};
	uint64_t id;

	ids();
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, NULL, call_rec_cb, &r, &id));
	DRIVE_UNTIL(&a, &b, st.held_n == 1);
	cr_assert_eq(st.held_deadline[0], 0);
	ASSERT_OK(rdmx_rpc_cancel(ra, id));
	cr_assert_eq(r.code, RDMX_RPC_CANCELLED);
	DRIVE_UNTIL(&a, &b, st.cancels == 1);
	cr_assert(rdmx_rpc_call_is_cancelled(st.held[0]));
	cr_assert_eq(rdmx_rpc_call_get_method(st.held[0]), HOLD);
	cr_assert_eq(rdmx_rpc_call_get_conn(st.held[0]), rb);
	ASSERT_OK(rdmx_rpc_respond(st.held[0], RDMX_RPC_OK, NULL, NULL));
	drive_for(&a, &b, 30);
	cr_assert_eq(r.done, 1);
	struct rdmx_rpc_stats ss;
	ASSERT_OK(rdmx_rpc_ep_get_stats(rb, RDMX_RPC_ROLE_SERVER, &ss));
	cr_assert_eq(ss.cancels, 1);
	cr_assert_eq(ss.by_code[RDMX_RPC_CANCELLED], 1);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* Answering later, from a different callback than the handler's. */
static struct echo_state *later_st;
static void later_cb(const struct rdmx_rpc_result *r, void *arg)
{
	(void)r;
	(void)arg;
	/* a completion on b's side ... answers a's held calls */
	for (uint32_t i = 0; i < later_st->held_n; i++) {
		uint32_t v = 1000 + i;
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(&v, sizeof(v));
		ASSERT_OK(rdmx_rpc_respond(later_st->held[i], RDMX_RPC_OK, "later", &p));
	}
	later_st->held_n = 0;
}

Test(rpc, both_directions_and_answer_later)
{
	struct node a, b;
	struct echo_state sta = {0}, stb = {0};
	struct rdmx_rpc_server *srva, *srvb;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec ra_recs[50], rb_recs[50], held[5], trig = {0};

	ids();
	memset(ra_recs, 0, sizeof(ra_recs));
	memset(rb_recs, 0, sizeof(rb_recs));
	memset(held, 0, sizeof(held));
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	srva = echo_server(&sta);
	srvb = echo_server(&stb);
	rpc_pair(&a, &b, srva, srvb, NULL, NULL, &ra, &rb);
	for (int i = 0; i < 50; i++) {
		uint32_t x = (uint32_t)i;
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(&x, sizeof(x));

		ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &p, NULL, call_rec_cb, &ra_recs[i], NULL));
		ASSERT_OK(rdmx_rpc_call_async(rb, ECHO, &p, NULL, call_rec_cb, &rb_recs[i], NULL));
	}
	for (int i = 0; i < 5; i++)
		ASSERT_OK(rdmx_rpc_call_async(rb, HOLD, NULL, NULL, call_rec_cb, &held[i], NULL));
	DRIVE_UNTIL(&a, &b,
	            call_recs_done(ra_recs, 50) == 50 && call_recs_done(rb_recs, 50) == 50 &&
	                sta.held_n == 5);
	cr_assert_eq(sta.echoed, 50);
	cr_assert_eq(stb.echoed, 50);
	/* b calls a; a's reply arrives on b... and the callback of another
	 * call (on a) answers the held ones: respond from another callback */
	later_st = &sta;
	ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, NULL, NULL, later_cb, &trig, NULL));
	DRIVE_UNTIL(&a, &b, call_recs_done(held, 5) == 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(held[i].code, RDMX_RPC_OK);
		cr_assert_str_eq(held[i].msg, "later");
		cr_assert_eq(held[i].len, 4);
	}
	rpc_pair_close(&ra, &rb);
	ASSERT_OK(rdmx_rpc_server_destroy(&srva));
	ASSERT_OK(rdmx_rpc_server_destroy(&srvb));
	node_close(&a);
	node_close(&b);
}

struct ow_state {
	int calls;
};
static void ow_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct ow_state *s = arg;

	(void)req;
	(void)len;
	s->calls++;
	/* answering a one-way call sends nothing */
	ASSERT_OK(rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, NULL));
}

Test(rpc, oneway_calls)
{
	struct node a, b;
	struct ow_state ow = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec r[20];
	uint32_t M = rdmx_rpc_method_id("test.Log/Write");
	struct rdmx_rpc_call_opts o = {.oneway = true};

	memset(r, 0, sizeof(r));
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	ASSERT_OK(rdmx_rpc_server_create(&srv));
	ASSERT_OK(rdmx_rpc_server_register(srv, M, "test.Log/Write", ow_handler, &ow));
	ASSERT_RC(rdmx_rpc_server_register(srv, M, "again", ow_handler, &ow), RDMX_E_EXISTS);
	rpc_pair(&a, &b, NULL, srv, NULL, NULL, &ra, &rb);
	for (int i = 0; i < 20; i++) {
		struct rdmx_rpc_payload p = rdmx_rpc_bytes("log line", 8);
		ASSERT_OK(
		    rdmx_rpc_call_async(ra, M, &p, &o, i < 10 ? call_rec_cb : NULL, &r[i], NULL));
	}
	DRIVE_UNTIL(&a, &b, ow.calls == 20 && call_recs_done(r, 10) == 10);
	drive_for(&a, &b, 30);
	for (int i = 0; i < 10; i++) {
		cr_assert_eq(r[i].done, 1);
		cr_assert_eq(r[i].code, RDMX_RPC_OK);
	}
	cr_assert_eq(rdmx_rpc_ep_get_inflight(ra), 0);
	struct rdmx_rpc_stats cs;
	ASSERT_OK(rdmx_rpc_ep_get_stats(ra, RDMX_RPC_ROLE_CLIENT, &cs));
	cr_assert_eq(cs.oneway, 20);
	ASSERT_OK(rdmx_rpc_ep_get_stats(ra, RDMX_RPC_ROLE_SERVER, &cs));
	cr_assert_eq(cs.calls, 0);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

static int drained_a, drained_b;
static void on_drained(struct rdmx_rpc_ep *ep, void *arg)
{
	(void)ep;
	(*(int *)arg)++;
}

/* Graceful shutdown: in-flight calls finish (both ways), new ones are
 * refused on both sides, both ends report drained once. */
Test(rpc, drain_graceful)
{
	struct node a, b;
	struct echo_state sta = {0}, stb = {0};
	struct rdmx_rpc_server *srva, *srvb;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec held[10], mine[3];

	ids();
	memset(held, 0, sizeof(held));
	memset(mine, 0, sizeof(mine));
	drained_a = drained_b = 0;
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	srva = echo_server(&sta);
	srvb = echo_server(&stb);
	rpc_pair(&a, &b, srva, srvb, NULL, NULL, &ra, &rb);
	for (int i = 0; i < 10; i++)
		ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, NULL, call_rec_cb, &held[i], NULL));
	for (int i = 0; i < 3; i++)
		ASSERT_OK(rdmx_rpc_call_async(rb, HOLD, NULL, NULL, call_rec_cb, &mine[i], NULL));
	DRIVE_UNTIL(&a, &b, stb.held_n == 10 && sta.held_n == 3);
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(rb, on_drained, &drained_b));
	ASSERT_OK(rdmx_rpc_ep_set_drained_cb(ra, on_drained, &drained_a));
	ASSERT_OK(rdmx_rpc_ep_drain(rb));
	ASSERT_RC(rdmx_rpc_call_async(rb, ECHO, NULL, NULL, call_rec_cb, &held[0], NULL),
	          RDMX_E_BAD_STATE);
	drive_for(&a, &b, 50);
	cr_assert_eq(drained_b, 0, "drained with calls in flight");
	ASSERT_RC(rdmx_rpc_call_async(ra, ECHO, NULL, NULL, call_rec_cb, &held[0], NULL),
	          RDMX_E_BAD_STATE); /* the peer said GOAWAY */
	for (uint32_t i = 0; i < stb.held_n; i++)
		ASSERT_OK(rdmx_rpc_respond(stb.held[i], RDMX_RPC_OK, NULL, NULL));
	drive_for(&a, &b, 50);
	cr_assert_eq(drained_b, 0, "b's own calls are still in flight");
	for (uint32_t i = 0; i < sta.held_n; i++)
		ASSERT_OK(rdmx_rpc_respond(sta.held[i], RDMX_RPC_OK, NULL, NULL));
	DRIVE_UNTIL(&a, &b,
	            drained_b == 1 && call_recs_done(held, 10) == 10 &&
	                call_recs_done(mine, 3) == 3);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(held[i].code, RDMX_RPC_OK);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(mine[i].code, RDMX_RPC_OK);
	cr_assert(rdmx_rpc_ep_is_drained(rb));
	ASSERT_OK(rdmx_rpc_ep_drain(ra));
	DRIVE_UNTIL(&a, &b, drained_a == 1);
	drive_for(&a, &b, 20);
	cr_assert_eq(drained_b, 1);
	rpc_pair_close(&ra, &rb);
	ASSERT_OK(rdmx_rpc_server_destroy(&srva));
	ASSERT_OK(rdmx_rpc_server_destroy(&srvb));
	node_close(&a);
	node_close(&b);
}

static int closed_status, closed_n;
static void on_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)ep;
	(void)arg;
	closed_status = status;
	closed_n++;
}

/* The peer's endpoint disappears: every outstanding call completes once
 * with UNAVAILABLE; later calls are refused. */
Test(rpc, peer_gone_fails_outstanding)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_chan *cb;
	enum { N = 200 };
	static struct call_rec r[N];

	ids();
	memset(r, 0, sizeof(r));
	closed_n = 0;
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(ra, on_closed, NULL));
	for (int i = 0; i < N; i++)
		ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	DRIVE_UNTIL(&a, &b, st.held_n == N);
	cb = rdmx_rpc_ep_get_chan(rb);
	ASSERT_OK(rdmx_rpc_ep_destroy(&rb)); /* held calls detached */
	cr_assert_eq(st.cancels, N, "the endpoint going cancels its incoming calls");
	ASSERT_OK(rdmx_chan_destroy(&cb));
	DRIVE_UNTIL(&a, &b, call_recs_done(r, N) == N && closed_n == 1);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(r[i].done, 1);
		cr_assert_eq(r[i].code, RDMX_RPC_UNAVAILABLE);
	}
	cr_assert(conn_lost_status(closed_status), "closed with %s", rdmx_err_name(closed_status));
	ASSERT_RC(rdmx_rpc_call_async(ra, ECHO, NULL, NULL, call_rec_cb, &r[0], NULL),
	          RDMX_E_BAD_STATE);
	/* answering detached calls is harmless */
	for (uint32_t i = 0; i < st.held_n; i++)
		ASSERT_OK(rdmx_rpc_respond(st.held[i], RDMX_RPC_OK, NULL, NULL));
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* A call whose connection is lost before its request was handed to the
 * transport says it never reached the server (safe to retry anywhere); one
 * lost after says it may have. The server's channel is paused so no credit
 * comes back: the requests beyond its ring wait in the client's send queue. */
struct reach_rec {
	int done;
	enum rdmx_rpc_code code;
	bool reached;
};

static void reach_cb(const struct rdmx_rpc_result *r, void *arg)
{
	struct reach_rec *x = arg;

	x->done++;
	x->code = r->code;
	x->reached = r->reached;
}

/* N calls (one-way ones with opts) to a server whose channel is paused,
 * so that those beyond its ring wait in the client's send queue; then the
 * server goes. Drives until every call completed; returns how many were
 * queued. *ra stays open for the caller (rpc_pair_close_all ends it). */
enum { REACH_N = 24 };
static uint32_t reach_run(struct node *a, struct node *b, struct rdmx_rpc_server **srv,
                          struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb,
                          const struct rdmx_rpc_call_opts *opts, struct reach_rec *r)
{
	static struct echo_state st;
	struct chan_conf small = {.slot_count = 8};
	struct rdmx_chan *cb;
	uint32_t queued;

	ids();
	memset(&st, 0, sizeof(st));
	memset(r, 0, sizeof(*r) * REACH_N);
	node_open(a, "a", 0, NULL);
	node_open(b, "b", 1, NULL);
	*srv = echo_server(&st);
	rpc_pair(a, b, NULL, *srv, NULL, &small, ra, rb);
	cb = rdmx_rpc_ep_get_chan(*rb);
	ASSERT_OK(rdmx_chan_pause(cb)); /* no credits come back */
	for (int i = 0; i < REACH_N; i++)
		ASSERT_OK(rdmx_rpc_call_async(*ra, opts ? ECHO : HOLD, NULL, opts, reach_cb, &r[i],
		                              NULL));
	queued = rdmx_chan_get_queued(rdmx_rpc_ep_get_chan(*ra));
	cr_assert(queued > 0 && queued < REACH_N, "%u of %d requests queued", queued, REACH_N);
	ASSERT_OK(rdmx_rpc_ep_destroy(rb));
	ASSERT_OK(rdmx_chan_destroy(&cb));
	for (int done = 0; done < REACH_N; done++)
		DRIVE_UNTIL(a, b, r[done].done);
	return queued;
}

Test(rpc, reached_tells_posted_from_never_sent)
{
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct reach_rec r[REACH_N];
	uint32_t queued = reach_run(&a, &b, &srv, &ra, &rb, NULL, r);

	for (int i = 0; i < REACH_N; i++) {
		cr_assert_eq(r[i].done, 1);
		cr_assert_eq(r[i].code, RDMX_RPC_UNAVAILABLE);
		cr_assert_eq(r[i].reached, i < REACH_N - (int)queued,
		             "call %d of %d (%u queued): reached %d", i, REACH_N, queued,
		             r[i].reached);
	}
	/* the blocking form carries it too: a closed endpoint starts nothing */
	{
		struct rdmx_rpc_reply reply;

		ASSERT_RC(rdmx_rpc_call(ra, ECHO, NULL, NULL, &reply), RDMX_E_BAD_STATE);
	}
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* The same for one-way calls with a callback: those still in the send queue
 * when the connection goes say they never reached the server; the posted
 * ones complete once each (sent, or lost with the connection) and say they
 * may have. */
Test(rpc, reached_tells_posted_from_never_sent_oneway)
{
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_rpc_call_opts oneway = {.oneway = true};
	struct reach_rec r[REACH_N];
	uint32_t queued = reach_run(&a, &b, &srv, &ra, &rb, &oneway, r);

	for (int i = 0; i < REACH_N; i++) {
		bool posted = i < REACH_N - (int)queued;

		cr_assert_eq(r[i].done, 1, "one-way call %d completed %d times", i, r[i].done);
		cr_assert_eq(r[i].reached, posted, "one-way call %d of %d (%u queued): reached %d",
		             i, REACH_N, queued, r[i].reached);
		if (!posted)
			cr_assert_eq(r[i].code, RDMX_RPC_UNAVAILABLE);
	}
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* A large request queued before the channel is READY goes by rendezvous
 * once the peer's hello is in (its descriptor posted, the server reads
 * it): from then on it may reach the server, so a close before the
 * server's acknowledgement must not say it never did. Here the server
 * holds it when the client's channel closes (on its own side, before a
 * poll took the acknowledgement). */
Test(rpc, reached_rendezvous_queued_before_ready)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_chan *ca, *cb;
	enum { BIG = 64 << 10 };
	struct reach_rec r = {0};
	struct rdmx_rpc_payload p;
	uint8_t *big = malloc(BIG);

	ids();
	cr_assert_not_null(big);
	pattern_fill(big, BIG, 7);
	p = rdmx_rpc_bytes(big, BIG);
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	srv = echo_server(&st);
	chan_pair(&a, &b, NULL, NULL, &ca, &cb, false);
	ASSERT_OK(rdmx_rpc_ep_create(ca, NULL, &ra));
	ASSERT_OK(rdmx_rpc_ep_create(cb, srv, &rb));
	cr_assert_neq(rdmx_chan_get_state(ca), RDMX_CHAN_READY);
	ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, &p, NULL, reach_cb, &r, NULL));
	cr_assert_eq(rdmx_chan_get_queued(ca), 1, "the large request is not queued");
	DRIVE_UNTIL(&a, &b, st.held_n == 1);
	cr_assert_eq(r.done, 0);
	cr_assert_eq(ca->rdv_tx, 1, "the rendezvous already acknowledged: nothing to see");
	rdmx__chan_fail(ca, RDMX_E_CANCELED, NULL);
	cr_assert_eq(r.done, 1);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(r.code));
	cr_assert(r.reached, "the server holds a request said never to have reached it");
	ASSERT_OK(rdmx_rpc_respond(st.held[0], RDMX_RPC_OK, NULL, NULL));
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
	free(big);
}

/* A reply says the request reached the server. */
Test(rpc, reached_on_reply)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct reach_rec r = {0};

	ids();
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	ASSERT_OK(rdmx_rpc_call_async(ra, FAIL, NULL, NULL, reach_cb, &r, NULL));
	DRIVE_UNTIL(&a, &b, r.done);
	cr_assert_eq(r.code, RDMX_RPC_NOT_FOUND);
	cr_assert(r.reached);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* Limits: max_inflight answers AGAIN; destroy with calls pending fails them. */
Test(rpc, limits_and_destroy_pending)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec r[8];

	ids();
	memset(r, 0, sizeof(r));
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	ASSERT_OK(rdmx_rpc_ep_set_limits(ra, 4, 4));
	for (int i = 0; i < 4; i++)
		ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	ASSERT_RC(rdmx_rpc_call_async(ra, HOLD, NULL, NULL, call_rec_cb, &r[4], NULL),
	          RDMX_E_AGAIN);
	ASSERT_RC(rdmx_rpc_server_destroy(&srv), RDMX_E_BAD_STATE); /* in use */
	DRIVE_UNTIL(&a, &b, st.held_n == 4);
	struct rdmx_chan *ca = rdmx_rpc_ep_get_chan(ra);
	ASSERT_RC(rdmx_chan_destroy(&ca), RDMX_E_BAD_STATE); /* its endpoint first */
	cr_assert_not_null(ca);
	ASSERT_OK(rdmx_rpc_ep_destroy(&ra));
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(r[i].done, 1);
		cr_assert_eq(r[i].code, RDMX_RPC_UNAVAILABLE);
	}
	ASSERT_OK(rdmx_chan_destroy(&ca));
	DRIVE_UNTIL(&a, &b, st.cancels == 4);
	for (uint32_t i = 0; i < st.held_n; i++)
		ASSERT_OK(rdmx_rpc_respond(st.held[i], RDMX_RPC_OK, NULL, NULL));
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* The held calls of a closing channel, where one call's cancel callback
 * answers the other. */
struct pair_cancel {
	struct rdmx_rpc_server_call *call[2];
	bool answered[2];
	int runs[2];  /* cancel callback runs per call */
	int after[2]; /* runs after that call was answered */
	int stale;    /* runs of a recycled call's callback */
};

static void pair_cancel_cb(struct rdmx_rpc_server_call *call, void *arg)
{
	struct pair_cancel *pc = arg;
	int i = call == pc->call[1], o = !i;

	pc->runs[i]++;
	if (pc->answered[i])
		pc->after[i]++;
	if (!pc->answered[o]) {
		pc->answered[o] = true;
		ASSERT_OK(rdmx_rpc_respond(pc->call[o], RDMX_RPC_OK, NULL, NULL));
	}
}

static void stale_cancel_cb(struct rdmx_rpc_server_call *call, void *arg)
{
	(void)call;
	((struct pair_cancel *)arg)->stale++;
}

/* A held call's cancel callback that answers another held call of the same
 * endpoint: the answered call's callback does not run (it was answered
 * before its turn), the first runs once, and the walk never reaches the
 * recycled call objects (whose old callbacks would run again). */
Test(rpc, cancel_cb_answers_other_held_call)
{
	struct node a, b;
	struct echo_state st = {0};
	struct pair_cancel pc = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_chan *ca;
	struct call_rec r[3];

	ids();
	memset(r, 0, sizeof(r));
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	for (int i = 0; i < 3; i++)
		ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	DRIVE_UNTIL(&a, &b, st.held_n == 3);
	for (int i = 0; i < 2; i++) {
		pc.call[i] = st.held[i];
		ASSERT_OK(rdmx_rpc_call_set_cancel_cb(pc.call[i], pair_cancel_cb, &pc));
	}
	/* the third, answered: in the endpoint's cache, its callback still set */
	ASSERT_OK(rdmx_rpc_call_set_cancel_cb(st.held[2], stale_cancel_cb, &pc));
	ASSERT_OK(rdmx_rpc_respond(st.held[2], RDMX_RPC_OK, NULL, NULL));
	DRIVE_UNTIL(&a, &b, r[2].done == 1);
	ca = rdmx_rpc_ep_get_chan(ra);
	ASSERT_OK(rdmx_rpc_ep_destroy(&ra));
	ASSERT_OK(rdmx_chan_destroy(&ca));
	DRIVE_UNTIL(&a, &b, pc.runs[0] + pc.runs[1] >= 1);
	drive_for(&a, &b, 50);
	cr_assert_eq(pc.runs[0] + pc.runs[1], 1, "cancel callbacks ran %d + %d times", pc.runs[0],
	             pc.runs[1]);
	cr_assert_eq(pc.after[0] + pc.after[1], 0, "a cancel callback ran after its answer");
	cr_assert_eq(pc.stale, 0, "a recycled call's cancel callback ran");
	cr_assert_eq(pc.answered[0] + pc.answered[1], 1, "the callback answered the other call");
	/* the call whose callback ran is still held: the test answers it */
	ASSERT_OK(rdmx_rpc_respond(pc.call[pc.runs[0] ? 0 : 1], RDMX_RPC_OK, NULL, NULL));
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* Server-side backpressure: a peer beyond max_active is not read from. */
Test(rpc, max_active_pauses_peer)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	static struct call_rec r[100];

	ids();
	memset(r, 0, sizeof(r));
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	ASSERT_OK(rdmx_rpc_ep_set_limits(rb, 100, 10));
	for (int i = 0; i < 100; i++)
		ASSERT_OK(rdmx_rpc_call_async(ra, HOLD, NULL, NULL, call_rec_cb, &r[i], NULL));
	drive_for(&a, &b, 200);
	cr_assert_eq(st.held_n, 10, "server took %u calls with max_active 10", st.held_n);
	cr_assert_eq(rdmx_rpc_ep_get_active(rb), 10);
	/* answer as they come: all 100 go through */
	uint32_t answered = 0;
	uint64_t guard = now_ms() + GUARD_MS;
	while (call_recs_done(r, 100) < 100) {
		cr_assert(now_ms() < guard);
		while (answered < st.held_n)
			ASSERT_OK(rdmx_rpc_respond(st.held[answered++], RDMX_RPC_OK, NULL, NULL));
		drive_once(&a, &b);
	}
	for (int i = 0; i < 100; i++)
		cr_assert_eq(r[i].code, RDMX_RPC_OK);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

static int enc_calls;
static int enc_u32s(const void *obj, void *dst, size_t len)
{
	const uint32_t *v = obj;

	enc_calls++;
	for (size_t i = 0; i < len / 4; i++)
		memcpy((uint8_t *)dst + 4 * i, &v[i], 4);
	return 0;
}

/* An encoder writes straight into the channel's buffer. */
Test(rpc, encoder_payload)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	uint32_t v[300];
	struct call_rec r = {0};

	ids();
	for (int i = 0; i < 300; i++)
		v[i] = (uint32_t)i * 7u;
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	struct rdmx_rpc_payload p = {.obj = v, .len = sizeof(v), .encode = enc_u32s};
	ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &p, NULL, call_rec_cb, &r, NULL));
	DRIVE_UNTIL(&a, &b, r.done);
	cr_assert_eq(enc_calls, 1);
	cr_assert_eq(r.sum, checksum64(v, sizeof(v)));
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* An encoder that refuses: the call returns its error and its callback
 * never runs; the connection and the other calls go on. (The refusal once
 * closed the channel inside the call, which completed the call there too:
 * its callback ran, the call returned the error anyway, and its record was
 * released twice.) Small (eager) and large (rendezvous) requests. */
static int enc_refuse(const void *obj, void *dst, size_t len)
{
	(void)obj;
	memset(dst, 0, len / 2);
	return RDMX_E_PROTOCOL;
}

Test(rpc, encoder_error_fails_that_call_alone)
{
	static const size_t sizes[] = {64, 256u << 10};
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct call_rec r = {0}, ok = {0};

	ids();
	echo_pair_open(&a, &b, NULL, &st, &srv, &ra, &rb);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rdmx_rpc_payload p = {.obj = &r, .len = sizes[i], .encode = enc_refuse};

		ASSERT_RC(rdmx_rpc_call_async(ra, ECHO, &p, NULL, call_rec_cb, &r, NULL),
		          RDMX_E_PROTOCOL);
		cr_assert_eq(r.done, 0, "the refused call's callback ran");
	}
	ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, NULL, NULL, call_rec_cb, &ok, NULL));
	DRIVE_UNTIL(&a, &b, ok.done);
	cr_assert_eq(ok.code, RDMX_RPC_OK, "got %s", rdmx_rpc_code_name(ok.code));
	drive_for(&a, &b, 10);
	cr_assert_eq(r.done, 0, "the refused call's callback ran later");
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}

/* A call queued before the handshake, larger than the peer's maximum
 * message size (learnt with the peer's hello): it completes once, with
 * RESOURCE_EXHAUSTED; a call made after the handshake is refused at once. */
Test(rpc, request_too_big_for_peer)
{
	struct node a, b;
	struct echo_state st = {0};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct rdmx_chan *p, *q;
	struct chan_conf cb = {.max_msg = 4096};
	static uint8_t big[8192];
	struct call_rec r = {0}, ok = {0};

	ids();
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	srv = echo_server(&st);
	chan_pair(&a, &b, NULL, &cb, &p, &q, false);
	ASSERT_OK(rdmx_rpc_ep_create(p, NULL, &ra));
	ASSERT_OK(rdmx_rpc_ep_create(q, srv, &rb));
	struct rdmx_rpc_payload pb = rdmx_rpc_bytes(big, sizeof(big));
	ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, &pb, NULL, call_rec_cb, &r, NULL)); /* queued */
	ASSERT_OK(rdmx_rpc_call_async(ra, ECHO, NULL, NULL, call_rec_cb, &ok, NULL));
	DRIVE_UNTIL(&a, &b, r.done && ok.done);
	cr_assert_eq(r.code, RDMX_RPC_RESOURCE_EXHAUSTED, "got %s", rdmx_rpc_code_name(r.code));
	cr_assert_eq(ok.code, RDMX_RPC_OK);
	ASSERT_RC(rdmx_rpc_call_async(ra, ECHO, &pb, NULL, call_rec_cb, &r, NULL), RDMX_E_TOO_BIG);
	drive_for(&a, &b, 30);
	cr_assert_eq(r.done, 1);
	rpc_pair_close_all(&ra, &rb, &srv, &a, &b);
}
