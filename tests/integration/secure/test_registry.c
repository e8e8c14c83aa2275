/* The cluster registry: rdmx-bootstrapd's core in a server thread, the
 * client API in the test thread, over loopback mutual TLS. Plus the wire
 * decoder against hostile bytes. Timeouts are failure guards only. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <msgpack.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <rdmx/registry.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>
#include <rdmx/pe.h>

#include "policy.h"
#include "registry_proto.h"
#include "registry_server.h"
#include "certgen.h"
#include "test_bsd.h"
#include "test_assert.h"
#include "tls_test_flood.h"
#include "tls_test_pki.h"
#include "tls_test_suite.h"

static struct tls_test_pki pki;

static struct {
	struct rdmx_test_bsd bsd;
	struct rdmx_tls_config *cfg;
	uint16_t port;
} srv;

static void probe_hook(struct ev_loop *loop, int up, void *arg);

static void server_start_timeout(const char *policy_text, uint32_t frame_timeout_ms)
{
	struct rdmx__policy *policy = NULL;

	memset(&srv, 0, sizeof(srv));
	if (policy_text)
		cr_assert_eq(rdmx__policy_parse(policy_text, "test-policy", &policy), 0);
	srv.cfg = tls_test_config(&pki, "server", "*", 1);
	cr_assert_not_null(srv.cfg);
	cr_assert_rc(rdmx_tls_config_set_max_frame(srv.cfg, 65536), RDMX_OK);
	rdmx_test_bsd_init(&srv.bsd, srv.cfg, policy);
	srv.bsd.opts.max_members_per_owner = 8;
	srv.bsd.opts.frame_timeout_ms = frame_timeout_ms;
	srv.bsd.hook = probe_hook;
	cr_assert_rc(rdmx_test_bsd_start(&srv.bsd), RDMX_OK);
	srv.port = srv.bsd.port;
}

static void server_start(const char *policy_text)
{
	server_start_timeout(policy_text, 300);
}

static void server_stop(void)
{
	rdmx_test_bsd_stop(&srv.bsd);
	rdmx_tls_config_destroy(&srv.cfg);
}

static struct rdmx_tls_config *client_cfgs[4];
static int n_client_cfgs;

static struct rdmx_registry_client *client(const char *cert)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, cert, "server.test", 1);
	struct rdmx_registry_client *c = NULL;

	cr_assert_not_null(cfg);
	cr_assert_rc(rdmx_registry_client_connect("127.0.0.1", srv.port, cfg, &c), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_set_timeout(c, 5000), RDMX_OK);
	/* the client's connection holds its own reference */
	rdmx_tls_config_destroy(&cfg);
	return c;
}

static void setup(void)
{
	cr_assert_eq(tls_test_pki_create(&pki), 0);
	tls_test_log_capture();
	n_client_cfgs = 0;
	(void)client_cfgs;
}

static void teardown(void)
{
	tls_test_pki_destroy(&pki);
}

TestSuite(registry, .init = setup, .fini = teardown, .timeout = 120);

static const struct rdmx_registry_member *find(const struct rdmx_registry_members *ms, uint64_t id)
{
	for (size_t i = 0; i < ms->count; i++)
		if (ms->items[i].id == id)
			return &ms->items[i];
	return NULL;
}

static const char *meta_get(const struct rdmx_registry_member *m, const char *key)
{
	for (size_t i = 0; i < m->n_meta; i++)
		if (!strcmp(m->meta[i].key, key))
			return m->meta[i].value;
	return NULL;
}

Test(registry, join_lookup_list_leave)
{
	struct rdmx_registry_client *a;
	struct rdmx_registry_members *ms = NULL;
	const struct rdmx_registry_member *m;
	struct rdmx_registry_kv meta[] = {{"zone", "a"}, {"role", "primary db"}};
	uint64_t kv_id = 0, db_id = 0, again = 0;
	uint32_t granted = 0;

	server_start(NULL);
	a = client("client");
	cr_assert_rc(
	    rdmx_registry_client_join(a, "kv", "10.0.0.1:7000", meta, 2, 5000, &kv_id, &granted),
	    RDMX_OK);
	cr_assert_neq(kv_id, 0);
	cr_assert_eq(granted, 5000);
	cr_assert_rc(
	    rdmx_registry_client_join(a, "db", "10.0.0.1:7001", NULL, 0, 5000, &db_id, NULL),
	    RDMX_OK);
	/* joining again with the same endpoint refreshes the same member */
	cr_assert_rc(
	    rdmx_registry_client_join(a, "kv", "10.0.0.1:7000", meta, 2, 5000, &again, NULL),
	    RDMX_OK);
	cr_assert_eq(again, kv_id);

	cr_assert_rc(rdmx_registry_client_lookup(a, "kv", &ms), RDMX_OK);
	cr_assert_eq(ms->count, 1);
	m = &ms->items[0];
	cr_assert_eq(m->id, kv_id);
	cr_assert_str_eq(m->service, "kv");
	cr_assert_str_eq(m->endpoint, "10.0.0.1:7000");
	cr_assert_str_eq(m->owner, "client.test");
	cr_assert_eq(m->ttl_ms, 5000);
	cr_assert_leq(m->expires_in_ms, 5000);
	cr_assert_str_eq(meta_get(m, "zone"), "a");
	cr_assert_str_eq(meta_get(m, "role"), "primary db");
	rdmx_registry_members_free(&ms);
	cr_assert_null(ms);

	cr_assert_rc(rdmx_registry_client_list(a, &ms), RDMX_OK);
	cr_assert_eq(ms->count, 2);
	cr_assert_not_null(find(ms, kv_id));
	cr_assert_not_null(find(ms, db_id));
	rdmx_registry_members_free(&ms);

	cr_assert_rc(rdmx_registry_client_heartbeat(a, kv_id), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_leave(a, kv_id), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_lookup(a, "kv", &ms), RDMX_OK);
	cr_assert_eq(ms->count, 0);
	rdmx_registry_members_free(&ms);
	cr_assert_rc(rdmx_registry_client_heartbeat(a, kv_id), RDMX_E_NOT_FOUND);
	cr_assert_rc(rdmx_registry_client_lookup(a, "nothing", &ms), RDMX_OK);
	cr_assert_eq(ms->count, 0);
	rdmx_registry_members_free(&ms);

	/* bad arguments never reach the wire */
	cr_assert_rc(rdmx_registry_client_join(a, "bad service", "x:1", NULL, 0, 0, &again, NULL),
	             RDMX_E_INVAL);
	cr_assert_rc(rdmx_registry_client_join(a, "kv", "has space:1", NULL, 0, 0, &again, NULL),
	             RDMX_E_INVAL);
	rdmx_registry_client_destroy(&a);
	cr_assert_null(a);
	server_stop();
}

Test(registry, ttl_is_clamped_to_server_bounds)
{
	struct rdmx_registry_client *a;
	uint64_t id;
	uint32_t granted;

	server_start(NULL);
	a = client("client");
	cr_assert_rc(rdmx_registry_client_join(a, "kv", "h:1", NULL, 0, 1, &id, &granted), RDMX_OK);
	cr_assert_eq(granted, 100);
	cr_assert_rc(rdmx_registry_client_join(a, "kv", "h:2", NULL, 0, 4000000000u, &id, &granted),
	             RDMX_OK);
	cr_assert_eq(granted, 60000);
	rdmx_registry_client_destroy(&a);
	server_stop();
}

Test(registry, lease_expiry_and_watch_notification)
{
	struct rdmx_registry_client *a, *w;
	struct rdmx_registry_event *ev = NULL;
	struct rdmx_registry_members *ms = NULL;
	uint64_t id, other;
	int64_t end;

	server_start(NULL);
	a = client("client");
	w = client("client2");
	cr_assert_rc(rdmx_registry_client_watch(w, "kv"), RDMX_OK);

	cr_assert_rc(rdmx_registry_client_join(a, "kv", "10.0.0.1:7000", NULL, 0, 300, &id, NULL),
	             RDMX_OK);
	/* another service: not for this watcher */
	cr_assert_rc(
	    rdmx_registry_client_join(a, "db", "10.0.0.1:7001", NULL, 0, 60000, &other, NULL),
	    RDMX_OK);
	cr_assert_rc(rdmx_registry_client_next_event(w, 5000, &ev), RDMX_OK);
	cr_assert_eq(ev->type, RDMX_REGISTRY_JOINED);
	cr_assert_eq(ev->member.id, id);
	cr_assert_str_eq(ev->member.service, "kv");
	cr_assert_str_eq(ev->member.owner, "client.test");
	rdmx_registry_event_free(&ev);

	/* heartbeats keep it alive well past its ttl */
	end = tls_test_now_ms() + 900;
	while (tls_test_now_ms() < end) {
		cr_assert_rc(rdmx_registry_client_heartbeat(a, id), RDMX_OK);
		usleep(50000);
	}
	cr_assert_rc(rdmx_registry_client_next_event(w, 0, &ev), RDMX_E_TIMEDOUT);

	/* silence: dropped, and the watcher is told */
	cr_assert_rc(rdmx_registry_client_next_event(w, 5000, &ev), RDMX_OK);
	cr_assert_eq(ev->type, RDMX_REGISTRY_EXPIRED);
	cr_assert_eq(ev->member.id, id);
	rdmx_registry_event_free(&ev);
	cr_assert_rc(rdmx_registry_client_lookup(a, "kv", &ms), RDMX_OK);
	cr_assert_eq(ms->count, 0);
	rdmx_registry_members_free(&ms);
	cr_assert_rc(rdmx_registry_client_heartbeat(a, id), RDMX_E_NOT_FOUND);
	cr_assert(tls_test_log_contains("expired"));

	/* join + leave: two events, in order, even while the watcher makes
	 * requests of its own (events queue behind answers) */
	cr_assert_rc(rdmx_registry_client_join(a, "kv", "10.0.0.2:7000", NULL, 0, 60000, &id, NULL),
	             RDMX_OK);
	cr_assert_rc(rdmx_registry_client_leave(a, id), RDMX_OK);
	usleep(100000);
	cr_assert_rc(rdmx_registry_client_list(w, &ms), RDMX_OK);
	rdmx_registry_members_free(&ms);
	cr_assert_rc(rdmx_registry_client_next_event(w, 5000, &ev), RDMX_OK);
	cr_assert_eq(ev->type, RDMX_REGISTRY_JOINED);
	rdmx_registry_event_free(&ev);
	cr_assert_rc(rdmx_registry_client_next_event(w, 5000, &ev), RDMX_OK);
	cr_assert_eq(ev->type, RDMX_REGISTRY_LEFT);
	cr_assert_eq(ev->member.id, id);
	rdmx_registry_event_free(&ev);

	rdmx_registry_client_destroy(&a);
	rdmx_registry_client_destroy(&w);
	server_stop();
}

Test(registry, policy_refuses_unlisted_service)
{
	struct rdmx_registry_client *a, *b;
	uint64_t id;

	server_start("# who may register what\n"
	             "client.test   kv-*     # the kv shards\n"
	             "*.test        public\n"
	             "client2.test  db\n");
	a = client("client");
	b = client("client2");
	cr_assert_rc(rdmx_registry_client_join(a, "db", "h:1", NULL, 0, 0, &id, NULL), RDMX_E_AUTH);
	cr_assert(strstr(rdmx_registry_client_last_error(a), "may not register service db"),
	          "error text '%s'", rdmx_registry_client_last_error(a));
	cr_assert(tls_test_log_contains("refused by the policy"));
	cr_assert_rc(rdmx_registry_client_join(a, "kv-1", "h:1", NULL, 0, 0, &id, NULL), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_join(a, "public", "h:1", NULL, 0, 0, &id, NULL), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_join(b, "db", "h:2", NULL, 0, 0, &id, NULL), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_join(b, "kv-1", "h:2", NULL, 0, 0, &id, NULL),
	             RDMX_E_AUTH);
	/* the session survives a refusal */
	cr_assert_rc(rdmx_registry_client_heartbeat(b, id), RDMX_OK);
	rdmx_registry_client_destroy(&a);
	rdmx_registry_client_destroy(&b);
	server_stop();
}

Test(registry, only_the_owner_renews_or_removes)
{
	struct rdmx_registry_client *a, *b;
	uint64_t id;

	server_start(NULL);
	a = client("client");
	b = client("client2");
	cr_assert_rc(rdmx_registry_client_join(a, "kv", "h:1", NULL, 0, 0, &id, NULL), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_heartbeat(b, id), RDMX_E_AUTH);
	cr_assert_rc(rdmx_registry_client_leave(b, id), RDMX_E_AUTH);
	cr_assert_rc(rdmx_registry_client_leave(a, id), RDMX_OK);
	rdmx_registry_client_destroy(&a);
	rdmx_registry_client_destroy(&b);
	server_stop();
}

Test(registry, per_owner_quota)
{
	struct rdmx_registry_client *a;
	char ep[32];
	uint64_t id;

	server_start(NULL);
	a = client("client");
	for (int i = 0; i < 8; i++) {
		snprintf(ep, sizeof(ep), "h:%d", i + 1);
		cr_assert_rc(rdmx_registry_client_join(a, "kv", ep, NULL, 0, 0, &id, NULL),
		             RDMX_OK);
	}
	cr_assert_rc(rdmx_registry_client_join(a, "kv", "h:99", NULL, 0, 0, &id, NULL),
	             RDMX_E_FULL);
	rdmx_registry_client_destroy(&a);
	server_stop();
}

/* A member speaking nonsense is disconnected with a log line. */
/* Field `field` of a request with an integer / a string value. */
static void pack_u32(msgpack_packer *pk, uint32_t field, uint32_t v)
{
	msgpack_pack_uint32(pk, field);
	msgpack_pack_uint32(pk, v);
}

static void pack_str(msgpack_packer *pk, uint32_t field, const char *v, size_t len)
{
	msgpack_pack_uint32(pk, field);
	msgpack_pack_str_with_body(pk, v, len);
}

/* The header of a request keyed by field number: version, id 1, then
 * n_more fields for the caller to pack. */
static void request_head(msgpack_packer *pk, uint32_t version, size_t n_more)
{
	msgpack_pack_map(pk, 2 + n_more);
	pack_u32(pk, 1, version);
	pack_u32(pk, 2, 1);
}

/* A list request of registry protocol version 1 (string keys). */
static void pack_v1_list(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 3);
	msgpack_pack_str_with_body(pk, "v", 1);
	msgpack_pack_uint32(pk, 1);
	msgpack_pack_str_with_body(pk, "id", 2);
	msgpack_pack_uint32(pk, 1);
	msgpack_pack_str_with_body(pk, "op", 2);
	msgpack_pack_str_with_body(pk, "list", 4);
}

static void send_raw_and_expect_close(const void *bytes, size_t len, const char *log_words)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, "client", "server.test", 0);
	struct rdmx_tls_conn *conn = NULL;
	const void *f;
	size_t flen;
	int r;

	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &conn), RDMX_OK);
	/* the server may close while a large frame is still being written */
	r = rdmx_tls_conn_send_wait(conn, bytes, len, 5000);
	cr_assert(r == RDMX_OK || r == RDMX_E_DISCONNECTED, "send: %s", rdmx_err_name(r));
	cr_assert_rc(rdmx_tls_conn_recv_wait(conn, &f, &flen, 5000), RDMX_E_DISCONNECTED);
	rdmx_tls_conn_destroy(&conn);
	rdmx_tls_config_destroy(&cfg);
	for (int i = 0; i < 100 && !tls_test_log_contains(log_words); i++)
		usleep(10000);
	cr_assert(tls_test_log_contains(log_words), "no log line with '%s'", log_words);
	tls_test_log_clear();
}

Test(registry, hostile_requests_close_the_session)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct rdmx_registry_client *a;
	struct rdmx_registry_members *ms = NULL;

	server_start(NULL);
	send_raw_and_expect_close("\xc1\xc1\xc1", 3, "malformed request");
	/* an array header claiming 2^32-1 elements in 5 bytes */
	send_raw_and_expect_close("\xdd\xff\xff\xff\xff", 5, "malformed request");
	/* nesting deeper than allowed */
	send_raw_and_expect_close("\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x90", 12,
	                          "malformed request");
	/* right shape, wrong types: id (field 2) as a string */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	pack_u32(&pk, 1, RDMX_REGISTRY_PROTOCOL_VERSION);
	pack_str(&pk, 2, "x", 1);
	pack_u32(&pk, 3, RDMX__REG_LIST);
	send_raw_and_expect_close(sb.data, sb.size, "malformed request");
	msgpack_sbuffer_destroy(&sb);
	/* a join whose service name (field 4) holds a NUL */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 5);
	pack_u32(&pk, 1, RDMX_REGISTRY_PROTOCOL_VERSION);
	pack_u32(&pk, 2, 1);
	pack_u32(&pk, 3, RDMX__REG_JOIN);
	pack_str(&pk, 4, "kv\0evil", 7);
	pack_str(&pk, 5, "h:1", 3);
	send_raw_and_expect_close(sb.data, sb.size, "NUL byte");
	msgpack_sbuffer_destroy(&sb);
	/* a request of registry protocol version 1 (string keys) */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_v1_list(&pk);
	send_raw_and_expect_close(sb.data, sb.size,
	                          "does not decode as registry protocol version 2");
	msgpack_sbuffer_destroy(&sb);
	/* a frame over the server's 64 KiB limit */
	{
		static char big[70000];

		send_raw_and_expect_close(big, sizeof(big), "frame of 70000 bytes refused");
	}
	/* and nothing got in, the server still serves */
	a = client("client");
	cr_assert_rc(rdmx_registry_client_list(a, &ms), RDMX_OK);
	cr_assert_eq(ms->count, 0);
	rdmx_registry_members_free(&ms);
	rdmx_registry_client_destroy(&a);
	server_stop();
}

/* ---- decoder alone ---- */

TestSuite(registry_proto, .timeout = 30);

Test(registry_proto, request_round_trip)
{
	struct rdmx_registry_kv meta[] = {{"k", "v w"}};
	struct rdmx__reg_request in = {.id = 7,
	                               .op = RDMX__REG_JOIN,
	                               .service = "svc",
	                               .endpoint = "h:1",
	                               .meta = meta,
	                               .n_meta = 1,
	                               .ttl_ms = 1234};
	struct rdmx__reg_request out;
	void *buf;
	size_t len;
	char why[200];

	cr_assert_rc(rdmx__reg_encode_request(&in, &buf, &len), RDMX_OK);
	cr_assert_rc(rdmx__reg_decode_request(buf, len, &out, why, sizeof(why)), RDMX_OK);
	cr_assert_eq(out.id, 7);
	cr_assert_eq(out.op, RDMX__REG_JOIN);
	cr_assert_str_eq(out.service, "svc");
	cr_assert_str_eq(out.endpoint, "h:1");
	cr_assert_eq(out.n_meta, 1);
	cr_assert_str_eq(out.meta[0].value, "v w");
	cr_assert_eq(out.ttl_ms, 1234);
	rdmx__reg_request_fini(&out);
	/* every truncation is refused, none crashes */
	for (size_t n = 0; n < len; n++) {
		cr_assert_rc(rdmx__reg_decode_request(buf, n, &out, why, sizeof(why)),
		             RDMX_E_PROTOCOL);
	}
	free(buf);
}

/* The request in sb does not decode: RDMX_E_PROTOCOL, the reason naming `words`. */
static void expect_refused(const msgpack_sbuffer *sb, const char *words)
{
	struct rdmx__reg_request out;
	char why[200];

	cr_assert_rc(rdmx__reg_decode_request(sb->data, sb->size, &out, why, sizeof(why)),
	             RDMX_E_PROTOCOL);
	cr_assert(strstr(why, words), "%s", why);
}

/* Version 1 refused repeated keys: its frames were pre-walked by one parser
 * and read by another (msgpack-c). Version 2 has one decoder, the generated
 * one, and keeps proto3's rule: a field given twice keeps its last value, and
 * that is the value every check runs on. Metadata keys stay unique (a map
 * keeps both entries, which would be two values of one key). */
Test(registry_proto, repeated_fields_keep_the_last_value_checked)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct rdmx__reg_request out;
	char why[200];

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	/* op join, then op list: a list */
	request_head(&pk, RDMX_REGISTRY_PROTOCOL_VERSION, 2);
	pack_u32(&pk, 3, RDMX__REG_JOIN);
	pack_u32(&pk, 3, RDMX__REG_LIST);
	cr_assert_rc(rdmx__reg_decode_request(sb.data, sb.size, &out, why, sizeof(why)), RDMX_OK);
	cr_assert_eq(out.op, RDMX__REG_LIST);
	rdmx__reg_request_fini(&out);
	/* op list, then an op that does not exist: refused */
	msgpack_sbuffer_clear(&sb);
	request_head(&pk, RDMX_REGISTRY_PROTOCOL_VERSION, 2);
	pack_u32(&pk, 3, RDMX__REG_LIST);
	pack_u32(&pk, 3, 99);
	expect_refused(&sb, "unknown op 99");
	/* a good service, then one with a NUL: refused */
	msgpack_sbuffer_clear(&sb);
	request_head(&pk, RDMX_REGISTRY_PROTOCOL_VERSION, 3);
	pack_u32(&pk, 3, RDMX__REG_LOOKUP);
	pack_str(&pk, 4, "kv", 2);
	pack_str(&pk, 4, "k\0v", 3);
	expect_refused(&sb, "NUL byte");
	/* a metadata key twice: refused */
	msgpack_sbuffer_clear(&sb);
	request_head(&pk, RDMX_REGISTRY_PROTOCOL_VERSION, 4);
	pack_u32(&pk, 3, RDMX__REG_JOIN);
	pack_str(&pk, 4, "kv", 2);
	pack_str(&pk, 5, "h:1", 3);
	msgpack_pack_uint32(&pk, 6);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "zone", 4);
	msgpack_pack_str_with_body(&pk, "a", 1);
	msgpack_pack_str_with_body(&pk, "zone", 4);
	msgpack_pack_str_with_body(&pk, "b", 1);
	expect_refused(&sb, "duplicate metadata key 'zone'");
	msgpack_sbuffer_destroy(&sb);
}

Test(registry_proto, refuses_wrong_versions)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	request_head(&pk, 99, 1);
	pack_u32(&pk, 3, RDMX__REG_LIST);
	expect_refused(&sb, "version 99");
	/* version 1's string keys do not decode */
	msgpack_sbuffer_clear(&sb);
	pack_v1_list(&pk);
	expect_refused(&sb, "does not decode as registry protocol version 2");
	msgpack_sbuffer_destroy(&sb);
}

Test(registry_proto, policy_parse_errors_name_the_line)
{
	struct rdmx__policy *p = NULL;

	cr_assert_eq(rdmx__policy_parse("a.test kv\n\n# c\n*.x kv-*\n", "p", &p), 0);
	cr_assert_eq(rdmx__policy_rules(p), 2);
	cr_assert(rdmx__policy_allows(p, "a.test", "kv"));
	cr_assert(rdmx__policy_allows(p, "n.x", "kv-7"));
	cr_assert_not(rdmx__policy_allows(p, "a.b.x", "kv-7"));
	cr_assert_not(rdmx__policy_allows(p, "a.test", "kv2"));
	rdmx__policy_destroy(&p);
	cr_assert_null(p);
	cr_assert_eq(rdmx__policy_parse("a.test\n", "p", &p), -1);
	cr_assert_eq(rdmx__policy_parse("a.test kv extra\n", "p", &p), -1);
	cr_assert_eq(rdmx__policy_parse("a.*.test kv\n", "p", &p), -1);
	cr_assert_eq(rdmx__policy_parse("a..test kv\n", "p", &p), -1);
	cr_assert_eq(rdmx__policy_parse("a.test k/v\n", "p", &p), -1);
	cr_assert_null(p);
}

/* A session that sends the first bytes of a frame and then nothing is
 * disconnected after the frame timeout (300 ms here), with a log line. */
Test(registry, a_session_stalled_mid_frame_is_timed_out)
{
	struct sockaddr_in dst = {.sin_family = AF_INET};
	SSL_CTX *ctx;
	SSL *ssl;
	char buf[256];
	int fd, closed = 0, n;
	struct rdmx_registry_client *a;
	struct rdmx_registry_members *ms = NULL;

	server_start(NULL);
	ctx = SSL_CTX_new(TLS_client_method());
	cr_assert_not_null(ctx);
	cr_assert_eq(SSL_CTX_use_certificate_file(ctx, tls_test_pki_path(&pki, "client", ".crt"),
	                                          SSL_FILETYPE_PEM),
	             1);
	cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, tls_test_pki_path(&pki, "client", ".key"),
	                                         SSL_FILETYPE_PEM),
	             1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons(srv.port);
	cr_assert_eq(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	cr_assert_eq(SSL_connect(ssl), 1, "TLS handshake with the registry");
	/* two of the four bytes of a frame header, then silence */
	cr_assert_eq(SSL_write(ssl, "\x00\x00", 2), 2);
	for (int i = 0; i < 1000 && !closed; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, 10) <= 0)
			continue;
		n = SSL_read(ssl, buf, sizeof(buf));
		if (n <= 0)
			closed = 1;
	}
	cr_assert(closed, "the registry kept a session stalled mid-frame (failure guard)");
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	for (int i = 0; i < 100 && !tls_test_log_contains("stalled mid-frame"); i++)
		usleep(10000);
	cr_assert(tls_test_log_contains("stalled mid-frame"));
	/* others are served */
	a = client("client");
	cr_assert_rc(rdmx_registry_client_list(a, &ms), RDMX_OK);
	rdmx_registry_members_free(&ms);
	rdmx_registry_client_destroy(&a);
	server_stop();
}

/* All sessions open: one certificate holding them all must not lock the
 * other members out. The certificate holding the most gives up a session
 * to a newcomer whose certificate holds at least two fewer; a newcomer of
 * the heaviest certificate is refused. Counted and logged. */
Test(registry, one_certificate_holding_every_session_sheds_its_own)
{
	struct rdmx_registry_client *a[5], *b[2];
	struct rdmx_registry_members *ms = NULL;
	uint64_t refused, evicted;
	int lost = 0;

	memset(&srv, 0, sizeof(srv));
	srv.cfg = tls_test_config(&pki, "server", "*", 1);
	cr_assert_not_null(srv.cfg);
	rdmx_test_bsd_init(&srv.bsd, srv.cfg, NULL);
	srv.bsd.opts.max_clients = 4;
	srv.bsd.hook = probe_hook;
	cr_assert_rc(rdmx_test_bsd_start(&srv.bsd), RDMX_OK);
	srv.port = srv.bsd.port;

	/* the attacker fills every session (each answered: established) */
	for (int i = 0; i < 4; i++) {
		a[i] = client("client");
		cr_assert_rc(rdmx_registry_client_list(a[i], &ms), RDMX_OK);
		rdmx_registry_members_free(&ms);
	}
	/* another member is served: one of the attacker's sessions goes */
	b[0] = client("client2");
	/* a member locked out by another certificate's sessions, before */
	cr_assert_rc(rdmx_registry_client_list(b[0], &ms), RDMX_OK);
	rdmx_registry_members_free(&ms);
	cr_assert(tls_test_log_contains("closed for one of client2.test"));
	for (int i = 0; i < 4; i++) {
		if (rdmx_registry_client_list(a[i], &ms) != RDMX_OK)
			lost++;
		rdmx_registry_members_free(&ms);
	}
	cr_assert_eq(lost, 1, "%d of the attacker's sessions closed, want 1", lost);
	/* the attacker's newcomer (3 held, the other 1): refused */
	{
		struct rdmx_tls_config *cfg = tls_test_config(&pki, "client", "server.test", 1);

		a[4] = NULL;
		/* refused once its handshake is done: at the connect or at the
		 * first request, whichever reads first */
		if (rdmx_registry_client_connect("127.0.0.1", srv.port, cfg, &a[4]) == RDMX_OK) {
			cr_assert_rc(rdmx_registry_client_set_timeout(a[4], 5000), RDMX_OK);
			cr_assert_neq(rdmx_registry_client_list(a[4], &ms), RDMX_OK);
			rdmx_registry_members_free(&ms);
		}
		rdmx_tls_config_destroy(&cfg);
	}
	cr_assert(tls_test_log_contains("refused (3 of them its certificate's)"));
	/* the other's second session: 3 against 1, room made again */
	b[1] = client("client2");
	cr_assert_rc(rdmx_registry_client_list(b[1], &ms), RDMX_OK);
	rdmx_registry_members_free(&ms);
	cr_assert_rc(rdmx_registry_client_list(b[0], &ms), RDMX_OK);
	rdmx_registry_members_free(&ms);
	rdmx__bootstrapd_session_limits(srv.bsd.bsd, &refused, &evicted);
	cr_assert_eq(refused, 1);
	cr_assert_eq(evicted, 2);
	for (int i = 0; i < 5; i++)
		rdmx_registry_client_destroy(&a[i]);
	for (int i = 0; i < 2; i++)
		rdmx_registry_client_destroy(&b[i]);
	server_stop();
}

/* ---- a client that floods KeyUpdates (OpenSSL, no rdmx) ---- */

/* The probe of the server's loop (the flood tests): started from the test
 * thread (wake), it runs until the loop has an iteration with nothing to do
 * (quiet_cb) or gives up after PROBE_LIMIT iterations (busy_cb). It counts
 * iterations, no clock. */
enum { PROBE_RUNNING, PROBE_QUIET_UNREAD, PROBE_QUIET_EMPTY, PROBE_BUSY };
#define PROBE_LIMIT 100000ul

static struct {
	ev_async wake;
	ev_idle quiet;
	ev_check busy;
	int start, result, session_fd;
	unsigned long iterations;
} probe;

static void probe_end(struct ev_loop *loop, int result)
{
	ev_idle_stop(loop, &probe.quiet);
	ev_check_stop(loop, &probe.busy);
	__atomic_store_n(&probe.result, result, __ATOMIC_SEQ_CST);
}

/* An iteration with no event pending: does the session's socket still hold
 * unread bytes? A loop that watches a readable socket always has its event
 * pending. */
static void quiet_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	int unread = 0;

	(void)w;
	(void)revents;
	ioctl(probe.session_fd, FIONREAD, &unread);
	probe_end(loop, unread > 0 ? PROBE_QUIET_UNREAD : PROBE_QUIET_EMPTY);
}

static void busy_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)w;
	(void)revents;
	if (++probe.iterations > PROBE_LIMIT)
		probe_end(loop, PROBE_BUSY);
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	if (__atomic_exchange_n(&probe.start, 0, __ATOMIC_SEQ_CST)) {
		probe.iterations = 0;
		ev_idle_start(loop, &probe.quiet);
		ev_check_start(loop, &probe.busy);
	}
}

static void probe_hook(struct ev_loop *loop, int up, void *arg)
{
	(void)arg;
	if (up) {
		memset(&probe, 0, sizeof(probe));
		ev_async_init(&probe.wake, wake_cb);
		ev_idle_init(&probe.quiet, quiet_cb);
		ev_check_init(&probe.busy, busy_cb);
		ev_async_start(loop, &probe.wake);
		return;
	}
	ev_idle_stop(loop, &probe.quiet);
	ev_check_stop(loop, &probe.busy);
	ev_async_stop(loop, &probe.wake);
}

/* Runs the probe on the server's loop: its result. */
static int probe_run(int session_fd)
{
	int64_t end = tls_test_now_ms() + 60000;

	__atomic_store_n(&probe.session_fd, session_fd, __ATOMIC_SEQ_CST);
	__atomic_store_n(&probe.result, PROBE_RUNNING, __ATOMIC_SEQ_CST);
	__atomic_store_n(&probe.start, 1, __ATOMIC_SEQ_CST);
	ev_async_send(srv.bsd.th.loop, &probe.wake);
	while (__atomic_load_n(&probe.result, __ATOMIC_SEQ_CST) == PROBE_RUNNING &&
	       tls_test_now_ms() < end)
		usleep(1000);
	return __atomic_load_n(&probe.result, __ATOMIC_SEQ_CST);
}

/* One request over the raw session, the way the client library sends it;
 * its answer in *rep (fini it), checked to be the answer to it. */
static void raw_request(struct tls_test_flood *f, const struct rdmx__reg_request *req,
                        struct rdmx__reg_reply *rep)
{
	static unsigned char frame[65536];
	char why[200];
	void *buf;
	size_t len, n;

	cr_assert_rc(rdmx__reg_encode_request(req, &buf, &len), RDMX_OK);
	tls_test_flood_write_frame(f, buf, len);
	free(buf);
	n = tls_test_flood_read_frame(f, frame, sizeof(frame));
	cr_assert_rc(rdmx__reg_decode_reply(frame, n, rep, why, sizeof(why)), RDMX_OK);
	cr_assert(!rep->is_event && rep->id == req->id, "not the answer to the %s",
	          rdmx__reg_op_name(req->op));
}

/* Waits (failure guard 10 s) until every request of the flood sits in the
 * server's socket. */
static void flood_wait_taken(const struct tls_test_flood *f)
{
	int64_t end = tls_test_now_ms() + 10000;

	while (tls_test_flood_unacked(f) != 0 && tls_test_now_ms() < end)
		usleep(1000);
	cr_assert_eq(tls_test_flood_unacked(f), 0,
	             "setup: the server's kernel did not take the requests");
}

/* A join over the raw session: the member id of the answer. */
static uint64_t raw_join(struct tls_test_flood *f, const char *service)
{
	struct rdmx__reg_request req = {
	    .id = 77, .op = RDMX__REG_JOIN, .service = (char *)service, .endpoint = "h:1"};
	struct rdmx__reg_reply rep;
	uint64_t member;

	raw_request(f, &req, &rep);
	cr_assert_rc(rep.status, RDMX_OK);
	member = rep.member;
	rdmx__reg_reply_fini(&rep);
	cr_assert_neq(member, 0);
	return member;
}

/* A session flooded with KeyUpdates waits for writability, not for the
 * readable socket: the probe finds a quiet iteration with the requests
 * still unread (with the session watched for readability alone the loop
 * spins and the probe ends after PROBE_LIMIT busy iterations). Once the
 * client reads, it gets its answers, and the same session and others are
 * served. The frame timeout is far above the test's run: the session is
 * not timed out meanwhile. */
Test(registry, key_update_flood_neither_spins_nor_loses_the_session)
{
	struct rdmx_registry_members *ms = NULL;
	struct rdmx_registry_client *a;
	struct tls_test_flood f;
	int server_fd, result;
	uint64_t member;

	server_start_timeout(NULL, 600000);
	tls_test_flood_connect(&f, &pki, srv.port, "client");
	server_fd = tls_test_flood_server_fd(&f);
	tls_test_flood_send(&f, server_fd);
	/* every request is in the server's socket: nothing more arrives */
	flood_wait_taken(&f);
	result = probe_run(server_fd);
	cr_assert_neq(result, PROBE_RUNNING, "the probe did not end (failure guard)");
	cr_assert_neq(result, PROBE_QUIET_EMPTY,
	              "setup: the server answered all %d KeyUpdates without its send blocking",
	              TLS_TEST_FLOOD_KEY_UPDATES);
	cr_assert_eq(result, PROBE_QUIET_UNREAD,
	             "the server's loop ran %lu iterations, none quiet, its session's socket "
	             "readable and its TLS layer waiting to write: it spins",
	             PROBE_LIMIT);
	/* the answer to the last request may wait for the server's next
	 * application data (RFC 8446 4.6.3; OpenSSL 3.0 sends the answer to one
	 * request when it processes the next) */
	tls_test_flood_drain(&f, TLS_TEST_FLOOD_KEY_UPDATES - 1);
	tls_test_flood_set_blocking(&f, 1);
	member = raw_join(&f, "flood");
	a = client("client");
	cr_assert_rc(rdmx_registry_client_list(a, &ms), RDMX_OK);
	cr_assert_eq(ms->count, 1);
	cr_assert_eq(ms->items[0].id, member);
	cr_assert_str_eq(ms->items[0].owner, "client.test");
	rdmx_registry_members_free(&ms);
	rdmx_registry_client_destroy(&a);
	cr_assert(!tls_test_log_contains("does not read"));
	tls_test_flood_close(&f);
	server_stop();
}

/* A watcher that reads neither its events nor anything else: once its
 * socket is full the session waits to write, with fewer bytes queued than
 * the two frames that would drop it, and nothing more arrives from the
 * peer. It is disconnected after the frame timeout (300 ms here), with a
 * log line, and others are served. */
Test(registry, a_watcher_that_does_not_read_is_timed_out)
{
	struct rdmx__reg_request watch = {.id = 5, .op = RDMX__REG_WATCH};
	struct rdmx_registry_members *ms = NULL;
	struct rdmx_registry_client *a;
	struct rdmx__reg_reply rep;
	struct tls_test_flood f;
	int server_fd, small = 4096;
	uint64_t id;

	server_start(NULL);
	tls_test_flood_connect(&f, &pki, srv.port, "client");
	raw_request(&f, &watch, &rep);
	cr_assert_rc(rep.status, RDMX_OK);
	rdmx__reg_reply_fini(&rep);
	server_fd = tls_test_flood_server_fd(&f);
	setsockopt(server_fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	/* 300 events of ~100 bytes: far more than the sockets hold, far less
	 * than the two frames of 64 KiB the server queues before it drops */
	a = client("client");
	for (int i = 0; i < 150 && !tls_test_log_contains("does not read"); i++) {
		cr_assert_rc(
		    rdmx_registry_client_join(a, "kv", "10.0.0.1:7000", NULL, 0, 5000, &id, NULL),
		    RDMX_OK);
		cr_assert_rc(rdmx_registry_client_leave(a, id), RDMX_OK);
	}
	for (int i = 0; i < 1000 && !tls_test_log_contains("does not read: waited"); i++)
		usleep(10000);
	cr_assert(tls_test_log_contains("does not read: waited 300 ms to write, disconnected"),
	          "the registry kept a session that waits to write (failure guard)");
	cr_assert(!tls_test_log_contains("does not read its messages"),
	          "setup: the watcher was dropped for its full queue, not timed out");
	tls_test_flood_set_blocking(&f, 0);
	tls_test_flood_expect_closed(&f);
	tls_test_flood_close(&f);
	cr_assert_rc(rdmx_registry_client_list(a, &ms), RDMX_OK);
	rdmx_registry_members_free(&ms);
	rdmx_registry_client_destroy(&a);
	server_stop();
}

/* ---- certificate names as logged ---- */

/* A client certificate of the test CA named `san` ("DNS:..."), as `name`
 * in the PKI's directory. */
static void issue_client_cert(const char *name, const char *san)
{
	const char *sans[1] = {san};
	struct rdmx_certgen_opts o = {.sans = sans,
	                              .n_sans = 1,
	                              .not_before_s = -86400,
	                              .not_after_s = 86400,
	                              .eku = RDMX_CERTGEN_EKU_SERVER | RDMX_CERTGEN_EKU_CLIENT};
	EVP_PKEY *ca_key = rdmx__certgen_read_key(tls_test_pki_path(&pki, "ca", ".key"), 0);
	X509 *ca = rdmx__certgen_read_cert(tls_test_pki_path(&pki, "ca", ".crt"));
	EVP_PKEY *key = rdmx__certgen_key();
	X509 *x;

	cr_assert(ca_key && ca && key);
	x = rdmx__certgen_cert(&o, key, ca, ca_key);
	cr_assert_not_null(x);
	cr_assert_eq(rdmx__certgen_write_key(tls_test_pki_path(&pki, name, ".key"), key), 0);
	cr_assert_eq(rdmx__certgen_write_cert(tls_test_pki_path(&pki, name, ".crt"), x), 0);
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(key);
	EVP_PKEY_free(ca_key);
}

/* A certificate name is the peer's text: with a server that allows any
 * name it may hold a newline (a forged log line) or an escape sequence.
 * The daemon logs it escaped (rdmx__log_escape); such a name is no
 * registry owner, so the join is refused, its line escaped too. */
Test(registry, certificate_names_are_logged_escaped)
{
	struct rdmx_registry_client *a;
	uint64_t id = 0;

	server_start(NULL);
	issue_client_cert("oddname", "DNS:odd\x1b[2K\nrdmx error: forged.test");
	a = client("oddname");
	cr_assert_rc(rdmx_registry_client_join(a, "kv", "10.0.0.1:7000", NULL, 0, 5000, &id, NULL),
	             RDMX_E_AUTH);
	rdmx_registry_client_destroy(&a);
	for (int i = 0; i < 100 && !tls_test_log_contains("closed: peer closed"); i++)
		usleep(10000);
	cr_assert(tls_test_log_contains("join of service 'kv' by odd\\x1b[2K\\x0ardmx error: "
	                                "forged.test (peer 127.0.0.1:"),
	          "the join's line does not show the name escaped");
	cr_assert(tls_test_log_contains(
	              "session of odd\\x1b[2K\\x0ardmx error: forged.test (peer 127.0.0.1:"),
	          "the session's lines do not show the name escaped");
	cr_assert(!tls_test_log_contains("\x1b") && !tls_test_log_contains("\nrdmx error: forged"),
	          "the name reached the log raw");
	server_stop();
}

/* A member's owner is its certificate's name, and the client's decoders
 * refuse an owner with bytes the protocol does not allow: one such member
 * would fail every client's lists and events. With any name allowed, a
 * certificate named with ESC and a newline ("ctlsan") may connect, but its
 * join is refused with a reason; the others' lists keep working. */
Test(registry, a_certificate_name_that_is_no_owner_does_not_join)
{
	struct rdmx_registry_members *ms = NULL;
	struct rdmx_registry_client *bad, *good;
	uint64_t bad_id = 0, good_id = 0;
	char why[512];
	int bad_join;

	server_start(NULL);
	bad = client("ctlsan");
	good = client("client");
	bad_join =
	    rdmx_registry_client_join(bad, "kv", "10.0.0.1:7000", NULL, 0, 5000, &bad_id, NULL);
	snprintf(why, sizeof(why), "%s", rdmx_registry_client_last_error(bad));
	cr_assert_rc(
	    rdmx_registry_client_join(good, "kv", "10.0.0.2:7000", NULL, 0, 5000, &good_id, NULL),
	    RDMX_OK);
	/* the lists of both, the refused one's too */
	cr_assert_rc(rdmx_registry_client_list(good, &ms), RDMX_OK);
	cr_assert_eq(ms->count, 1);
	cr_assert_eq(ms->items[0].id, good_id);
	cr_assert_str_eq(ms->items[0].owner, "client.test");
	rdmx_registry_members_free(&ms);
	cr_assert_rc(rdmx_registry_client_lookup(bad, "kv", &ms), RDMX_OK);
	cr_assert_eq(ms->count, 1);
	rdmx_registry_members_free(&ms);
	cr_assert_rc(bad_join, RDMX_E_AUTH);
	cr_assert(strstr(why, "certificate name evil\\x1b[2K\\x0ardmx: forged.example is not a "
	                      "registry owner"),
	          "the refusal does not say why: %s", why);
	cr_assert(tls_test_log_contains("join of service 'kv' by evil\\x1b[2K\\x0ardmx: "
	                                "forged.example (peer 127.0.0.1:"),
	          "the refusal is not logged, the name escaped");
	rdmx_registry_client_destroy(&bad);
	rdmx_registry_client_destroy(&good);
	server_stop();
}
