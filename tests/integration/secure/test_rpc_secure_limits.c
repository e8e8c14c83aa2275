/* The secure RPC server's client limit against one certificate that takes
 * every place (rdmx_rpc_secure_server_ops.max_clients): the certificate
 * holding the most clients gives one up to a newcomer whose certificate
 * holds at least two fewer, a newcomer of the heaviest is refused; and the
 * limit is max_clients, not the engine context's default of 64
 * connections. A real server on a libev thread, real clients on the tcp
 * device, certificates made at test time. Timeouts are failure guards
 * only. */
#include <criterion/criterion.h>

#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <msgpack.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rdmx/dev.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "ev_thread.h"
#include "secure_server.h"
#include "test_assert.h"
#include "tls_test_pki.h"

#define ECHO "rdmx.test.Limits/Echo"
#define GUARD_US 20000000ull /* a call's deadline: failure guard only */

static struct tls_test_pki pki;

static struct {
	struct rdmx_test_ev_thread ev;
	struct test_secure_server srv;
	struct rdmx_rpc_secure_server_ops ops;
	struct rdmx_dev *cdev; /* the clients' device */
} S;

static void echo(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static const struct test_secure_method methods[] = {{ECHO, echo}};

static void setup(void)
{
	cr_assert_eq(tls_test_pki_create(&pki), 0);
	tls_test_log_capture();
	tls_test_log_clear();
}

static void teardown(void)
{
	tls_test_pki_destroy(&pki);
}

TestSuite(rpc_secure_limits, .init = setup, .fini = teardown, .timeout = 300);

static void server_start(uint32_t max_clients)
{
	memset(&S, 0, sizeof(S));
	S.srv.methods = methods;
	S.srv.n_methods = 1;
	S.srv.device = "tcp";
	S.ops.max_clients = max_clients;
	S.srv.ops = &S.ops;
	S.srv.cfg = tls_test_config(&pki, "server", "*", 1);
	cr_assert_not_null(S.srv.cfg);
	cr_assert_rc(rdmx_test_ev_thread_start(&S.ev, test_secure_server_setup,
	                                       test_secure_server_teardown, &S.srv),
	             RDMX_OK);
	cr_assert_rc(rdmx_dev_open("tcp", &S.cdev), RDMX_OK);
}

static void server_stop(void)
{
	rdmx_test_ev_thread_stop(&S.ev);
	rdmx_tls_config_destroy(&S.srv.cfg);
	rdmx_dev_close(&S.cdev);
}

/* RDMX_OK and *out, or the connect's error. */
static int connect_as(const char *cert, struct rdmx_rpc_secure_conn **out)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, cert, "server.test", 1);
	struct rdmx_rpc_secure_opts o;
	int rc;

	cr_assert_not_null(cfg);
	rdmx_rpc_secure_opts_init(&o);
	o.dev = S.cdev;
	*out = NULL;
	rc = rdmx_rpc_secure_connect("127.0.0.1", S.srv.port, cfg, NULL, &o, out);
	rdmx_tls_config_destroy(&cfg);
	return rc;
}

static enum rdmx_rpc_code call_echo(struct rdmx_rpc_secure_conn *c)
{
	struct rdmx_rpc_call_opts co = {.timeout_us = GUARD_US};
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("ping", 4);
	struct rdmx_rpc_reply reply;
	enum rdmx_rpc_code code;
	int rc;

	memset(&reply, 0, sizeof(reply));
	rc = rdmx_rpc_call(rdmx_rpc_secure_conn_get_ep(c), rdmx_rpc_method_id(ECHO), &req, &co,
	                   &reply);
	code = rc ? RDMX_RPC_UNAVAILABLE : reply.code;
	if (!rc && code == RDMX_RPC_OK)
		cr_assert(reply.len == 4 && !memcmp(reply.data, "ping", 4), "echo answered wrong");
	rdmx_rpc_reply_fini(&reply);
	return code;
}

Test(rpc_secure_limits, one_certificate_holding_every_place_sheds_its_own)
{
	struct rdmx_rpc_secure_conn *a[5], *b[3];
	int lost = 0;

	server_start(4);
	for (int i = 0; i < 4; i++) {
		cr_assert_rc(connect_as("client", &a[i]), RDMX_OK);
		cr_assert_eq(call_echo(a[i]), RDMX_RPC_OK);
	}
	/* another certificate's client is served (before: refused, "4 clients
	 * already"), and one of the first four gives up its place */
	cr_assert_rc(connect_as("client2", &b[0]), RDMX_OK);
	cr_assert_eq(call_echo(b[0]), RDMX_RPC_OK);
	cr_assert(tls_test_log_contains("4 of them client.test's: its oldest closed for client "
	                                "client2.test"));
	for (int i = 0; i < 4; i++)
		if (call_echo(a[i]) != RDMX_RPC_OK)
			lost++;
	cr_assert_eq(lost, 1, "%d of the first certificate's clients lost, want 1", lost);
	/* 3 against 1: room made again; 2 against 2: no more */
	cr_assert_rc(connect_as("client2", &b[1]), RDMX_OK);
	cr_assert_eq(call_echo(b[1]), RDMX_RPC_OK);
	cr_assert_neq(connect_as("client2", &b[2]), RDMX_OK, "a fair share exceeded");
	cr_assert(tls_test_log_contains("4 clients already, 2 of them its certificate's"));
	cr_assert_neq(connect_as("client", &a[4]), RDMX_OK, "a fair share exceeded");
	cr_assert_eq(call_echo(b[0]), RDMX_RPC_OK);
	cr_assert_eq(call_echo(b[1]), RDMX_RPC_OK);
	cr_assert_eq(rdmx_rpc_secure_server_get_clients(S.srv.ss), 4);
	for (int i = 0; i < 4; i++)
		rdmx_rpc_secure_close(&a[i]);
	for (int i = 0; i < 2; i++)
		rdmx_rpc_secure_close(&b[i]);
	server_stop();
}

/* The default limit (RDMX_RPC_SECURE_DEFAULT_MAX_CLIENTS) is the one that
 * holds: the 65th client is served, where the server's engine context
 * refused it ("pool or table full") with its default of 64 connections. */
#define MANY 66
Test(rpc_secure_limits, more_clients_than_a_context_holds_by_default)
{
	static struct rdmx_rpc_secure_conn *c[MANY];

	server_start(0);
	for (int i = 0; i < MANY; i++) {
		int rc = connect_as(i % 2 ? "client" : "client2", &c[i]);

		cr_assert_eq(rc, RDMX_OK, "client %d of %d: %s", i + 1, MANY, rdmx_err_name(rc));
	}
	cr_assert_eq(call_echo(c[MANY - 1]), RDMX_RPC_OK);
	cr_assert_eq(call_echo(c[0]), RDMX_RPC_OK);
	cr_assert_eq(rdmx_rpc_secure_server_get_clients(S.srv.ss), MANY);
	for (int i = 0; i < MANY; i++)
		rdmx_rpc_secure_close(&c[i]);
	server_stop();
}

/* ---- a client whose data connection never comes up ---- */

static void pack_key(msgpack_packer *pk, uint64_t key)
{
	msgpack_pack_uint64(pk, key);
}

/* An RPC hello (rpc_hello.proto): version 2, 64 slots of 4 KiB, 1 MiB. */
static void pack_rpc_hello(msgpack_sbuffer *sb)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	pack_key(&pk, 1);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_uint32(&pk, RDMX_RPC_SECURE_VERSION);
	pack_key(&pk, 2);
	msgpack_pack_uint32(&pk, 64);
	pack_key(&pk, 3);
	msgpack_pack_uint32(&pk, 4096);
	pack_key(&pk, 4);
	msgpack_pack_uint64(&pk, 1u << 20);
}

/* tcp connection details (engine/providers/tcp/wire.h) naming 127.0.0.1:port
 * and the highest token: the server, whose token is lower, dials us. */
static void tcp_details(uint8_t d[48], uint16_t port)
{
	memset(d, 0, 48);
	d[0] = 0x54; /* magic 0x5854, little-endian */
	d[1] = 0x58;
	d[2] = 1; /* version */
	d[3] = 1; /* provider tcp */
	d[4] = 4; /* IPv4 */
	d[6] = (uint8_t)port;
	d[7] = (uint8_t)(port >> 8);
	d[8] = 127;
	d[11] = 1;
	memset(d + 24, 0xff, 16);
}

/* The server accepts the bootstrap, then its dial of the client's data
 * address is refused: the client is dropped with a line naming it (it
 * was dropped without one; a client that never dials is dropped the same
 * way after the connection timeout). */
Test(rpc_secure_limits, a_client_whose_data_connection_never_comes_is_dropped_with_a_line)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof(a);
	struct rdmx_tls_config *cfg;
	struct rdmx_tls_conn *tls = NULL;
	struct rdmx_rpc_secure_conn *good;
	msgpack_sbuffer sb, app;
	msgpack_packer pk;
	uint8_t details[48];
	const void *f;
	size_t len;
	int rc;
	int closed_port = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	/* a bound port nobody listens on: a dial to it is refused at once */
	cr_assert_geq(closed_port, 0);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	cr_assert_eq(bind(closed_port, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(closed_port, (struct sockaddr *)&a, &al), 0);
	tcp_details(details, ntohs(a.sin_port));

	server_start(0);
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_not_null(cfg);
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", S.srv.port, &tls), RDMX_OK);
	cr_assert_rc(rdmx_tls_conn_recv_wait(tls, &f, &len, 10000), RDMX_OK); /* its hello */
	msgpack_sbuffer_init(&app);
	pack_rpc_hello(&app);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 7);
	pack_key(&pk, 1);
	msgpack_pack_str_with_body(&pk, "bootstrap", 9);
	pack_key(&pk, 3);
	msgpack_pack_uint32(&pk, 3);
	pack_key(&pk, 4);
	msgpack_pack_str_with_body(&pk, "never-dials", 11);
	pack_key(&pk, 5);
	msgpack_pack_str_with_body(&pk, "tcp", 3);
	pack_key(&pk, 6);
	msgpack_pack_uint32(&pk, 0); /* sealed */
	pack_key(&pk, 7);
	msgpack_pack_bin_with_body(&pk, details, sizeof(details));
	pack_key(&pk, 8);
	msgpack_pack_bin_with_body(&pk, app.data, app.size);
	cr_assert_rc(rdmx_tls_conn_send_wait(tls, sb.data, sb.size, 10000), RDMX_OK);
	msgpack_sbuffer_destroy(&sb);
	msgpack_sbuffer_destroy(&app);
	/* the answer (accepted, the server's details), then the session ends */
	cr_assert_rc(rdmx_tls_conn_recv_wait(tls, &f, &len, 10000), RDMX_OK);
	rc = rdmx_tls_conn_recv_wait(tls, &f, &len, 20000);
	cr_assert(rc < 0 && rc != RDMX_E_TIMEDOUT,
	          "the session outlived its failed data connection (%s; guard)", rdmx_err_name(rc));
	cr_assert(tls_test_log_contains("rpc_secure: client client.test (peer 127.0.0.1:"));
	cr_assert(tls_test_log_contains("dropped: its data connection did not come up"));
	rdmx_tls_conn_destroy(&tls);
	rdmx_tls_config_destroy(&cfg);
	close(closed_port);
	/* others are served */
	cr_assert_rc(connect_as("client2", &good), RDMX_OK);
	cr_assert_eq(call_echo(good), RDMX_RPC_OK);
	rdmx_rpc_secure_close(&good);
	server_stop();
}
