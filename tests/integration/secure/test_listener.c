/* The libev TLS listener over loopback TCP: a server thread runs the loop
 * with an echo service; the test thread plays good and bad clients. Timeouts
 * here are failure guards only, never measurements. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <rdmx/log.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>
#include <rdmx/pe.h>

#include "test_assert.h"
#include "tls_test_pki.h"
#include "tls_test_suite.h"

static struct tls_test_pki pki;

/* ---- server thread ---- */

struct echo {
	struct rdmx_tls_conn *conn;
	ev_io io;
	struct echo *next;
};

static struct server {
	pthread_t thread;
	struct ev_loop *loop;
	ev_async stop;
	ev_prepare check;
	struct rdmx_tls_config *cfg;
	struct rdmx_tls_listener *l;
	struct echo *echoes;
	uint16_t port;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready;
	int create_rc;
	struct rdmx_tls_listener_stats snap;
	uint32_t max_handshaking;
	int established;
	int refused;
	char last_reason[256];
} srv;

static void echo_close(struct echo *e)
{
	struct echo **pp = &srv.echoes;

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	ev_io_stop(srv.loop, &e->io);
	rdmx_tls_conn_destroy(&e->conn);
	free(e);
}

static void echo_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct echo *e = w->data;
	const void *f;
	size_t len;
	int r, fd;

	(void)revents;
	if (rdmx_tls_conn_want_write(e->conn) && rdmx_tls_conn_flush(e->conn) < 0) {
		echo_close(e);
		return;
	}
	/* bounded: a peer flooding frames yields to the loop every 64 */
	for (int i = 0; i < 64; i++) {
		r = rdmx_tls_conn_recv(e->conn, &f, &len);
		if (r > 0)
			break;
		if (r < 0 || rdmx_tls_conn_send(e->conn, f, len) < 0) {
			echo_close(e);
			return;
		}
	}
	rdmx_tls_conn_get_fd(e->conn, &fd);
	ev_io_stop(loop, &e->io);
	ev_io_set(&e->io, fd, EV_READ | (rdmx_tls_conn_want_write(e->conn) ? EV_WRITE : 0));
	ev_io_start(loop, &e->io);
}

static void established_cb(struct rdmx_tls_listener *l, struct rdmx_tls_conn *conn, void *arg)
{
	struct echo *e = calloc(1, sizeof(*e));
	int fd;

	(void)l;
	(void)arg;
	pthread_mutex_lock(&srv.lock);
	srv.established++;
	pthread_mutex_unlock(&srv.lock);
	if (!e) {
		rdmx_tls_conn_destroy(&conn);
		return;
	}
	e->conn = conn;
	e->next = srv.echoes;
	srv.echoes = e;
	rdmx_tls_conn_get_fd(conn, &fd);
	ev_io_init(&e->io, echo_cb, fd, EV_READ);
	e->io.data = e;
	ev_io_start(srv.loop, &e->io);
	ev_feed_event(srv.loop, &e->io, EV_READ); /* frames may already be buffered */
}

static void refused_cb(struct rdmx_tls_listener *l, int err, const char *reason, const char *peer,
                       void *arg)
{
	(void)l;
	(void)err;
	(void)peer;
	(void)arg;
	pthread_mutex_lock(&srv.lock);
	srv.refused++;
	snprintf(srv.last_reason, sizeof(srv.last_reason), "%s", reason);
	pthread_mutex_unlock(&srv.lock);
}

static void check_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	pthread_mutex_lock(&srv.lock);
	if (srv.l)
		rdmx_tls_listener_get_stats(srv.l, &srv.snap);
	if (srv.snap.handshaking > srv.max_handshaking)
		srv.max_handshaking = srv.snap.handshaking;
	pthread_mutex_unlock(&srv.lock);
}

static void stop_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	while (srv.echoes)
		echo_close(srv.echoes);
	pthread_mutex_lock(&srv.lock);
	rdmx_tls_listener_destroy(&srv.l);
	pthread_mutex_unlock(&srv.lock);
	ev_prepare_stop(loop, &srv.check);
	ev_async_stop(loop, &srv.stop);
	ev_break(loop, EVBREAK_ALL);
}

static void *server_main(void *arg)
{
	int rc;

	(void)arg;
	rc = rdmx_tls_listener_create(srv.loop, srv.cfg, "127.0.0.1", 0, established_cb, NULL,
	                              &srv.l);
	if (!rc) {
		rdmx_tls_listener_set_refused_cb(srv.l, refused_cb);
		rdmx_tls_listener_get_port(srv.l, &srv.port);
	}
	pthread_mutex_lock(&srv.lock);
	srv.ready = 1;
	srv.create_rc = rc;
	pthread_cond_signal(&srv.cond);
	pthread_mutex_unlock(&srv.lock);
	if (!rc)
		ev_run(srv.loop, 0);
	return NULL;
}

/* timeout_ms: handshake timeout; limits: total / per source */
static void server_start(uint32_t timeout_ms, uint32_t total, uint32_t per_source)
{
	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	srv.cfg = tls_test_config(&pki, "server", "*.test", 1);
	cr_assert_not_null(srv.cfg);
	cr_assert_rc(rdmx_tls_config_set_handshake_timeout(srv.cfg, timeout_ms), RDMX_OK);
	cr_assert_rc(rdmx_tls_config_set_handshake_limits(srv.cfg, total, per_source), RDMX_OK);
	srv.loop = ev_loop_new(EVFLAG_AUTO);
	ev_async_init(&srv.stop, stop_cb);
	ev_async_start(srv.loop, &srv.stop);
	ev_prepare_init(&srv.check, check_cb);
	ev_prepare_start(srv.loop, &srv.check);
	cr_assert_eq(pthread_create(&srv.thread, NULL, server_main, NULL), 0);
	pthread_mutex_lock(&srv.lock);
	while (!srv.ready)
		pthread_cond_wait(&srv.cond, &srv.lock);
	pthread_mutex_unlock(&srv.lock);
	cr_assert_rc(srv.create_rc, RDMX_OK);
}

static void server_stop(void)
{
	ev_async_send(srv.loop, &srv.stop);
	pthread_join(srv.thread, NULL);
	ev_loop_destroy(srv.loop);
	rdmx_tls_config_destroy(&srv.cfg);
}

static struct rdmx_tls_listener_stats stats(void)
{
	struct rdmx_tls_listener_stats s;

	pthread_mutex_lock(&srv.lock);
	s = srv.snap;
	pthread_mutex_unlock(&srv.lock);
	return s;
}

static int refused_count(void)
{
	int n;

	pthread_mutex_lock(&srv.lock);
	n = srv.refused;
	pthread_mutex_unlock(&srv.lock);
	return n;
}

/* Polls `cond` every 10 ms for up to guard_ms. */
#define wait_until(cond, guard_ms)                                                                 \
	do {                                                                                       \
		int64_t end_ = tls_test_now_ms() + (guard_ms);                                     \
		while (!(cond) && tls_test_now_ms() < end_)                                        \
			usleep(10000);                                                             \
		cr_assert((cond), "timed out waiting for %s", #cond);                              \
	} while (0)

TLS_TEST_SUITE(listener, pki, 120);

/* A good client: connect, one echo. */
static void echo_once(const char *msg)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, "client", "server.test", 1);
	struct rdmx_tls_conn *conn = NULL;
	const void *f;
	size_t len;

	cr_assert_not_null(cfg);
	cr_assert_rc(rdmx_tls_config_set_handshake_timeout(cfg, 10000), RDMX_OK);
	cr_assert_rc(rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &conn), RDMX_OK);
	cr_assert_rc(rdmx_tls_conn_send_wait(conn, msg, strlen(msg), 5000), RDMX_OK);
	cr_assert_rc(rdmx_tls_conn_recv_wait(conn, &f, &len, 5000), RDMX_OK);
	cr_assert_eq(len, strlen(msg));
	cr_assert_eq(memcmp(f, msg, len), 0);
	rdmx_tls_conn_destroy(&conn);
	rdmx_tls_config_destroy(&cfg);
}

/* A TCP socket from a chosen loopback source address, connected. */
static int tcp_from(const char *src_ip)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	inet_pton(AF_INET, src_ip, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons(srv.port);
	cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0, "bind %s: %s", src_ip,
	             strerror(errno));
	cr_assert_eq(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0, "connect: %s",
	             strerror(errno));
	return fd;
}

/* 1 when the server closed fd (EOF or reset) within guard_ms. */
static int closed_by_server(int fd, int guard_ms)
{
	int64_t end = tls_test_now_ms() + guard_ms;
	char buf[4096];

	while (tls_test_now_ms() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, 100) > 0) {
			ssize_t n = read(fd, buf, sizeof(buf));

			if (n == 0 || (n < 0 && errno == ECONNRESET))
				return 1;
		}
	}
	return 0;
}

Test(listener, echo_for_a_good_client)
{
	server_start(5000, 64, 8);
	echo_once("ping");
	echo_once("pong");
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.established, 2);
	cr_assert_eq(srv.refused, 0);
	pthread_mutex_unlock(&srv.lock);
	server_stop();
}

static void bad_client(const char *cert, const char *reason)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, cert, "server.test", 0);
	struct rdmx_tls_conn *conn = NULL;
	const void *f;
	size_t len;
	int r;

	cr_assert_not_null(cfg);
	r = rdmx_tls_connect(cfg, "127.0.0.1", srv.port, &conn);
	if (r == RDMX_OK) {
		/* TLS 1.3: the client finishes first; the server's verdict
		 * arrives as an alert, and our secret goes nowhere */
		rdmx_tls_conn_send_wait(conn, "secret", 6, 2000);
		r = rdmx_tls_conn_recv_wait(conn, &f, &len, 5000);
		cr_assert_rc(r, RDMX_E_AUTH);
		rdmx_tls_conn_destroy(&conn);
	}
	cr_assert_lt(r, 0);
	wait_until(refused_count() >= 1, 5000);
	pthread_mutex_lock(&srv.lock);
	cr_assert(strstr(srv.last_reason, reason), "reason '%s', want '%s'", srv.last_reason,
	          reason);
	srv.refused = 0;
	pthread_mutex_unlock(&srv.lock);
	rdmx_tls_config_destroy(&cfg);
}

Test(listener, refuses_bad_certificates_without_established_callback)
{
	server_start(5000, 64, 8);
	bad_client("foreign", "not signed by a trusted CA");
	bad_client("expired", "certificate expired");
	bad_client("wrongsan", "name not allowed");
	bad_client("revoked", "certificate revoked");
	bad_client("codesign", "key usage");
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.established, 0);
	pthread_mutex_unlock(&srv.lock);
	echo_once("still serving");
	server_stop();
}

Test(listener, refuses_garbage_and_tls12)
{
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;

	server_start(5000, 64, 8);
	fd = tcp_from("127.0.0.1");
	cr_assert_eq(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	cr_assert(closed_by_server(fd, 5000));
	close(fd);
	wait_until(refused_count() >= 1, 5000);

	ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_use_certificate_file(ctx, tls_test_pki_path(&pki, "client", ".crt"),
	                             SSL_FILETYPE_PEM);
	SSL_CTX_use_PrivateKey_file(ctx, tls_test_pki_path(&pki, "client", ".key"),
	                            SSL_FILETYPE_PEM);
	ssl = SSL_new(ctx);
	fd = tcp_from("127.0.0.1");
	SSL_set_fd(ssl, fd);
	cr_assert_leq(SSL_connect(ssl), 0, "a TLS 1.2 client must not get in");
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	wait_until(refused_count() >= 2, 5000);
	pthread_mutex_lock(&srv.lock);
	cr_assert(strstr(srv.last_reason, "TLS 1.3"), "reason '%s'", srv.last_reason);
	cr_assert_eq(srv.established, 0);
	pthread_mutex_unlock(&srv.lock);
	server_stop();
}

Test(listener, slowloris_dropped_while_good_client_connects)
{
	enum { SLOW = 4 };
	int fds[SLOW];

	server_start(500, 64, 4);
	for (int i = 0; i < SLOW; i++) {
		fds[i] = tcp_from("127.0.0.2");
		/* the first bytes of a record header, then silence */
		cr_assert_eq(write(fds[i], "\x16\x03", 2), 2);
	}
	wait_until(stats().handshaking >= SLOW, 5000);
	/* a good client from another address is not held up */
	echo_once("through the crowd");
	for (int i = 0; i < SLOW; i++) {
		cr_assert(closed_by_server(fds[i], 10000), "stalled handshake %d not dropped", i);
		close(fds[i]);
	}
	wait_until(stats().timed_out >= SLOW, 5000);
	cr_assert(tls_test_log_contains("handshake timed out"));
	server_stop();
}

Test(listener, flood_from_one_source_bounded_by_per_source_limit)
{
	enum { FLOOD = 200, PER_SOURCE = 4 };
	static int fds[FLOOD];
	struct rdmx_tls_listener_stats s;

	server_start(3000, 16, PER_SOURCE);
	for (int i = 0; i < FLOOD; i++)
		fds[i] = tcp_from("127.0.0.3");
	wait_until(stats().over_limit >= FLOOD - PER_SOURCE, 20000);
	s = stats();
	cr_assert_eq(s.accepted, FLOOD);
	cr_assert_leq(s.handshaking, PER_SOURCE);
	pthread_mutex_lock(&srv.lock);
	cr_assert_leq(srv.max_handshaking, PER_SOURCE);
	pthread_mutex_unlock(&srv.lock);
	/* the flood is still open: a good client still gets in */
	echo_once("hello despite the flood");
	for (int i = 0; i < FLOOD; i++)
		close(fds[i]);
	wait_until(stats().handshaking == 0, 10000);
	server_stop();
}

/* A rate-limited kind of log line, counted as the log gives it: each line
 * with `mark` counts 1 (and its "; N more not logged" suffix N more), each
 * "tls: N more <summary> not logged" line N. */
struct logged {
	const char *mark, *summary;
	uint64_t lines, seen;
};

static pthread_mutex_t logged_lock = PTHREAD_MUTEX_INITIALIZER;
static struct logged *counting;

static void count_logged(enum rdmx_log_level level, const char *file, int line, const char *func,
                         const char *message)
{
	struct logged *c = counting;
	unsigned long long n = 0;
	const char *more = NULL;

	(void)level;
	(void)file;
	(void)line;
	(void)func;
	pthread_mutex_lock(&logged_lock);
	if (strstr(message, c->mark)) {
		c->lines++;
		c->seen++;
		for (const char *p = strstr(message, "; "); p; p = strstr(p + 2, "; "))
			more = p; /* the suffix is the last "; " of the line */
		if (more && sscanf(more, "; %llu more not logged", &n) == 1)
			c->seen += n;
	} else if (strstr(message, c->summary) && sscanf(message, "tls: %llu more", &n) == 1) {
		c->seen += n;
	}
	pthread_mutex_unlock(&logged_lock);
}

/* The count so far; *lines: the lines it came in. */
static uint64_t logged_count(struct logged *c, uint64_t *lines)
{
	uint64_t n;

	pthread_mutex_lock(&logged_lock);
	n = c->seen;
	if (lines)
		*lines = c->lines;
	pthread_mutex_unlock(&logged_lock);
	return n;
}

static void count_log(struct logged *c)
{
	counting = c;
	rdmx_log_set_function(count_logged);
}

/* The log's rate limit keeps the count: every eviction of a flood is in
 * the log, as a line or in the count of a later line, even when the flood
 * stops and no further line comes. */
Test(listener, rate_limited_log_keeps_the_count_of_evictions)
{
	enum { FLOOD = 100, PER_SOURCE = 4 };
	static int fds[FLOOD];

	static struct logged ev = {"dropped the one idle longest",
	                           "more handshake evictions not logged", 0, 0};

	count_log(&ev);
	server_start(30000, 16, PER_SOURCE);
	for (int i = 0; i < FLOOD; i++)
		fds[i] = tcp_from("127.0.0.4");
	wait_until(stats().evicted >= FLOOD - PER_SOURCE, 20000);
	cr_assert_eq(stats().evicted, FLOOD - PER_SOURCE);
	wait_until(logged_count(&ev, NULL) == FLOOD - PER_SOURCE, 20000);
	for (int i = 0; i < FLOOD; i++)
		close(fds[i]);
	server_stop();
	cr_assert_eq(logged_count(&ev, NULL), FLOOD - PER_SOURCE);
}

/* A scanner's garbage is refused with at most one line a second, and the
 * count of the others is kept (a line per connection before: a scanner
 * could flood the log). */
Test(listener, refused_handshakes_logged_at_most_one_a_second)
{
	enum { FLOOD = 100 };
	static int fds[FLOOD];
	static struct logged rf = {"did not speak TLS", "more refused handshakes not logged", 0, 0};
	uint64_t lines = 0;
	int64_t t0;

	count_log(&rf);
	server_start(30000, 256, 256);
	t0 = tls_test_now_ms();
	for (int i = 0; i < FLOOD; i++) {
		fds[i] = tcp_from("127.0.0.5");
		cr_assert_eq(write(fds[i], "GET / HTTP/1.0\r\n\r\n", 18), 18);
	}
	for (int i = 0; i < FLOOD; i++) {
		cr_assert(closed_by_server(fds[i], 20000));
		close(fds[i]);
	}
	wait_until(refused_count() >= FLOOD, 20000);
	cr_assert_eq(refused_count(), FLOOD);
	logged_count(&rf, &lines);
	cr_assert_leq(lines, 2 + (uint64_t)(tls_test_now_ms() - t0) / 1000,
	              "%llu lines for %d refusals in %lld ms", (unsigned long long)lines, FLOOD,
	              (long long)(tls_test_now_ms() - t0));
	wait_until(logged_count(&rf, NULL) == FLOOD, 20000);
	server_stop();
	cr_assert_eq(logged_count(&rf, NULL), FLOOD, "refusals lost from the log");
}

/* Some of the count came in no line of its own. */
static int counted_beyond_lines(struct logged *c)
{
	uint64_t lines, n = logged_count(c, &lines);

	return n > lines;
}

/* Out of descriptors (a peer holds the process's), the listener retries its
 * accept every 100 ms: one line a second, the others counted (a line per
 * retry before: ten a second for as long as the peer likes). */
Test(listener, failed_accepts_logged_at_most_one_a_second)
{
	enum { PENDING = 3 };
	static struct logged acc = {"tls: accept failed", "more failed accepts not logged", 0, 0};
	struct sockaddr_in dst = {.sin_family = AF_INET};
	struct rlimit was, none;
	int fds[PENDING], lowest;
	uint64_t lines = 0, n;

	count_log(&acc);
	server_start(30000, 64, 64);
	for (int i = 0; i < PENDING; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr_assert_geq(fds[i], 0);
	}
	/* no descriptor left for the process: the lowest free one is over it */
	lowest = dup(0);
	cr_assert_geq(lowest, 0);
	close(lowest);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &was), 0);
	none = was;
	none.rlim_cur = (rlim_t)lowest;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &none), 0);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons(srv.port);
	for (int i = 0; i < PENDING; i++)
		cr_assert_eq(connect(fds[i], (struct sockaddr *)&dst, sizeof(dst)), 0,
		             "connect: %s", strerror(errno));
	/* the count of those not logged comes once the second is over */
	wait_until(counted_beyond_lines(&acc), 20000);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &was), 0);
	n = logged_count(&acc, &lines);
	cr_assert(lines >= 1 && lines <= 2 && n > lines, "%llu lines for %llu failed accepts",
	          (unsigned long long)lines, (unsigned long long)n);
	for (int i = 0; i < PENDING; i++)
		close(fds[i]);
	server_stop();
}

Test(listener, flood_from_many_sources_bounded_by_total_limit)
{
	enum { SOURCES = 10, EACH = 4, TOTAL = 16 };
	static int fds[SOURCES * EACH];
	char ip[32];

	server_start(300, TOTAL, EACH);
	for (int s = 0; s < SOURCES; s++) {
		snprintf(ip, sizeof(ip), "127.0.1.%d", s + 1);
		for (int i = 0; i < EACH; i++)
			fds[s * EACH + i] = tcp_from(ip);
	}
	/* every one is accepted, held at most the timeout or until newer ones
	 * need its slot, dropped */
	wait_until(stats().timed_out + stats().evicted == SOURCES * EACH, 30000);
	pthread_mutex_lock(&srv.lock);
	cr_assert_leq(srv.max_handshaking, TOTAL);
	cr_assert_eq(srv.established, 0);
	pthread_mutex_unlock(&srv.lock);
	for (int i = 0; i < SOURCES * EACH; i++)
		close(fds[i]);
	echo_once("after the storm");
	server_stop();
}

/* A partial ClientHello (record header and the start of the handshake
 * message), then silence: a half-open handshake. */
static int half_open_from(const char *src_ip)
{
	static const unsigned char part[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc};
	int fd = tcp_from(src_ip);

	cr_assert_eq(write(fd, part, sizeof(part)), (ssize_t)sizeof(part));
	return fd;
}

/* A good client from 127.0.0.1 with a short handshake timeout of its own:
 * it must not wait for the listener's timeout to free a slot. */
static void echo_quick(const char *msg)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, "client", "server.test", 1);
	struct rdmx_tls_conn *conn = NULL;
	const void *f;
	size_t len;

	cr_assert_not_null(cfg);
	cr_assert_rc(rdmx_tls_connect_timeout(cfg, "127.0.0.1", srv.port, 3000, &conn), RDMX_OK);
	cr_assert_rc(rdmx_tls_conn_send_wait(conn, msg, strlen(msg), 5000), RDMX_OK);
	cr_assert_rc(rdmx_tls_conn_recv_wait(conn, &f, &len, 5000), RDMX_OK);
	cr_assert_eq(len, strlen(msg));
	rdmx_tls_conn_destroy(&conn);
	rdmx_tls_config_destroy(&cfg);
}

/* Defaults (64 in all, 8 per source, 10 s timeout): 200 half-open
 * handshakes from the good client's own address do not lock it out. */
Test(listener, half_open_flood_from_the_same_address_does_not_lock_out)
{
	enum { FLOOD = 200 };
	static int fds[FLOOD];

	server_start(RDMX_TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS, RDMX_TLS_DEFAULT_MAX_HANDSHAKES,
	             RDMX_TLS_DEFAULT_MAX_HANDSHAKES_PER_SOURCE);
	for (int i = 0; i < FLOOD; i++)
		fds[i] = half_open_from("127.0.0.1");
	wait_until(stats().accepted >= FLOOD, 20000);
	cr_assert_leq(stats().handshaking, RDMX_TLS_DEFAULT_MAX_HANDSHAKES_PER_SOURCE);
	for (int i = 0; i < 20; i++)
		echo_quick("behind the same address");
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.established, 20);
	pthread_mutex_unlock(&srv.lock);
	for (int i = 0; i < FLOOD; i++)
		close(fds[i]);
	server_stop();
}

/* 200 half-open handshakes from 25 addresses fill the listener's budget:
 * it keeps accepting, and good clients get through. */
Test(listener, half_open_flood_from_many_addresses_does_not_stop_accepting)
{
	enum { SOURCES = 25, EACH = 8 };
	static int fds[SOURCES * EACH];
	char ip[32];

	server_start(RDMX_TLS_DEFAULT_HANDSHAKE_TIMEOUT_MS, RDMX_TLS_DEFAULT_MAX_HANDSHAKES,
	             RDMX_TLS_DEFAULT_MAX_HANDSHAKES_PER_SOURCE);
	for (int s = 0; s < SOURCES; s++) {
		snprintf(ip, sizeof(ip), "127.0.2.%d", s + 1);
		for (int i = 0; i < EACH; i++)
			fds[s * EACH + i] = half_open_from(ip);
	}
	wait_until(stats().accepted >= SOURCES * EACH, 20000);
	cr_assert_leq(stats().handshaking, RDMX_TLS_DEFAULT_MAX_HANDSHAKES);
	cr_assert_geq(stats().evicted, SOURCES * EACH - RDMX_TLS_DEFAULT_MAX_HANDSHAKES);
	for (int i = 0; i < 20; i++)
		echo_quick("through a full listener");
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.established, 20);
	cr_assert_leq(srv.max_handshaking, RDMX_TLS_DEFAULT_MAX_HANDSHAKES);
	pthread_mutex_unlock(&srv.lock);
	for (int i = 0; i < SOURCES * EACH; i++)
		close(fds[i]);
	server_stop();
}

/* A client's timeout bounds its handshake: against a server that accepts
 * and says nothing, the connect ends with RDMX_E_TIMEDOUT near the client's
 * budget, not the config's 10 s. */
Test(listener, client_timeout_bounds_the_handshake_against_a_silent_server)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof(a);
	struct rdmx_tls_config *cfg = tls_test_config(&pki, "client", "server.test", 1);
	struct rdmx_tls_conn *conn = NULL;
	int64_t t0, took;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_not_null(cfg);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(lfd, 16), 0); /* the kernel accepts; nobody answers */
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	t0 = tls_test_now_ms();
	cr_assert_rc(rdmx_tls_connect_timeout(cfg, "127.0.0.1", ntohs(a.sin_port), 300, &conn),
	             RDMX_E_TIMEDOUT);
	took = tls_test_now_ms() - t0;
	cr_assert_null(conn);
	cr_assert_geq(took, 290);
	cr_assert_lt(took, 5000, "took %lld ms with a 300 ms budget", (long long)took);
	cr_assert(tls_test_log_contains("timed out after 300 ms"));
	cr_assert_rc(rdmx_tls_connect_timeout(cfg, "127.0.0.1", ntohs(a.sin_port), -1, &conn),
	             RDMX_E_INVAL);
	close(lfd);
	rdmx_tls_config_destroy(&cfg);
}
