/* A raw OpenSSL client (no rdmx) that floods a server with TLS 1.3
 * KeyUpdate requests and does not read the answers, for the servers'
 * KeyUpdate-flood tests (secure/test_bootstrap.c, secure/test_registry.c).
 * Each test keeps its own probe of its server's loop; this is the client's
 * side, and the server's end of the connection found in this process.
 * Every call asserts (Criterion): a failure ends the test. */
#ifndef RDMX_TLS_TEST_FLOOD_H
#define RDMX_TLS_TEST_FLOOD_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "tls_test_pki.h"

/* KeyUpdate requests in one flood: their answers (27 bytes each) are far
 * more than the server's small send buffer and the client's small receive
 * buffer hold together. */
#define TLS_TEST_FLOOD_KEY_UPDATES 1000

struct tls_test_flood {
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;
	int key_updates_seen; /* KeyUpdate messages received */
};

/* A TLS 1.3 session with 127.0.0.1:port under the PKI's certificate
 * `cert` ("client", ...), the server's verified against the PKI's CA. The
 * socket's receive buffer is small (set before connect, so that the window
 * it offers stays small), its send buffer large; blocking, with a 10 s
 * guard on reads and writes. */
void tls_test_flood_connect(struct tls_test_flood *f, const struct tls_test_pki *pki, uint16_t port,
                            const char *cert);
/* SSL_free, SSL_CTX_free, close: no close_notify. */
void tls_test_flood_close(struct tls_test_flood *f);

/* Blocking (1) or not (0). */
void tls_test_flood_set_blocking(struct tls_test_flood *f, int on);
/* Reads exactly n bytes of application data (a blocking session). */
void tls_test_flood_read_exact(struct tls_test_flood *f, void *p, size_t n);
/* One whole frame (4-byte big-endian length, then the message) into
 * buf[cap]: its length. */
size_t tls_test_flood_read_frame(struct tls_test_flood *f, void *buf, size_t cap);
void tls_test_flood_write_frame(struct tls_test_flood *f, const void *p, size_t n);

/* The server's end of the session's TCP connection: a socket of this
 * process (the server runs on a thread of the test), found in
 * /proc/self/fd. */
int tls_test_flood_server_fd(const struct tls_test_flood *f);

/* The flood: the server's end `server_fd` gets a small send buffer (what
 * it answers fills up at once) and a large receive buffer (what it is sent
 * fits), the client's socket is made non-blocking, then
 * TLS_TEST_FLOOD_KEY_UPDATES requests go out in one corked burst (a few
 * full segments, not a thousand tiny ones whose per-segment overhead could
 * fill the server's receive buffer while it reads slowly: zero window, a
 * flake under ASan). Nothing is read. */
void tls_test_flood_send(struct tls_test_flood *f, int server_fd);
/* Bytes sent that the server's kernel has not acknowledged yet (SIOCOUTQ):
 * 0 once every request sits in the server's socket. */
int tls_test_flood_unacked(const struct tls_test_flood *f);
/* Another burst of TLS_TEST_FLOOD_KEY_UPDATES requests on a session the
 * server may end meanwhile: 0 when a write failed (it ended), else 1. */
int tls_test_flood_more(struct tls_test_flood *f);
/* Bytes in the server's end `server_fd` that the server has not read
 * (SIOCINQ; -1 once that descriptor is gone). */
int tls_test_flood_unread(int server_fd);
/* The server ended the session (its FIN or reset came), seen without
 * reading anything. */
int tls_test_flood_ended(const struct tls_test_flood *f);

/* Reads (TLS records only: the server must send no frame) until at least
 * `want` KeyUpdates have come; fails at the guard (20 s) as "the server
 * stalled" (a non-blocking session). */
void tls_test_flood_drain(struct tls_test_flood *f, int want);
/* Reads and drops what comes until the session ends (close_notify, EOF,
 * reset); fails at the guard (20 s) as "the session did not end" (a
 * non-blocking session). */
void tls_test_flood_expect_closed(struct tls_test_flood *f);

#endif
