/* rdmx_bootstrap over loopback on the tcp provider: a server thread runs a
 * libev loop that also drives its progress engine; the test thread is the
 * client. Checks that the engine connection comes up from details that only
 * travelled inside mutual TLS, that app data crosses, that refusals refuse,
 * that losing the TLS channel disconnects the RDMA side, and that a peer
 * flooding KeyUpdates without reading neither makes the server spin nor
 * costs it the session.
 *
 * Server speaks first (wire version 2): a refused client must not have sent
 * its details. The real server cannot show that (it never decrypts what a
 * refused client sends), so a spy server made with OpenSSL accepts any
 * client certificate, behaves as a refusing server does after the handshake
 * (no hello, then close), and records every application byte the client
 * sent: there must be none. A spy that does greet gets the details (the
 * control that the spy would see them). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <msgpack.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <rdmx/bootstrap.h>
#include <rdmx/ctx.h>
#include <rdmx/dev.h>
#include <rdmx/pe.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "bootstrap_internal.h"
#include "test_assert.h"
#include "tls_test_flood.h"
#include "tls_test_pki.h"
#include "tls_test_suite.h"

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
	uint32_t write_timeout_ms;     /* 0: the server's default */
	uint32_t new_write_timeout_ms; /* set by the loop at the next wake */
	int ready, rc, stop, drop, requests, lost, lost_reason;
	char hello_name[64], cert_name[64], peer_data[64];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* the KeyUpdate floods: the server's end of the flooding session and
	 * the probe of the loop (see quiet_cb) */
	int session_fd, probe, probe_result;
	unsigned long probe_iterations;
	ev_idle quiet;
	ev_check busy;
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
	(void)arg;
	__atomic_store_n(&srv.lost_reason, reason, __ATOMIC_SEQ_CST);
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

/* The probe of the KeyUpdate flood test: runs until the loop has an
 * iteration with nothing to do, or gives up after PROBE_LIMIT iterations. */
enum { PROBE_RUNNING, PROBE_QUIET_UNREAD, PROBE_QUIET_EMPTY, PROBE_BUSY };
#define PROBE_LIMIT 100000ul

static void probe_end(struct ev_loop *loop, int result)
{
	ev_idle_stop(loop, &srv.quiet);
	ev_check_stop(loop, &srv.busy);
	__atomic_store_n(&srv.probe_result, result, __ATOMIC_SEQ_CST);
}

/* An iteration with no event pending: was the session's socket readable?
 * A loop that watches a readable socket always has its event pending. */
static void quiet_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	int unread = 0;

	(void)w;
	(void)revents;
	ioctl(srv.session_fd, FIONREAD, &unread);
	probe_end(loop, unread > 0 ? PROBE_QUIET_UNREAD : PROBE_QUIET_EMPTY);
}

static void busy_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)w;
	(void)revents;
	if (++srv.probe_iterations > PROBE_LIMIT)
		probe_end(loop, PROBE_BUSY);
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	uint32_t ms;

	(void)w;
	(void)revents;
	if (__atomic_exchange_n(&srv.probe, 0, __ATOMIC_SEQ_CST)) {
		srv.probe_iterations = 0;
		ev_idle_start(loop, &srv.quiet);
		ev_check_start(loop, &srv.busy);
	}
	if (__atomic_exchange_n(&srv.drop, 0, __ATOMIC_SEQ_CST))
		rdmx_bootstrap_destroy(&srv.b);
	ms = __atomic_exchange_n(&srv.new_write_timeout_ms, 0, __ATOMIC_SEQ_CST);
	if (ms)
		rdmx__bootstrap_server_set_write_timeout(srv.bs, ms);
	if (get(&srv.stop)) {
		rdmx_bootstrap_destroy(&srv.b);
		rdmx_bootstrap_server_destroy(&srv.bs);
		ev_idle_stop(loop, &srv.quiet);
		ev_check_stop(loop, &srv.busy);
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
	if (!srv.rc && srv.write_timeout_ms)
		rdmx__bootstrap_server_set_write_timeout(srv.bs, srv.write_timeout_ms);
	pthread_mutex_lock(&srv.lock);
	srv.ready = 1;
	pthread_cond_signal(&srv.cond);
	pthread_mutex_unlock(&srv.lock);
	if (!srv.rc)
		ev_run(srv.loop, 0);
	side_close(&srv.side);
	return NULL;
}

/* A server allowing the certificate names `allow`; write_timeout_ms: how
 * long a session may wait for its peer to read, hello_timeout_ms: how long
 * the client's hello may take (0: the server's defaults). */
static void server_start_opts(const char *allow, uint32_t write_timeout_ms,
                              uint32_t hello_timeout_ms)
{
	memset(&srv, 0, sizeof(srv));
	srv.write_timeout_ms = write_timeout_ms;
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	srv.cfg = tls_test_config(&pki, "server", allow, 1);
	cr_assert_not_null(srv.cfg);
	if (hello_timeout_ms)
		cr_assert_rc(rdmx_tls_config_set_handshake_timeout(srv.cfg, hello_timeout_ms),
		             RDMX_OK);
	srv.loop = ev_loop_new(EVFLAG_AUTO);
	ev_async_init(&srv.wake, wake_cb);
	ev_async_start(srv.loop, &srv.wake);
	ev_timer_init(&srv.progress, progress_cb, 0.001, 0.001);
	ev_timer_start(srv.loop, &srv.progress);
	ev_idle_init(&srv.quiet, quiet_cb);
	ev_check_init(&srv.busy, busy_cb);
	cr_assert_eq(pthread_create(&srv.thread, NULL, server_main, NULL), 0);
	pthread_mutex_lock(&srv.lock);
	while (!srv.ready)
		pthread_cond_wait(&srv.cond, &srv.lock);
	pthread_mutex_unlock(&srv.lock);
	cr_assert_rc(srv.rc, RDMX_OK);
}

static void server_start(void)
{
	server_start_opts("*.test", 0, 0);
}

static void server_stop(void)
{
	__atomic_store_n(&srv.stop, 1, __ATOMIC_SEQ_CST);
	ev_async_send(srv.loop, &srv.wake);
	pthread_join(srv.thread, NULL);
	ev_loop_destroy(srv.loop);
	rdmx_tls_config_destroy(&srv.cfg);
}

/* Drives the client's engine until cond or the guard runs out. */
#define drive_until(s, cond, guard_ms)                                                             \
	do {                                                                                       \
		int64_t end_ = tls_test_now_ms() + (guard_ms);                                     \
		while (!(cond) && tls_test_now_ms() < end_) {                                      \
			rdmx_pe_progress((s)->pe);                                                 \
			usleep(1000);                                                              \
		}                                                                                  \
		cr_assert((cond), "timed out waiting for %s", #cond);                              \
	} while (0)

TLS_TEST_SUITE(bootstrap, pki, 120);

Test(bootstrap, connects_exchanges_and_loses_liveness)
{
	struct side cl;
	struct rdmx_tls_config *cfg;
	struct rdmx_bootstrap *b = NULL;
	struct rdmx_conn *conn;
	const char *cert, *hello;
	const void *data;
	size_t len;
	int r = 0, wants = 0;

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
	cr_assert_rc(rdmx_bootstrap_check_wants(b, &wants), RDMX_OK);
	cr_assert_eq(wants, RDMX_TLS_WANT_READ, "an idle channel waits for its peer: %d", wants);
	cr_assert_rc(rdmx_bootstrap_check_wants(NULL, &wants), RDMX_E_INVAL);
	cr_assert_rc(rdmx_bootstrap_check_wants(b, NULL), RDMX_E_INVAL);

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

/* ---- the spy server (OpenSSL, one connection) ---- */

enum spy_greeting {
	SPY_SILENT,         /* no hello: what a server that refused the client does */
	SPY_GOOD,           /* a version 2 hello on tcp */
	SPY_OTHER_VERSION,  /* a hello offering version 99 only */
	SPY_OTHER_PROVIDER, /* a hello on "verbs" */
	SPY_REFUSING,       /* a refusal whose text forges a log line */
};

static struct {
	pthread_t thread;
	int lfd;
	uint16_t port;
	enum spy_greeting greeting;
	int handshake_done;      /* the client finished TLS with the spy */
	unsigned char got[8192]; /* application bytes the client sent, in order */
	size_t got_len;
} spy;

/* Any client certificate will do: the spy lets every one in so that it can
 * see what the client would send to a server that refused it. */
static int spy_verify(int ok, X509_STORE_CTX *store)
{
	(void)ok;
	(void)store;
	return 1;
}

static void spy_take(const unsigned char *p, size_t n)
{
	if (n > sizeof(spy.got) - spy.got_len)
		n = sizeof(spy.got) - spy.got_len;
	memcpy(spy.got + spy.got_len, p, n);
	spy.got_len += n;
}

/* Reads what the client sends until it closes (or the socket guard), or
 * only until one whole frame is in when one_frame. */
static void spy_read(SSL *ssl, int one_frame)
{
	unsigned char buf[4096];
	int n;

	for (;;) {
		if (one_frame && spy.got_len >= 4 &&
		    spy.got_len >= 4 + ((size_t)spy.got[0] << 24 | (size_t)spy.got[1] << 16 |
		                        (size_t)spy.got[2] << 8 | spy.got[3]))
			return;
		n = SSL_read(ssl, buf, sizeof(buf));
		if (n <= 0)
			return;
		spy_take(buf, (size_t)n);
	}
}

/* Field numbers of secure/proto/bootstrap.proto (wire version 3): the
 * frames are built and read with msgpack-c, the codec's oracle. */
enum {
	BS_RDMX = 1,
	BS_VERSIONS = 2,
	BS_VERSION = 3,
	BS_NAME = 4,
	BS_PROVIDER = 5,
	BS_DETAILS = 7,
	BS_STATUS = 9,
	BS_ERROR = 10,
};

static void pack_field_str(msgpack_packer *pk, uint64_t key, const char *s)
{
	msgpack_pack_uint64(pk, key);
	msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* A refusal's text that would forge a second log line and restyle a
 * terminal if logged as received, and what the log must show instead. */
#define FORGED_TEXT "go away\nrdmx error: forged line\x1b[2K\\"
#define FORGED_LOGGED "go away\\x0ardmx error: forged line\\x1b[2K\\\\"

/* {status, error}: a refusal, packed into sb. */
static void pack_refusal(msgpack_sbuffer *sb, const char *text)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_uint64(&pk, BS_STATUS);
	msgpack_pack_int32(&pk, RDMX_E_CONN_REFUSED);
	pack_field_str(&pk, BS_ERROR, text);
}

/* 1 when frame[len] is a msgpack map with integer key `key`. */
static int has_field(const void *frame, size_t len, uint64_t key)
{
	msgpack_unpacked u;
	size_t off = 0;
	int found = 0;

	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, frame, len, &off) == MSGPACK_UNPACK_SUCCESS &&
	    u.data.type == MSGPACK_OBJECT_MAP)
		for (uint32_t i = 0; i < u.data.via.map.size; i++)
			if (u.data.via.map.ptr[i].key.type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
			    u.data.via.map.ptr[i].key.via.u64 == key)
				found = 1;
	msgpack_unpacked_destroy(&u);
	return found;
}

static void spy_send_greeting(SSL *ssl)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	unsigned char hdr[4];

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	if (spy.greeting == SPY_REFUSING) {
		pack_refusal(&sb, FORGED_TEXT);
	} else {
		msgpack_pack_map(&pk, 4);
		pack_field_str(&pk, BS_RDMX, "bootstrap");
		msgpack_pack_uint64(&pk, BS_VERSIONS);
		msgpack_pack_array(&pk, 1);
		msgpack_pack_uint32(
		    &pk, spy.greeting == SPY_OTHER_VERSION ? 99 : RDMX_BOOTSTRAP_VERSION);
		pack_field_str(&pk, BS_NAME, "spy");
		pack_field_str(&pk, BS_PROVIDER,
		               spy.greeting == SPY_OTHER_PROVIDER ? "verbs" : "tcp");
	}
	hdr[0] = (unsigned char)(sb.size >> 24);
	hdr[1] = (unsigned char)(sb.size >> 16);
	hdr[2] = (unsigned char)(sb.size >> 8);
	hdr[3] = (unsigned char)sb.size;
	SSL_write(ssl, hdr, 4);
	SSL_write(ssl, sb.data, (int)sb.size);
	msgpack_sbuffer_destroy(&sb);
}

static void *spy_main(void *arg)
{
	struct timeval guard = {.tv_sec = 10};
	struct pollfd p = {.fd = spy.lfd, .events = POLLIN};
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;

	(void)arg;
	if (poll(&p, 1, 10000) != 1)
		return NULL;
	fd = accept(spy.lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof(guard));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof(guard));
	ctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_use_certificate_file(ctx, tls_test_pki_path(&pki, "server", ".crt"),
	                             SSL_FILETYPE_PEM);
	SSL_CTX_use_PrivateKey_file(ctx, tls_test_pki_path(&pki, "server", ".key"),
	                            SSL_FILETYPE_PEM);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, spy_verify);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) == 1) {
		spy.handshake_done = 1;
		if (spy.greeting != SPY_SILENT) {
			spy_send_greeting(ssl);
			spy_read(ssl, 1);
		}
		/* the session ends here (close_notify), as a refusal's would;
		 * whatever the client sent before it learns so is still read */
		SSL_shutdown(ssl);
		spy_read(ssl, 0);
	}
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return NULL;
}

static void spy_start(enum spy_greeting greeting)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);

	memset(&spy, 0, sizeof(spy));
	spy.greeting = greeting;
	spy.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(spy.lfd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(spy.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(spy.lfd, 4), 0);
	cr_assert_eq(getsockname(spy.lfd, (struct sockaddr *)&a, &alen), 0);
	spy.port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(&spy.thread, NULL, spy_main, NULL), 0);
}

static void spy_join(void)
{
	pthread_join(spy.thread, NULL);
	close(spy.lfd);
}

static int spy_saw(const char *needle)
{
	return memmem(spy.got, spy.got_len, needle, strlen(needle)) != NULL;
}

/* 1 when some frame the spy got (4-byte length, then the message) has
 * engine details (field 7 of secure/proto/bootstrap.proto). */
static int spy_saw_details(void)
{
	size_t off = 0;

	while (spy.got_len - off >= 4) {
		const unsigned char *h = (const unsigned char *)spy.got + off;
		size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];

		if (n > spy.got_len - off - 4)
			break;
		if (has_field(h + 4, n, BS_DETAILS))
			return 1;
		off += 4 + n;
	}
	return 0;
}

/* The client with certificate `cert` talks to a spy that greets (or not) as
 * `greeting`; returns what rdmx_bootstrap_connect said. */
static int connect_to_spy(struct side *cl, const char *cert, enum spy_greeting greeting)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, cert, "server.test", 0);
	struct rdmx_bootstrap *b = NULL;
	int ret;

	cr_assert_not_null(cfg);
	spy_start(greeting);
	ret = rdmx_bootstrap_connect(cl->ctx, cfg, "127.0.0.1", spy.port, "spied-on", "app-secret",
	                             10, 5000, &b);
	spy_join();
	rdmx_bootstrap_destroy(&b);
	rdmx_tls_config_destroy(&cfg);
	return ret;
}

/* Every certificate the server refuses (tests/unit/tls names the reason of
 * each): refused by the real server before its application hears of it, and
 * in that situation the client has sent nothing at all. */
Test(bootstrap, refused_client_certificates_send_no_details)
{
	static const char *const bad[] = {"foreign", "expired",    "notyet",  "wrongsan",
	                                  "cnonly",  "selfsigned", "revoked", "codesign"};
	struct rdmx_tls_config *cfg;
	struct rdmx_bootstrap *b = NULL;
	struct side cl;

	server_start();
	side_open(&cl);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		cfg = tls_test_config(&pki, bad[i], "server.test", 0);
		cr_assert_not_null(cfg);
		cr_assert_rc(rdmx_bootstrap_connect(cl.ctx, cfg, "127.0.0.1", srv.port, "x",
		                                    "app-secret", 10, 5000, &b),
		             RDMX_E_AUTH);
		cr_assert_null(b);
		rdmx_tls_config_destroy(&cfg);

		ret = connect_to_spy(&cl, bad[i], SPY_SILENT);
		cr_assert_lt(ret, 0, "%s: connected to a server that never said hello", bad[i]);
		cr_assert(spy.handshake_done, "%s: the spy never completed TLS", bad[i]);
		cr_assert_eq(spy.got_len, 0, "%s: the client sent %zu application bytes first",
		             bad[i], spy.got_len);
	}
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.requests, 0, "the server application heard of a refused client");
	pthread_mutex_unlock(&srv.lock);
	cr_assert_eq(get(&srv.side.established), 0);

	/* the control: greeted, the same client sends its details, and the spy
	 * sees them */
	cr_assert_lt(connect_to_spy(&cl, "client", SPY_GOOD), 0);
	cr_assert(spy_saw_details() && spy_saw("app-secret"),
	          "the spy cannot see details (%zu bytes)", spy.got_len);
	side_close(&cl);
	server_stop();
}

/* Peers that are no rdmx client: no certificate, TLS 1.2 only, garbage
 * instead of a ClientHello. The server sends them nothing, not even its
 * hello. */
Test(bootstrap, refused_raw_peers_get_no_hello)
{
	static const int max_version[] = {0, TLS1_2_VERSION};
	static const char *const cert[] = {NULL, "client"};
	struct sockaddr_in a = {.sin_family = AF_INET};
	char buf[4096];
	int fd;

	server_start();
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(srv.port);
	for (int i = 0; i < 2; i++) {
		struct timeval guard = {.tv_sec = 10};
		SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
		SSL *ssl;
		int n = -1;

		cr_assert_not_null(ctx);
		SSL_CTX_load_verify_file(ctx, tls_test_pki_path(&pki, "ca", ".crt"));
		if (max_version[i])
			SSL_CTX_set_max_proto_version(ctx, max_version[i]);
		if (cert[i]) {
			SSL_CTX_use_certificate_file(ctx, tls_test_pki_path(&pki, cert[i], ".crt"),
			                             SSL_FILETYPE_PEM);
			SSL_CTX_use_PrivateKey_file(ctx, tls_test_pki_path(&pki, cert[i], ".key"),
			                            SSL_FILETYPE_PEM);
		}
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof(guard));
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, fd);
		/* TLS 1.3 without a certificate: the client finishes, then
		 * learns of the refusal; TLS 1.2: refused at once */
		if (SSL_connect(ssl) == 1)
			n = SSL_read(ssl, buf, sizeof(buf));
		cr_assert_leq(n, 0, "peer %d got %d bytes from the server", i, n);
		ERR_clear_error();
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	{
		struct timeval guard = {.tv_sec = 10};
		ssize_t n;
		size_t total = 0;

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof(guard));
		cr_assert_eq(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
		/* whatever comes back (an alert at most) ends with a close */
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			total += (size_t)n;
		cr_assert(n == 0 || errno == ECONNRESET, "the server kept a garbage peer open");
		cr_assert_lt(total, 64, "%zu bytes to a garbage peer", total);
	}
	close(fd);
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.requests, 0);
	pthread_mutex_unlock(&srv.lock);
	server_stop();
}

/* An accepted client that sends a frame over the server's limit instead of
 * its hello: dropped, nothing exported, nothing asked. */
Test(bootstrap, oversized_frame_after_handshake_is_refused)
{
	static char big[(1u << 20) + 1];
	struct rdmx_tls_config *cfg;
	struct rdmx_tls_conn *tls = NULL;
	const void *f;
	size_t len;

	server_start();
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_rc(rdmx_tls_config_set_max_frame(cfg, 4u << 20), RDMX_OK);
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &tls), RDMX_OK);
	/* the hello (nothing secret in it) */
	cr_assert_rc(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), RDMX_OK);
	cr_assert_not(has_field(f, len, BS_DETAILS));
	rdmx_tls_conn_send_wait(tls, big, sizeof(big), 5000); /* may fail midway */
	cr_assert_lt(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), 0);
	cr_assert(tls_test_log_contains("frame of 1048577 bytes refused"));
	rdmx_tls_conn_destroy(&tls);
	rdmx_tls_config_destroy(&cfg);
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.requests, 0);
	pthread_mutex_unlock(&srv.lock);
	cr_assert_eq(get(&srv.side.established), 0);
	server_stop();
}

/* The server's hello: versions, name, provider, and nothing secret. */
static void expect_greeting(struct rdmx_tls_conn *tls)
{
	msgpack_unpacked u;
	const void *f;
	size_t len, off = 0;
	int rdmx = 0, version = 0, name = 0;

	cr_assert_rc(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), RDMX_OK);
	msgpack_unpacked_init(&u);
	cr_assert_eq(msgpack_unpack_next(&u, f, len, &off), MSGPACK_UNPACK_SUCCESS);
	cr_assert_eq(u.data.type, MSGPACK_OBJECT_MAP);
	for (uint32_t i = 0; i < u.data.via.map.size; i++) {
		const msgpack_object *k = &u.data.via.map.ptr[i].key,
		                     *v = &u.data.via.map.ptr[i].val;

		cr_assert_eq(k->type, MSGPACK_OBJECT_POSITIVE_INTEGER);
		cr_assert_neq(k->via.u64, BS_DETAILS, "the hello carries details");
		cr_assert_neq(k->via.u64, 8, "the hello carries app data");
		if (k->via.u64 == BS_RDMX)
			rdmx = v->type == MSGPACK_OBJECT_STR && v->via.str.size == 9 &&
			       !memcmp(v->via.str.ptr, "bootstrap", 9);
		if (k->via.u64 == BS_VERSIONS)
			version = v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 1 &&
			          v->via.array.ptr[0].via.u64 == RDMX_BOOTSTRAP_VERSION;
		if (k->via.u64 == BS_NAME)
			name = v->type == MSGPACK_OBJECT_STR && v->via.str.size == 11 &&
			       !memcmp(v->via.str.ptr, "test-server", 11);
	}
	msgpack_unpacked_destroy(&u);
	cr_assert(rdmx && version && name, "not the expected hello");
}

/* A client hello of `version`: in this release's format (version 3 on),
 * or, for older versions, in the one they spoke (string keys; version 1
 * offered "versions", version 2 named its "version"). */
static void send_client_hello(struct rdmx_tls_conn *tls, uint32_t version)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	if (version >= 3) {
		pack_field_str(&pk, BS_RDMX, "bootstrap");
		msgpack_pack_uint64(&pk, BS_VERSION);
		msgpack_pack_uint32(&pk, version);
		pack_field_str(&pk, BS_PROVIDER, "tcp");
		msgpack_pack_uint64(&pk, BS_DETAILS);
		msgpack_pack_bin_with_body(&pk, "x", 1);
	} else {
		msgpack_pack_str_with_body(&pk, "rdmx", 4);
		msgpack_pack_str_with_body(&pk, "bootstrap", 9);
		if (version == 1) {
			msgpack_pack_str_with_body(&pk, "versions", 8);
			msgpack_pack_array(&pk, 1);
		} else {
			msgpack_pack_str_with_body(&pk, "version", 7);
		}
		msgpack_pack_uint32(&pk, version);
		msgpack_pack_str_with_body(&pk, "provider", 8);
		msgpack_pack_str_with_body(&pk, "tcp", 3);
		msgpack_pack_str_with_body(&pk, "details", 7);
		msgpack_pack_bin_with_body(&pk, "x", 1);
	}
	cr_assert_rc(rdmx_tls_conn_send_wait(tls, sb.data, sb.size, 5000), RDMX_OK);
	msgpack_sbuffer_destroy(&sb);
}

static void expect_version_refusal(struct rdmx_tls_conn *tls)
{
	const void *f;
	size_t len;

	cr_assert_rc(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), RDMX_OK);
	cr_assert_not_null(memmem(f, len, "no common bootstrap version", 27));
	cr_assert_not(has_field(f, len, BS_DETAILS));
	cr_assert_lt(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), 0);
}

Test(bootstrap, version_mismatch_is_refused)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_tls_conn *tls = NULL;
	struct side cl;

	server_start();
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	/* a client of a version the server does not speak, after its hello */
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &tls), RDMX_OK);
	expect_greeting(tls);
	send_client_hello(tls, 99);
	expect_version_refusal(tls);
	rdmx_tls_conn_destroy(&tls);
	/* a version 2 client (msgpack with string keys), after the hello */
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &tls), RDMX_OK);
	expect_greeting(tls);
	send_client_hello(tls, 2);
	expect_version_refusal(tls);
	rdmx_tls_conn_destroy(&tls);
	/* a version 1 client, which spoke first */
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &tls), RDMX_OK);
	send_client_hello(tls, 1);
	expect_greeting(tls);
	expect_version_refusal(tls);
	rdmx_tls_conn_destroy(&tls);
	rdmx_tls_config_destroy(&cfg);
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.requests, 0);
	pthread_mutex_unlock(&srv.lock);
	server_stop();

	/* the other way: a server hello the client cannot use is answered
	 * with the reason, never with details */
	side_open(&cl);
	cr_assert_rc(connect_to_spy(&cl, "client", SPY_OTHER_VERSION), RDMX_E_PROTOCOL);
	cr_assert(spy_saw("no common bootstrap version"), "%zu bytes", spy.got_len);
	cr_assert(!spy_saw_details() && !spy_saw("app-secret"));
	cr_assert_rc(connect_to_spy(&cl, "client", SPY_OTHER_PROVIDER), RDMX_E_PROTOCOL);
	cr_assert(spy_saw("provider mismatch"), "%zu bytes", spy.got_len);
	cr_assert(!spy_saw_details() && !spy_saw("app-secret"));
	side_close(&cl);
}

/* A peer's refusal text is logged escaped, on either side: no control
 * character in it can end the line and forge another. */
Test(bootstrap, peer_error_text_logged_escaped)
{
	struct rdmx_tls_config *cfg;
	struct rdmx_tls_conn *tls = NULL;
	msgpack_sbuffer sb;
	struct side cl;
	const void *f;
	size_t len;

	/* the client logs the server's refusal */
	side_open(&cl);
	cr_assert_rc(connect_to_spy(&cl, "client", SPY_REFUSING), RDMX_E_CONN_REFUSED);
	side_close(&cl);
	cr_assert(tls_test_log_contains("server refused: " FORGED_LOGGED " ("),
	          "the client did not log the server's refusal escaped");
	cr_assert_not(tls_test_log_contains("go away\n"), "the refusal was logged as received");

	/* the server logs the client's: it gives up on the server's hello */
	server_start();
	cfg = tls_test_config(&pki, "client", "server.test", 1);
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &tls), RDMX_OK);
	expect_greeting(tls);
	msgpack_sbuffer_init(&sb);
	pack_refusal(&sb, FORGED_TEXT);
	cr_assert_rc(rdmx_tls_conn_send_wait(tls, sb.data, sb.size, 5000), RDMX_OK);
	msgpack_sbuffer_destroy(&sb);
	/* the server drops the session once it has logged why */
	cr_assert_lt(rdmx_tls_conn_recv_wait(tls, &f, &len, 5000), 0);
	cr_assert(tls_test_log_contains("gave up: " FORGED_LOGGED " ("),
	          "the server did not log the client's refusal escaped");
	cr_assert_not(tls_test_log_contains("go away\n"), "the refusal was logged as received");
	rdmx_tls_conn_destroy(&tls);
	rdmx_tls_config_destroy(&cfg);
	server_stop();
}

/* ---- a client that floods KeyUpdates (tls_test_flood.h) ---- */

/* Seals the data connection as a client does (secure/bootstrap.c,
 * seal_conn): keys from the TLS exporter, client-to-server first. */
static void raw_seal(SSL *ssl, struct rdmx_conn *conn)
{
	static const char label[] = "EXPORTER-rdmx-data-plane-v1";
	uint8_t km[2 * (RDMX_CONN_KEY_SIZE + RDMX_CONN_IV_SIZE)];
	const uint8_t *c2s = km, *s2c = km + RDMX_CONN_KEY_SIZE + RDMX_CONN_IV_SIZE;
	struct rdmx_conn_keys k;

	cr_assert_eq(
	    SSL_export_keying_material(ssl, km, sizeof(km), label, strlen(label), NULL, 0, 0), 1);
	memcpy(k.tx_key, c2s, RDMX_CONN_KEY_SIZE);
	memcpy(k.tx_iv, c2s + RDMX_CONN_KEY_SIZE, RDMX_CONN_IV_SIZE);
	memcpy(k.rx_key, s2c, RDMX_CONN_KEY_SIZE);
	memcpy(k.rx_iv, s2c + RDMX_CONN_KEY_SIZE, RDMX_CONN_IV_SIZE);
	cr_assert_rc(rdmx_conn_set_data_keys(conn, &k), RDMX_OK);
}

static void raw_read_greeting(struct tls_test_flood *f)
{
	static unsigned char buf[16384];
	size_t n = tls_test_flood_read_frame(f, buf, sizeof(buf));

	cr_assert(has_field(buf, n, BS_VERSIONS), "not the server's hello");
}

/* The rest of the client's side of the bootstrap over the raw session:
 * our hello with the engine details of `cl`, the server's answer. The
 * server's session is established when it returns. */
static void raw_send_hello(struct tls_test_flood *f, struct side *cl)
{
	static unsigned char buf[16384];
	const void *details;
	size_t details_len, n;
	struct rdmx_conn *conn;
	msgpack_sbuffer sb;
	msgpack_packer pk;

	cr_assert_rc(rdmx_ctx_export(cl->ctx, &details, &details_len, &conn), RDMX_OK);
	raw_seal(f->ssl, conn);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	pack_field_str(&pk, BS_RDMX, "bootstrap");
	msgpack_pack_uint64(&pk, BS_VERSION);
	msgpack_pack_uint32(&pk, RDMX_BOOTSTRAP_VERSION);
	pack_field_str(&pk, BS_PROVIDER, "tcp");
	msgpack_pack_uint64(&pk, BS_DETAILS);
	msgpack_pack_bin_with_body(&pk, details, details_len);
	tls_test_flood_write_frame(f, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	n = tls_test_flood_read_frame(f, buf, sizeof(buf));
	cr_assert(has_field(buf, n, BS_DETAILS), "the server did not accept the hello");
}

/* The peer asks for a KeyUpdate over and over and does not read: the
 * server's answers fill its socket and its TLS layer, reading, wants to
 * write (SSL_ERROR_WANT_WRITE from SSL_read) while more requests wait in
 * the socket. The server must wait for writability, not spin on the
 * readable socket; once the peer reads, it answers every request. The
 * probe counts loop iterations, no clock: it ends at the first iteration
 * without a pending event (quiet_cb: the socket must still hold unread
 * requests then), or after PROBE_LIMIT busy ones (a spin). */
static void key_update_flood(struct tls_test_flood *f, struct side *cl)
{
	int server_fd = tls_test_flood_server_fd(f), result;

	__atomic_store_n(&srv.session_fd, server_fd, __ATOMIC_SEQ_CST);
	tls_test_flood_send(f, server_fd);
	/* every request is in the server's socket: nothing more arrives */
	drive_until(cl, tls_test_flood_unacked(f) == 0, 10000);

	__atomic_store_n(&srv.probe_result, PROBE_RUNNING, __ATOMIC_SEQ_CST);
	__atomic_store_n(&srv.probe, 1, __ATOMIC_SEQ_CST);
	ev_async_send(srv.loop, &srv.wake);
	drive_until(cl, get(&srv.probe_result) != PROBE_RUNNING, 30000);
	result = get(&srv.probe_result);
	cr_assert_neq(result, PROBE_QUIET_EMPTY,
	              "setup: the server answered all %d KeyUpdates without its send blocking",
	              TLS_TEST_FLOOD_KEY_UPDATES);
	cr_assert_eq(result, PROBE_QUIET_UNREAD,
	             "the server's loop ran %lu iterations, none quiet, its session's socket "
	             "readable and its TLS layer waiting to write: it spins",
	             PROBE_LIMIT);

	/* the peer reads: every request is answered. The answer to the last
	 * one may wait for the server's next application data (RFC 8446
	 * 4.6.3 allows it; OpenSSL 3.0 sends the answer to one request when
	 * it processes the next) */
	tls_test_flood_drain(f, TLS_TEST_FLOOD_KEY_UPDATES - 1);
	tls_test_flood_set_blocking(f, 1);
}

/* The peer's close is seen: the server still watches the session. */
static void raw_close_is_seen(struct side *cl, struct tls_test_flood *f)
{
	cr_assert_eq(get(&srv.lost), 0);
	SSL_shutdown(f->ssl);
	tls_test_flood_close(f);
	drive_until(cl, get(&srv.lost) == 1, 10000);
}

/* An established session flooded (see key_update_flood) stays. The bound
 * on waiting to write is far above the test's run: the session is not
 * timed out meanwhile. */
Test(bootstrap, key_update_flood_neither_spins_nor_stalls)
{
	struct tls_test_flood f;
	struct side cl;

	server_start_opts("*.test", 600000, 0);
	side_open(&cl);
	tls_test_flood_connect(&f, &pki, srv.port, "client");
	raw_read_greeting(&f);
	raw_send_hello(&f, &cl);
	key_update_flood(&f, &cl);
	raw_close_is_seen(&cl, &f);
	side_close(&cl);
	server_stop();
}

/* The same flood in place of the client's hello: the exchange goes on
 * after it. */
Test(bootstrap, key_update_flood_before_the_hello_neither_spins_nor_stalls)
{
	struct tls_test_flood f;
	struct side cl;

	server_start_opts("*.test", 600000, 0);
	side_open(&cl);
	tls_test_flood_connect(&f, &pki, srv.port, "client");
	raw_read_greeting(&f);
	key_update_flood(&f, &cl);
	raw_send_hello(&f, &cl);
	raw_close_is_seen(&cl, &f);
	side_close(&cl);
	server_stop();
}

/* The flood of key_update_flood, left unread, then the server's bound on
 * waiting to write brought down from far above the test's run to 1 ms, and
 * more floods until the session ends (`ended`: the server's own end, seen
 * by the test) or the server stops reading. One flood does not always leave
 * the server waiting: OpenSSL answers several requests read in one go with
 * one KeyUpdate, and when the answers of a flood fit in the two sockets'
 * buffers the server reads every request and waits for more, which is no
 * reason to end it. Every flood adds answers the client never reads, so the
 * buffers fill and the server waits for good, is ended, its line saying it
 * waited "at least 1 ms" (longer when it waited before the bound came down:
 * its clock restarted then). A flood is in place, whole, before the bound
 * comes down: a session ended while the client still sends fails the
 * client's writes, which is what tls_test_flood_more tolerates later. */
#define FLOOD_ROUNDS 200

static void flood_until_ended(struct tls_test_flood *f, struct side *cl,
                              int (*ended)(const struct tls_test_flood *f))
{
	int server_fd = tls_test_flood_server_fd(f);

	tls_test_flood_send(f, server_fd);
	drive_until(cl, tls_test_flood_unacked(f) == 0, 10000);
	__atomic_store_n(&srv.new_write_timeout_ms, 1, __ATOMIC_SEQ_CST);
	ev_async_send(srv.loop, &srv.wake);
	for (int round = 0; round < FLOOD_ROUNDS; round++) {
		drive_until(cl, ended(f) || tls_test_flood_unread(server_fd) <= 0, 10000);
		if (ended(f) || !tls_test_flood_more(f))
			return;
		drive_until(cl, ended(f) || tls_test_flood_unacked(f) == 0, 10000);
	}
	cr_assert_fail("%d floods and the server still reads them all", FLOOD_ROUNDS);
}

static int lost_once(const struct tls_test_flood *f)
{
	(void)f;
	return get(&srv.lost) == 1;
}

/* A peer that floods KeyUpdates and never reads leaves its session waiting
 * to write for as long as it likes: one descriptor per valid peer. The
 * server ends such a session once it has waited for the bound: the owner
 * learns it through the lost callback (RDMX_E_TIMEDOUT) and the peer sees
 * its session end. The line says why, the peer's certificate name in it
 * escaped (a server that allows any name: ESC and a newline in it). */
Test(bootstrap, a_peer_that_does_not_read_is_disconnected)
{
	struct tls_test_flood f;
	struct side cl;

	server_start_opts("*", 600000, 0);
	side_open(&cl);
	tls_test_flood_connect(&f, &pki, srv.port, "ctlsan");
	raw_read_greeting(&f);
	raw_send_hello(&f, &cl);
	cr_assert_eq(get(&srv.requests), 1);
	flood_until_ended(&f, &cl, lost_once);
	cr_assert_rc(get(&srv.lost_reason), RDMX_E_TIMEDOUT);
	/* logged on the server's thread before it called lost_cb */
	cr_assert(tls_test_log_contains("bootstrap: evil\\x1b[2K\\x0ardmx: forged.example (peer "
	                                "127.0.0.1:"),
	          "the line does not name the peer escaped");
	cr_assert(
	    tls_test_log_contains(") does not read: waited at least 1 ms to write, disconnected"));
	tls_test_flood_expect_closed(&f);
	tls_test_flood_close(&f);
	side_close(&cl);
	server_stop();
}

/* The same before the exchange: the session is dropped at the bound, not
 * at the hello's timeout (10 minutes here). */
Test(bootstrap, a_peer_that_does_not_read_before_the_hello_is_dropped)
{
	struct tls_test_flood f;
	struct side cl;

	server_start_opts("*.test", 600000, 600000);
	side_open(&cl);
	tls_test_flood_connect(&f, &pki, srv.port, "client");
	raw_read_greeting(&f);
	flood_until_ended(&f, &cl, tls_test_flood_ended);
	tls_test_flood_expect_closed(&f);
	/* logged before the server closed the socket */
	cr_assert(tls_test_log_contains("bootstrap: client.test (peer 127.0.0.1:"));
	cr_assert(tls_test_log_contains(") does not read: waited at least 1 ms to write, dropped"));
	cr_assert_not(tls_test_log_contains("no hello from"));
	cr_assert_eq(get(&srv.requests), 0);
	tls_test_flood_close(&f);
	side_close(&cl);
	server_stop();
}
