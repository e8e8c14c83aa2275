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
