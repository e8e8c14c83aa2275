/* Reads called one-way (services/kv/read.c): a Get or a Scan whose caller
 * wants no answer was served, an empty value sent to nobody. Now it is not
 * executed (the store is not read), answered INVALID_ARGUMENT in the
 * server's stats only (nothing is sent), counted, and logged once per
 * connection, without the request's bytes; the calls around it, and a
 * one-way Put (a write is worth doing unanswered), are served as ever.
 * Two nodes over the battery's fixture (kvfix.h). */
#include "kvfix.h"

#include <stdatomic.h>
#include <string.h>

#include "kv.rdmx.h"
#include "read.h"

/* a key a peer chose: bytes that must not reach a log line as they are */
#define HOSTILE_KEY "k\x1b[31m forged\nrdmx error: x"

static atomic_int oneway_lines, leaked_lines;

static void count_log(enum rdmx_log_level level, const char *file, int line, const char *func,
                      const char *message)
{
	(void)level;
	(void)file;
	(void)line;
	(void)func;
	if (strstr(message, "rdmx-kv: a one-way"))
		atomic_fetch_add(&oneway_lines, 1);
	if (strstr(message, "forged"))
		atomic_fetch_add(&leaked_lines, 1);
}

/* one call's outcome, as the generated stubs give it */
struct out {
	int done;
	enum rdmx_rpc_code code;
	char value[16];
	size_t entries;
};

static void get_cb(enum rdmx_rpc_code code, const char *message, const kv_GetResponse *resp,
                   void *arg)
{
	struct out *o = arg;

	(void)message;
	o->done++;
	o->code = code;
	if (resp && resp->value.len < sizeof(o->value))
		memcpy(o->value, resp->value.data, resp->value.len);
}

static void put_cb(enum rdmx_rpc_code code, const char *message, const kv_PutResponse *resp,
                   void *arg)
{
	struct out *o = arg;

	(void)message;
	(void)resp;
	o->done++;
	o->code = code;
}

static void scan_cb(enum rdmx_rpc_code code, const char *message, const kv_ScanResponse *resp,
                    void *arg)
{
	struct out *o = arg;

	(void)message;
	o->done++;
	o->code = code;
	o->entries = resp ? resp->n_entries : 0;
}

static const struct rdmx_rpc_call_opts oneway = {.oneway = true};

static void put(struct rdmx_rpc_ep *ep, const char *key, const char *value,
                const struct rdmx_rpc_call_opts *opts, struct out *o)
{
	kv_PutRequest req;

	kv_PutRequest_init(&req);
	req.key = rdmx_str_c(key);
	req.value = rdmx_bytes_n(value, strlen(value));
	ASSERT_OK(kv_KV_Put_async(ep, &req, opts, put_cb, o, NULL));
}

static void get(struct rdmx_rpc_ep *ep, const char *key, const struct rdmx_rpc_call_opts *opts,
                struct out *o)
{
	kv_GetRequest req;

	kv_GetRequest_init(&req);
	req.key = rdmx_str_c(key);
	ASSERT_OK(kv_KV_Get_async(ep, &req, opts, get_cb, o, NULL));
}

static void scan(struct rdmx_rpc_ep *ep, const struct rdmx_rpc_call_opts *opts, struct out *o)
{
	kv_ScanRequest req;

	kv_ScanRequest_init(&req);
	ASSERT_OK(kv_KV_Scan_async(ep, &req, opts, scan_cb, o, NULL));
}

static void method_stats(struct rdmx_rpc_ep *ep, uint32_t id, struct rdmx_rpc_stats *st)
{
	ASSERT_OK(rdmx_rpc_ep_get_method_stats(ep, RDMX_RPC_ROLE_SERVER, id, st));
}

Test(kv_oneway, reads_called_oneway_are_refused_once_logged_per_connection)
{
	struct out p1 = {0}, p2 = {0}, g1 = {0}, g2 = {0}, s1 = {0}, g3 = {0};
	struct out ow[6] = {{0}};
	struct rdmx_rpc_ep *ra2 = NULL, *rb2 = NULL;
	struct kv_conn conn2 = {0};
	enum rdmx_log_level level;
	struct rdmx_rpc_stats st;
	uint64_t refused0 = kv_read_oneway_refused();
	struct kv_fix f;

	ASSERT_OK(rdmx_log_get_threshold(&level));
	if (level < RDMX_LOG_WARNING)
		ASSERT_OK(rdmx_log_set_threshold(RDMX_LOG_WARNING));
	atomic_store(&oneway_lines, 0);
	atomic_store(&leaked_lines, 0);
	rdmx_log_set_function(count_log);
	kv_fix_open(&f, NULL, NULL);
	put(f.ra, "k", "v1", NULL, &p1);
	DRIVE_UNTIL(&f.a, &f.b, p1.done);
	cr_assert_eq(p1.code, RDMX_RPC_OK);

	/* three one-way Gets and two one-way Scans, a one-way Put among them,
	 * then calls that want their answers */
	get(f.ra, HOSTILE_KEY, &oneway, &ow[0]); /* the one logged */
	get(f.ra, "k", &oneway, &ow[1]);
	scan(f.ra, &oneway, &ow[2]);
	put(f.ra, "k2", "v2", &oneway, &p2);
	get(f.ra, "k", &oneway, &ow[3]);
	scan(f.ra, &oneway, &ow[4]);
	get(f.ra, "k", NULL, &g1);
	get(f.ra, "k2", NULL, &g2);
	scan(f.ra, NULL, &s1);
	/* handled in order: once the last answer is in, every call before it
	 * was handled */
	DRIVE_UNTIL(&f.a, &f.b, g1.done && g2.done && s1.done);
	cr_assert_eq(g1.code, RDMX_RPC_OK, "%s", rdmx_rpc_code_name(g1.code));
	cr_assert_str_eq(g1.value, "v1");
	cr_assert_eq(g2.code, RDMX_RPC_OK, "the one-way put: %s", rdmx_rpc_code_name(g2.code));
	cr_assert_str_eq(g2.value, "v2");
	cr_assert_eq(s1.code, RDMX_RPC_OK);
	cr_assert_eq(s1.entries, 2);
	for (int i = 0; i < 5; i++) /* sent: a one-way call completes then */
		cr_assert_eq(ow[i].done, 1, "one-way call %d completed %d times", i, ow[i].done);

	cr_assert_eq(f.st.refused, 5, "%u one-way reads refused", f.st.refused);
	cr_assert_eq(f.st.gets, 2, "%u gets served", f.st.gets);
	cr_assert_eq(f.st.scans, 1, "%u scans served", f.st.scans);
	cr_assert_eq(f.st.puts, 2);
	cr_assert_eq(kv_read_oneway_refused() - refused0, 5);
	method_stats(f.rb, KV_KV_GET_ID, &st);
	cr_assert_eq(st.oneway, 3);
	cr_assert_eq(st.by_code[RDMX_RPC_INVALID_ARGUMENT], 3);
	cr_assert_eq(st.by_code[RDMX_RPC_OK], 2);
	method_stats(f.rb, KV_KV_SCAN_ID, &st);
	cr_assert_eq(st.by_code[RDMX_RPC_INVALID_ARGUMENT], 2);
	cr_assert_eq(st.by_code[RDMX_RPC_OK], 1);
	method_stats(f.rb, KV_KV_PUT_ID, &st);
	cr_assert_eq(st.by_code[RDMX_RPC_OK], 2);
	cr_assert_eq(atomic_load(&oneway_lines), 1, "%d lines for one connection",
	             atomic_load(&oneway_lines));
	cr_assert_eq(atomic_load(&leaked_lines), 0, "the peer's key reached the log");

	/* another connection: its own line */
	rpc_pair(&f.a, &f.b, NULL, f.srv, &kv_fix_conf, &kv_fix_conf, &ra2, &rb2);
	ASSERT_OK(rdmx_rpc_ep_set_user_data(rb2, &conn2)); /* as on_connected does */
	get(ra2, "k", &oneway, &ow[5]);
	get(ra2, "k", NULL, &g3);
	DRIVE_UNTIL(&f.a, &f.b, g3.done);
	cr_assert_eq(g3.code, RDMX_RPC_OK);
	cr_assert_eq(f.st.refused, 6);
	cr_assert_eq(atomic_load(&oneway_lines), 2, "%d lines for two connections",
	             atomic_load(&oneway_lines));
	rpc_pair_close(&ra2, &rb2);
	kv_fix_close(&f);
	rdmx_log_set_function(NULL);
	ASSERT_OK(rdmx_log_set_threshold(level));
}

static void raw_cb(const struct rdmx_rpc_result *r, void *arg)
{
	(void)r;
	((struct out *)arg)->done++;
}

/* A one-way Get the server cannot decode (answered "malformed request"
 * before any kv handler runs) comes first: the connection's first one-way
 * read the handler refuses is still logged, once (told by the endpoint's
 * one-way counters, which count the malformed one too, it was not). */
Test(kv_oneway, a_malformed_oneway_get_first_leaves_the_line_to_the_next)
{
	static const uint8_t truncated[] = {0x0a, 0x05, 'k'}; /* key: 5 bytes, 1 there */
	struct rdmx_rpc_payload bad = rdmx_rpc_bytes(truncated, sizeof(truncated));
	struct out m = {0}, ow[2] = {{0}}, g = {0};
	enum rdmx_log_level level;
	struct rdmx_rpc_stats st;
	struct kv_fix f;

	ASSERT_OK(rdmx_log_get_threshold(&level));
	if (level < RDMX_LOG_WARNING)
		ASSERT_OK(rdmx_log_set_threshold(RDMX_LOG_WARNING));
	atomic_store(&oneway_lines, 0);
	rdmx_log_set_function(count_log);
	kv_fix_open(&f, NULL, NULL);
	ASSERT_OK(rdmx_rpc_call_async(f.ra, KV_KV_GET_ID, &bad, &oneway, raw_cb, &m, NULL));
	get(f.ra, "k", &oneway, &ow[0]);
	get(f.ra, "k", &oneway, &ow[1]);
	get(f.ra, "k", NULL, &g);
	/* handled in order: the answered Get comes after the one-way ones */
	DRIVE_UNTIL(&f.a, &f.b, g.done);
	cr_assert_eq(g.code, RDMX_RPC_NOT_FOUND, "%s", rdmx_rpc_code_name(g.code));
	method_stats(f.rb, KV_KV_GET_ID, &st);
	cr_assert_eq(st.oneway, 3);
	cr_assert_eq(st.by_code[RDMX_RPC_INVALID_ARGUMENT], 3);
	cr_assert_eq(f.st.refused, 2, "%u one-way reads refused by the handler", f.st.refused);
	cr_assert_eq(atomic_load(&oneway_lines), 1, "%d lines for one connection",
	             atomic_load(&oneway_lines));
	kv_fix_close(&f);
	rdmx_log_set_function(NULL);
	ASSERT_OK(rdmx_log_set_threshold(level));
}
