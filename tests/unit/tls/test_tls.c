/* TLS unit tests: one server and one client connection over a socketpair,
 * stepped in turn from one thread (no network, no event loop). Every
 * refusal is checked for its code, its log line, and that no application
 * frame crossed. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "test_assert.h"
#include "tls_test_pki.h"
#include "tls_test_suite.h"

static struct tls_test_pki pki;

TLS_TEST_SUITE(tls, pki, 60);

/* ---- stepping both ends ---- */

struct end {
	struct rdmx_tls_conn *conn; /* ours, or */
	SSL *raw;                   /* a hand-made OpenSSL peer */
	int fd;
	int res;
};

static void step(struct end *e)
{
	int r;

	if (e->res <= 0 && e->res != -1000)
		return;
	if (e->conn) {
		e->res = rdmx_tls_conn_handshake(e->conn);
		return;
	}
	r = SSL_do_handshake(e->raw);
	if (r == 1) {
		e->res = 0;
		return;
	}
	switch (SSL_get_error(e->raw, r)) {
	case SSL_ERROR_WANT_READ:
		e->res = RDMX_TLS_WANT_READ;
		break;
	case SSL_ERROR_WANT_WRITE:
		e->res = RDMX_TLS_WANT_WRITE;
		break;
	default:
		e->res = RDMX_E_PROTOCOL;
		ERR_clear_error();
	}
}

/* Bounded: a stuck pair simply stops after the iterations. */
static void pump(struct end *a, struct end *b)
{
	a->res = b->res = -1000;
	for (int i = 0; i < 400; i++) {
		step(a);
		step(b);
		if (a->res <= 0 && a->res != -1000 && b->res <= 0 && b->res != -1000)
			break;
	}
}

static void pair(int sv[2])
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
}

static struct rdmx_tls_config *server_cfg(const char *cert, int crl)
{
	struct rdmx_tls_config *cfg = tls_test_config(&pki, cert, "*.test", crl);

	cr_assert_not_null(cfg);
	return cfg;
}

static void conn_pair(struct rdmx_tls_config *scfg, struct rdmx_tls_config *ccfg, struct end *s,
                      struct end *c)
{
	int sv[2];

	pair(sv);
	memset(s, 0, sizeof(*s));
	memset(c, 0, sizeof(*c));
	cr_assert_rc(rdmx_tls_conn_create(scfg, sv[0], RDMX_TLS_SERVER, NULL, &s->conn), RDMX_OK);
	cr_assert_rc(rdmx_tls_conn_create(ccfg, sv[1], RDMX_TLS_CLIENT, "server.test", &c->conn),
	             RDMX_OK);
}

/* Receives with a few retries (both ends in one thread). */
static int recv_some(struct rdmx_tls_conn *conn, struct rdmx_tls_conn *other, const void **f,
                     size_t *len)
{
	int r = RDMX_TLS_WANT_READ;

	for (int i = 0; i < 2000 && r > 0; i++) {
		if (other && rdmx_tls_conn_want_write(other))
			rdmx_tls_conn_flush(other);
		r = rdmx_tls_conn_recv(conn, f, len);
		if (r > 0)
			usleep(100);
	}
	return r;
}

/* The client sends a secret frame as soon as it thinks it is done; the
 * server, which refused, must never deliver it, and the client must learn
 * of the refusal. */
static void expect_server_refuses(const char *client_cert, int server_crl, const char *reason)
{
	struct rdmx_tls_config *scfg = server_cfg("server", server_crl);
	struct rdmx_tls_config *ccfg = tls_test_config(&pki, client_cert, "server.test", 0);
	struct end s, c;
	const void *f;
	size_t len;

	cr_assert_not_null(ccfg);
	conn_pair(scfg, ccfg, &s, &c);
	pump(&s, &c);
	cr_assert_rc(s.res, RDMX_E_AUTH);
	cr_assert(strstr(rdmx_tls_conn_get_failure(s.conn), reason), "reason '%s', want '%s'",
	          rdmx_tls_conn_get_failure(s.conn), reason);
	cr_assert(tls_test_log_contains(reason), "no log line with '%s'", reason);
	if (c.res == RDMX_TLS_DONE) {
		int r = rdmx_tls_conn_send(c.conn, "secret", 6);

		cr_assert(r == RDMX_OK || r == RDMX_E_AUTH);
		cr_assert_rc(recv_some(c.conn, NULL, &f, &len), RDMX_E_AUTH);
	} else {
		cr_assert_lt(c.res, 0);
	}
	cr_assert_lt(rdmx_tls_conn_recv(s.conn, &f, &len), 0);
	rdmx_tls_conn_destroy(&s.conn);
	rdmx_tls_conn_destroy(&c.conn);
	rdmx_tls_config_destroy(&scfg);
	rdmx_tls_config_destroy(&ccfg);
}

/* ---- names and configuration ---- */

Test(tls, name_match_rules)
{
	cr_assert(rdmx_tls_name_match("db1.svc.local", "db1.svc.local"));
	cr_assert(rdmx_tls_name_match("db1.svc.local", "DB1.Svc.Local"));
	cr_assert_not(rdmx_tls_name_match("db1.svc.local", "db2.svc.local"));
	cr_assert(rdmx_tls_name_match("*.svc.local", "a.svc.local"));
	cr_assert_not(rdmx_tls_name_match("*.svc.local", "a.b.svc.local"));
	cr_assert_not(rdmx_tls_name_match("*.svc.local", "svc.local"));
	cr_assert_not(rdmx_tls_name_match("*.svc.local", ".svc.local"));
	cr_assert_not(rdmx_tls_name_match("*.svc.local", "asvc.local"));
	cr_assert(rdmx_tls_name_match("*", "anything.at.all"));
	cr_assert_not(rdmx_tls_name_match("*", ""));
	cr_assert_not(rdmx_tls_name_match(NULL, "a"));
}

/* The check on its own (rdmx-bootstrapd's policy file uses it) answers as
 * rdmx_tls_config_add_allowed_peer does. */
Test(tls, check_peer_pattern)
{
	static const char *good[] = {"*", "*.svc.local", "db1.svc.local", "a-b_c.D9"};
	static const char *bad[] = {"", "a.*.b", "*a.b", "*.", "a b", "a..b", ".a", "a.", "**"};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert_eq(rdmx_tls_check_peer_pattern(good[i]), RDMX_OK, "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(rdmx_tls_check_peer_pattern(bad[i]), RDMX_E_INVAL, "%s", bad[i]);
	cr_assert_rc(rdmx_tls_check_peer_pattern(NULL), RDMX_E_INVAL);
}

Test(tls, config_rejects_bad_values)
{
	struct rdmx_tls_config *cfg = NULL;

	cr_assert_rc(rdmx_tls_config_create(&cfg), RDMX_OK);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, ""), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, "a.*.b"), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, "*a.b"), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, "*."), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, "a b"), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, "a..b"), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_add_allowed_peer(cfg, "*.svc.local"), RDMX_OK);
	cr_assert_rc(rdmx_tls_config_set_max_frame(cfg, 0), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_set_handshake_timeout(cfg, 0), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_set_handshake_limits(cfg, 4, 8), RDMX_E_INVAL);
	cr_assert_rc(rdmx_tls_config_set_ca_file(cfg, NULL), RDMX_E_INVAL);
	/* no CA, no certificate: refused at load, with a reason */
	cr_assert_rc(rdmx_tls_config_load(cfg), RDMX_E_INVAL);
	cr_assert(tls_test_log_contains("no CA configured"));
	/* frozen after use */
	cr_assert_rc(rdmx_tls_config_set_max_frame(cfg, 100), RDMX_E_BAD_STATE);
	cr_assert_rc(rdmx_tls_config_destroy(&cfg), RDMX_OK);
	cr_assert_null(cfg);
	cr_assert_rc(rdmx_tls_config_destroy(&cfg), RDMX_OK);
	cr_assert_rc(rdmx_tls_config_destroy(NULL), RDMX_OK);
}

Test(tls, config_missing_files_named_in_log)
{
	struct rdmx_tls_config *cfg = NULL;
	int sv[2];
	struct rdmx_tls_conn *conn = NULL;

	cr_assert_rc(rdmx_tls_config_create(&cfg), RDMX_OK);
	rdmx_tls_config_set_ca_file(cfg, "/nonexistent/ca.crt");
	rdmx_tls_config_set_cert_key(cfg, tls_test_pki_path(&pki, "server", ".crt"),
	                             tls_test_pki_path(&pki, "server", ".key"));
	pair(sv);
	cr_assert_rc(rdmx_tls_conn_create(cfg, sv[0], RDMX_TLS_SERVER, NULL, &conn), RDMX_E_INVAL);
	cr_assert_null(conn);
	cr_assert(tls_test_log_contains("/nonexistent/ca.crt"));
	close(sv[1]);
	rdmx_tls_config_destroy(&cfg);
}

/* ---- the good path ---- */

Test(tls, mutual_handshake_and_frames)
{
	struct rdmx_tls_config *scfg = server_cfg("server", 1);
	struct rdmx_tls_config *ccfg = tls_test_config(&pki, "client", "server.test", 1);
	struct end s, c;
	const char *name;
	const void *f;
	size_t len;
	static char big[200000];

	conn_pair(scfg, ccfg, &s, &c);
	/* the config may go while connections live */
	rdmx_tls_config_destroy(&ccfg);
	cr_assert_rc(rdmx_tls_conn_send(c.conn, "x", 1), RDMX_E_BAD_STATE);
	pump(&s, &c);
	cr_assert_rc(s.res, RDMX_TLS_DONE);
	cr_assert_rc(c.res, RDMX_TLS_DONE);
	cr_assert_rc(rdmx_tls_conn_get_peer_name(s.conn, &name), RDMX_OK);
	cr_assert_str_eq(name, "client.test");
	cr_assert_rc(rdmx_tls_conn_get_peer_name(c.conn, &name), RDMX_OK);
	cr_assert_str_eq(name, "server.test");

	cr_assert_rc(rdmx_tls_conn_send(c.conn, "hello", 5), RDMX_OK);
	cr_assert_rc(rdmx_tls_conn_send(c.conn, "", 0), RDMX_OK);
	cr_assert_rc(recv_some(s.conn, c.conn, &f, &len), RDMX_TLS_DONE);
	cr_assert_eq(len, 5);
	cr_assert_eq(memcmp(f, "hello", 5), 0);
	cr_assert_rc(recv_some(s.conn, c.conn, &f, &len), RDMX_TLS_DONE);
	cr_assert_eq(len, 0);

	/* a frame spanning many TLS records and socket buffers */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	cr_assert_rc(rdmx_tls_conn_send(s.conn, big, sizeof(big)), RDMX_OK);
	cr_assert_rc(recv_some(c.conn, s.conn, &f, &len), RDMX_TLS_DONE);
	cr_assert_eq(len, sizeof(big));
	cr_assert_eq(memcmp(f, big, len), 0);
	cr_assert_rc(rdmx_tls_conn_recv(c.conn, &f, &len), RDMX_TLS_WANT_READ);

	/* clean close is seen as a disconnect */
	rdmx_tls_conn_destroy(&s.conn);
	cr_assert_rc(recv_some(c.conn, NULL, &f, &len), RDMX_E_DISCONNECTED);
	rdmx_tls_conn_destroy(&c.conn);
	rdmx_tls_config_destroy(&scfg);
}

/* ---- refusals by the server ---- */

Test(tls, refuses_wrong_ca)
{
	expect_server_refuses("foreign", 0, "certificate not signed by a trusted CA");
}

Test(tls, refuses_expired)
{
	expect_server_refuses("expired", 0, "certificate expired");
}

Test(tls, refuses_not_yet_valid)
{
	expect_server_refuses("notyet", 0, "certificate not yet valid");
}

Test(tls, refuses_wrong_san)
{
	expect_server_refuses("wrongsan", 0, "peer certificate name not allowed");
}

/* The refused name comes from the peer's certificate: the reason and its
 * log line carry it escaped, never a control character. */
Test(tls, refused_name_escaped)
{
	expect_server_refuses(
	    "ctlsan", 0,
	    "peer certificate name not allowed: evil\\x1b[2K\\x0ardmx: forged.example");
	cr_assert(!tls_test_log_contains("\n"), "a raw newline reached the log");
}

Test(tls, refuses_cn_only)
{
	expect_server_refuses("cnonly", 0, "no DNS subjectAltName");
}

Test(tls, refuses_self_signed)
{
	expect_server_refuses("selfsigned", 0, "self-signed certificate");
}

Test(tls, refuses_revoked_with_crl)
{
	expect_server_refuses("revoked", 1, "certificate revoked");
}

Test(tls, refuses_wrong_key_usage)
{
	expect_server_refuses("codesign", 0, "key usage does not allow TLS client");
}

/* a raw OpenSSL client: no certificate, or TLS 1.2 only */
static SSL *raw_client(int fd, const char *cert, int max_version)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;

	cr_assert_not_null(ctx);
	SSL_CTX_load_verify_file(ctx, tls_test_pki_path(&pki, "ca", ".crt"));
	if (max_version)
		SSL_CTX_set_max_proto_version(ctx, max_version);
	if (cert) {
		SSL_CTX_use_certificate_file(ctx, tls_test_pki_path(&pki, cert, ".crt"),
		                             SSL_FILETYPE_PEM);
		SSL_CTX_use_PrivateKey_file(ctx, tls_test_pki_path(&pki, cert, ".key"),
		                            SSL_FILETYPE_PEM);
	}
	ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_connect_state(ssl);
	return ssl;
}

static void raw_case(const char *cert, int max_version, int want, const char *reason)
{
	struct rdmx_tls_config *scfg = server_cfg("server", 0);
	struct end s = {0}, c = {0};
	const void *f;
	size_t len;
	int sv[2];

	pair(sv);
	cr_assert_rc(rdmx_tls_conn_create(scfg, sv[0], RDMX_TLS_SERVER, NULL, &s.conn), RDMX_OK);
	c.raw = raw_client(sv[1], cert, max_version);
	pump(&s, &c);
	cr_assert_rc(s.res, want);
	cr_assert(strstr(rdmx_tls_conn_get_failure(s.conn), reason), "reason '%s', want '%s'",
	          rdmx_tls_conn_get_failure(s.conn), reason);
	cr_assert(tls_test_log_contains(reason));
	if (c.res == 0) /* TLS 1.3 client thinks it is in: its data goes nowhere */
		SSL_write(c.raw, "secret", 6);
	cr_assert_lt(rdmx_tls_conn_recv(s.conn, &f, &len), 0);
	SSL_free(c.raw);
	close(sv[1]);
	rdmx_tls_conn_destroy(&s.conn);
	rdmx_tls_config_destroy(&scfg);
}

Test(tls, refuses_no_client_certificate)
{
	raw_case(NULL, 0, RDMX_E_AUTH, "peer sent no certificate");
}

Test(tls, refuses_tls12_only_peer)
{
	raw_case("client", TLS1_2_VERSION, RDMX_E_PROTOCOL, "does not speak TLS 1.3");
}

Test(tls, refuses_garbage_instead_of_client_hello)
{
	struct rdmx_tls_config *scfg = server_cfg("server", 0);
	struct end s = {0};
	const char junk[] = "GARBAGE GARBAGE GARBAGE\r\n\r\n\x01\x02\x03\xff\xfe";
	int sv[2], r = RDMX_TLS_WANT_READ;

	pair(sv);
	cr_assert_rc(rdmx_tls_conn_create(scfg, sv[0], RDMX_TLS_SERVER, NULL, &s.conn), RDMX_OK);
	cr_assert_eq(write(sv[1], junk, sizeof(junk)), (ssize_t)sizeof(junk));
	shutdown(sv[1], SHUT_WR);
	for (int i = 0; i < 100 && r > 0; i++)
		r = rdmx_tls_conn_handshake(s.conn);
	cr_assert_rc(r, RDMX_E_PROTOCOL);
	cr_assert(tls_test_log_contains("did not speak TLS"));
	close(sv[1]);
	rdmx_tls_conn_destroy(&s.conn);
	rdmx_tls_config_destroy(&scfg);
}

/* ---- refusals by the client ---- */

static void expect_client_refuses(const char *server_cert, const char *reason)
{
	struct rdmx_tls_config *scfg = server_cfg(server_cert, 0);
	struct rdmx_tls_config *ccfg = tls_test_config(&pki, "client", "server.test", 0);
	struct end s, c;

	conn_pair(scfg, ccfg, &s, &c);
	pump(&s, &c);
	cr_assert_rc(c.res, RDMX_E_AUTH);
	cr_assert(strstr(rdmx_tls_conn_get_failure(c.conn), reason), "reason '%s'",
	          rdmx_tls_conn_get_failure(c.conn));
	cr_assert_lt(s.res, 0, "server must not be established");
	rdmx_tls_conn_destroy(&s.conn);
	rdmx_tls_conn_destroy(&c.conn);
	rdmx_tls_config_destroy(&scfg);
	rdmx_tls_config_destroy(&ccfg);
}

Test(tls, client_refuses_expired_server)
{
	expect_client_refuses("srvexpired", "certificate expired");
}

Test(tls, client_refuses_server_name_not_allowed)
{
	expect_client_refuses("srvwrongsan", "peer certificate name not allowed");
}

/* ---- frames ---- */

Test(tls, oversized_frame_closes_connection)
{
	struct rdmx_tls_config *scfg = server_cfg("server", 0);
	struct rdmx_tls_config *ccfg = tls_test_config(&pki, "client", "server.test", 0);
	struct end s, c;
	const void *f;
	size_t len;
	static char payload[5000];

	cr_assert_rc(rdmx_tls_config_set_max_frame(scfg, 1024), RDMX_OK);
	conn_pair(scfg, ccfg, &s, &c);
	pump(&s, &c);
	cr_assert_rc(s.res, RDMX_TLS_DONE);
	cr_assert_rc(c.res, RDMX_TLS_DONE);
	/* the sender refuses what its own limit forbids, and stays usable */
	cr_assert_rc(rdmx_tls_conn_send(s.conn, payload, sizeof(payload)), RDMX_E_TOO_BIG);
	/* the client's limit is larger: the server must refuse on receipt */
	cr_assert_rc(rdmx_tls_conn_send(c.conn, payload, sizeof(payload)), RDMX_OK);
	cr_assert_rc(recv_some(s.conn, c.conn, &f, &len), RDMX_E_TOO_BIG);
	cr_assert(tls_test_log_contains("frame of 5000 bytes refused"));
	cr_assert_rc(rdmx_tls_conn_recv(s.conn, &f, &len), RDMX_E_TOO_BIG);
	cr_assert_lt(recv_some(c.conn, NULL, &f, &len), 0);
	rdmx_tls_conn_destroy(&s.conn);
	rdmx_tls_conn_destroy(&c.conn);
	rdmx_tls_config_destroy(&scfg);
	rdmx_tls_config_destroy(&ccfg);
}
