/* Health and reflection, answered by every rdmx_rpc_server (rpc/health.c,
 * rpc/reflection.c), over a real channel pair on the tcp device in one
 * process; and rdmx-call's JSON <-> msgpack conversion checked against the
 * codecs rdmx-gen generates for kv.proto. */
#include <criterion/criterion.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/health.h>
#include <rdmx/pe.h>
#include <rdmx/reflection.h>
#include <rdmx/rpc.h>
#include <rdmx/status.h>

#include "idl_big.rdmx.h"
#include "json.h"
#include "kv.rdmx.h"
#include "pbjson.h"
#include "test_assert.h"

#define GUARD_MS 30000

struct side {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
};

static struct side a, b;
static struct rdmx_rpc_server *server;
static struct rdmx_rpc_ep *ra, *rb; /* a serves, b calls */

static uint64_t now_ms(void)
{
	return (uint64_t)(rdmx_pe_now_ns() / 1000000u);
}

static void side_open(struct side *s)
{
	memset(s, 0, sizeof(*s));
	ASSERT_OK(rdmx_dev_open("tcp", &s->dev));
	ASSERT_OK(rdmx_pe_create(&s->pe));
	ASSERT_OK(rdmx_ctx_create(s->dev, s->pe, &s->ctx));
	ASSERT_OK(rdmx_chan_worker_create(s->ctx, s->pe, NULL, &s->worker));
	ASSERT_OK(rdmx_ctx_start(s->ctx));
}

static void side_close(struct side *s)
{
	ASSERT_OK(rdmx_ctx_stop(s->ctx));
	ASSERT_OK(rdmx_chan_worker_destroy(&s->worker));
	ASSERT_OK(rdmx_ctx_destroy(&s->ctx));
	ASSERT_OK(rdmx_pe_destroy(&s->pe));
	ASSERT_OK(rdmx_dev_close(&s->dev));
}

static void drive(void)
{
	int n = rdmx_chan_worker_progress(a.worker) + rdmx_chan_worker_progress(b.worker);

	if (n <= 0)
		sched_yield();
}

static void setup(void)
{
	const void *da, *db;
	size_t la, lb;
	struct rdmx_conn *ca, *cb;
	struct rdmx_chan *xa, *xb;
	uint64_t end;

	side_open(&a);
	side_open(&b);
	ASSERT_OK(rdmx_rpc_server_create(&server));
	ASSERT_OK(rdmx_ctx_export(a.ctx, &da, &la, &ca));
	ASSERT_OK(rdmx_ctx_export(b.ctx, &db, &lb, &cb));
	ASSERT_OK(rdmx_ctx_connect(a.ctx, db, lb, ca));
	ASSERT_OK(rdmx_ctx_connect(b.ctx, da, la, cb));
	ASSERT_OK(rdmx_chan_create(a.worker, ca, &xa));
	ASSERT_OK(rdmx_chan_create(b.worker, cb, &xb));
	ASSERT_OK(rdmx_rpc_ep_create(xa, server, &ra));
	ASSERT_OK(rdmx_rpc_ep_create(xb, NULL, &rb));
	end = now_ms() + GUARD_MS;
	while (rdmx_chan_get_state(xa) != RDMX_CHAN_READY ||
	       rdmx_chan_get_state(xb) != RDMX_CHAN_READY) {
		cr_assert(now_ms() < end, "channels not ready (failure guard)");
		drive();
	}
}

static void teardown(void)
{
	struct rdmx_chan *xa = rdmx_rpc_ep_get_chan(ra), *xb = rdmx_rpc_ep_get_chan(rb);
	const struct rdmx_rpc_server *gone = server;

	ASSERT_OK(rdmx_rpc_ep_destroy(&ra));
	ASSERT_OK(rdmx_rpc_ep_destroy(&rb));
	ASSERT_OK(rdmx_chan_destroy(&xa));
	ASSERT_OK(rdmx_chan_destroy(&xb));
	ASSERT_OK(rdmx_rpc_server_destroy(&server));
	rdmx_codec_release_bindings(gone);
	side_close(&a);
	side_close(&b);
}

/* ---- one call, both sides driven ---- */

struct reply {
	bool done;
	enum rdmx_rpc_code code;
	char message[256];
	uint8_t *data;
	size_t len;
};

static void on_done(const struct rdmx_rpc_result *r, void *arg)
{
	struct reply *out = arg;

	out->code = r->code;
	snprintf(out->message, sizeof(out->message), "%s", r->message ? r->message : "");
	out->len = r->len;
	out->data = malloc(r->len + 1);
	cr_assert_not_null(out->data);
	if (r->len)
		memcpy(out->data, r->data, r->len);
	out->done = true;
}

static void call(const char *method, const void *req, size_t len, struct reply *out)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);
	uint64_t end = now_ms() + GUARD_MS;

	memset(out, 0, sizeof(*out));
	ASSERT_OK(
	    rdmx_rpc_call_async(rb, rdmx_rpc_method_id(method), &p, NULL, on_done, out, NULL));
	while (!out->done) {
		cr_assert(now_ms() < end, "no reply to %s (failure guard)", method);
		drive();
	}
}

/* msgpack {1: "text"} */
static size_t str1(const char *s, uint8_t *buf)
{
	size_t n = strlen(s);

	cr_assert(n < 256);
	buf[0] = 0x81;
	buf[1] = 0x01;
	buf[2] = 0xd9;
	buf[3] = (uint8_t)n;
	memcpy(buf + 4, s, n);
	return 4 + n;
}

static const uint8_t serving[] = {0x81, 0x01, 0x01};

static void noop_handler(struct rdmx_rpc_server_call *c, const void *req, size_t len, void *arg)
{
	(void)req;
	(void)len;
	(void)arg;
	rdmx_rpc_respond(c, RDMX_RPC_OK, NULL, NULL);
}

TestSuite(builtins, .init = setup, .fini = teardown, .timeout = 120);

Test(builtins, health_check_serving_by_default)
{
	static const uint8_t empty_map[] = {0x80};
	struct reply r;

	call(RDMX_HEALTH_CHECK_NAME, empty_map, 1, &r);
	cr_assert_eq(r.code, RDMX_RPC_OK, "%s", rdmx_rpc_code_name(r.code));
	cr_assert_eq(r.len, sizeof(serving));
	cr_assert_arr_eq(r.data, serving, sizeof(serving));
	free(r.data);
	/* an empty body is the default request too */
	call(RDMX_HEALTH_CHECK_NAME, NULL, 0, &r);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	cr_assert_arr_eq(r.data, serving, sizeof(serving));
	free(r.data);
}

Test(builtins, health_check_per_service)
{
	uint8_t req[300];
	struct reply r;

	ASSERT_OK(rdmx_rpc_server_register(server, rdmx_rpc_method_id("demo.Svc/Do"), "demo.Svc/Do",
	                                   noop_handler, NULL));
	call(RDMX_HEALTH_CHECK_NAME, req, str1("demo.Svc", req), &r);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	cr_assert_arr_eq(r.data, serving, sizeof(serving));
	free(r.data);
	/* the builtins answer for themselves */
	call(RDMX_HEALTH_CHECK_NAME, req, str1("rdmx.health.v1.Health", req), &r);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	free(r.data);
	/* a prefix of a service is not a service */
	call(RDMX_HEALTH_CHECK_NAME, req, str1("demo.Sv", req), &r);
	cr_assert_eq(r.code, RDMX_RPC_NOT_FOUND, "%s", rdmx_rpc_code_name(r.code));
	cr_assert(strstr(r.message, "demo.Sv"), "message: %s", r.message);
	free(r.data);
}

Test(builtins, health_status_can_be_set)
{
	uint8_t req[300];
	struct reply r;

	ASSERT_OK(rdmx_rpc_server_register(server, rdmx_rpc_method_id("demo.Svc/Do"), "demo.Svc/Do",
	                                   noop_handler, NULL));
	ASSERT_OK(rdmx_rpc_server_set_health(server, "demo.Svc", RDMX_HEALTH_NOT_SERVING));
	call(RDMX_HEALTH_CHECK_NAME, req, str1("demo.Svc", req), &r);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	cr_assert_eq(r.len, 3);
	cr_assert_eq(r.data[2], RDMX_HEALTH_NOT_SERVING);
	free(r.data);
	/* a service without methods that was given a status is known */
	ASSERT_OK(rdmx_rpc_server_set_health(server, "later.Svc", RDMX_HEALTH_SERVING));
	call(RDMX_HEALTH_CHECK_NAME, req, str1("later.Svc", req), &r);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	free(r.data);
	/* draining: the whole server */
	ASSERT_OK(rdmx_rpc_server_set_health(server, NULL, RDMX_HEALTH_NOT_SERVING));
	call(RDMX_HEALTH_CHECK_NAME, NULL, 0, &r);
	cr_assert_eq(r.data[2], RDMX_HEALTH_NOT_SERVING);
	free(r.data);
	cr_assert_eq(rdmx_rpc_server_set_health(server, NULL, (enum rdmx_health_status)9),
	             RDMX_E_INVAL);
	cr_assert_eq(rdmx_rpc_server_set_health(NULL, NULL, RDMX_HEALTH_SERVING), RDMX_E_INVAL);
}

Test(builtins, health_check_refuses_garbage)
{
	static const uint8_t bad[] = {0x81, 0x01, 0x05}; /* service: an int */
	struct reply r;

	call(RDMX_HEALTH_CHECK_NAME, bad, sizeof(bad), &r);
	cr_assert_eq(r.code, RDMX_RPC_INVALID_ARGUMENT);
	free(r.data);
}

Test(builtins, reflection_list_refuses_garbage)
{
	static const uint8_t not_a_map[] = {0x05};
	static const uint8_t truncated[] = {0x81, 0x01};
	static const uint8_t trailing[] = {0x80, 0x80};
	static const uint8_t with_field[] = {0x81, 0x07, 0xc0}; /* unknown field: ignored */
	struct reply r;

	call(RDMX_REFLECTION_LIST_NAME, not_a_map, sizeof(not_a_map), &r);
	cr_assert_eq(r.code, RDMX_RPC_INVALID_ARGUMENT, "%s", rdmx_rpc_code_name(r.code));
	cr_assert(strstr(r.message, "ListRequest"), "message: %s", r.message);
	free(r.data);
	call(RDMX_REFLECTION_LIST_NAME, truncated, sizeof(truncated), &r);
	cr_assert_eq(r.code, RDMX_RPC_INVALID_ARGUMENT, "%s", rdmx_rpc_code_name(r.code));
	free(r.data);
	call(RDMX_REFLECTION_LIST_NAME, trailing, sizeof(trailing), &r);
	cr_assert_eq(r.code, RDMX_RPC_INVALID_ARGUMENT, "%s", rdmx_rpc_code_name(r.code));
	free(r.data);
	call(RDMX_REFLECTION_LIST_NAME, with_field, sizeof(with_field), &r);
	cr_assert_eq(r.code, RDMX_RPC_OK, "%s", rdmx_rpc_code_name(r.code));
	free(r.data);
}

/* Per-method stats exist for registered methods only: a peer naming 60 000
 * distinct unknown ids leaves one "unknown" bucket on the serving endpoint. */
Test(builtins, unknown_method_ids_share_one_stats_bucket)
{
	enum { N = 60000, WINDOW = 64 };
	struct rdmx_rpc_stats st;
	uint32_t ids[16];
	size_t count = 0;
	uint32_t sent = 0, done = 0;
	struct reply *r = calloc(WINDOW, sizeof(*r));
	uint64_t end = now_ms() + 10 * GUARD_MS;
	bool seen_known = false, seen_unknown = false;

	cr_assert_not_null(r);
	ASSERT_OK(rdmx_rpc_server_register(server, rdmx_rpc_method_id("demo.Svc/Do"), "demo.Svc/Do",
	                                   noop_handler, NULL));
	{
		struct reply k;

		call("demo.Svc/Do", NULL, 0, &k);
		cr_assert_eq(k.code, RDMX_RPC_OK);
		free(k.data);
	}
	while (done < N) {
		while (sent < N && sent - done < WINDOW) {
			struct reply *slot = &r[sent % WINDOW];
			struct rdmx_rpc_payload p = rdmx_rpc_bytes(NULL, 0);
			/* distinct ids, none registered (all above the builtins' few) */
			uint32_t id = 0x40000000u + sent * 7u;

			memset(slot, 0, sizeof(*slot));
			ASSERT_OK(rdmx_rpc_call_async(rb, id, &p, NULL, on_done, slot, NULL));
			sent++;
		}
		while (!r[done % WINDOW].done) {
			cr_assert(now_ms() < end, "no reply to call %u (failure guard)", done);
			drive();
		}
		cr_assert_eq(r[done % WINDOW].code, RDMX_RPC_UNIMPLEMENTED, "%s",
		             rdmx_rpc_code_name(r[done % WINDOW].code));
		free(r[done % WINDOW].data);
		done++;
	}
	free(r);
	ASSERT_OK(rdmx_rpc_ep_list_methods(ra, RDMX_RPC_ROLE_SERVER, ids, 16, &count));
	cr_assert_eq(count, 2, "server-side method stats: %zu entries", count);
	for (size_t i = 0; i < count; i++) {
		seen_known |= ids[i] == rdmx_rpc_method_id("demo.Svc/Do");
		seen_unknown |= ids[i] == RDMX_RPC_METHOD_UNKNOWN;
	}
	cr_assert(seen_known && seen_unknown);
	ASSERT_OK(
	    rdmx_rpc_ep_get_method_stats(ra, RDMX_RPC_ROLE_SERVER, RDMX_RPC_METHOD_UNKNOWN, &st));
	cr_assert_eq(st.calls, N);
	cr_assert_eq(st.by_code[RDMX_RPC_UNIMPLEMENTED], N);
	cr_assert_eq(rdmx_rpc_ep_get_method_stats(ra, RDMX_RPC_ROLE_SERVER, 0x40000000u, &st),
	             RDMX_E_NOT_FOUND);
}

/* ListResponse -> "svc:m1,m2(file);svc:..." */
static void list_text(const struct reply *r, char *out, size_t len)
{
	msgpack_unpacked u;
	size_t off = 0, o = 0;

	out[0] = '\0';
	msgpack_unpacked_init(&u);
	cr_assert_eq(msgpack_unpack_next(&u, (const char *)r->data, r->len, &off),
	             MSGPACK_UNPACK_SUCCESS);
	cr_assert_eq(off, r->len);
	cr_assert_eq(u.data.type, MSGPACK_OBJECT_MAP);
	cr_assert_eq(u.data.via.map.size, 1);
	for (uint32_t i = 0; i < u.data.via.map.ptr[0].val.via.array.size; i++) {
		const msgpack_object *s = &u.data.via.map.ptr[0].val.via.array.ptr[i];

		for (uint32_t k = 0; k < s->via.map.size; k++) {
			const msgpack_object_kv *f = &s->via.map.ptr[k];

			if (f->key.via.u64 == 1)
				o += (size_t)snprintf(out + o, len - o, "%s%.*s:", o ? ";" : "",
				                      (int)f->val.via.str.size, f->val.via.str.ptr);
			else if (f->key.via.u64 == 2)
				for (uint32_t m = 0; m < f->val.via.array.size; m++)
					o += (size_t)snprintf(
					    out + o, len - o, "%s%.*s", m ? "," : "",
					    (int)f->val.via.array.ptr[m].via.str.size,
					    f->val.via.array.ptr[m].via.str.ptr);
			else if (f->key.via.u64 == 3)
				o += (size_t)snprintf(out + o, len - o, "(%.*s)",
				                      (int)f->val.via.str.size, f->val.via.str.ptr);
		}
	}
	msgpack_unpacked_destroy(&u);
}

Test(builtins, reflection_lists_every_service)
{
	static const char idl[] = "syntax = \"proto3\";\n/* service Not { } */\npackage demo;\n"
	                          "// service AlsoNot {}\nservice Svc { rpc Do(A) returns (B); "
	                          "rpc Again(A) returns (B); }\nmessage A {} message B {}\n";
	char text[1024];
	struct reply r;

	ASSERT_OK(rdmx_rpc_server_register(server, rdmx_rpc_method_id("demo.Svc/Do"), "demo.Svc/Do",
	                                   noop_handler, NULL));
	ASSERT_OK(rdmx_rpc_server_register(server, rdmx_rpc_method_id("demo.Svc/Again"),
	                                   "demo.Svc/Again", noop_handler, NULL));
	ASSERT_OK(rdmx_rpc_server_register(server, 12345u, NULL, noop_handler, NULL)); /* unnamed */
	ASSERT_OK(rdmx_rpc_server_add_reflection(server, "demo.proto", idl));
	call(RDMX_REFLECTION_LIST_NAME, NULL, 0, &r);
	cr_assert_eq(r.code, RDMX_RPC_OK);
	list_text(&r, text, sizeof(text));
	cr_assert_str_eq(
	    text, "demo.Svc:Again,Do(demo.proto);"
	          "rdmx.health.v1.Health:Check,Watch(rdmx/health.proto);"
	          "rdmx.reflection.v1.Reflection:FileContaining,List(rdmx/reflection.proto)");
	free(r.data);
}

/* FileContainingResponse -> names joined by ',' and the first source */
static void files_text(const struct reply *r, char *names, size_t len, char **first_src)
{
	msgpack_unpacked u;
	size_t off = 0, o = 0;

	names[0] = '\0';
	*first_src = NULL;
	msgpack_unpacked_init(&u);
	cr_assert_eq(msgpack_unpack_next(&u, (const char *)r->data, r->len, &off),
	             MSGPACK_UNPACK_SUCCESS);
	for (uint32_t i = 0; i < u.data.via.map.ptr[0].val.via.array.size; i++) {
		const msgpack_object *f = &u.data.via.map.ptr[0].val.via.array.ptr[i];

		for (uint32_t k = 0; k < f->via.map.size; k++) {
			const msgpack_object *v = &f->via.map.ptr[k].val;

			if (f->via.map.ptr[k].key.via.u64 == 1)
				o += (size_t)snprintf(names + o, len - o, "%s%.*s", o ? "," : "",
				                      (int)v->via.str.size, v->via.str.ptr);
			else if (i == 0)
				*first_src = strndup(v->via.str.ptr, v->via.str.size);
		}
	}
	msgpack_unpacked_destroy(&u);
}

/* what generated code embeds for reflection: rdmx-gen's canonical text */
static char *canonical(const char *path)
{
	struct gen_ctx ctx;
	struct gen_buf text = {0};
	struct gen_file *f;
	char *r;

	gen_ctx_init(&ctx, stderr);
	f = gen_load(&ctx, path, true);
	cr_assert(f && gen_resolve(&ctx), "%s does not load", path);
	gen_print_proto(&ctx, f, &text);
	r = strdup(text.data);
	gen_buf_free(&text);
	gen_ctx_fini(&ctx);
	return r;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

Test(builtins, reflection_serves_the_builtin_idl_byte_for_byte)
{
	const char *names[] = {"rdmx.health.v1.Health", "rdmx.reflection.v1.Reflection"};
	const char *files[] = {RDMX_SOURCE_DIR "/rpc/idl/health.proto",
	                       RDMX_SOURCE_DIR "/rpc/idl/reflection.proto"};
	uint8_t req[300];
	char text[512], *src, *want;
	struct reply r;

	for (int i = 0; i < 2; i++) {
		call(RDMX_REFLECTION_FILE_CONTAINING_NAME, req, str1(names[i], req), &r);
		cr_assert_eq(r.code, RDMX_RPC_OK, "%s: %s", names[i], r.message);
		files_text(&r, text, sizeof(text), &src);
		want = slurp(files[i]);
		cr_assert_str_eq(src, want, "%s differs from the text the server serves", files[i]);
		free(want);
		free(src);
		free(r.data);
	}
}

Test(builtins, reflection_finds_files_and_imports)
{
	static const char common[] = "syntax = \"proto3\";\npackage demo;\nmessage A {}\n";
	static const char svc[] = "syntax = \"proto3\";\npackage demo.v2;\n"
	                          "import public \"common.proto\";\n"
	                          "service Svc { rpc Do(demo.A) returns (demo.A); }\n";
	const char *symbols[] = {"demo.v2.Svc", "demo.v2.Svc/Do", "demo.v2.Svc.Do", "svc.proto"};
	uint8_t req[300];
	char text[512], *src;
	struct reply r;

	ASSERT_OK(rdmx_rpc_server_add_reflection(server, "common.proto", common));
	ASSERT_OK(rdmx_rpc_server_add_reflection(server, "svc.proto", "replaced below"));
	ASSERT_OK(rdmx_rpc_server_add_reflection(server, "svc.proto", svc));
	for (size_t i = 0; i < sizeof(symbols) / sizeof(*symbols); i++) {
		call(RDMX_REFLECTION_FILE_CONTAINING_NAME, req, str1(symbols[i], req), &r);
		cr_assert_eq(r.code, RDMX_RPC_OK, "%s: %s", symbols[i], r.message);
		files_text(&r, text, sizeof(text), &src);
		cr_assert_str_eq(text, "svc.proto,common.proto", "%s", symbols[i]);
		cr_assert_str_eq(src, svc);
		free(src);
		free(r.data);
	}
	call(RDMX_REFLECTION_FILE_CONTAINING_NAME, req, str1("demo.v2.Nope", req), &r);
	cr_assert_eq(r.code, RDMX_RPC_NOT_FOUND);
	free(r.data);
}

static void say(struct rdmx_rpc_server_call *c, const product_dep_Word *req, void *arg)
{
	(void)arg;
	product_test_Echo_Say_respond(c, RDMX_RPC_OK, NULL, req);
}

/* A generated register adds the IDL it came from, and what that imports,
 * byte for byte: long (several literal pieces), UTF-8, quotes, backslashes,
 * trigraph look-alikes. */
Test(builtins, generated_register_adds_its_idl)
{
	static const struct product_test_Echo_handlers h = {say};
	uint8_t req[300];
	char text[512], *src, *want;
	struct reply r;

	ASSERT_OK(product_test_Echo_register(server, &h, NULL));
	call(RDMX_REFLECTION_FILE_CONTAINING_NAME, req, str1("product.test.Echo", req), &r);
	cr_assert_eq(r.code, RDMX_RPC_OK, "%s", r.message);
	files_text(&r, text, sizeof(text), &src);
	cr_assert_str_eq(text, "idl_big.proto,idl_dep.proto");
	want = canonical(RDMX_SOURCE_DIR "/tests/integration/product/protos/idl_big.proto");
	cr_assert(strlen(want) > 4096, "the test IDL should span several pieces");
	cr_assert_str_eq(src, want);
	free(want);
	free(src);
	free(r.data);
	call(RDMX_REFLECTION_LIST_NAME, NULL, 0, &r);
	list_text(&r, text, sizeof(text));
	cr_assert(strstr(text, "product.test.Echo:Say(idl_big.proto)"), "%s", text);
	free(r.data);
}

Test(builtins, add_reflection_checks_its_arguments)
{
	char *huge = malloc(RDMX_REFLECTION_MAX_FILE + 2);

	cr_assert_not_null(huge);
	memset(huge, 'x', RDMX_REFLECTION_MAX_FILE + 1);
	huge[RDMX_REFLECTION_MAX_FILE + 1] = '\0';
	cr_assert_eq(rdmx_rpc_server_add_reflection(NULL, "a", "b"), RDMX_E_INVAL);
	cr_assert_eq(rdmx_rpc_server_add_reflection(server, "", "b"), RDMX_E_INVAL);
	cr_assert_eq(rdmx_rpc_server_add_reflection(server, "a", NULL), RDMX_E_INVAL);
	cr_assert_eq(rdmx_rpc_server_add_reflection(server, "a", huge), RDMX_E_INVAL);
	cr_assert_eq(rdmx_rpc_server_add_reflection(server, "a", "bad \xff utf-8"), RDMX_E_INVAL);
	free(huge);
}

/* ---- rdmx-call's JSON <-> msgpack against the generated kv codecs ---- */

static struct pbschema kv_schema;

static void schema_setup(void)
{
	cr_assert_eq(
	    pbschema_load(&kv_schema, RDMX_SOURCE_DIR "/services/kv/kv.proto", NULL, 0, stderr), 0);
}

static void schema_teardown(void)
{
	pbschema_fini(&kv_schema);
}

static const struct gen_method *method(const char *name)
{
	const struct gen_method *m = pbschema_method(&kv_schema, name);

	cr_assert_not_null(m, "%s", name);
	return m;
}

TestSuite(pbjson, .init = schema_setup, .fini = schema_teardown);

Test(pbjson, request_json_decodes_with_the_generated_codec)
{
	const struct gen_method *m = method("kv.KV/Scan");
	struct jbuf out = {0};
	char err[256];
	kv_ScanRequest req;

	cr_assert_eq(
	    pbjson_encode_text(m->in,
	                       "{\"prefix\": \"user:\", \"limit\": 7, \"pageToken\": \"user:1\","
	                       " \"keys_only\": true}",
	                       &out, err, 256),
	    0, "%s", err);
	ASSERT_OK(kv_ScanRequest_decode(&req, out.data, out.len, NULL, NULL));
	cr_assert(rdmx_str_eq(req.prefix, "user:"));
	cr_assert_eq(req.limit, 7);
	cr_assert(rdmx_str_eq(req.page_token, "user:1"));
	cr_assert(req.keys_only);
	jbuf_free(&out);
}

Test(pbjson, reply_from_the_generated_codec_prints_as_proto3_json)
{
	const struct gen_method *m = method("kv.KV/Scan");
	kv_Entry e[2];
	kv_ScanResponse resp;
	struct jbuf out = {0};
	uint8_t buf[256];
	char err[256];
	size_t n;

	kv_ScanResponse_init(&resp);
	kv_Entry_init(&e[0]);
	kv_Entry_init(&e[1]);
	e[0].key = rdmx_str_c("a");
	e[0].value = rdmx_bytes_n("hello", 5);
	e[0].size = 5;
	e[1].key = rdmx_str_c("b\"\n");
	e[1].size = 10000000000ull;
	resp.entries = e;
	resp.n_entries = 2;
	resp.next_page_token = rdmx_str_c("b");
	n = kv_ScanResponse_encoded_size(&resp);
	cr_assert(n <= sizeof(buf));
	ASSERT_OK(kv_ScanResponse_encode(&resp, buf, n));
	cr_assert_eq(pbjson_decode(m->out, buf, n, &out, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out.data, "{\n"
	                           "  \"entries\": [\n"
	                           "    {\n"
	                           "      \"key\": \"a\",\n"
	                           "      \"value\": \"aGVsbG8=\",\n"
	                           "      \"size\": \"5\"\n"
	                           "    },\n"
	                           "    {\n"
	                           "      \"key\": \"b\\\"\\n\",\n"
	                           "      \"size\": \"10000000000\"\n"
	                           "    }\n"
	                           "  ],\n"
	                           "  \"nextPageToken\": \"b\"\n"
	                           "}");
	jbuf_free(&out);
}

Test(pbjson, bad_requests_name_the_field)
{
	const struct gen_method *m = method("kv.KV/Scan");
	const struct {
		const char *json, *why;
	} cases[] = {
	    {"{\"nope\": 1}", "no field \"nope\""},
	    {"{\"limit\": -1}", "negative"},
	    {"{\"limit\": 4294967296}", "uint32 range"},
	    {"{\"limit\": 1.5}", "not an integer"},
	    {"{\"prefix\": 3}", "expected a string"},
	    {"{\"keys_only\": \"yes\"}", "true or false"},
	    {"{\"prefix\": \"a\", \"prefix\": \"b\"}", "duplicate"},
	    {"{\"page_token\": \"a\", \"pageToken\": \"b\"}", "twice"},
	    {"[1]", "expected an object"},
	    /* JSON errors are jansson's, with line and column */
	    {"{\"prefix\": \"a\",}", "line 1 col 16: string or '}' expected"},
	    {"{\"prefix\": \"\\ud800\"}", "invalid Unicode"},
	    {"{} {}", "end of file expected"},
	    {"{\"limit\": 01}", "invalid token"},
	    {"{\"prefix\": \"a\", \"prefix\": \"b\"}", "line 1 col 24: duplicate object key"},
	};
	struct jbuf out = {0};
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		err[0] = '\0';
		cr_assert_neq(pbjson_encode_text(m->in, cases[i].json, &out, err, 256), 0,
		              "%s was accepted", cases[i].json);
		cr_assert(strstr(err, cases[i].why), "%s: '%s' lacks '%s'", cases[i].json, err,
		          cases[i].why);
		jbuf_free(&out);
	}
	/* bytes must be base64 */
	cr_assert_neq(
	    pbjson_encode_text(method("kv.KV/Put")->in, "{\"value\": \"a*b\"}", &out, err, 256), 0);
	jbuf_free(&out);
}

Test(pbjson, bytes_and_64_bit_integers_round_trip)
{
	const struct gen_method *m = method("kv.KV/Put");
	struct jbuf out = {0};
	char err[256];
	kv_PutRequest req;

	cr_assert_eq(
	    pbjson_encode_text(m->in, "{\"key\": \"k\", \"value\": \"AAEC/w==\"}", &out, err, 256),
	    0, "%s", err);
	ASSERT_OK(kv_PutRequest_decode(&req, out.data, out.len, NULL, NULL));
	cr_assert_eq(req.value.len, 4);
	cr_assert_arr_eq(req.value.data, "\x00\x01\x02\xff", 4);
	jbuf_free(&out);
	/* URL-safe alphabet and missing padding are accepted too */
	cr_assert_eq(pbjson_encode_text(m->in, "{\"value\": \"AAEC_w\"}", &out, err, 256), 0, "%s",
	             err);
	ASSERT_OK(kv_PutRequest_decode(&req, out.data, out.len, NULL, NULL));
	cr_assert_arr_eq(req.value.data, "\x00\x01\x02\xff", 4);
	jbuf_free(&out);
}
