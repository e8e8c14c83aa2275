/* Secure RPC end to end (rdmx/rpc_secure.h), on the devices of the
 * environment (rpcsec_fix.h: tcp here, rxe0/rxe1 in the Soft-RoCE guest):
 * a service registers with a real rdmx-bootstrapd, a caller finds it through
 * the registry client API, connects with rdmx_rpc_secure_connect and
 * calls it over the engine; refused certificates get no engine details; the
 * TLS session is the liveness channel both ways. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <criterion/criterion.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdmx/channel.h>
#include <rdmx/ctx.h>
#include <rdmx/pe.h>
#include <rdmx/registry.h>
#include <rdmx/rpc_stream.h>

#include "rpcsec_fix.h"
#include "test_child.h"

TestSuite(rpc_secure, .init = fix_setup, .fini = fix_teardown, .timeout = 180);

static uint32_t id_echo, id_hold;

static void ids(void)
{
	id_echo = rdmx_rpc_method_id(FIX_ECHO);
	id_hold = rdmx_rpc_method_id(FIX_HOLD);
}

/* Looks FIX_SERVICE up at the registry: host and port of its one member. */
static void discover(uint16_t bsd_port, char *host, size_t host_len, uint16_t *port)
{
	struct rdmx_tls_config *cfg = fix_registry_config("client");
	struct rdmx_registry_client *reg = NULL;
	struct rdmx_registry_members *m = NULL;
	const char *colon;

	cr_assert_rc(rdmx_registry_client_connect(fix_addr(), bsd_port, cfg, &reg), RDMX_OK);
	cr_assert_rc(rdmx_registry_client_lookup(reg, FIX_SERVICE, &m), RDMX_OK);
	cr_assert_eq(m->count, 1, "%zu members of %s", m->count, FIX_SERVICE);
	cr_assert_str_eq(m->items[0].owner, "client2.test");
	cr_assert_eq(m->items[0].n_meta, 1);
	cr_assert_str_eq(m->items[0].meta[0].value, "rdmx-rpc");
	colon = strrchr(m->items[0].endpoint, ':');
	cr_assert_not_null(colon, "endpoint %s", m->items[0].endpoint);
	cr_assert_lt((size_t)(colon - m->items[0].endpoint), host_len);
	snprintf(host, host_len, "%.*s", (int)(colon - m->items[0].endpoint), m->items[0].endpoint);
	*port = (uint16_t)atoi(colon + 1);
	rdmx_registry_members_free(&m);
	rdmx_registry_client_destroy(&reg);
	rdmx_tls_config_destroy(&cfg);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31u + seed);
}

#define EP(sc) rdmx_rpc_secure_conn_get_ep(sc)

static void echo_ok(struct rdmx_rpc_ep *ep, size_t len, unsigned seed)
{
	struct rdmx_rpc_reply reply;
	struct rdmx_rpc_payload req;
	uint8_t *buf = malloc(len ? len : 1);

	cr_assert_not_null(buf);
	fill(buf, len, seed);
	req = rdmx_rpc_bytes(buf, len);
	cr_assert_rc(rdmx_rpc_call(ep, id_echo, &req, NULL, &reply), RDMX_OK);
	cr_assert_eq(reply.code, RDMX_RPC_OK, "echo of %zu bytes: %s %s", len,
	             rdmx_rpc_code_name(reply.code), reply.message ? reply.message : "");
	cr_assert_eq(reply.len, len);
	cr_assert(len == 0 || memcmp(reply.data, buf, len) == 0, "echo of %zu bytes differs", len);
	rdmx_rpc_reply_fini(&reply);
	free(buf);
}

static int one_connected(const struct fix_server_stats *st)
{
	return st->connected == 1;
}

static int one_gone(const struct fix_server_stats *st)
{
	return st->gone == 1;
}

static int one_held(const struct fix_server_stats *st)
{
	return st->held == 1;
}

/* The server released the client and its held call was cancelled (the
 * release cancels what the endpoint holds before gone runs; a reader that
 * waits for both does not depend on that order). */
static int gone_and_cancelled(const struct fix_server_stats *st)
{
	return st->gone == 1 && st->held == 0;
}

/* ---- async calls ---- */

struct pending {
	int done;
	enum rdmx_rpc_code code;
	char message[128];
};

static void pending_done(const struct rdmx_rpc_result *res, void *arg)
{
	struct pending *p = arg;

	p->done++;
	p->code = res->code;
	snprintf(p->message, sizeof(p->message), "%s", res->message ? res->message : "");
}

/* Drives the endpoint until cond or the guard. */
#define drive_until(sc, cond, guard_ms)                                                            \
	do {                                                                                       \
		struct rdmx_chan_worker *h_ = rdmx_chan_get_worker(rdmx_rpc_ep_get_chan(EP(sc)));  \
		int64_t end_ = fix_now_ms() + (guard_ms);                                          \
		while (!(cond) && fix_now_ms() < end_)                                             \
			rdmx_chan_worker_wait(h_, 10);                                             \
		cr_assert((cond), "timed out waiting for %s", #cond);                              \
	} while (0)

static struct rdmx_rpc_secure_conn *connect_ok(struct rdmx_tls_config *cfg)
{
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *sc = NULL;

	fix_client_opts(&o);
	cr_assert_rc(rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, NULL, &o, &sc),
	             RDMX_OK);
	cr_assert_not_null(sc);
	cr_assert(fix_server_wait(one_connected, 10000), "server never saw the client");
	return sc;
}

/* ---- end to end ---- */

Test(rpc_secure, registry_discovery_then_calls_over_the_engine)
{
	static const size_t sizes[] = {0, 1, 100, 4000, 8176, 8177, 65536, 300000};
	struct fix_server_stats st;
	struct fix_bsd bsd = {0};
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *sc = NULL;
	struct pending p[64];
	struct rdmx_rpc_stats rs;
	const char *cert, *hello;
	char host[64];
	uint16_t port = 0;
	int wants = 0;

	ids();
	fix_bsd_start(&bsd);
	fix_server_start("client.test", bsd.port);
	discover(bsd.port, host, sizeof(host), &port);
	cr_assert_eq(port, fix_server_port());

	cfg = fix_client_config("client", "client2.test");
	fix_client_opts(&o);
	cr_assert_rc(rdmx_rpc_secure_connect(host, port, cfg, NULL, &o, &sc), RDMX_OK);
	cr_assert_eq(rdmx_chan_get_state(rdmx_rpc_ep_get_chan(EP(sc))), RDMX_CHAN_READY);
	cr_assert_rc(rdmx_rpc_secure_get_peer_names(sc, &cert, &hello), RDMX_OK);
	cr_assert_str_eq(cert, "client2.test");
	cr_assert_str_eq(hello, FIX_SERVER_HELLO);
	cr_assert(fix_server_wait(one_connected, 10000));
	fix_server_stats(&st);
	cr_assert_eq(st.accepts, 1);
	cr_assert_str_eq(st.cert, "client.test");
	cr_assert_str_eq(st.hello, FIX_CLIENT_HELLO);

	/* blocking calls: eager and rendezvous sizes around the 8 KiB slot */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		echo_ok(EP(sc), sizes[i], (unsigned)i);

	/* pipelined calls */
	memset(p, 0, sizeof(p));
	for (int i = 0; i < 64; i++) {
		char msg[32];
		struct rdmx_rpc_payload req;

		snprintf(msg, sizeof(msg), "call %d", i);
		req = rdmx_rpc_bytes(msg, strlen(msg));
		cr_assert_rc(
		    rdmx_rpc_call_async(EP(sc), id_echo, &req, NULL, pending_done, &p[i], NULL),
		    RDMX_OK);
	}
	for (int i = 0; i < 64; i++) {
		drive_until(sc, p[i].done, 10000);
		cr_assert_eq(p[i].done, 1);
		cr_assert_eq(p[i].code, RDMX_RPC_OK);
	}
	cr_assert_rc(rdmx_rpc_ep_get_stats(EP(sc), RDMX_RPC_ROLE_CLIENT, &rs), RDMX_OK);
	cr_assert_eq(rs.calls, 64 + sizeof(sizes) / sizeof(sizes[0]));
	cr_assert_eq(rs.by_code[RDMX_RPC_OK], rs.calls);
	cr_assert_gt(rs.rendezvous, 0, "no message went by rendezvous");
	cr_assert_rc(rdmx_rpc_secure_check(sc), RDMX_OK);
	cr_assert_rc(rdmx_rpc_secure_check_wants(sc, &wants), RDMX_OK);
	cr_assert_eq(wants, RDMX_TLS_WANT_READ, "an idle session waits for its peer: %d", wants);

	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	cr_assert_null(sc);
	cr_assert(fix_server_wait(one_gone, 30000), "the server did not release the client");
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK); /* NULL: no-op */
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
	fix_bsd_stop(&bsd);
}

static int none_held(const struct fix_server_stats *st)
{
	return st->gone == st->connected;
}

/* Dead sessions are freed on a path the loop cannot starve: with an event
 * pending at every iteration (libev then never runs idle watchers), clients
 * that leave are still released, one after the other. */
Test(rpc_secure, dead_sessions_are_released_while_events_are_pending)
{
	struct rdmx_tls_config *cfg;
	struct fix_server_stats st;

	ids();
	fix_server_start("client.test", 0);
	fix_server_cmd(FIX_CMD_BUSY);
	cfg = fix_client_config("client", "client2.test");
	for (int i = 0; i < 3; i++) {
		struct rdmx_rpc_secure_opts o;
		struct rdmx_rpc_secure_conn *sc = NULL;

		fix_client_opts(&o);
		cr_assert_rc(
		    rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, NULL, &o, &sc),
		    RDMX_OK);
		echo_ok(EP(sc), 100, (unsigned)i);
		cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
		cr_assert(fix_server_wait(none_held, 20000),
		          "the server did not release client %d while events were pending", i);
	}
	fix_server_stats(&st);
	cr_assert_eq(st.connected, 3);
	cr_assert_eq(st.gone, 3);
	/* a client that closes its session is an ordinary end: no warning that
	 * its control channel was lost */
	cr_assert(!tls_test_log_contains(" lost ("), "a normal disconnect was logged as a loss");
	fix_server_cmd(FIX_CMD_CALM);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

Test(rpc_secure, a_shared_progress_engine_drives_two_connections)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *a = NULL, *b = NULL;
	struct rdmx_pe *pe = NULL;

	ids();
	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	cr_assert_rc(rdmx_pe_create(&pe), RDMX_OK);
	fix_client_opts(&o);
	cr_assert_rc(rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, pe, &o, &a),
	             RDMX_OK);
	cr_assert_rc(rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, pe, &o, &b),
	             RDMX_OK);
	echo_ok(EP(a), 10, 1);
	echo_ok(EP(b), 20000, 2);
	echo_ok(EP(a), 20000, 3);
	cr_assert_rc(rdmx_rpc_secure_close(&a), RDMX_OK);
	echo_ok(EP(b), 10, 4);
	cr_assert_rc(rdmx_rpc_secure_close(&b), RDMX_OK);
	cr_assert_rc(rdmx_pe_destroy(&pe), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

/* ---- refusals ---- */

/* A raw TLS client with `name`'s certificate must get no frame from the
 * server, not even its bootstrap hello (the server speaks first, and only to
 * a client it accepted), only the refusal. */
static void raw_refused(const char *name)
{
	struct rdmx_tls_config *cfg = fix_client_config(name, "client2.test");
	struct rdmx_tls_conn *conn = NULL;
	const void *frame = NULL;
	size_t len = 0;
	int ret;

	ret = rdmx_tls_connect(cfg, fix_addr(), fix_server_port(), &conn);
	if (ret == RDMX_OK) {
		/* TLS 1.3: our side finished; the server judges us now */
		ret = rdmx_tls_conn_recv_wait(conn, &frame, &len, 5000);
		cr_assert_lt(ret, 0, "%s got a frame of %zu bytes from the server", name, len);
	}
	cr_assert(ret == RDMX_E_AUTH || ret == RDMX_E_DISCONNECTED || ret == RDMX_E_PROVIDER,
	          "%s: %s", name, rdmx_err_name(ret));
	rdmx_tls_conn_destroy(&conn);
	rdmx_tls_config_destroy(&cfg);
}

Test(rpc_secure, wrong_certificates_are_refused_before_any_engine_detail)
{
	static const char *const bad[] = {"foreign", "wrongsan", "selfsigned", "expired"};
	struct fix_server_stats st;
	struct rdmx_rpc_secure_conn *sc = NULL;

	ids();
	fix_server_start("client.test", 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rdmx_tls_config *cfg = fix_client_config(bad[i], "client2.test");
		struct rdmx_rpc_secure_opts o;

		fix_client_opts(&o);
		cr_assert_rc(
		    rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, NULL, &o, &sc),
		    RDMX_E_AUTH);
		cr_assert_null(sc);
		rdmx_tls_config_destroy(&cfg);
		raw_refused(bad[i]);
	}
	/* a good certificate of the cluster, but not one this server allows */
	raw_refused("client2");
	fix_server_stats(&st);
	cr_assert_eq(st.accepts, 0, "the server considered a refused client");
	cr_assert_eq(st.connected, 0);

	/* and the server still serves a good one */
	{
		struct rdmx_tls_config *cfg = fix_client_config("client", "client2.test");

		sc = connect_ok(cfg);
		echo_ok(EP(sc), 5, 0);
		cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
		rdmx_tls_config_destroy(&cfg);
	}
	fix_server_stop();
}

Test(rpc_secure, the_client_refuses_a_server_its_allow_list_does_not_name)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *sc = NULL;
	struct fix_server_stats st;

	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "other.test");
	fix_client_opts(&o);
	cr_assert_rc(rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, NULL, &o, &sc),
	             RDMX_E_AUTH);
	cr_assert_null(sc);
	fix_server_stats(&st);
	cr_assert_eq(st.accepts, 0);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

Test(rpc_secure, the_application_may_refuse_a_client)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *sc = NULL;
	struct fix_server_stats st;

	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	fix_client_opts(&o);
	o.name = "refuse-me";
	cr_assert_rc(rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, NULL, &o, &sc),
	             RDMX_E_CONN_REFUSED);
	cr_assert_null(sc);
	fix_server_stats(&st);
	cr_assert_eq(st.accepts, 1);
	cr_assert_eq(st.connected, 0);
	cr_assert(tls_test_log_contains("refused by the application"));
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

/* The certificate name is the peer's text (a CA-signed name that an
 * allow-list of "*" lets in may hold any byte but NUL): the refusal's log
 * line escapes it, so that it cannot end the line or forge one. */
Test(rpc_secure, a_refused_client_name_is_logged_escaped)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *sc = NULL;

	fix_server_start("*", 0);
	cfg = fix_client_config("ctlsan", "client2.test");
	fix_client_opts(&o);
	o.name = "refuse-me";
	cr_assert_rc(rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, NULL, &o, &sc),
	             RDMX_E_CONN_REFUSED);
	cr_assert_null(sc);
	cr_assert(tls_test_log_contains("client evil\\x1b[2K\\x0ardmx: forged.example (refuse-me) "
	                                "refused by the application"));
	cr_assert(!tls_test_log_contains("\x1b") && !tls_test_log_contains("\nrdmx: forged"));
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

Test(rpc_secure, bad_arguments)
{
	struct rdmx_tls_config *cfg = fix_client_config("client", "client2.test");
	struct rdmx_rpc_secure_opts o;
	struct rdmx_rpc_secure_conn *sc = NULL;
	int fd;

	rdmx_rpc_secure_opts_init(&o);
	cr_assert_rc(rdmx_rpc_secure_connect(NULL, 1, cfg, NULL, &o, &sc), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_connect("h", 1, NULL, NULL, &o, &sc), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_connect("h", 1, cfg, NULL, &o, NULL), RDMX_E_INVAL);
	o.slot_size = 100; /* not a multiple of 64 */
	cr_assert_rc(rdmx_rpc_secure_connect("h", 1, cfg, NULL, &o, &sc), RDMX_E_INVAL);
	rdmx_rpc_secure_opts_init(&o);
	o.name = "bad name";
	cr_assert_rc(rdmx_rpc_secure_connect("127.0.0.1", 1, cfg, NULL, &o, &sc), RDMX_E_INVAL);
	cr_assert_null(sc);
	cr_assert_rc(rdmx_rpc_secure_close(NULL), RDMX_OK);
	cr_assert_rc(rdmx_rpc_secure_check(NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_check_wants(NULL, &fd), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_get_fd(NULL, &fd), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_server_destroy(NULL), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
}

/* ---- liveness ---- */

#define KILLER_WAIT_MS 10000 /* a failure guard, not a timing check */
struct killer {
	pthread_t thread;
	int fd;
	bool held; /* the server held the call before the kill */
};

/* Waits until the server holds the call, then breaks the client's TLS
 * session under the blocked caller: its read side only, so that only the
 * client's own liveness check can notice. Past the wait's guard it breaks
 * it all the same: the blocked call returns, and killer_join fails the
 * test saying why (instead of the call hanging until the suite's timeout). */
static void *kill_client_tls(void *arg)
{
	struct killer *k = arg;

	k->held = fix_server_wait(one_held, KILLER_WAIT_MS);
	shutdown(k->fd, SHUT_RD);
	return NULL;
}

static void killer_start(struct killer *k, struct rdmx_rpc_secure_conn *sc)
{
	k->held = false;
	cr_assert_rc(rdmx_rpc_secure_get_fd(sc, &k->fd), RDMX_OK);
	cr_assert_eq(pthread_create(&k->thread, NULL, kill_client_tls, k), 0);
}

/* Once the blocked call returned, before its result is checked (which says
 * nothing when the killer's wait ran out). */
static void killer_join(struct killer *k)
{
	pthread_join(k->thread, NULL);
	cr_assert(k->held,
	          "the server did not hold the call within the killer's wait (%d ms): the "
	          "session was broken anyway to end the blocked call",
	          KILLER_WAIT_MS);
}

Test(rpc_secure, client_tls_loss_fails_a_blocked_call_unavailable)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct rdmx_rpc_reply reply;
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("x", 1);
	struct killer k;
	struct fix_server_stats st;
	int fd, rc;

	ids();
	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	sc = connect_ok(cfg);
	echo_ok(EP(sc), 10, 0);
	killer_start(&k, sc);
	rc = rdmx_rpc_call(EP(sc), id_hold, &req, NULL, &reply);
	killer_join(&k);
	cr_assert_rc(rc, RDMX_OK);
	cr_assert_eq(reply.code, RDMX_RPC_UNAVAILABLE, "%s %s", rdmx_rpc_code_name(reply.code),
	             reply.message ? reply.message : "");
	rdmx_rpc_reply_fini(&reply);
	cr_assert_lt(rdmx_rpc_secure_check(sc), 0);
	{
		/* the client's own check found it (the server was not told) */
		char line[128];

		snprintf(line, sizeof(line), "control channel to %s:%u ", fix_addr(),
		         fix_server_port());
		cr_assert(tls_test_log_contains(line), "no client liveness log line '%s'", line);
	}
	/* the engine connection went: the server released its endpoint and
	 * cancelled the held call */
	fix_server_wait(gone_and_cancelled, 10000);
	fix_server_stats(&st);
	cr_assert_eq(st.gone, 1, "the server did not release the client");
	cr_assert_eq(st.held, 0, "the held call was not cancelled on the server");
	/* no new call goes out on a dead endpoint */
	cr_assert(rdmx_rpc_call(EP(sc), id_echo, &req, NULL, &reply) < 0 ||
	          reply.code == RDMX_RPC_UNAVAILABLE);
	rdmx_rpc_reply_fini(&reply);
	cr_assert_rc(rdmx_rpc_secure_get_fd(sc, &fd), RDMX_E_BAD_STATE);
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

/* The server released its one client, which held one call: that call's
 * cancel callback ran once, before gone, so never on the connection state
 * that gone frees (the fixture's per-connection record). A command on the
 * loop first: the release that counted gone has returned, so a cancel it
 * ran after gone is counted too. */
static void check_cancelled_before_gone(const struct fix_server_stats *st)
{
	cr_assert_eq(st->gone, 1, "the server did not release the client");
	cr_assert_eq(st->gone_holding, 0, "gone ran while the connection still held its call");
	cr_assert_eq(st->late_cancels, 0, "a cancel callback ran after gone");
	cr_assert_eq(st->cancels, 1, "the held call was cancelled %d times", st->cancels);
	cr_assert_eq(st->held, 0);
}

static void released_after_cancel(void)
{
	struct fix_server_stats st;

	cr_assert(fix_server_wait(one_gone, 10000), "the server did not release the client");
	fix_server_cmd(FIX_CMD_CALM); /* a no-op: the loop went round */
	fix_server_stats(&st);
	check_cancelled_before_gone(&st);
}

/* The client's TLS session dies under a held call: the server is told by
 * the session (its release may run before its engine connection's end is
 * seen, as on verbs) or by the engine connection; either way the held
 * call's cancel callback runs before gone. */
Test(rpc_secure, client_loss_cancels_a_held_call_before_gone)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct rdmx_rpc_reply reply;
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("c", 1);
	struct killer k;
	int rc;

	ids();
	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	sc = connect_ok(cfg);
	killer_start(&k, sc);
	rc = rdmx_rpc_call(EP(sc), id_hold, &req, NULL, &reply);
	killer_join(&k);
	cr_assert_rc(rc, RDMX_OK);
	cr_assert_eq(reply.code, RDMX_RPC_UNAVAILABLE, "%s", rdmx_rpc_code_name(reply.code));
	rdmx_rpc_reply_fini(&reply);
	released_after_cancel();
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

/* A server started, a client connected, and one call of it held by the
 * server (id_hold): the test then takes the connection away. */
static struct rdmx_rpc_secure_conn *
start_holding(struct rdmx_tls_config **cfg, const struct rdmx_rpc_payload *req, struct pending *p)
{
	struct rdmx_rpc_secure_conn *sc;
	struct fix_server_stats st;

	ids();
	fix_server_start("client.test", 0);
	*cfg = fix_client_config("client", "client2.test");
	sc = connect_ok(*cfg);
	memset(p, 0, sizeof(*p));
	cr_assert_rc(rdmx_rpc_call_async(EP(sc), id_hold, req, NULL, pending_done, p, NULL),
	             RDMX_OK);
	drive_until(sc, (fix_server_stats(&st), st.held == 1), 10000);
	return sc;
}

/* The server's own TLS session to the client is lost (its read side only:
 * its liveness watch finds it): the server releases the client while the
 * engine connection it has just disconnected may still be up, the case of
 * verbs, where the engine's end comes later. The held call's cancel
 * callback still runs before gone. */
Test(rpc_secure, server_tls_loss_cancels_a_held_call_before_gone)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("s", 1);
	struct pending p;

	sc = start_holding(&cfg, &req, &p);
	fix_server_cmd(FIX_CMD_KILL_TLS);
	released_after_cancel();
	drive_until(sc, p.done, 10000);
	cr_assert_eq(p.code, RDMX_RPC_UNAVAILABLE, "%s %s", rdmx_rpc_code_name(p.code), p.message);
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

/* Destroying the server releases a live client, its channel still up: the
 * call it holds is cancelled before gone. */
Test(rpc_secure, server_destroy_cancels_a_held_call_before_gone)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("d", 1);
	struct pending p;
	struct fix_server_stats st;

	sc = start_holding(&cfg, &req, &p);
	fix_server_stop_stats(&st);
	check_cancelled_before_gone(&st);
	cr_assert_eq(st.gone_status, RDMX_E_CANCELED, "%s", rdmx_err_name(st.gone_status));
	drive_until(sc, p.done, 10000);
	cr_assert_eq(p.code, RDMX_RPC_UNAVAILABLE, "%s %s", rdmx_rpc_code_name(p.code), p.message);
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
}

/* ---- streams the server holds open when it releases the client ---- */

struct cli_stream {
	struct rdmx_rpc_stream *s;
	int done;
	enum rdmx_rpc_code code;
};

static void cli_stream_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	(void)s;
	(void)data;
	(void)len;
	(void)arg;
}

static void cli_stream_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st,
                            void *arg)
{
	struct cli_stream *c = arg;

	(void)s;
	c->done++;
	c->code = st->code;
}

/* A server-streaming stream (its request sent, half-closed) and a bidi one
 * (one message, still open both ways), both accepted and held open by the
 * server. */
static void open_held_streams(struct rdmx_rpc_secure_conn *sc, struct cli_stream *v)
{
	static const struct rdmx_rpc_stream_cbs cbs = {.on_msg = cli_stream_msg,
	                                               .on_done = cli_stream_done};
	struct rdmx_rpc_payload msg = rdmx_rpc_bytes("w", 1);
	struct fix_server_stats st;

	memset(v, 0, 2 * sizeof(*v));
	cr_assert_rc(rdmx_rpc_stream_open(EP(sc), rdmx_rpc_method_id(FIX_WATCH),
	                                  RDMX_RPC_SERVER_STREAMING, NULL, &cbs, &v[0], &v[0].s),
	             RDMX_OK);
	cr_assert_rc(rdmx_rpc_stream_write(v[0].s, &msg), RDMX_OK);
	cr_assert_rc(rdmx_rpc_stream_half_close(v[0].s), RDMX_OK);
	cr_assert_rc(rdmx_rpc_stream_open(EP(sc), rdmx_rpc_method_id(FIX_CHAT),
	                                  RDMX_RPC_BIDI_STREAMING, NULL, &cbs, &v[1], &v[1].s),
	             RDMX_OK);
	cr_assert_rc(rdmx_rpc_stream_write(v[1].s, &msg), RDMX_OK);
	drive_until(sc, (fix_server_stats(&st), st.streams == 2), 10000);
}

/* The server released its one client, which had two streams open on it:
 * each stream's on_done ran once on the server, before gone, so never on
 * the connection state that gone frees. */
static void check_streams_ended_before_gone(const struct fix_server_stats *st)
{
	cr_assert_eq(st->gone, 1, "the server did not release the client");
	cr_assert_eq(st->gone_streaming, 0, "gone ran while the connection still had a stream");
	cr_assert_eq(st->late_stream_ends, 0, "a stream's on_done ran after gone");
	cr_assert_eq(st->stream_ends, 2, "2 streams ended %d times", st->stream_ends);
	cr_assert_eq(st->streams, 0);
	cr_assert_eq(st->stream_code, RDMX_RPC_UNAVAILABLE, "%s",
	             rdmx_rpc_code_name((enum rdmx_rpc_code)st->stream_code));
}

/* On the client both streams end once, UNAVAILABLE (the connection). */
static void check_client_streams_ended(struct rdmx_rpc_secure_conn *sc, struct cli_stream *v)
{
	drive_until(sc, v[0].done && v[1].done, 10000);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(v[i].done, 1, "client stream %d ended %d times", i, v[i].done);
		cr_assert_eq(v[i].code, RDMX_RPC_UNAVAILABLE, "client stream %d: %s", i,
		             rdmx_rpc_code_name(v[i].code));
	}
}

/* As server_tls_loss_cancels_a_held_call_before_gone, with streams: the
 * server, released while its engine connection may still be up, ends the
 * streams it holds before gone. */
Test(rpc_secure, server_tls_loss_ends_held_streams_before_gone)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct cli_stream v[2];
	struct fix_server_stats st;

	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	sc = connect_ok(cfg);
	open_held_streams(sc, v);
	fix_server_cmd(FIX_CMD_KILL_TLS);
	cr_assert(fix_server_wait(one_gone, 10000), "the server did not release the client");
	fix_server_cmd(FIX_CMD_CALM); /* a no-op: the release has returned */
	fix_server_stats(&st);
	check_streams_ended_before_gone(&st);
	check_client_streams_ended(sc, v);
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

/* Destroying the server releases a live client with streams open on it:
 * they end before gone. */
Test(rpc_secure, server_destroy_ends_held_streams_before_gone)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct cli_stream v[2];
	struct fix_server_stats st;

	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	sc = connect_ok(cfg);
	open_held_streams(sc, v);
	fix_server_stop_stats(&st);
	check_streams_ended_before_gone(&st);
	cr_assert_eq(st.gone_status, RDMX_E_CANCELED, "%s", rdmx_err_name(st.gone_status));
	check_client_streams_ended(sc, v);
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
}

/* ---- a client that ends while the server is being destroyed ---- */

static struct {
	int runs;   /* gone callbacks the hook saw */
	int closed; /* it ended the other client: that channel closed */
} ender;

/* Gone hook, on the loop thread: at the first release (inside the server's
 * destroy) ends another client's engine connection and drives the
 * server's engine until that client's channel has closed, as an
 * application whose gone callback makes a blocking call would drive it.
 * The server hears of the end there: it marks that session dead, from
 * inside its destroy. */
static void end_another_client(struct rdmx_rpc_secure_server *srv,
                               struct rdmx_rpc_secure_conn *conn)
{
	struct rdmx_rpc_secure_conn *other = fix_server_other_conn(conn);
	struct rdmx_chan_worker *worker = rdmx_rpc_secure_server_get_worker(srv);
	struct rdmx_chan *chan;
	struct rdmx_conn *ec;
	int64_t end = fix_now_ms() + 10000;

	if (ender.runs++ || !other)
		return;
	chan = rdmx_rpc_ep_get_chan(rdmx_rpc_secure_conn_get_ep(other));
	ec = chan ? rdmx_chan_get_conn(chan) : NULL;
	if (!ec || rdmx_conn_disconnect(ec))
		return;
	while (rdmx_chan_get_state(chan) != RDMX_CHAN_CLOSED && fix_now_ms() < end)
		rdmx_chan_worker_wait(worker, 10);
	ender.closed = rdmx_chan_get_state(chan) == RDMX_CHAN_CLOSED;
}

static int two_connected(const struct fix_server_stats *st)
{
	return st->connected == 2;
}

/* A session marked dead while the server's destroy releases the others
 * must not restart the server's reaper (a libev prepare watcher inside the
 * server): the destroy frees it, and the fixture's teardown then runs one
 * more loop iteration, where a watcher left active would run on freed
 * memory (reported by the RDMX_SANITIZE build; a plain build does not see
 * it). Both clients are released once, by the destroy. */
Test(rpc_secure, a_client_ending_during_the_server_destroy_leaves_no_watcher)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc[2];
	struct rdmx_rpc_secure_opts o;
	struct fix_server_stats st;

	memset(&ender, 0, sizeof(ender));
	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	sc[0] = connect_ok(cfg);
	fix_client_opts(&o);
	cr_assert_rc(rdmx_rpc_secure_connect(fix_addr(), fix_server_port(), cfg, NULL, &o, &sc[1]),
	             RDMX_OK);
	cr_assert(fix_server_wait(two_connected, 10000), "server never saw the second client");
	fix_server_set_gone_hook(end_another_client);
	fix_server_stop_stats(&st); /* the loop thread has ended: ender is ours */
	cr_assert_eq(ender.runs, 2);
	cr_assert(ender.closed, "the hook did not end the other client during the destroy");
	cr_assert_eq(st.gone, 2, "%d gone callbacks", st.gone);
	for (int i = 0; i < 2; i++)
		cr_assert_rc(rdmx_rpc_secure_close(&sc[i]), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
}

Test(rpc_secure, server_tls_loss_fails_pending_calls_unavailable)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("y", 1);
	struct pending p[4];
	struct fix_server_stats st;
	int fd;

	ids();
	fix_server_start("client.test", 0);
	cfg = fix_client_config("client", "client2.test");
	sc = connect_ok(cfg);
	memset(p, 0, sizeof(p));
	cr_assert_rc(rdmx_rpc_call_async(EP(sc), id_hold, &req, NULL, pending_done, &p[0], NULL),
	             RDMX_OK);
	drive_until(sc, (fix_server_stats(&st), st.held == 1), 10000);
	fix_server_cmd(FIX_CMD_KILL_TLS);
	drive_until(sc, p[0].done, 10000);
	cr_assert_eq(p[0].done, 1);
	cr_assert_eq(p[0].code, RDMX_RPC_UNAVAILABLE, "%s %s", rdmx_rpc_code_name(p[0].code),
	             p[0].message);
	cr_assert(fix_server_wait(one_gone, 10000));
	fix_server_stats(&st);
	cr_assert_lt(st.gone_status, 0);
	cr_assert_eq(st.held, 0);
	/* the engine connection ended: the client closed its TLS session too */
	drive_until(sc, rdmx_rpc_secure_get_fd(sc, &fd) == RDMX_E_BAD_STATE, 10000);
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

Test(rpc_secure, engine_loss_closes_the_tls_session)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_rpc_secure_conn *sc;
	struct rdmx_rpc_payload req = rdmx_rpc_bytes("z", 1);
	struct pending p;
	int fd;

	sc = start_holding(&cfg, &req, &p);
	/* the server disconnects the RDMA side only */
	fix_server_cmd(FIX_CMD_KILL_RDMA);
	drive_until(sc, p.done, 10000);
	cr_assert_eq(p.code, RDMX_RPC_UNAVAILABLE);
	drive_until(sc, rdmx_rpc_secure_get_fd(sc, &fd) == RDMX_E_BAD_STATE, 10000);
	cr_assert_lt(rdmx_rpc_secure_check(sc), 0);
	cr_assert(fix_server_wait(one_gone, 10000));
	cr_assert_rc(rdmx_rpc_secure_close(&sc), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
	fix_server_stop();
}

/* ---- registry keeper: membership from its own thread ---- */

struct keeper_log {
	pthread_mutex_t lock;
	int joins, losses;
};

static void keeper_cb(struct rdmx_registry_keeper *k, uint64_t member, int status, void *arg)
{
	struct keeper_log *l = arg;

	(void)k;
	(void)status;
	pthread_mutex_lock(&l->lock);
	if (member)
		l->joins++;
	else
		l->losses++;
	pthread_mutex_unlock(&l->lock);
}

static int keeper_count(struct keeper_log *l, int joins)
{
	int n;

	pthread_mutex_lock(&l->lock);
	n = joins ? l->joins : l->losses;
	pthread_mutex_unlock(&l->lock);
	return n;
}

/* A frozen registry (SIGSTOP) costs the keeper its membership for a while,
 * never its caller's thread; after SIGCONT it joins again by itself, and
 * stopping it is bounded by its timeout. */
Test(rpc_secure, registry_keeper_rides_out_a_frozen_registry)
{
	struct keeper_log log = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
	struct rdmx_registry_keeper_opts ko;
	struct rdmx_registry_keeper *k = NULL;
	struct rdmx_tls_config *cfg;
	struct fix_bsd bsd = {0};
	int64_t t0, end;

	fix_bsd_start(&bsd);
	cfg = fix_registry_config("client2");
	rdmx_registry_keeper_opts_init(&ko);
	ko.host = fix_addr();
	ko.port = bsd.port;
	ko.cfg = cfg;
	ko.service = FIX_SERVICE;
	ko.endpoint = "127.0.0.1:1";
	ko.ttl_ms = 1000; /* the daemon's minimum: a heartbeat every 333 ms */
	ko.timeout_ms = 300;
	ko.backoff_min_ms = 50;
	ko.backoff_max_ms = 400;
	ko.cb = keeper_cb;
	ko.arg = &log;
	cr_assert_rc(rdmx_registry_keeper_start(&ko, &k), RDMX_OK);
	cr_assert_neq(rdmx_registry_keeper_get_member(k), 0);
	cr_assert_eq(keeper_count(&log, 1), 1);

	cr_assert_eq(test_child_signal(bsd.pid, SIGSTOP), 0);
	end = fix_now_ms() + 20000;
	while (rdmx_registry_keeper_get_failures(k) < 2 && fix_now_ms() < end)
		usleep(10000); /* the caller's thread is free all along */
	cr_assert_geq(rdmx_registry_keeper_get_failures(k), 2, "no failed heartbeat (guard)");
	cr_assert_geq(keeper_count(&log, 0), 1);
	cr_assert_eq(test_child_signal(bsd.pid, SIGCONT), 0);
	end = fix_now_ms() + 20000;
	while (keeper_count(&log, 1) < 2 && fix_now_ms() < end)
		usleep(10000);
	cr_assert_geq(keeper_count(&log, 1), 2, "the keeper did not join again (guard)");
	cr_assert_neq(rdmx_registry_keeper_get_member(k), 0);

	/* frozen again: stop waits at most for the request in flight */
	cr_assert_eq(test_child_signal(bsd.pid, SIGSTOP), 0);
	t0 = fix_now_ms();
	cr_assert_rc(rdmx_registry_keeper_stop(&k), RDMX_OK);
	cr_assert_null(k);
	cr_assert_lt(fix_now_ms() - t0, 5000, "stop took %lld ms", (long long)(fix_now_ms() - t0));
	cr_assert_rc(rdmx_registry_keeper_stop(&k), RDMX_OK); /* NULL: no-op */
	rdmx_tls_config_destroy(&cfg);
	fix_bsd_stop(&bsd);
}

Test(rpc_secure, registry_keeper_checks_its_options)
{
	struct rdmx_registry_keeper_opts ko;
	struct rdmx_registry_keeper *k = NULL;
	struct rdmx_tls_config *cfg = fix_registry_config("client2");

	rdmx_registry_keeper_opts_init(&ko);
	cr_assert_rc(rdmx_registry_keeper_start(&ko, &k), RDMX_E_INVAL);
	ko.host = fix_addr();
	ko.port = 1;
	ko.cfg = cfg;
	ko.service = "bad service";
	ko.endpoint = "h:1";
	cr_assert_rc(rdmx_registry_keeper_start(&ko, &k), RDMX_E_INVAL);
	ko.service = FIX_SERVICE;
	ko.timeout_ms = -1;
	cr_assert_rc(rdmx_registry_keeper_start(&ko, &k), RDMX_E_INVAL);
	/* nothing listens there: the first join fails, nothing is left */
	ko.timeout_ms = 500;
	cr_assert_lt(rdmx_registry_keeper_start(&ko, &k), 0);
	cr_assert_null(k);
	cr_assert_eq(rdmx_registry_keeper_get_member(NULL), 0);
	rdmx_tls_config_destroy(&cfg);
}
