/* Generated client stubs and server skeletons (stubs.proto) over the real
 * RPC runtime, on the devices of the channel/RPC battery (default tcp):
 * blocking and async calls, typed handlers and respond, status codes and
 * messages, unimplemented methods, malformed requests, deadlines, method ids,
 * registration errors. */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "rpcfix.h"
#include "stubs.rdmx.h"

struct srv_state {
	unsigned puts, fails, defaults;
	struct rdmx_rpc_server_call *later[8];
	unsigned n_later;
	char later_key[8][32];
};

static void on_put(struct rdmx_rpc_server_call *call, const stubs_PutRequest *req, void *arg)
{
	struct srv_state *st = arg;
	stubs_PutReply r;
	stubs_Nested n;
	size_t i;
	int64_t sum = 0;
	st->puts++;
	stubs_PutReply_init(&r);
	stubs_Nested_init(&n);
	for (i = 0; i < req->n_meta; i++)
		sum += req->meta[i].value;
	r.version = 100 + req->value.len;
	r.echo_key = req->key; /* valid during the handler: respond encodes now */
	r.tags = req->tags;
	r.n_tags = req->n_tags;
	n.depth = (int32_t)sum;
	n.note = rdmx_str_c("stored \xe2\x9c\x93");
	r.detail = &n;
	ASSERT_OK(stubs_Store_Put_respond(call, RDMX_RPC_OK, NULL, &r));
}

static void on_fail(struct rdmx_rpc_server_call *call, const stubs_PutRequest *req, void *arg)
{
	struct srv_state *st = arg;
	char msg[64];
	st->fails++;
	snprintf(msg, sizeof(msg), "no key %.*s", (int)req->key.len, req->key.data);
	ASSERT_OK(stubs_Store_Fail_respond(call, RDMX_RPC_NOT_FOUND, msg, NULL));
}

static void on_later(struct rdmx_rpc_server_call *call, const stubs_PutRequest *req, void *arg)
{
	struct srv_state *st = arg;
	cr_assert_lt(st->n_later, 8);
	snprintf(st->later_key[st->n_later], sizeof(st->later_key[0]), "%.*s", (int)req->key.len,
	         req->key.data);
	st->later[st->n_later++] = call;
}

static void on_default(struct rdmx_rpc_server_call *call, const stubs_Empty *req, void *arg)
{
	struct srv_state *st = arg;
	(void)req;
	st->defaults++;
	ASSERT_OK(stubs_Store_Default_respond(call, RDMX_RPC_OK, NULL, NULL));
}

/* stubs.Raw/Bad: answers bytes that do not decode as a PutReply */
static void bad_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	static const uint8_t junk[] = {0x81, 0x01, 0xa1, 'x'}; /* version: a string */
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(junk, sizeof(junk));
	(void)req;
	(void)len;
	(void)arg;
	ASSERT_OK(rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p));
}

static struct rdmx_rpc_server *store_server(struct srv_state *st)
{
	struct rdmx_rpc_server *s;
	struct stubs_Store_handlers h;
	memset(&h, 0, sizeof(h));
	h.Put = on_put;
	h.Fail = on_fail;
	h.Later = on_later;
	h.Default = on_default; /* Missing stays NULL */
	ASSERT_OK(rdmx_rpc_server_create(&s));
	ASSERT_OK(stubs_Store_register(s, &h, st));
	ASSERT_OK(
	    rdmx_rpc_server_register(s, STUBS_RAW_BAD_ID, STUBS_RAW_BAD_NAME, bad_handler, NULL));
	return s;
}

static void destroy_server(struct rdmx_rpc_server **s)
{
	struct rdmx_rpc_server *p = *s;
	ASSERT_OK(rdmx_rpc_server_destroy(s));
	rdmx_codec_release_bindings(p);
}

/* ---- async ---- */

struct got {
	int done;
	enum rdmx_rpc_code code;
	char message[128];
	uint64_t version;
	char key[64];
	size_t n_tags;
	char tag1[32];
	int32_t depth;
	char note[32];
	bool had_resp;
};

static void copy_str(char *dst, size_t cap, struct rdmx_str s)
{
	snprintf(dst, cap, "%.*s", (int)s.len, s.data ? s.data : "");
}

static void put_done(enum rdmx_rpc_code code, const char *message, const stubs_PutReply *resp,
                     void *arg)
{
	struct got *g = arg;
	g->done++;
	g->code = code;
	snprintf(g->message, sizeof(g->message), "%s", message ? message : "");
	g->had_resp = resp != NULL;
	if (!resp)
		return;
	g->version = resp->version;
	copy_str(g->key, sizeof(g->key), resp->echo_key);
	g->n_tags = resp->n_tags;
	if (resp->n_tags > 1)
		copy_str(g->tag1, sizeof(g->tag1), resp->tags[1]);
	if (resp->detail) {
		g->depth = resp->detail->depth;
		copy_str(g->note, sizeof(g->note), resp->detail->note);
	}
}

static void empty_done(enum rdmx_rpc_code code, const char *message, const stubs_Empty *resp,
                       void *arg)
{
	struct got *g = arg;
	(void)message;
	g->done++;
	g->code = code;
	g->had_resp = resp != NULL;
}

static void fill_request(stubs_PutRequest *req, struct rdmx_str *tags,
                         stubs_PutRequest_MetaEntry *meta)
{
	stubs_PutRequest_init(req);
	req->key = rdmx_str_c("user:42");
	req->value = rdmx_bytes_n("\x00\x01\x02\x03\x04", 5);
	tags[0] = rdmx_str_c("red");
	tags[1] = rdmx_str_c("gr\xc3\xbcn");
	req->tags = tags;
	req->n_tags = 2;
	meta[0].key = rdmx_str_c("a");
	meta[0].value = 40;
	meta[1].key = rdmx_str_c("b");
	meta[1].value = 2;
	req->meta = meta;
	req->n_meta = 2;
}

Test(codegen_rpc, method_ids_are_fnv1a_of_the_full_name)
{
	cr_assert_eq(STUBS_STORE_PUT_ID, rdmx_rpc_method_id("stubs.Store/Put"));
	cr_assert_eq(STUBS_STORE_MISSING_ID, rdmx_rpc_method_id(STUBS_STORE_MISSING_NAME));
	cr_assert_str_eq(STUBS_STORE_DEFAULT_NAME, "stubs.Store/Default");
}

Test(codegen_rpc, async_calls)
{
	struct node a, b;
	struct srv_state st;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	stubs_PutRequest req;
	struct rdmx_str tags[2];
	stubs_PutRequest_MetaEntry meta[2];
	stubs_Empty empty;
	struct got put = {0}, fail = {0}, missing = {0}, def = {0}, later = {0}, bad = {0};
	uint64_t id = 0;

	memset(&st, 0, sizeof(st));
	srv = store_server(&st);
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);
	fill_request(&req, tags, meta);
	stubs_Empty_init(&empty);

	ASSERT_OK(stubs_Store_Put_async(ra, &req, NULL, put_done, &put, &id));
	ASSERT_OK(stubs_Store_Fail_async(ra, &req, NULL, put_done, &fail, NULL));
	ASSERT_OK(stubs_Store_Missing_async(ra, &empty, NULL, empty_done, &missing, NULL));
	ASSERT_OK(stubs_Store_Default_async(ra, &empty, NULL, put_done, &def, NULL));
	ASSERT_OK(stubs_Store_Later_async(ra, &req, NULL, put_done, &later, NULL));
	cr_assert_eq(put.done, 0, "callbacks run from progress only");
	DRIVE_UNTIL(&a, &b, put.done && fail.done && missing.done && def.done && st.n_later == 1);

	cr_assert_eq(put.code, RDMX_RPC_OK);
	cr_assert(put.had_resp);
	cr_assert_eq(put.version, 105);
	cr_assert_str_eq(put.key, "user:42");
	cr_assert_eq(put.n_tags, 2);
	cr_assert_str_eq(put.tag1, "gr\xc3\xbcn");
	cr_assert_eq(put.depth, 42);
	cr_assert_str_eq(put.note, "stored \xe2\x9c\x93");

	cr_assert_eq(fail.code, RDMX_RPC_NOT_FOUND);
	cr_assert_str_eq(fail.message, "no key user:42");
	cr_assert(!fail.had_resp);
	cr_assert_eq(missing.code, RDMX_RPC_UNIMPLEMENTED);
	cr_assert(!missing.had_resp);
	cr_assert_eq(def.code, RDMX_RPC_OK);
	cr_assert(def.had_resp, "resp NULL answers the default message");
	cr_assert_eq(def.version, 0);
	cr_assert_str_eq(st.later_key[0], "user:42");

	/* answered later, from outside any handler */
	{
		stubs_PutReply r;
		stubs_PutReply_init(&r);
		r.version = 7;
		r.echo_key = rdmx_str_c("late");
		ASSERT_OK(stubs_Store_Later_respond(st.later[0], RDMX_RPC_OK, "fine", &r));
	}
	DRIVE_UNTIL(&a, &b, later.done);
	cr_assert_eq(later.code, RDMX_RPC_OK);
	cr_assert_eq(later.version, 7);
	cr_assert_str_eq(later.key, "late");

	/* a malformed request never reaches the handler: INVALID_ARGUMENT */
	{
		const uint8_t garbage[] = {0x81, 0x01, 0xc3}; /* key: a bool */
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(garbage, sizeof(garbage));
		struct call_rec rg = {0};
		unsigned puts = st.puts;
		ASSERT_OK(
		    rdmx_rpc_call_async(ra, STUBS_STORE_PUT_ID, &p, NULL, call_rec_cb, &rg, NULL));
		DRIVE_UNTIL(&a, &b, rg.done);
		cr_assert_eq(rg.code, RDMX_RPC_INVALID_ARGUMENT);
		cr_assert_eq(st.puts, puts);
	}
	/* a response that is not a PutReply completes with INTERNAL */
	ASSERT_OK(stubs_Raw_Bad_async(ra, &empty, NULL, put_done, &bad, NULL));
	DRIVE_UNTIL(&a, &b, bad.done);
	cr_assert_eq(bad.code, RDMX_RPC_INTERNAL);
	cr_assert(!bad.had_resp);
	/* bad arguments */
	ASSERT_RC(stubs_Store_Put_async(ra, NULL, NULL, put_done, &put, NULL), RDMX_E_INVAL);
	ASSERT_RC(stubs_Store_Put_async(ra, &req, NULL, NULL, NULL, NULL), RDMX_E_INVAL);
	drive_for(&a, &b, 20);
	cr_assert_eq(put.done + fail.done + missing.done + def.done + later.done + bad.done, 6,
	             "a callback ran twice");
	rpc_pair_close(&ra, &rb);
	destroy_server(&srv);
	node_close(&a);
	node_close(&b);
}

/* ---- blocking: the server's node runs on its own thread ---- */

Test(codegen_rpc, blocking_calls)
{
	struct node a, b;
	struct srv_state st;
	struct rdmx_rpc_server *srv;
	struct rdmx_rpc_ep *ra, *rb;
	struct node_serve sa;
	stubs_PutRequest req;
	stubs_PutReply resp;
	struct rdmx_str tags[2];
	stubs_PutRequest_MetaEntry meta[2];
	stubs_Empty empty, eresp;
	struct rdmx_arena arena;
	struct rdmx_rpc_status status;
	struct rdmx_rpc_call_opts deadline = {30000, false};
	unsigned i;

	memset(&st, 0, sizeof(st));
	srv = store_server(&st);
	server_pair_open(&a, &b, NULL, srv, &ra, &rb);
	node_serve_start(&sa, &b);
	fill_request(&req, tags, meta);
	stubs_Empty_init(&empty);
	rdmx_arena_init(&arena, NULL, 0, 0);

	for (i = 0; i < 50; i++) {
		memset(&resp, 0x5a, sizeof(resp));
		ASSERT_OK(stubs_Store_Put(ra, &req, &resp, &arena, NULL, &status));
		cr_assert_eq(status.code, RDMX_RPC_OK);
		cr_assert_null(status.message);
		cr_assert_eq(resp.version, 105);
		cr_assert(rdmx_str_eq(resp.echo_key, "user:42"));
		cr_assert_eq(resp.echo_key.data[resp.echo_key.len], 0, "copied, NUL-terminated");
		cr_assert(rdmx_str_eq(resp.tags[1], "gr\xc3\xbcn"));
		cr_assert_eq(resp.detail->depth, 42);
		rdmx_arena_reset(&arena);
	}
	memset(&resp, 0x5a, sizeof(resp));
	ASSERT_RC(stubs_Store_Fail(ra, &req, &resp, &arena, NULL, &status), RDMX_RPC_NOT_FOUND);
	cr_assert_eq(status.code, RDMX_RPC_NOT_FOUND);
	cr_assert_str_eq(status.message, "no key user:42");
	cr_assert_eq(((unsigned char *)&resp)[0], 0x5a, "resp untouched on a non-OK status");
	ASSERT_RC(stubs_Store_Missing(ra, &empty, &eresp, NULL, NULL, NULL),
	          RDMX_RPC_UNIMPLEMENTED);
	ASSERT_OK(stubs_Store_Default(ra, &empty, &resp, &arena, NULL, NULL));
	cr_assert_eq(resp.version, 0);
	ASSERT_RC(stubs_Store_Later(ra, &req, &resp, &arena, &deadline, &status),
	          RDMX_RPC_DEADLINE_EXCEEDED);
	ASSERT_RC(stubs_Raw_Bad(ra, &empty, &resp, &arena, NULL, NULL), RDMX_E_PROTOCOL);
	ASSERT_RC(stubs_Store_Put(ra, NULL, &resp, &arena, NULL, NULL), RDMX_E_INVAL);

	node_serve_stop(&sa);
	for (i = 0; i < st.n_later; i++)
		stubs_Store_Later_respond(st.later[i], RDMX_RPC_OK, NULL, NULL);
	rdmx_arena_fini(&arena);
	rpc_pair_close(&ra, &rb);
	destroy_server(&srv);
	node_close(&a);
	node_close(&b);
}

Test(codegen_rpc, register_errors)
{
	struct rdmx_rpc_server *s;
	struct stubs_Store_handlers h;
	struct srv_state st;
	memset(&h, 0, sizeof(h));
	h.Put = on_put;
	ASSERT_OK(rdmx_rpc_server_create(&s));
	ASSERT_RC(stubs_Store_register(NULL, &h, &st), RDMX_E_INVAL);
	ASSERT_RC(stubs_Store_register(s, NULL, &st), RDMX_E_INVAL);
	ASSERT_OK(stubs_Store_register(s, &h, &st));
	ASSERT_RC(stubs_Store_register(s, &h, &st), RDMX_E_EXISTS);
	destroy_server(&s);
}
