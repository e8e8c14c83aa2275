/* proto2 required fields through the generated stubs and skeletons
 * (required.proto) over the real RPC runtime: a response or a request that
 * lacks one does not decode, and an empty payload (respond with resp ==
 * NULL) is not a default message when that message has required fields;
 * the same for the messages of a stream, both ways. */
#include <stdio.h>
#include <string.h>

#include "required.rdmx.h"
#include "rpcfix.h"

struct oracle_state {
	unsigned replies, blanks;
};

static void on_reply(struct rdmx_rpc_server_call *call, const req2_Ask *req, void *arg)
{
	struct oracle_state *st = arg;
	req2_Answer a;
	st->replies++;
	req2_Answer_init(&a);
	a.text = req->question;
	ASSERT_OK(req2_Oracle_Reply_respond(call, RDMX_RPC_OK, NULL, &a));
}

static void on_blank(struct rdmx_rpc_server_call *call, const req2_Ask *req, void *arg)
{
	struct oracle_state *st = arg;
	(void)req;
	st->blanks++;
	ASSERT_OK(req2_Oracle_Blank_respond(call, RDMX_RPC_OK, NULL, NULL));
}

/* req2.Raw/Partial: {2: 1}, an Answer without its required text */
static void partial_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len,
                            void *arg)
{
	static const uint8_t partial[] = {0x81, 0x02, 0x01};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(partial, sizeof(partial));
	(void)req;
	(void)len;
	(void)arg;
	ASSERT_OK(rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p));
}

struct answer_got {
	int done;
	enum rdmx_rpc_code code;
	bool had_resp;
};

static void answer_done(enum rdmx_rpc_code code, const char *message, const req2_Answer *resp,
                        void *arg)
{
	struct answer_got *g = arg;
	(void)message;
	g->done++;
	g->code = code;
	g->had_resp = resp != NULL;
}

Test(codegen_required, a_missing_required_field_fails_the_call)
{
	struct node a, b;
	struct oracle_state st;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct node_serve sa;
	struct req2_Oracle_handlers h;
	struct rdmx_arena arena;
	req2_Ask ask;
	req2_Answer ans;
	struct answer_got blank = {0}, partial = {0};

	memset(&st, 0, sizeof(st));
	memset(&h, 0, sizeof(h));
	h.Reply = on_reply;
	h.Blank = on_blank;
	ASSERT_OK(rdmx_rpc_server_create(&srv));
	ASSERT_OK(req2_Oracle_register(srv, &h, &st));
	ASSERT_OK(rdmx_rpc_server_register(srv, REQ2_RAW_PARTIAL_ID, REQ2_RAW_PARTIAL_NAME,
	                                   partial_handler, NULL));
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);
	req2_Ask_init(&ask);
	ask.question = rdmx_str_c("why");

	/* async: no payload, and a payload without the text */
	ASSERT_OK(req2_Oracle_Blank_async(ra, &ask, NULL, answer_done, &blank, NULL));
	ASSERT_OK(req2_Raw_Partial_async(ra, &ask, NULL, answer_done, &partial, NULL));
	DRIVE_UNTIL(&a, &b, blank.done && partial.done);
	cr_assert_eq(blank.code, RDMX_RPC_INTERNAL, "no payload is no Answer");
	cr_assert(!blank.had_resp);
	cr_assert_eq(partial.code, RDMX_RPC_INTERNAL);
	cr_assert(!partial.had_resp);

	/* a request without its question never reaches the handler */
	{
		static const uint8_t empty_map[] = {0x80};
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(empty_map, sizeof(empty_map));
		struct call_rec none = {0}, empty = {0};
		ASSERT_OK(rdmx_rpc_call_async(ra, REQ2_ORACLE_REPLY_ID, NULL, NULL, call_rec_cb,
		                              &none, NULL));
		ASSERT_OK(rdmx_rpc_call_async(ra, REQ2_ORACLE_REPLY_ID, &p, NULL, call_rec_cb,
		                              &empty, NULL));
		DRIVE_UNTIL(&a, &b, none.done && empty.done);
		cr_assert_eq(none.code, RDMX_RPC_INVALID_ARGUMENT);
		cr_assert_eq(empty.code, RDMX_RPC_INVALID_ARGUMENT);
		cr_assert_eq(st.replies, 0);
	}

	/* blocking */
	node_serve_start(&sa, &b);
	rdmx_arena_init(&arena, NULL, 0, 0);
	ASSERT_OK(req2_Oracle_Reply(ra, &ask, &ans, &arena, NULL, NULL));
	cr_assert(rdmx_str_eq(ans.text, "why"));
	ASSERT_RC(req2_Oracle_Blank(ra, &ask, &ans, &arena, NULL, NULL), RDMX_E_PROTOCOL);
	ASSERT_RC(req2_Raw_Partial(ra, &ask, &ans, &arena, NULL, NULL), RDMX_E_PROTOCOL);
	node_serve_stop(&sa);
	cr_assert_eq(st.replies, 1);
	cr_assert_eq(st.blanks, 2);

	rdmx_arena_fini(&arena);
	rpc_pair_close(&ra, &rb);
	{
		struct rdmx_rpc_server *p = srv;
		ASSERT_OK(rdmx_rpc_server_destroy(&srv));
		rdmx_codec_release_bindings(p);
	}
	node_close(&a);
	node_close(&b);
}

/* ---- streams ---- */

/* req2.Tally/Tell: counts the asks, answers with the last question */
struct tally {
	unsigned asks, done;
	enum rdmx_rpc_code code;
	char last[16];
};

static void tell_msg(struct rdmx_rpc_stream *s, const req2_Ask *req, void *arg)
{
	struct tally *t = arg;
	(void)s;
	t->asks++;
	snprintf(t->last, sizeof(t->last), "%.*s", (int)req->question.len,
	         req->question.len ? req->question.data : "");
}

static void tell_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	struct tally *t = arg;
	req2_Answer a;
	req2_Answer_init(&a);
	a.text = rdmx_str_c(t->last);
	ASSERT_OK(req2_Tally_Tell_send(s, &a));
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static void tell_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct tally *t = arg;
	(void)s;
	t->done++;
	t->code = st->code;
}

static void on_tell(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct req2_Tally_Tell_server_cbs cbs = {
	    .on_msg = tell_msg, .on_half_close = tell_half_close, .on_done = tell_done};
	ASSERT_OK(req2_Tally_Tell_accept(s, &cbs, arg));
}

/* req2.RawStream: after the request, one raw message, then OK */
static void raw_stream_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	(void)s;
	(void)data;
	(void)len;
	(void)arg;
}

static void raw_stream_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	static const uint8_t partial[] = {0x81, 0x02, 0x01};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(partial, arg ? sizeof(partial) : 0);
	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	ASSERT_OK(rdmx_rpc_stream_half_close(s));
	ASSERT_OK(rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL));
}

static void raw_stream_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st,
                            void *arg)
{
	(void)s;
	(void)st;
	(void)arg;
}

/* arg NULL: a payload of no bytes; else {2: 1} */
static void on_raw_stream(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = raw_stream_msg,
	                                               .on_half_close = raw_stream_half_close,
	                                               .on_done = raw_stream_done};
	ASSERT_OK(rdmx_rpc_stream_set_callbacks(s, &cbs, arg));
}

struct stream_got {
	int msgs, done;
	enum rdmx_rpc_code code;
	char message[64];
	char text[16];
};

static void got_answer(struct rdmx_rpc_stream *s, const req2_Answer *resp, void *arg)
{
	struct stream_got *g = arg;
	(void)s;
	g->msgs++;
	snprintf(g->text, sizeof(g->text), "%.*s", (int)resp->text.len,
	         resp->text.len ? resp->text.data : "");
}

static void got_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct stream_got *g = arg;
	(void)s;
	g->done++;
	g->code = st->code;
	snprintf(g->message, sizeof(g->message), "%s", st->message ? st->message : "");
}

Test(codegen_required, a_stream_message_missing_a_required_field_fails_the_stream)
{
	static const struct req2_RawStream_Blank_cbs bcbs = {.on_msg = got_answer,
	                                                     .on_done = got_done};
	static const struct req2_RawStream_Partial_cbs pcbs = {.on_msg = got_answer,
	                                                       .on_done = got_done};
	static const struct req2_Tally_Tell_cbs tcbs = {.on_msg = got_answer, .on_done = got_done};
	static const struct rdmx_rpc_stream_cbs rawcbs = {.on_msg = raw_stream_msg,
	                                                  .on_done = got_done};
	static const uint8_t empty_map[] = {0x80}; /* an Ask without its question */
	static int partial_arg;
	struct node a, b;
	struct tally tally = {0, 0, RDMX_RPC_OK, ""};
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct node_serve sa;
	struct rdmx_rpc_stream_opts opts = {.timeout_us = 30000000};
	struct rdmx_codec_stream *call;
	struct rdmx_rpc_stream *s;
	struct rdmx_arena arena;
	struct stream_got blank = {0}, partial = {0}, told = {0}, none = {0}, empty = {0};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(empty_map, sizeof(empty_map));
	struct req2_Tally_handlers h = {.Tell = on_tell};
	req2_Ask ask;
	req2_Answer ans;

	ASSERT_OK(rdmx_rpc_server_create(&srv));
	ASSERT_OK(req2_Tally_register(srv, &h, &tally));
	ASSERT_OK(rdmx_rpc_server_register_stream(srv, REQ2_RAWSTREAM_BLANK_ID,
	                                          REQ2_RAWSTREAM_BLANK_NAME,
	                                          REQ2_RAWSTREAM_BLANK_KIND, on_raw_stream, NULL));
	ASSERT_OK(rdmx_rpc_server_register_stream(
	    srv, REQ2_RAWSTREAM_PARTIAL_ID, REQ2_RAWSTREAM_PARTIAL_NAME,
	    REQ2_RAWSTREAM_PARTIAL_KIND, on_raw_stream, &partial_arg));
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);
	req2_Ask_init(&ask);
	ask.question = rdmx_str_c("why");

	/* async client: a response of no bytes, and one without its text, end
	 * the stream INTERNAL with no on_msg */
	ASSERT_OK(req2_RawStream_Blank_async(ra, &ask, NULL, &bcbs, &blank, NULL));
	ASSERT_OK(req2_RawStream_Partial_async(ra, &ask, NULL, &pcbs, &partial, NULL));
	DRIVE_UNTIL(&a, &b, blank.done && partial.done);
	cr_assert_eq(blank.msgs, 0, "no payload is no Answer");
	cr_assert_eq(blank.code, RDMX_RPC_INTERNAL);
	cr_assert_str_eq(blank.message, "malformed response");
	cr_assert_eq(partial.msgs, 0);
	cr_assert_eq(partial.code, RDMX_RPC_INTERNAL);
	cr_assert_str_eq(partial.message, "malformed response");

	/* the skeleton: a request of no bytes, and one without its question,
	 * end the stream INVALID_ARGUMENT before on_msg */
	ASSERT_OK(rdmx_rpc_stream_open(ra, REQ2_TALLY_TELL_ID, REQ2_TALLY_TELL_KIND, NULL, &rawcbs,
	                               &none, &s));
	ASSERT_OK(rdmx_rpc_stream_write(s, NULL));
	ASSERT_OK(rdmx_rpc_stream_half_close(s)); /* a skeleton that took it answers at once */
	DRIVE_UNTIL(&a, &b, none.done && tally.done == 1);
	ASSERT_OK(rdmx_rpc_stream_open(ra, REQ2_TALLY_TELL_ID, REQ2_TALLY_TELL_KIND, NULL, &rawcbs,
	                               &empty, &s));
	ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	ASSERT_OK(rdmx_rpc_stream_half_close(s));
	DRIVE_UNTIL(&a, &b, empty.done && tally.done == 2);
	cr_assert_eq(none.code, RDMX_RPC_INVALID_ARGUMENT);
	cr_assert_str_eq(none.message, "malformed request");
	cr_assert_eq(empty.code, RDMX_RPC_INVALID_ARGUMENT);
	cr_assert_str_eq(empty.message, "malformed request");
	cr_assert_eq(tally.code, RDMX_RPC_INVALID_ARGUMENT, "the server's on_done saw it");
	cr_assert_eq(tally.asks, 0);

	/* while a complete Ask goes through, both ways */
	ASSERT_OK(req2_Tally_Tell_async(ra, NULL, &tcbs, &told, &s));
	ASSERT_OK(req2_Tally_Tell_write_async(s, &ask));
	ASSERT_OK(rdmx_rpc_stream_half_close(s));
	DRIVE_UNTIL(&a, &b, told.done && tally.done == 3);
	cr_assert_eq(told.code, RDMX_RPC_OK);
	cr_assert_eq(told.msgs, 1);
	cr_assert_str_eq(told.text, "why");
	cr_assert_eq(tally.asks, 1);

	/* blocking client: _read fails RDMX_E_PROTOCOL; the stream itself ended OK */
	node_serve_start(&sa, &b);
	rdmx_arena_init(&arena, NULL, 0, 0);
	ASSERT_OK(req2_RawStream_Blank_open(ra, &ask, &opts, &call));
	ASSERT_RC(req2_RawStream_Blank_read(call, &ans, &arena), RDMX_E_PROTOCOL);
	ASSERT_OK(req2_RawStream_Blank_finish(call, NULL, NULL));
	ASSERT_OK(req2_RawStream_Partial_open(ra, &ask, &opts, &call));
	ASSERT_RC(req2_RawStream_Partial_read(call, &ans, &arena), RDMX_E_PROTOCOL);
	ASSERT_OK(req2_RawStream_Partial_finish(call, NULL, NULL));
	node_serve_stop(&sa);

	rdmx_arena_fini(&arena);
	rpc_pair_close(&ra, &rb);
	{
		struct rdmx_rpc_server *sp = srv;
		ASSERT_OK(rdmx_rpc_server_destroy(&srv));
		rdmx_codec_release_bindings(sp);
	}
	node_close(&a);
	node_close(&b);
}
