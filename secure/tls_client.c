/* Blocking helpers for clients: connect + handshake within the configured
 * timeout, send and receive a frame with a deadline. They wait with poll(2)
 * on the connection's fd; the connection itself stays non-blocking. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "tls_internal.h"
#include "common/clock.h"

static int remaining(int64_t deadline)
{
	int64_t left = deadline - (int64_t)rdmx__now_ms();

	if (left < 0)
		return 0;
	return left > 1000000000 ? 1000000000 : (int)left;
}

/* Waits for `events` on fd until the deadline: 0, RDMX_E_TIMEDOUT or
 * RDMX_E_PROVIDER. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, remaining(deadline));

		if (n > 0)
			return RDMX_OK;
		if (n == 0)
			return RDMX_E_TIMEDOUT;
		if (errno != EINTR) {
			RDMX_SEC_ERR("tls: poll failed: %s", strerror(errno));
			return RDMX_E_PROVIDER;
		}
	}
}

static int connect_one(const struct addrinfo *ai, int64_t deadline, int *out, int *err_out)
{
	int fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	int one = 1, err = 0, ret;
	socklen_t el = sizeof(err);

	if (fd < 0) {
		*err_out = errno;
		return RDMX_E_PROVIDER;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		if (errno != EINPROGRESS) {
			err = errno;
			goto fail;
		}
		ret = wait_fd(fd, POLLOUT, deadline);
		if (ret) {
			close(fd);
			return ret;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
			err = errno;
		if (err)
			goto fail;
	}
	*out = fd;
	return RDMX_OK;
fail:
	close(fd);
	*err_out = err;
	return err == ECONNREFUSED ? RDMX_E_CONN_REFUSED : RDMX_E_PROVIDER;
}

int rdmx_tls_connect(struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                     struct rdmx_tls_conn **conn)
{
	return rdmx_tls_connect_timeout(cfg, host, port, 0, conn);
}

int rdmx_tls_connect_timeout(struct rdmx_tls_config *cfg, const char *host, uint16_t port,
                             int timeout_ms, struct rdmx_tls_conn **conn)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG};
	struct addrinfo *res = NULL;
	struct rdmx_tls_conn *c = NULL;
	char service[8];
	int64_t deadline;
	int ret, gai, fd = -1, err = 0;

	uint32_t limit_ms;

	if (!cfg || !host || !*host || !port || !conn || timeout_ms < 0)
		return RDMX_E_INVAL;
	/* the caller's budget, never more than the config's handshake timeout */
	limit_ms = rdmx__tls_config_handshake_timeout(cfg);
	if (timeout_ms > 0 && (uint32_t)timeout_ms < limit_ms)
		limit_ms = (uint32_t)timeout_ms;
	deadline = (int64_t)rdmx__now_ms() + limit_ms;
	snprintf(service, sizeof(service), "%u", port);
	gai = getaddrinfo(host, service, &hints, &res);
	if (gai != 0) {
		RDMX_SEC_ERR("tls: cannot resolve %s: %s", host, gai_strerror(gai));
		return RDMX_E_NOT_FOUND;
	}
	ret = RDMX_E_PROVIDER;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		ret = connect_one(ai, deadline, &fd, &err);
		if (!ret || ret == RDMX_E_TIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (ret) {
		if (ret == RDMX_E_TIMEDOUT)
			RDMX_SEC_WARN("tls: connect to %s:%u timed out after %u ms", host, port,
			              limit_ms);
		else
			RDMX_SEC_WARN("tls: cannot connect to %s:%u: %s", host, port,
			              strerror(err));
		return ret;
	}
	ret = rdmx_tls_conn_create(cfg, fd, RDMX_TLS_CLIENT, host, &c);
	if (ret)
		return ret;
	for (;;) {
		ret = rdmx_tls_conn_handshake(c);
		if (ret == RDMX_TLS_DONE)
			break;
		if (ret < 0)
			goto err;
		ret = wait_fd(fd, ret == RDMX_TLS_WANT_READ ? POLLIN : POLLOUT, deadline);
		if (ret) {
			if (ret == RDMX_E_TIMEDOUT)
				RDMX_SEC_WARN("tls: handshake with %s:%u timed out after %u ms "
				              "(the server accepted the connection but did not "
				              "answer)",
				              host, port, limit_ms);
			goto err;
		}
	}
	*conn = c;
	return RDMX_OK;
err:
	rdmx_tls_conn_destroy(&c);
	return ret;
}

int rdmx_tls_conn_send_wait(struct rdmx_tls_conn *conn, const void *buf, size_t len, int timeout_ms)
{
	int64_t deadline = (int64_t)rdmx__now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	int fd, ret;

	if (!conn)
		return RDMX_E_INVAL;
	rdmx_tls_conn_get_fd(conn, &fd);
	for (;;) {
		ret = rdmx_tls_conn_send(conn, buf, len);
		if (ret != RDMX_E_AGAIN)
			break;
		/* queue full: push it out first */
		ret = rdmx_tls_conn_flush(conn);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			ret = wait_fd(fd, ret == RDMX_TLS_WANT_READ ? POLLIN : POLLOUT, deadline);
			if (ret)
				return ret;
		}
	}
	if (ret)
		return ret;
	for (;;) {
		ret = rdmx_tls_conn_flush(conn);
		if (ret <= 0)
			return ret;
		ret = wait_fd(fd, ret == RDMX_TLS_WANT_READ ? POLLIN : POLLOUT, deadline);
		if (ret)
			return ret;
	}
}

int rdmx_tls_conn_recv_wait(struct rdmx_tls_conn *conn, const void **frame, size_t *len,
                            int timeout_ms)
{
	int64_t deadline = (int64_t)rdmx__now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	int fd, ret;

	if (!conn || !frame || !len)
		return RDMX_E_INVAL;
	rdmx_tls_conn_get_fd(conn, &fd);
	for (;;) {
		/* pending output first: a peer that waits for our bytes before
		 * answering would otherwise never answer */
		if (rdmx_tls_conn_want_write(conn)) {
			ret = rdmx_tls_conn_flush(conn);
			if (ret < 0)
				return ret;
		}
		ret = rdmx_tls_conn_recv(conn, frame, len);
		if (ret <= 0)
			return ret;
		ret = wait_fd(fd,
		              (short)((ret == RDMX_TLS_WANT_READ ? POLLIN : POLLOUT) |
		                      (rdmx_tls_conn_want_write(conn) ? POLLOUT : 0)),
		              deadline);
		if (ret)
			return ret;
	}
}
