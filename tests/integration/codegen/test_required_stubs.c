/* proto2 required fields through the generated stubs and skeletons
 * (required.proto) over the real RPC runtime: a response or a request that
 * lacks one does not decode, and an empty payload (respond with resp ==
 * NULL) is not a default message when that message has required fields. */
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
