#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "tls_test_flood.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/sockios.h>

#include <criterion/criterion.h>
#include <openssl/err.h>

#include "tls_test_suite.h"

/* The msg callback: counts the KeyUpdate messages the client receives. */
static void count_key_updates(int write_p, int version, int content_type, const void *buf,
                              size_t len, SSL *ssl, void *arg)
{
	struct tls_test_flood *f = arg;

	(void)version;
	(void)ssl;
	if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 &&
	    ((const unsigned char *)buf)[0] == SSL3_MT_KEY_UPDATE)
		f->key_updates_seen++;
}

void tls_test_flood_connect(struct tls_test_flood *f, const struct tls_test_pki *pki, uint16_t port,
                            const char *cert)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct timeval guard = {.tv_sec = 10};
	int small = 4096, big = 1 << 20;

	memset(f, 0, sizeof(*f));
	f->ctx = SSL_CTX_new(TLS_client_method());
	cr_assert_not_null(f->ctx);
	SSL_CTX_set_min_proto_version(f->ctx, TLS1_3_VERSION);
	cr_assert_eq(SSL_CTX_load_verify_file(f->ctx, tls_test_pki_path(pki, "ca", ".crt")), 1);
	cr_assert_eq(SSL_CTX_use_certificate_file(f->ctx, tls_test_pki_path(pki, cert, ".crt"),
	                                          SSL_FILETYPE_PEM),
	             1);
	cr_assert_eq(SSL_CTX_use_PrivateKey_file(f->ctx, tls_test_pki_path(pki, cert, ".key"),
	                                         SSL_FILETYPE_PEM),
	             1);
	SSL_CTX_set_verify(f->ctx, SSL_VERIFY_PEER, NULL);
	f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(f->fd, 0);
	setsockopt(f->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	setsockopt(f->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof(guard));
	setsockopt(f->fd, SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof(guard));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	cr_assert_eq(connect(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	f->ssl = SSL_new(f->ctx);
	cr_assert_not_null(f->ssl);
	SSL_set_fd(f->ssl, f->fd);
	cr_assert_eq(SSL_connect(f->ssl), 1, "TLS handshake with the server");
	SSL_set_msg_callback(f->ssl, count_key_updates);
	SSL_set_msg_callback_arg(f->ssl, f);
}

void tls_test_flood_close(struct tls_test_flood *f)
{
	ERR_clear_error();
	SSL_free(f->ssl);
	SSL_CTX_free(f->ctx);
	close(f->fd);
	f->ssl = NULL;
	f->ctx = NULL;
	f->fd = -1;
}

void tls_test_flood_set_blocking(struct tls_test_flood *f, int on)
{
	int flags = fcntl(f->fd, F_GETFL);

	cr_assert_geq(flags, 0);
	flags = on ? flags & ~O_NONBLOCK : flags | O_NONBLOCK;
	cr_assert_eq(fcntl(f->fd, F_SETFL, flags), 0);
}

void tls_test_flood_read_exact(struct tls_test_flood *f, void *p, size_t n)
{
	unsigned char *at = p;

	while (n) {
		int r = SSL_read(f->ssl, at, n > 4096 ? 4096 : (int)n);

		cr_assert_gt(r, 0, "no data from the server (SSL error %d)",
		             SSL_get_error(f->ssl, r));
		at += r;
		n -= (size_t)r;
	}
}

size_t tls_test_flood_read_frame(struct tls_test_flood *f, void *buf, size_t cap)
{
	unsigned char h[4];
	size_t n;

	tls_test_flood_read_exact(f, h, sizeof(h));
	n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
	cr_assert_leq(n, cap, "a frame of %zu bytes", n);
	tls_test_flood_read_exact(f, buf, n);
	return n;
}

void tls_test_flood_write_frame(struct tls_test_flood *f, const void *p, size_t n)
{
	unsigned char h[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
	                      (unsigned char)(n >> 8), (unsigned char)n};

	cr_assert_eq(SSL_write(f->ssl, h, sizeof(h)), (int)sizeof(h));
	cr_assert_eq(SSL_write(f->ssl, p, (int)n), (int)n);
}

/* fd is a TCP socket whose local address is `local` and peer `peer`. */
static int socket_is(int fd, const struct sockaddr_in *local, const struct sockaddr_in *peer)
{
	struct sockaddr_in a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	return getsockname(fd, (struct sockaddr *)&a, &la) == 0 && la == sizeof(a) &&
	       a.sin_family == AF_INET && getpeername(fd, (struct sockaddr *)&b, &lb) == 0 &&
	       lb == sizeof(b) && a.sin_port == local->sin_port &&
	       a.sin_addr.s_addr == local->sin_addr.s_addr && b.sin_port == peer->sin_port &&
	       b.sin_addr.s_addr == peer->sin_addr.s_addr;
}

int tls_test_flood_server_fd(const struct tls_test_flood *f)
{
	struct sockaddr_in me, peer;
	socklen_t len = sizeof(me);
	struct dirent *e;
	int found = -1;
	DIR *d;

	cr_assert_eq(getsockname(f->fd, (struct sockaddr *)&me, &len), 0);
	len = sizeof(peer);
	cr_assert_eq(getpeername(f->fd, (struct sockaddr *)&peer, &len), 0);
	d = opendir("/proc/self/fd");
	cr_assert_not_null(d, "cannot list /proc/self/fd");
	while (found < 0 && (e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || fd == f->fd ||
		    fd == dirfd(d))
			continue;
		/* the server's end: our peer's address is its own, ours its peer */
		if (socket_is((int)fd, &peer, &me))
			found = (int)fd;
	}
	closedir(d);
	cr_assert_geq(found, 0, "the server's end of the connection is not in this process");
	return found;
}

void tls_test_flood_send(struct tls_test_flood *f, int server_fd)
{
	int small = 4096, big = 1 << 20, on = 1, off = 0;

	/* the system's limits are far below and above these */
	setsockopt(server_fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(server_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	tls_test_flood_set_blocking(f, 0);
	f->key_updates_seen = 0;
	setsockopt(f->fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	for (int i = 0; i < TLS_TEST_FLOOD_KEY_UPDATES; i++) {
		cr_assert_eq(SSL_key_update(f->ssl, SSL_KEY_UPDATE_REQUESTED), 1);
		cr_assert_eq(SSL_do_handshake(f->ssl), 1,
		             "setup: KeyUpdate %d did not fit in the client's send buffer", i);
	}
	setsockopt(f->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
}

int tls_test_flood_more(struct tls_test_flood *f)
{
	int on = 1, off = 0, ok = 1;

	setsockopt(f->fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	for (int i = 0; i < TLS_TEST_FLOOD_KEY_UPDATES && ok; i++) {
		ERR_clear_error();
		ok = SSL_key_update(f->ssl, SSL_KEY_UPDATE_REQUESTED) == 1 &&
		     SSL_do_handshake(f->ssl) == 1;
	}
	setsockopt(f->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	return ok;
}

int tls_test_flood_unread(int server_fd)
{
	int n = -1;

	ioctl(server_fd, SIOCINQ, &n);
	return n;
}

int tls_test_flood_ended(const struct tls_test_flood *f)
{
	struct pollfd p = {.fd = f->fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

int tls_test_flood_unacked(const struct tls_test_flood *f)
{
	int n = -1;

	ioctl(f->fd, SIOCOUTQ, &n);
	return n;
}

void tls_test_flood_drain(struct tls_test_flood *f, int want)
{
	int64_t end = tls_test_now_ms() + 20000;
	unsigned char buf[256];

	while (f->key_updates_seen < want && tls_test_now_ms() < end) {
		struct pollfd p = {.fd = f->fd, .events = POLLIN};
		int n;

		ERR_clear_error();
		n = SSL_read(f->ssl, buf, sizeof(buf));
		cr_assert_leq(n, 0, "the server sent a frame unasked");
		cr_assert_eq(SSL_get_error(f->ssl, n), SSL_ERROR_WANT_READ,
		             "the session failed (SSL error %d): the server lost it",
		             SSL_get_error(f->ssl, n));
		poll(&p, 1, 100);
	}
	cr_assert_geq(f->key_updates_seen, want, "%d of %d KeyUpdates answered: the server stalled",
	              f->key_updates_seen, want);
}

void tls_test_flood_expect_closed(struct tls_test_flood *f)
{
	int64_t end = tls_test_now_ms() + 20000;
	unsigned char buf[256];

	while (tls_test_now_ms() < end) {
		struct pollfd p = {.fd = f->fd, .events = POLLIN};
		int n;

		ERR_clear_error();
		n = SSL_read(f->ssl, buf, sizeof(buf));
		if (n > 0)
			continue;
		if (SSL_get_error(f->ssl, n) != SSL_ERROR_WANT_READ)
			return;
		poll(&p, 1, 100);
	}
	cr_assert_fail("the session did not end (failure guard)");
}
