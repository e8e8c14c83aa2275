/* Generated streaming stubs and skeletons (streams.proto) over the real RPC
 * runtime, on the devices of the channel/RPC battery (default tcp): typed
 * async callbacks and writes, blocking open/read/write/close_send/finish,
 * flow control past the window in both directions, a blocking write held by
 * a stalled reader until the stream's deadline, malformed requests and
 * responses, argument errors. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcfix.h"
#include "streams.rdmx.h"

#define MANY 100 /* well past RDMX_RPC_STREAM_WINDOW */

/* ---- server ---- */

struct counter {
	int64_t next, last;
};

static void count_pump(struct rdmx_rpc_stream *s, void *arg)
{
	struct counter *c = arg;

	while (c->next < c->last) {
		sstubs_Num m;
		int rc;

		sstubs_Num_init(&m);
		m.n = c->next;
		m.text = rdmx_str_c("count");
		rc = sstubs_Streams_Count_send(s, &m);
		if (rc == RDMX_E_AGAIN)
			return;
		ASSERT_OK(rc);
		c->next++;
	}
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static void count_msg(struct rdmx_rpc_stream *s, const sstubs_Num *req, void *arg)
{
	struct counter *c = arg;

	(void)s;
	c->last = req->n;
}

static void free_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)st;
	free(arg);
}

static void on_count(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct sstubs_Streams_Count_server_cbs cbs = {.on_msg = count_msg,
	                                                           .on_half_close = count_pump,
	                                                           .on_writable = count_pump,
	                                                           .on_done = free_done};
	struct counter *c = calloc(1, sizeof(*c));

	(void)arg;
	cr_assert_not_null(c);
	ASSERT_OK(sstubs_Streams_Count_accept(s, &cbs, c));
}

struct adder {
	sstubs_Sum sum;
};

static void add_msg(struct rdmx_rpc_stream *s, const sstubs_Num *req, void *arg)
{
	struct adder *a = arg;

	(void)s;
	a->sum.total += req->n;
	a->sum.count++;
}

static void add_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	struct adder *a = arg;

	ASSERT_OK(sstubs_Streams_Add_send(s, &a->sum));
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

/* the server's status of each stream, for the malformed-request test */
static enum rdmx_rpc_code last_server_code;
static int server_done;

static void add_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	last_server_code = st->code;
	server_done++;
	free_done(s, st, arg);
}

static void on_add(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct sstubs_Streams_Add_server_cbs cbs = {
	    .on_msg = add_msg, .on_half_close = add_half_close, .on_done = add_done};
	struct adder *a = calloc(1, sizeof(*a));

	(void)arg;
	cr_assert_not_null(a);
	ASSERT_OK(sstubs_Streams_Add_accept(s, &cbs, a));
}

static void echo_msg(struct rdmx_rpc_stream *s, const sstubs_Num *req, void *arg)
{
	sstubs_Num m = *req;

	(void)arg;
	m.n = req->n * 2;
	/* the clients read one answer per request: within the window */
	ASSERT_OK(sstubs_Streams_Echo_send(s, &m));
}

static void echo_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	(void)arg;
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, "echoed", NULL, 0, NULL));
}

static void on_echo(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct sstubs_Streams_Echo_server_cbs cbs = {.on_msg = echo_msg,
	                                                          .on_half_close = echo_half_close};

	(void)arg;
	ASSERT_OK(sstubs_Streams_Echo_accept(s, &cbs, NULL));
}

static void on_stall(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct sstubs_Streams_Stall_server_cbs cbs = {.on_msg = NULL};

	(void)arg;
	ASSERT_OK(sstubs_Streams_Stall_accept(s, &cbs, NULL));
	ASSERT_OK(rdmx_rpc_stream_pause_read(s)); /* reads nothing: no credit goes back */
}

/* RawStreams/Junk: a response that does not decode as a Num */
static void junk_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	static const uint8_t junk[] = {0x81, 0x01, 0xa1, 'x'}; /* n: a string */
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(junk, sizeof(junk));

	(void)arg;
	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static void junk_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	(void)s;
	(void)data;
	(void)len;
	(void)arg;
}

static void junk_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)s;
	(void)st;
	(void)arg;
}

static void on_junk(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {
	    .on_msg = junk_msg, .on_half_close = junk_half_close, .on_done = junk_done};

	(void)arg;
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, NULL));
}

static struct rdmx_rpc_server *streams_server(void)
{
	struct sstubs_Streams_handlers h = {
	    .Count = on_count, .Add = on_add, .Echo = on_echo, .Stall = on_stall};
	struct rdmx_rpc_server *s;

	ASSERT_OK(rdmx_rpc_server_create(&s));
	ASSERT_OK(sstubs_Streams_register(s, &h, NULL));
	ASSERT_OK(rdmx_rpc_server_register_stream(s, SSTUBS_RAWSTREAMS_JUNK_ID,
	                                          SSTUBS_RAWSTREAMS_JUNK_NAME,
	                                          SSTUBS_RAWSTREAMS_JUNK_KIND, on_junk, NULL));
	return s;
}

static void destroy_server(struct rdmx_rpc_server **s)
{
	struct rdmx_rpc_server *p = *s;

	ASSERT_OK(rdmx_rpc_server_destroy(s));
	rdmx_codec_release_bindings(p);
}

/* ---- async client ---- */

struct seen {
	int msgs, done, headers;
	int64_t sum;
	bool in_order;
	enum rdmx_rpc_code code;
	char message[64];
};

static void seen_msg(struct rdmx_rpc_stream *s, const sstubs_Num *m, void *arg)
{
	struct seen *g = arg;

	(void)s;
	if (m->n != g->msgs || !rdmx_str_eq(m->text, "count"))
		g->in_order = false;
	g->sum += m->n;
	g->msgs++;
}

static void seen_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct seen *g = arg;

	(void)s;
	g->done++;
	g->code = st->code;
	snprintf(g->message, sizeof(g->message), "%s", st->message);
}

static void seen_sum(struct rdmx_rpc_stream *s, const sstubs_Sum *m, void *arg)
{
	struct seen *g = arg;

	(void)s;
	g->sum = m->total;
	g->msgs++;
}

static void seen_junk(struct rdmx_rpc_stream *s, const sstubs_Num *m, void *arg)
{
	(void)s;
	(void)m;
	((struct seen *)arg)->msgs++;
}

Test(codegen_stream, kinds_and_ids)
{
	cr_assert_eq(SSTUBS_STREAMS_COUNT_KIND, RDMX_RPC_SERVER_STREAMING);
	cr_assert_eq(SSTUBS_STREAMS_ADD_KIND, RDMX_RPC_CLIENT_STREAMING);
	cr_assert_eq(SSTUBS_STREAMS_ECHO_KIND, RDMX_RPC_BIDI_STREAMING);
	cr_assert_eq(SSTUBS_STREAMS_ECHO_ID, rdmx_rpc_method_id("sstubs.Streams/Echo"));
	cr_assert_str_eq(SSTUBS_STREAMS_STALL_NAME, "sstubs.Streams/Stall");
}

Test(codegen_stream, async_server_and_client_streaming)
{
	static const struct sstubs_Streams_Count_cbs ccbs = {.on_msg = seen_msg,
	                                                     .on_done = seen_done};
	static const struct sstubs_Streams_Add_cbs acbs = {.on_msg = seen_sum,
	                                                   .on_done = seen_done};
	static const struct sstubs_RawStreams_Junk_cbs jcbs = {.on_msg = seen_junk,
	                                                       .on_done = seen_done};
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct seen count = {0, 0, 0, 0, true, RDMX_RPC_OK, ""}, add = count, junk = count;
	struct rdmx_rpc_stream *s = NULL;
	sstubs_Num req;
	int64_t i;

	srv = streams_server();
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);

	/* server-streaming: MANY typed messages, in order, through the window */
	sstubs_Num_init(&req);
	req.n = MANY;
	ASSERT_OK(sstubs_Streams_Count_async(ra, &req, NULL, &ccbs, &count, &s));
	cr_assert_not_null(s);
	cr_assert_eq(count.msgs + count.done, 0, "callbacks run from progress only");
	DRIVE_UNTIL(&a, &b, count.done);
	cr_assert_eq(count.code, RDMX_RPC_OK);
	cr_assert_eq(count.msgs, MANY);
	cr_assert(count.in_order);

	/* client-streaming with typed async writes, from on_writable past the window */
	ASSERT_OK(sstubs_Streams_Add_async(ra, NULL, &acbs, &add, &s));
	for (i = 1; i <= MANY;) {
		int rc;

		req.n = i;
		rc = sstubs_Streams_Add_write_async(s, &req);
		if (rc == RDMX_E_AGAIN) {
			drive_once(&a, &b);
			continue;
		}
		ASSERT_OK(rc);
		i++;
	}
	ASSERT_OK(rdmx_rpc_stream_half_close(s));
	DRIVE_UNTIL(&a, &b, add.done);
	cr_assert_eq(add.code, RDMX_RPC_OK);
	cr_assert_eq(add.msgs, 1);
	cr_assert_eq(add.sum, MANY * (MANY + 1) / 2);

	/* a response that does not decode: no on_msg, the stream ends INTERNAL */
	ASSERT_OK(sstubs_RawStreams_Junk_async(ra, &req, NULL, &jcbs, &junk, NULL));
	DRIVE_UNTIL(&a, &b, junk.done);
	cr_assert_eq(junk.msgs, 0);
	cr_assert_eq(junk.code, RDMX_RPC_INTERNAL);
	cr_assert_str_eq(junk.message, "malformed response");

	/* argument errors: nothing starts, no callback */
	ASSERT_RC(sstubs_Streams_Count_async(NULL, &req, NULL, &ccbs, &count, NULL), RDMX_E_INVAL);
	ASSERT_RC(sstubs_Streams_Count_async(ra, NULL, NULL, &ccbs, &count, NULL), RDMX_E_INVAL);
	ASSERT_RC(sstubs_Streams_Add_async(ra, NULL, NULL, &add, NULL), RDMX_E_INVAL);
	ASSERT_RC(sstubs_Streams_Add_write_async(NULL, &req), RDMX_E_INVAL);
	drive_for(&a, &b, 20);
	cr_assert_eq(count.done + add.done + junk.done, 3, "a stream ended twice");

	rpc_pair_close(&ra, &rb);
	destroy_server(&srv);
	node_close(&a);
	node_close(&b);
}

Test(codegen_stream, malformed_request_ends_the_stream_invalid_argument)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_done = seen_done};
	static const uint8_t junk[] = {0x81, 0x01, 0xa1, 'x'};
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct seen got = {0, 0, 0, 0, true, RDMX_RPC_OK, ""};
	struct rdmx_rpc_stream *s;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(junk, sizeof(junk));

	srv = streams_server();
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);
	server_done = 0;
	ASSERT_OK(rdmx_rpc_stream_open(ra, SSTUBS_STREAMS_ADD_ID, RDMX_RPC_CLIENT_STREAMING, NULL,
	                               &cbs, &got, &s));
	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	DRIVE_UNTIL(&a, &b, got.done && server_done);
	cr_assert_eq(got.code, RDMX_RPC_INVALID_ARGUMENT);
	cr_assert_str_eq(got.message, "malformed request");
	cr_assert_eq(last_server_code, RDMX_RPC_INVALID_ARGUMENT, "the server's on_done saw it");
	rpc_pair_close(&ra, &rb);
	destroy_server(&srv);
	node_close(&a);
	node_close(&b);
}

/* ---- blocking client: the server's node runs on its own thread ---- */

Test(codegen_stream, blocking_all_kinds)
{
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct node_serve sa;
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 30000000};
	struct rdmx_codec_stream *call;
	struct rdmx_rpc_status status;
	struct rdmx_arena arena;
	sstubs_Num req, resp;
	sstubs_Sum sum;
	int64_t i;
	int rc;

	srv = streams_server();
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);
	node_serve_start(&sa, &b);
	rdmx_arena_init(&arena, NULL, 0, 0);
	sstubs_Num_init(&req);

	/* server-streaming: read until the end, then finish */
	req.n = MANY;
	ASSERT_OK(sstubs_Streams_Count_open(ra, &req, &opts, &call));
	for (i = 0; (rc = sstubs_Streams_Count_read(call, &resp, &arena)) == 1; i++) {
		cr_assert_eq(resp.n, i);
		cr_assert(rdmx_str_eq(resp.text, "count"));
		cr_assert_eq(resp.text.data[resp.text.len], 0, "copied, NUL-terminated");
		rdmx_arena_reset(&arena);
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(i, MANY);
	ASSERT_OK(sstubs_Streams_Count_finish(call, &status, &arena));
	cr_assert_eq(status.code, RDMX_RPC_OK);

	/* client-streaming: MANY blocking writes (they wait for credits) */
	ASSERT_OK(sstubs_Streams_Add_open(ra, &opts, &call));
	for (i = 1; i <= MANY; i++) {
		req.n = i;
		ASSERT_OK(sstubs_Streams_Add_write(call, &req));
	}
	ASSERT_OK(sstubs_Streams_Add_close_send(call));
	cr_assert_eq(sstubs_Streams_Add_read(call, &sum, &arena), 1);
	cr_assert_eq(sum.total, MANY * (MANY + 1) / 2);
	cr_assert_eq(sum.count, MANY);
	cr_assert_eq(sstubs_Streams_Add_read(call, &sum, &arena), 0, "then the end");
	ASSERT_OK(sstubs_Streams_Add_finish(call, NULL, NULL));

	/* bidi: write one, read one; finish half-closes itself */
	ASSERT_OK(sstubs_Streams_Echo_open(ra, &opts, &call));
	for (i = 0; i < 5; i++) {
		req.n = i;
		ASSERT_OK(sstubs_Streams_Echo_write(call, &req));
		cr_assert_eq(sstubs_Streams_Echo_read(call, &resp, &arena), 1);
		cr_assert_eq(resp.n, 2 * i);
	}
	ASSERT_OK(sstubs_Streams_Echo_finish(call, &status, &arena));
	cr_assert_str_eq(status.message, "echoed");

	/* a response that does not decode */
	ASSERT_OK(sstubs_RawStreams_Junk_open(ra, &req, &opts, &call));
	ASSERT_RC(sstubs_RawStreams_Junk_read(call, &resp, &arena), RDMX_E_PROTOCOL);
	ASSERT_OK(sstubs_RawStreams_Junk_finish(call, NULL, NULL));

	/* cancel: finish says CANCELLED */
	ASSERT_OK(sstubs_Streams_Echo_open(ra, &opts, &call));
	ASSERT_OK(rdmx_codec_stream_cancel(call));
	ASSERT_RC(sstubs_Streams_Echo_write(call, &req), RDMX_RPC_CANCELLED);
	ASSERT_RC(sstubs_Streams_Echo_finish(call, NULL, NULL), RDMX_RPC_CANCELLED);

	/* argument errors */
	ASSERT_RC(sstubs_Streams_Count_open(ra, NULL, &opts, &call), RDMX_E_INVAL);
	ASSERT_RC(sstubs_Streams_Add_open(NULL, &opts, &call), RDMX_E_INVAL);

	node_serve_stop(&sa);
	rdmx_arena_fini(&arena);
	rpc_pair_close(&ra, &rb);
	destroy_server(&srv);
	node_close(&a);
	node_close(&b);
}

Test(codegen_stream, blocking_write_to_a_stalled_reader_ends_at_the_deadline)
{
	struct node a, b;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct node_serve sa;
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 300000, .window = 0};
	struct rdmx_codec_stream *call;
	struct rdmx_rpc_status status;
	struct rdmx_arena arena;
	sstubs_Num req;
	int i, rc = 0;

	srv = streams_server();
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);
	node_serve_start(&sa, &b);
	rdmx_arena_init(&arena, NULL, 0, 0);
	sstubs_Num_init(&req);
	ASSERT_OK(sstubs_Streams_Stall_open(ra, &opts, &call));
	/* the server grants one window and never reads: a write past it waits
	 * until the stream's deadline ends the stream */
	for (i = 0; i < MANY && rc == 0; i++) {
		req.n = i;
		rc = sstubs_Streams_Stall_write(call, &req);
	}
	cr_assert_eq(rc, RDMX_RPC_DEADLINE_EXCEEDED, "write: %d", rc);
	cr_assert_geq(i, (int)RDMX_RPC_STREAM_WINDOW, "the window was usable");
	cr_assert_lt(i, MANY, "the writer was held");
	ASSERT_RC(sstubs_Streams_Stall_finish(call, &status, &arena), RDMX_RPC_DEADLINE_EXCEEDED);
	cr_assert_eq(status.code, RDMX_RPC_DEADLINE_EXCEEDED);
	node_serve_stop(&sa);
	rdmx_arena_fini(&arena);
	rpc_pair_close(&ra, &rb);
	destroy_server(&srv);
	node_close(&a);
	node_close(&b);
}
