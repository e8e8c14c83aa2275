/* RPC streams: a stream's own send that the engine refuses (a test hook,
 * rdmx__conn_fail_posts, as a provider refuses a post) fails the channel
 * inside the send, and the endpoint's closed callback destroys the
 * endpoint, its channel and (on the server) the server there: the stream
 * function that sent goes on with what it holds until it returns. Each
 * path: the stream's on_done runs once, the closed callback once, nothing
 * is touched after it was freed (ASan). The refusal is armed just before
 * the send it aims at (from inside a handler or callback where the send
 * comes later in the same progress). */
#include "rpcfix.h"

#include "engine/internal.h" /* rdmx__conn_fail_posts */

#include <rdmx/rpc_stream.h>

#include <stdlib.h>
#include <string.h>

#define SC_HOLD_NAME "test.StreamClose/Hold" /* bidi: kept by the test (sc.s) */
#define SC_POKE_NAME "test.StreamClose/Poke" /* unary: sc.poke on the kept stream */

static uint32_t SC_HOLD, SC_POKE;

/* What the server's stream does when its first message comes (on_msg) and
 * what the unary Poke does with the kept stream. */
enum sc_act {
	ACT_NONE,
	ACT_WRITE_REFUSE,       /* on_msg: one small message (batched), then refuse */
	ACT_REFUSE_IN_MSG,      /* on_msg: refuse (the reader's first credits follow) */
	ACT_POKE_WRITE_BIG,     /* poke: small (batched), refuse, a large one */
	ACT_POKE_HALF_CLOSE,    /* poke: small (batched), refuse, half-close */
	ACT_HANDLER_FINISH,     /* handler: refuse, finish */
	ACT_HANDLER_REFUSE_ONLY /* handler: refuse, keep the stream (the next open is refused) */
};

/* The server's side: its stream (NULL once ended), its end, and what the
 * stream functions returned inside the callbacks. */
struct sc_server {
	enum sc_act act;
	struct rdmx_rpc_stream *s;
	int opened, done_n, rc;
	enum rdmx_rpc_code code;
};
static struct sc_server sv;

/* The next post on ep's connection is refused. */
static void refuse_next_post(struct rdmx_rpc_ep *ep)
{
	struct rdmx_conn *conn = rdmx_chan_get_conn(rdmx_rpc_ep_get_chan(ep));

	cr_assert_not_null(conn);
	rdmx__conn_fail_posts(conn, 1);
}

static void sv_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)arg;
	sv.done_n++;
	sv.code = st->code;
	sv.s = NULL;
}

static const uint8_t small_msg[8] = "smallmsg";

static void sv_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(small_msg, sizeof(small_msg));

	(void)data;
	(void)len;
	(void)arg;
	if (sv.act == ACT_REFUSE_IN_MSG)
		refuse_next_post(rdmx_rpc_stream_get_ep(s));
	if (sv.act != ACT_WRITE_REFUSE)
		return;
	sv.act = ACT_NONE;
	ASSERT_OK(rdmx_rpc_stream_write(s, &p)); /* inside a callback: batched */
	refuse_next_post(rdmx_rpc_stream_get_ep(s));
}

static void sv_handler(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = sv_msg, .on_done = sv_done};

	(void)arg;
	sv.opened++;
	if (sv.s) { /* a second stream: not kept */
		ASSERT_OK(
		    rdmx_rpc_stream_finish(s, RDMX_RPC_ABORTED, "one at a time", NULL, 0, NULL));
		return;
	}
	sv.s = s;
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, NULL));
	/* the grant of the open as the reader's window: no credits go back
	 * after one message (the refusal meets the send it aims at) */
	if (sv.act != ACT_REFUSE_IN_MSG)
		ASSERT_OK(rdmx_rpc_stream_set_window(s, RDMX_RPC_STREAM_WINDOW));
	if (sv.act == ACT_HANDLER_FINISH) {
		refuse_next_post(rdmx_rpc_stream_get_ep(s));
		sv.rc = rdmx_rpc_stream_finish(s, RDMX_RPC_OK, "done", NULL, 0, NULL);
	} else if (sv.act == ACT_HANDLER_REFUSE_ONLY) {
		refuse_next_post(rdmx_rpc_stream_get_ep(s));
	}
}

static void sv_poke(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(small_msg, sizeof(small_msg));
	struct rdmx_rpc_ep *ep = rdmx_rpc_stream_get_ep(sv.s);
	static uint8_t big[20000]; /* above the coalescing size: goes alone */
	struct rdmx_rpc_payload pb = rdmx_rpc_bytes(big, sizeof(big));

	(void)req;
	(void)len;
	(void)arg;
	cr_assert_not_null(sv.s);
	ASSERT_OK(rdmx_rpc_stream_write(sv.s, &p)); /* inside a handler: batched */
	refuse_next_post(ep);
	if (sv.act == ACT_POKE_WRITE_BIG)
		sv.rc = rdmx_rpc_stream_write(sv.s, &pb); /* the batch first */
	else
		sv.rc = rdmx_rpc_stream_half_close(sv.s);           /* the batch first */
	ASSERT_OK(rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, NULL)); /* its endpoint is gone */
}

static struct rdmx_rpc_server *sc_server(void)
{
	struct rdmx_rpc_server *srv = NULL;

	ASSERT_OK(rdmx_rpc_server_create(&srv));
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, SC_HOLD, SC_HOLD_NAME,
	                                          RDMX_RPC_BIDI_STREAMING, sv_handler, NULL));
	ASSERT_OK(rdmx_rpc_server_register(srv, SC_POKE, SC_POKE_NAME, sv_poke, NULL));
	return srv;
}

/* ---- the client's side ---- */

struct sc_client {
	struct rdmx_rpc_stream *s; /* NULL once ended */
	int done_n;
	enum rdmx_rpc_code code;
};

static void cl_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct sc_client *c = arg;

	(void)s;
	c->done_n++;
	c->code = st->code;
	c->s = NULL;
}

static const struct rdmx_rpc_stream_cbs cl_cbs = {.on_done = cl_done};

/* ---- the teardown in the closed callback ---- */

/* Destroys its endpoint, then its channel, then (when srv is set) the
 * server, and counts its runs. */
struct teardown {
	struct rdmx_rpc_ep **ep;
	struct rdmx_chan *chan;
	struct rdmx_rpc_server **srv;
	int runs, status, srv_rc;
};

static void teardown_closed_cb(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	struct teardown *d = arg;

	(void)ep;
	d->runs++;
	d->status = status;
	if (*d->ep) {
		ASSERT_OK(rdmx_rpc_ep_destroy(d->ep));
		ASSERT_OK(rdmx_chan_destroy(&d->chan));
	}
	if (d->srv)
		d->srv_rc = rdmx_rpc_server_destroy(d->srv);
}

static int peer_closed_n;
static void count_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)ep;
	(void)status;
	(void)arg;
	peer_closed_n++;
}

struct sc_fix {
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct sc_client c;
	struct teardown d;
};

/* Nodes a (client, ra) and b (server, rb); *ep's closed callback tears it
 * down (with the server when srv_too), the other endpoint's counts. */
static void sc_open(struct sc_fix *f)
{
	memset(f, 0, sizeof(*f));
	memset(&sv, 0, sizeof(sv));
	peer_closed_n = 0;
	SC_HOLD = rdmx_rpc_method_id(SC_HOLD_NAME);
	SC_POKE = rdmx_rpc_method_id(SC_POKE_NAME);
	f->srv = sc_server();
	server_pair_open(&f->a, &f->b, NULL, f->srv, &f->ra, &f->rb);
}

static void sc_teardown_on_close(struct sc_fix *f, struct rdmx_rpc_ep **ep, bool srv_too)
{
	struct rdmx_rpc_ep *other = ep == &f->ra ? f->rb : f->ra;

	f->d.ep = ep;
	f->d.chan = rdmx_rpc_ep_get_chan(*ep);
	f->d.srv = srv_too ? &f->srv : NULL;
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(*ep, teardown_closed_cb, &f->d));
	ASSERT_OK(rdmx_rpc_ep_set_closed_cb(other, count_closed, NULL));
}

/* The client's stream to Hold, kept by the server (sv.s). */
static void sc_open_stream(struct sc_fix *f, const struct rdmx_rpc_stream_opts *o)
{
	ASSERT_OK(rdmx_rpc_stream_open(f->ra, SC_HOLD, RDMX_RPC_BIDI_STREAMING, o, &cl_cbs, &f->c,
	                               &f->c.s));
}

static void sc_hold_stream(struct sc_fix *f)
{
	sc_open_stream(f, NULL);
	DRIVE_UNTIL(&f->a, &f->b, sv.s != NULL);
}

/* The teardown ran once, from a refused send's close, and let go of the
 * endpoint, its channel and (when asked) the server. */
static void assert_torn_down(const struct sc_fix *f, struct rdmx_rpc_ep *ep)
{
	cr_assert_eq(f->d.runs, 1, "the closed callback ran %d times", f->d.runs);
	cr_assert_eq(f->d.status, RDMX_E_PROVIDER, "closed with %s", rdmx_err_name(f->d.status));
	cr_assert_null(ep);
	cr_assert_null(f->d.chan);
	if (f->d.srv) {
		ASSERT_OK(f->d.srv_rc);
		cr_assert_null(f->srv);
	}
}

/* Both sides' streams ended once: the side torn down with `here`, the peer
 * (once it saw the close) UNAVAILABLE; nothing runs again. */
static void assert_ends(struct sc_fix *f, int *done_here, enum rdmx_rpc_code code_here,
                        enum rdmx_rpc_code here, int *done_peer, enum rdmx_rpc_code *code_peer)
{
	cr_assert_eq(*done_here, 1, "on_done ran %d times here", *done_here);
	cr_assert_eq(code_here, here, "ended %s here", rdmx_rpc_code_name(code_here));
	DRIVE_UNTIL(&f->a, &f->b, peer_closed_n == 1 && *done_peer);
	drive_for(&f->a, &f->b, 20);
	cr_assert_eq(*done_here, 1, "on_done ran %d times here", *done_here);
	cr_assert_eq(*done_peer, 1, "on_done ran %d times at the peer", *done_peer);
	cr_assert_eq(*code_peer, RDMX_RPC_UNAVAILABLE, "ended %s at the peer",
	             rdmx_rpc_code_name(*code_peer));
	cr_assert_eq(peer_closed_n, 1);
}

static void sc_close(struct sc_fix *f)
{
	rpc_pair_close_all(&f->ra, &f->rb, &f->srv, &f->a, &f->b);
}

/* ---- the server's sends ---- */

/* The coalesced messages' flush (stream.c, flush_fired, an engine timer):
 * under ASan it reset the batch of the stream the close had freed. */
Test(stream_close, flush_refused_closed_cb_destroys_ep_and_server)
{
	struct sc_fix f;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("x", 1);

	sc_open(&f);
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.rb, true);
	sv.act = ACT_WRITE_REFUSE;
	ASSERT_OK(rdmx_rpc_stream_write(f.c.s, &p));
	DRIVE_UNTIL(&f.a, &f.b, f.d.runs);
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_UNAVAILABLE, &f.c.done_n, &f.c.code);
	sc_close(&f);
}

/* The reader's first credits after a message (stream_rx.c, on_s_msg's
 * rdmx__stream_grant, the stream held by the frame's dispatch): sound. */
Test(stream_close, grant_after_msg_refused_closed_cb_destroys_ep_and_server)
{
	struct sc_fix f;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("x", 1);

	sc_open(&f);
	sv.act = ACT_REFUSE_IN_MSG;
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.rb, true);
	ASSERT_OK(rdmx_rpc_stream_write(f.c.s, &p));
	DRIVE_UNTIL(&f.a, &f.b, f.d.runs);
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_UNAVAILABLE, &f.c.done_n, &f.c.code);
	sc_close(&f);
}

/* rdmx_rpc_stream_write of a large message (ACT_POKE_WRITE_BIG) or
 * rdmx_rpc_stream_half_close (ACT_POKE_HALF_CLOSE) from a unary handler,
 * the batch before it refused: under ASan the flush reset the freed
 * stream's batch. The handler's call ends with the close too. */
static void poke_after_batch_refused(int act)
{
	struct sc_fix f;
	struct call_rec r = {0};

	sc_open(&f);
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.rb, true);
	sv.act = act;
	ASSERT_OK(rdmx_rpc_call_async(f.ra, SC_POKE, NULL, NULL, call_rec_cb, &r, NULL));
	DRIVE_UNTIL(&f.a, &f.b, f.d.runs);
	cr_assert_eq(sv.rc, RDMX_E_PROVIDER, "the handler's send -> %s", rdmx_err_name(sv.rc));
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_UNAVAILABLE, &f.c.done_n, &f.c.code);
	cr_assert_eq(r.done, 1);
	cr_assert_eq(r.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(r.code));
	sc_close(&f);
}

Test(stream_close, write_after_batch_refused_closed_cb_destroys_ep_and_server)
{
	poke_after_batch_refused(ACT_POKE_WRITE_BIG);
}

Test(stream_close, half_close_after_batch_refused_closed_cb_destroys_ep_and_server)
{
	poke_after_batch_refused(ACT_POKE_HALF_CLOSE);
}

/* A server interceptor that adds a response header. */
static enum rdmx_rpc_code ann_start(const struct rdmx_rpc_call_info *info,
                                    struct rdmx_rpc_md *annotate, const char **message,
                                    void **state, void *arg)
{
	(void)info;
	(void)message;
	(void)state;
	(void)arg;
	return rdmx_rpc_md_add_str(annotate, "x-ic", "1") ? RDMX_RPC_RESOURCE_EXHAUSTED
	                                                  : RDMX_RPC_OK;
}

/* rdmx_rpc_stream_send_headers with the interceptors' headers (the stream
 * not held: called from outside every callback): under ASan it cut the
 * freed stream's headers back for a retry. */
Test(stream_close, send_headers_refused_closed_cb_destroys_ep_and_server)
{
	static const struct rdmx_rpc_interceptor ic = {.on_start = ann_start};
	struct sc_fix f;
	struct rdmx_rpc_md hd;

	sc_open(&f);
	ASSERT_OK(rdmx_rpc_server_add_interceptor(f.srv, &ic, NULL));
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.rb, true);
	rdmx_rpc_md_init(&hd);
	ASSERT_OK(rdmx_rpc_md_add_str(&hd, "x-app", "2"));
	refuse_next_post(f.rb);
	ASSERT_RC(rdmx_rpc_stream_send_headers(sv.s, &hd), RDMX_E_PROVIDER);
	rdmx_rpc_md_fini(&hd);
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_UNAVAILABLE, &f.c.done_n, &f.c.code);
	sc_close(&f);
}

/* rdmx_rpc_stream_finish (holds its stream and endpoint): sound; on_done
 * runs once, UNAVAILABLE (the status never went). */
Test(stream_close, finish_refused_closed_cb_destroys_ep_and_server)
{
	struct sc_fix f;

	sc_open(&f);
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.rb, true);
	refuse_next_post(f.rb);
	ASSERT_RC(rdmx_rpc_stream_finish(sv.s, RDMX_RPC_OK, "done", NULL, 0, NULL),
	          RDMX_E_PROVIDER);
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_UNAVAILABLE, &f.c.done_n, &f.c.code);
	sc_close(&f);
}

/* The handler's start (stream_rx.c, on_s_open) with a refused finish
 * inside the handler: sound (the open holds the stream, on_msg the
 * endpoint, nothing reads the method after the handler). */
Test(stream_close, handler_finish_refused_closed_cb_destroys_ep_and_server)
{
	struct sc_fix f;

	sc_open(&f);
	sc_teardown_on_close(&f, &f.rb, true);
	sv.act = ACT_HANDLER_FINISH;
	sc_open_stream(&f, NULL);
	DRIVE_UNTIL(&f.a, &f.b, f.d.runs);
	cr_assert_eq(sv.rc, RDMX_E_PROVIDER, "finish -> %s", rdmx_err_name(sv.rc));
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_UNAVAILABLE, &f.c.done_n, &f.c.code);
	sc_close(&f);
}

/* A refusal of an open the server turns down (too many streams,
 * stream_rx.c, on_s_open): under ASan the refusal's counters read the
 * method of the server the close had destroyed. */
Test(stream_close, open_refusal_refused_closed_cb_destroys_ep_and_server)
{
	struct sc_fix f;
	struct sc_client c2 = {0};

	sc_open(&f);
	ASSERT_OK(rdmx_rpc_ep_set_limits(f.rb, RDMX_RPC_DEFAULT_MAX_INFLIGHT, 1));
	sc_teardown_on_close(&f, &f.rb, true);
	sv.act = ACT_HANDLER_REFUSE_ONLY;
	sc_open_stream(&f, NULL);
	ASSERT_OK(rdmx_rpc_stream_open(f.ra, SC_HOLD, RDMX_RPC_BIDI_STREAMING, NULL, &cl_cbs, &c2,
	                               &c2.s));
	DRIVE_UNTIL(&f.a, &f.b, f.d.runs);
	cr_assert_eq(sv.opened, 1, "%d handlers ran", sv.opened);
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_UNAVAILABLE, &f.c.done_n, &f.c.code);
	cr_assert_eq(c2.done_n, 1, "on_done of the second stream ran %d times", c2.done_n);
	cr_assert_eq(c2.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(c2.code));
	sc_close(&f);
}

/* A server interceptor that arms the refusal and turns the stream down:
 * the refusal's status is the refused send (stream_rx.c, on_s_open's
 * rdmx__stream_abort). */
static enum rdmx_rpc_code deny_start(const struct rdmx_rpc_call_info *info,
                                     struct rdmx_rpc_md *annotate, const char **message,
                                     void **state, void *arg)
{
	(void)annotate;
	(void)state;
	(void)arg;
	refuse_next_post(info->ep);
	*message = "denied";
	return RDMX_RPC_PERMISSION_DENIED;
}

/* Sound: the abort holds its stream, on_msg the endpoint; the handler never
 * runs. */
Test(stream_close, interceptor_refusal_refused_closed_cb_destroys_ep_and_server)
{
	static const struct rdmx_rpc_interceptor ic = {.on_start = deny_start};
	struct sc_fix f;

	sc_open(&f);
	ASSERT_OK(rdmx_rpc_server_add_interceptor(f.srv, &ic, NULL));
	sc_teardown_on_close(&f, &f.rb, true);
	sc_open_stream(&f, NULL);
	DRIVE_UNTIL(&f.a, &f.b, f.d.runs);
	cr_assert_eq(sv.opened, 0, "the handler of a refused stream ran");
	assert_torn_down(&f, f.rb);
	DRIVE_UNTIL(&f.a, &f.b, peer_closed_n == 1 && f.c.done_n);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(f.c.done_n, 1);
	cr_assert_eq(f.c.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(f.c.code));
	sc_close(&f);
}

/* rdmx_rpc_stream_cancel on the server (its status refused; the cancel
 * holds its stream and endpoint): on_done once, CANCELLED as
 * rdmx/rpc_stream.h promises, though the close inside the send ends the
 * stream before the cancel's own end (it said the close's UNAVAILABLE). */
Test(stream_close, server_cancel_refused_closed_cb_destroys_ep_and_server)
{
	struct sc_fix f;

	sc_open(&f);
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.rb, true);
	refuse_next_post(f.rb);
	ASSERT_OK(rdmx_rpc_stream_cancel(sv.s));
	assert_torn_down(&f, f.rb);
	assert_ends(&f, &sv.done_n, sv.code, RDMX_RPC_CANCELLED, &f.c.done_n, &f.c.code);
	sc_close(&f);
}

/* ---- the client's sends ---- */

/* rdmx_rpc_stream_cancel on the client (the reset refused): on_done once,
 * CANCELLED, as on the server above. */
Test(stream_close, client_cancel_refused_closed_cb_destroys_ep)
{
	struct sc_fix f;

	sc_open(&f);
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.ra, false);
	refuse_next_post(f.ra);
	ASSERT_OK(rdmx_rpc_stream_cancel(f.c.s));
	assert_torn_down(&f, f.ra);
	assert_ends(&f, &f.c.done_n, f.c.code, RDMX_RPC_CANCELLED, &sv.done_n, &sv.code);
	sc_close(&f);
}

/* The stream's deadline (stream.c, stream_deadline: the reset refused;
 * it holds the endpoint, the abort the stream): sound. A deadline of 1 us
 * is due at the first progress pass after the open; the stream ends once,
 * DEADLINE_EXCEEDED (not the close's UNAVAILABLE, as for the cancel
 * above). */
Test(stream_close, deadline_reset_refused_closed_cb_destroys_ep)
{
	struct sc_fix f;
	struct rdmx_rpc_stream_opts o = {.timeout_us = 1};

	sc_open(&f);
	sc_teardown_on_close(&f, &f.ra, false);
	sc_open_stream(&f, &o);
	refuse_next_post(f.ra);
	DRIVE_UNTIL(&f.a, &f.b, f.d.runs);
	assert_torn_down(&f, f.ra);
	cr_assert_eq(f.c.done_n, 1, "on_done ran %d times", f.c.done_n);
	cr_assert_eq(f.c.code, RDMX_RPC_DEADLINE_EXCEEDED, "%s", rdmx_rpc_code_name(f.c.code));
	DRIVE_UNTIL(&f.a, &f.b, peer_closed_n == 1);
	drive_for(&f.a, &f.b, 20);
	cr_assert_eq(f.c.done_n, 1, "on_done ran %d times", f.c.done_n);
	cr_assert_leq(sv.done_n, 1, "the server's on_done ran %d times", sv.done_n);
	sc_close(&f);
}

/* rdmx_rpc_stream_write, _half_close and _set_window on the client, from
 * outside every callback (nothing batched): sound, nothing of the stream is
 * touched after the send; on_done once, UNAVAILABLE. */
enum client_op { OP_WRITE, OP_HALF_CLOSE, OP_WINDOW };

static void client_op_refused(enum client_op op)
{
	struct sc_fix f;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes("x", 1);

	sc_open(&f);
	sc_hold_stream(&f);
	sc_teardown_on_close(&f, &f.ra, false);
	refuse_next_post(f.ra);
	if (op == OP_WRITE)
		ASSERT_RC(rdmx_rpc_stream_write(f.c.s, &p), RDMX_E_PROVIDER);
	else if (op == OP_HALF_CLOSE)
		ASSERT_RC(rdmx_rpc_stream_half_close(f.c.s), RDMX_E_PROVIDER);
	else /* the grant goes at once; its error is the close's */
		ASSERT_OK(rdmx_rpc_stream_set_window(f.c.s, RDMX_RPC_STREAM_MAX_WINDOW));
	assert_torn_down(&f, f.ra);
	assert_ends(&f, &f.c.done_n, f.c.code, RDMX_RPC_UNAVAILABLE, &sv.done_n, &sv.code);
	sc_close(&f);
}

Test(stream_close, client_write_refused_closed_cb_destroys_ep)
{
	client_op_refused(OP_WRITE);
}

Test(stream_close, client_half_close_refused_closed_cb_destroys_ep)
{
	client_op_refused(OP_HALF_CLOSE);
}

Test(stream_close, client_window_refused_closed_cb_destroys_ep)
{
	client_op_refused(OP_WINDOW);
}
