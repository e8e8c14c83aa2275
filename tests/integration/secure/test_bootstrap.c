/* rdmx_bootstrap over loopback on the tcp provider: a server thread runs a
 * libev loop that also drives its progress engine; the test thread is the
 * client. Checks that the engine connection comes up from details that only
 * travelled inside mutual TLS, that app data crosses, that refusals refuse,
 * and that losing the TLS channel disconnects the RDMA side. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <msgpack.h>

#include <rdmx/bootstrap.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/pe.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "tls_test_pki.h"

#define cr_assert_rc(expr, want)                                                                   \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		cr_assert_eq(rc_, (want), "%s = %s (%d), want %s", #expr, rdmx_err_name(rc_), rc_, \
		             rdmx_err_name(want));                                                 \
	} while (0)

static struct tls_test_pki pki;

/* one engine side */
struct side {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	int established, failed, disconnected;
};

static void on_established(struct rdmx_conn *conn, void *cud, void *xud)
{
	struct side *s = xud;

	(void)conn;
	(void)cud;
	__atomic_add_fetch(&s->established, 1, __ATOMIC_SEQ_CST);
}

static void on_gone(struct rdmx_conn *conn, void *cud, void *xud, int failed)
{
	struct side *s = xud;

	(void)conn;
	if (cud)
		rdmx_bootstrap_conn_gone(cud);
	__atomic_add_fetch(failed ? &s->failed : &s->disconnected, 1, __ATOMIC_SEQ_CST);
}

static void on_failure(struct rdmx_conn *conn, void *cud, void *xud)
{
	on_gone(conn, cud, xud, 1);
}

static void on_disconnected(struct rdmx_conn *conn, void *cud, void *xud)
{
	on_gone(conn, cud, xud, 0);
}

static void side_open(struct side *s)
{
	memset(s, 0, sizeof(*s));
	cr_assert_rc(rdmx_dev_open("tcp", &s->dev), RDMX_OK);
	cr_assert_rc(rdmx_pe_create(&s->pe), RDMX_OK);
	cr_assert_rc(rdmx_ctx_create(s->dev, s->pe, &s->ctx), RDMX_OK);
	cr_assert_rc(rdmx_ctx_set_user_data(s->ctx, s), RDMX_OK);
	cr_assert_rc(
	    rdmx_ctx_set_conn_callbacks(s->ctx, NULL, on_established, on_failure, on_disconnected),
	    RDMX_OK);
	cr_assert_rc(rdmx_ctx_start(s->ctx), RDMX_OK);
}

static void side_close(struct side *s)
{
	rdmx_ctx_stop(s->ctx);
	rdmx_ctx_destroy(&s->ctx);
	rdmx_pe_destroy(&s->pe);
	rdmx_dev_close(&s->dev);
}

static int get(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* ---- server thread ---- */

static struct {
	pthread_t thread;
	struct ev_loop *loop;
	ev_async wake;
	ev_timer progress;
	struct rdmx_tls_config *cfg;
	struct rdmx_bootstrap_server *bs;
	struct side side;
	struct rdmx_bootstrap *b; /* the established one */
	uint16_t port;
	int ready, rc, stop, drop, requests, lost;
	char hello_name[64], cert_name[64], peer_data[64];
	pthread_mutex_t lock;
	pthread_cond_t cond;
} srv;

static int request_cb(struct rdmx_bootstrap_server *s, struct rdmx_bootstrap *b, const void **reply,
                      size_t *reply_len, void *arg)
{
	const char *cert, *hello;
	const void *data;
	size_t len;

	(void)s;
	(void)arg;
	rdmx_bootstrap_get_peer_names(b, &cert, &hello);
	rdmx_bootstrap_get_peer_data(b, &data, &len);
	pthread_mutex_lock(&srv.lock);
	srv.requests++;
	snprintf(srv.hello_name, sizeof(srv.hello_name), "%s", hello);
	snprintf(srv.cert_name, sizeof(srv.cert_name), "%s", cert);
	snprintf(srv.peer_data, sizeof(srv.peer_data), "%.*s", (int)len, (const char *)data);
	pthread_mutex_unlock(&srv.lock);
	if (!strcmp(hello, "refuse-me"))
		return RDMX_E_AUTH;
	*reply = "server-app-data";
	*reply_len = 15;
	return 0;
}

static void established_cb(struct rdmx_bootstrap_server *s, struct rdmx_bootstrap *b, void *arg)
{
	struct rdmx_conn *conn;

	(void)s;
	(void)arg;
	if (rdmx_bootstrap_get_conn(b, &conn) == 0)
		rdmx_conn_set_user_data(conn, b);
	rdmx_bootstrap_destroy(&srv.b);
	srv.b = b;
}

static void lost_cb(struct rdmx_bootstrap_server *s, struct rdmx_bootstrap *b, int reason,
                    void *arg)
{
	(void)s;
	(void)reason;
	(void)arg;
	__atomic_add_fetch(&srv.lost, 1, __ATOMIC_SEQ_CST);
	if (b == srv.b)
		rdmx_bootstrap_destroy(&srv.b);
}

static void progress_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	while (rdmx_pe_progress(srv.side.pe) > 0)
		;
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	if (__atomic_exchange_n(&srv.drop, 0, __ATOMIC_SEQ_CST))
		rdmx_bootstrap_destroy(&srv.b);
	if (get(&srv.stop)) {
		rdmx_bootstrap_destroy(&srv.b);
		rdmx_bootstrap_server_destroy(&srv.bs);
		ev_timer_stop(loop, &srv.progress);
		ev_async_stop(loop, &srv.wake);
		ev_break(loop, EVBREAK_ALL);
	}
}

static void *server_main(void *arg)
{
	static const struct rdmx_bootstrap_server_ops ops = {request_cb, established_cb, lost_cb};

	(void)arg;
	side_open(&srv.side);
	srv.rc = rdmx_bootstrap_server_create(srv.loop, srv.side.ctx, srv.cfg, "127.0.0.1", 0,
	                                      "test-server", &ops, NULL, &srv.bs);
	if (!srv.rc)
		rdmx_bootstrap_server_get_port(srv.bs, &srv.port);
	pthread_mutex_lock(&srv.lock);
	srv.ready = 1;
	pthread_cond_signal(&srv.cond);
	pthread_mutex_unlock(&srv.lock);
	if (!srv.rc)
		ev_run(srv.loop, 0);
	side_close(&srv.side);
	return NULL;
}

static void server_start(void)
{
	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	srv.cfg = tls_test_config(&pki, "server", "*.test", 1);
	cr_assert_not_null(srv.cfg);
	srv.loop = ev_loop_new(EVFLAG_AUTO);
	ev_async_init(&srv.wake, wake_cb);
	ev_async_start(srv.loop, &srv.wake);
	ev_timer_init(&srv.progress, progress_cb, 0.001, 0.001);
	ev_timer_start(srv.loop, &srv.progress);
	cr_assert_eq(pthread_create(&srv.thread, NULL, server_main, NULL), 0);
	pthread_mutex_lock(&srv.lock);
	while (!srv.ready)
		pthread_cond_wait(&srv.cond, &srv.lock);
	pthread_mutex_unlock(&srv.lock);
	cr_assert_rc(srv.rc, RDMX_OK);
}

static void server_stop(void)
{
	__atomic_store_n(&srv.stop, 1, __ATOMIC_SEQ_CST);
	ev_async_send(srv.loop, &srv.wake);
	pthread_join(srv.thread, NULL);
	ev_loop_destroy(srv.loop);
	rdmx_tls_config_destroy(&srv.cfg);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Drives the client's engine until cond or the guard runs out. */
#define drive_until(s, cond, guard_ms)                                                             \
	do {                                                                                       \
		int64_t end_ = now_ms() + (guard_ms);                                              \
		while (!(cond) && now_ms() < end_) {                                               \
			rdmx_pe_progress((s)->pe);                                                 \
			usleep(1000);                                                              \
		}                                                                                  \
		cr_assert((cond), "timed out waiting for %s", #cond);                              \
	} while (0)

static void setup(void)
{
	cr_assert_eq(tls_test_pki_create(&pki), 0);
	tls_test_log_capture();
}

static void teardown(void)
{
	tls_test_pki_destroy(&pki);
}

TestSuite(bootstrap, .init = setup, .fini = teardown, .timeout = 120);

Test(bootstrap, connects_exchanges_and_loses_liveness)
{
	struct side cl;
	struct rdmx_tls_config *cfg;
	struct rdmx_bootstrap *b = NULL;
	struct rdmx_conn *conn;
	const char *cert, *hello;
	const void *data;
	size_t len;
	int r = 0;

	server_start();
	side_open(&cl);
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_rc(rdmx_bootstrap_connect(cl.ctx, cfg, "127.0.0.1", srv.port, "kv-client",
	                                    "client-app", 10, 5000, &b),
	             RDMX_OK);
	cr_assert_rc(rdmx_bootstrap_get_conn(b, &conn), RDMX_OK);
	cr_assert_rc(rdmx_conn_set_user_data(conn, b), RDMX_OK);
	cr_assert_rc(rdmx_bootstrap_get_peer_data(b, &data, &len), RDMX_OK);
	cr_assert_eq(len, 15);
	cr_assert_eq(memcmp(data, "server-app-data", 15), 0);
	cr_assert_rc(rdmx_bootstrap_get_peer_names(b, &cert, &hello), RDMX_OK);
	cr_assert_str_eq(cert, "server.test");
	cr_assert_str_eq(hello, "test-server");

	/* the RDMA side comes up on both ends */
	drive_until(&cl, get(&cl.established) == 1, 10000);
	drive_until(&cl, get(&srv.side.established) == 1, 10000);
	pthread_mutex_lock(&srv.lock);
	cr_assert_str_eq(srv.hello_name, "kv-client");
	cr_assert_str_eq(srv.cert_name, "client.test");
	cr_assert_str_eq(srv.peer_data, "client-app");
	pthread_mutex_unlock(&srv.lock);
	cr_assert_rc(rdmx_bootstrap_check(b), RDMX_OK);

	/* the server drops its control channel: our RDMA connection goes */
	__atomic_store_n(&srv.drop, 1, __ATOMIC_SEQ_CST);
	ev_async_send(srv.loop, &srv.wake);
	drive_until(&cl, (r = rdmx_bootstrap_check(b)) < 0, 10000);
	cr_assert_rc(r, RDMX_E_DISCONNECTED);
	drive_until(&cl, get(&cl.disconnected) + get(&cl.failed) == 1, 10000);
	cr_assert(tls_test_log_contains("control channel"));
	rdmx_bootstrap_destroy(&b);
	cr_assert_null(b);

	rdmx_tls_config_destroy(&cfg);
	side_close(&cl);
	server_stop();
}

Test(bootstrap, client_loss_is_seen_by_the_server)
{
	struct side cl;
	struct rdmx_tls_config *cfg;
	struct rdmx_bootstrap *b = NULL;
	struct rdmx_conn *conn;

	server_start();
	side_open(&cl);
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_rc(
	    rdmx_bootstrap_connect(cl.ctx, cfg, "127.0.0.1", srv.port, NULL, NULL, 0, 5000, &b),
	    RDMX_OK);
	cr_assert_rc(rdmx_bootstrap_get_conn(b, &conn), RDMX_OK);
	rdmx_conn_set_user_data(conn, b);
	drive_until(&cl, get(&cl.established) == 1 && get(&srv.side.established) == 1, 10000);
	/* the client leaves: the server's lost callback runs and its RDMA
	 * connection is disconnected */
	rdmx_bootstrap_destroy(&b);
	drive_until(&cl, get(&srv.lost) == 1, 10000);
	drive_until(&cl, get(&srv.side.disconnected) + get(&srv.side.failed) == 1, 10000);
	rdmx_tls_config_destroy(&cfg);
	side_close(&cl);
	server_stop();
}

Test(bootstrap, refusals_exchange_nothing)
{
	struct side cl;
	struct rdmx_tls_config *cfg, *bad;
	struct rdmx_bootstrap *b = NULL;

	server_start();
	side_open(&cl);
	/* the application says no */
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_rc(rdmx_bootstrap_connect(cl.ctx, cfg, "127.0.0.1", srv.port, "refuse-me", NULL,
	                                    0, 5000, &b),
	             RDMX_E_CONN_REFUSED);
	cr_assert_null(b);
	cr_assert(tls_test_log_contains("refused by the server application"));
	/* TLS says no: the server application never hears of it */
	bad = tls_test_config(&pki, "foreign", "server.test", 1);
	cr_assert_rc(
	    rdmx_bootstrap_connect(cl.ctx, bad, "127.0.0.1", srv.port, "x", NULL, 0, 5000, &b),
	    RDMX_E_AUTH);
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.requests, 1);
	pthread_mutex_unlock(&srv.lock);
	cr_assert_eq(get(&srv.side.established), 0);
	rdmx_tls_config_destroy(&bad);
	rdmx_tls_config_destroy(&cfg);
	side_close(&cl);
	server_stop();
}

Test(bootstrap, version_mismatch_is_refused)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_tls_conn *tls = NULL;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	const void *f;
	size_t len;

	server_start();
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &tls), RDMX_OK);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	msgpack_pack_str_with_body(&pk, "rdmx", 4);
	msgpack_pack_str_with_body(&pk, "bootstrap", 9);
	msgpack_pack_str_with_body(&pk, "versions", 8);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_uint32(&pk, 99);
	msgpack_pack_str_with_body(&pk, "provider", 8);
	msgpack_pack_str_with_body(&pk, "tcp", 3);
	msgpack_pack_str_with_body(&pk, "details", 7);
	msgpack_pack_bin_with_body(&pk, "x", 1);
	cr_assert_rc(rdmx_tls_conn_send_wait(tls, sb.data, sb.size, 5000), RDMX_OK);
	msgpack_sbuffer_destroy(&sb);
	cr_assert_rc(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), RDMX_OK);
	cr_assert_not_null(memmem(f, len, "no common bootstrap version", 27));
	cr_assert_lt(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), 0);
	rdmx_tls_conn_destroy(&tls);
	rdmx_tls_config_destroy(&cfg);
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.requests, 0);
	pthread_mutex_unlock(&srv.lock);
	server_stop();
}
