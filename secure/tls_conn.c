/* A TLS 1.3 connection over a non-blocking socket: handshake steps and
 * length-prefixed frames. It does no waiting of its own: the caller (the
 * libev listener, the blocking helpers, an application loop) waits on the fd
 * for what each call answers it wants. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "tls_internal.h"

enum conn_state {
	CONN_HANDSHAKE = 0,
	CONN_ESTABLISHED,
	CONN_CLOSED, /* peer closed cleanly */
	CONN_FAILED,
};

#define FRAME_HDR 4u

struct rdmx_tls_conn {
	struct rdmx_tls_config *cfg;
	SSL *ssl;
	int fd;
	enum rdmx_tls_role role;
	enum conn_state state;
	int fail_code;
	uint32_t max_frame;

	char peer_addr[64];
	char *peer_name;
	const char *verify_failure; /* static text set by the verify callback */
	char verify_detail[RDMX_TLS_NAME_MAX + 1];
	char reason[200];
	int quiet_fail; /* its owner logs the failure (rdmx__tls_conn_set_quiet_fail) */

	/* receive: at most one frame (header + payload) is ever buffered */
	uint8_t *rx;
	size_t rx_cap;
	size_t rx_len;    /* bytes of the current frame read so far */
	int rx_delivered; /* the frame in rx was returned: start over */
	int rx_blocked;   /* the last recv answered WANT_WRITE: it must send first */

	/* send queue: header + payload bytes not yet taken by SSL_write */
	uint8_t *tx;
	size_t tx_cap;
	size_t tx_off;
	size_t tx_len;
};

static void format_peer(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];

	snprintf(buf, len, "unknown");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		if (inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip)))
			snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		if (inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip)))
			snprintf(buf, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else if (ss.ss_family == AF_UNIX) {
		snprintf(buf, len, "local");
	}
}

int rdmx_tls_conn_create(struct rdmx_tls_config *cfg, int fd, enum rdmx_tls_role role,
                         const char *server_name, struct rdmx_tls_conn **conn)
{
	struct rdmx_tls_conn *c = NULL;
	SSL_CTX *ctx;
	BIO *bio;
	int flags, ret;

	if (!cfg || fd < 0 || !conn || (role != RDMX_TLS_CLIENT && role != RDMX_TLS_SERVER)) {
		ret = RDMX_E_INVAL;
		goto err_fd;
	}
	ret = rdmx__tls_config_ssl_ctx(cfg, role, &ctx);
	if (ret)
		goto err_fd;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		RDMX_SEC_ERR("tls: cannot make fd %d non-blocking: %s", fd, strerror(errno));
		ret = RDMX_E_PROVIDER;
		goto err_fd;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		ret = RDMX_E_NOMEM;
		goto err_fd;
	}
	c->fd = fd;
	c->role = role;
	c->max_frame = rdmx__tls_config_max_frame(cfg);
	format_peer(fd, c->peer_addr, sizeof(c->peer_addr));
	c->ssl = SSL_new(ctx);
	bio = c->ssl ? rdmx__tls_bio_new(fd) : NULL;
	if (!bio) {
		RDMX_SEC_ERR("tls: cannot create a TLS session (out of memory)");
		ERR_clear_error();
		ret = RDMX_E_NOMEM;
		goto err_ssl;
	}
	SSL_set_bio(c->ssl, bio, bio);
	SSL_set_app_data(c->ssl, c);
	if (role == RDMX_TLS_SERVER) {
		SSL_set_accept_state(c->ssl);
	} else {
		SSL_set_connect_state(c->ssl);
		if (server_name && *server_name && !SSL_set_tlsext_host_name(c->ssl, server_name)) {
			RDMX_SEC_ERR("tls: bad server name for SNI");
			ERR_clear_error();
			ret = RDMX_E_INVAL;
			goto err_ssl;
		}
	}
	rdmx__tls_config_ref(cfg);
	c->cfg = cfg;
	*conn = c;
	return RDMX_OK;
err_ssl:
	SSL_free(c->ssl);
	free(c);
err_fd:
	if (fd >= 0)
		close(fd);
	return ret;
}

int rdmx_tls_conn_destroy(struct rdmx_tls_conn **conn)
{
	struct rdmx_tls_conn *c;

	if (!conn || !*conn)
		return RDMX_OK;
	c = *conn;
	if (c->state == CONN_ESTABLISHED) {
		/* close_notify, best effort: the socket is non-blocking */
		SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
	SSL_free(c->ssl);
	close(c->fd);
	rdmx__tls_config_unref(c->cfg);
	free(c->peer_name);
	free(c->rx);
	free(c->tx);
	free(c);
	*conn = NULL;
	return RDMX_OK;
}

/* ---- shared with tls_verify.c ---- */

void rdmx__tls_conn_set_verify_failure(struct rdmx_tls_conn *conn, const char *reason,
                                       const char *detail)
{
	if (conn->verify_failure)
		return;
	conn->verify_failure = reason;
	/* a name from the peer's certificate: logged, so escaped */
	rdmx__log_escape(detail ? detail : "", detail ? strlen(detail) : 0, conn->verify_detail,
	                 sizeof(conn->verify_detail));
}

const char *rdmx__tls_conn_verify_failure(const struct rdmx_tls_conn *conn, const char **detail)
{
	*detail = conn->verify_detail;
	return conn->verify_failure;
}

int rdmx__tls_conn_set_peer_name(struct rdmx_tls_conn *conn, const char *name)
{
	char *copy = strdup(name);

	if (!copy)
		return RDMX_E_NOMEM;
	free(conn->peer_name);
	conn->peer_name = copy;
	return RDMX_OK;
}

struct rdmx_tls_config *rdmx__tls_conn_config(const struct rdmx_tls_conn *conn)
{
	return conn->cfg;
}

enum rdmx_tls_role rdmx__tls_conn_role(const struct rdmx_tls_conn *conn)
{
	return conn->role;
}

int rdmx__tls_conn_export_keying(struct rdmx_tls_conn *conn, const char *label, uint8_t *out,
                                 size_t len)
{
	if (!conn->ssl || !SSL_is_init_finished(conn->ssl))
		return RDMX_E_BAD_STATE;
	if (SSL_export_keying_material(conn->ssl, out, len, label, strlen(label), NULL, 0, 0) !=
	    1) {
		RDMX_SEC_ERR("tls: keying material export failed");
		ERR_clear_error();
		return RDMX_E_PROVIDER;
	}
	return 0;
}

/* ---- failure handling ---- */

/* Marks the connection dead and logs the one line that explains why. */
static int fail(struct rdmx_tls_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct rdmx_tls_conn *c, int code, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
		va_end(ap);
	}
	c->fail_code = code;
	c->state = code == RDMX_E_DISCONNECTED ? CONN_CLOSED : CONN_FAILED;
	if (!c->quiet_fail)
		rdmx__tls_conn_log_failure(c, "");
	return code;
}

void rdmx__tls_conn_log_failure(const struct rdmx_tls_conn *c, const char *suffix)
{
	const char *why = c->reason[0] ? c->reason : rdmx_strerror(c->fail_code);

	/* a peer that closes is an ordinary end, not a fault */
	if (c->fail_code == RDMX_E_DISCONNECTED)
		RDMX_SEC_INFO("tls: %s (peer %s)%s", why, c->peer_addr, suffix);
	else
		RDMX_SEC_WARN("tls: %s (peer %s)%s", why, c->peer_addr, suffix);
}

static int fail_ssl(struct rdmx_tls_conn *c, int ret, int in_handshake)
{
	int ssl_err = SSL_get_error(c->ssl, ret);
	int code = rdmx__tls_map_error(c->ssl, ssl_err, in_handshake, c->reason, sizeof(c->reason));

	return fail(c, code, NULL);
}

/* A write that failed because the peer is gone often follows the peer's
 * alert, still waiting in our receive buffer: read it, so that the caller
 * learns "certificate revoked" rather than "connection closed". */
static int fail_write(struct rdmx_tls_conn *c, int ret)
{
	int ssl_err = SSL_get_error(c->ssl, ret);
	int code = rdmx__tls_map_error(c->ssl, ssl_err, 0, c->reason, sizeof(c->reason));
	char scratch[256];
	int n;

	if (code == RDMX_E_DISCONNECTED) {
		ERR_clear_error();
		n = SSL_read(c->ssl, scratch, sizeof(scratch));
		if (n <= 0) {
			char reason[sizeof(c->reason)];
			int alert = rdmx__tls_map_error(c->ssl, SSL_get_error(c->ssl, n), 0, reason,
			                                sizeof(reason));

			if (alert == RDMX_E_AUTH || alert == RDMX_E_PROTOCOL) {
				memcpy(c->reason, reason, sizeof(reason));
				code = alert;
			}
		}
		ERR_clear_error();
	}
	return fail(c, code, NULL);
}

static int dead(const struct rdmx_tls_conn *c)
{
	return c->state == CONN_FAILED || c->state == CONN_CLOSED;
}

/* ---- handshake ---- */

int rdmx_tls_conn_handshake(struct rdmx_tls_conn *c)
{
	char name[300]; /* the peer's name escaped for the log */
	int ret, err;

	if (!c)
		return RDMX_E_INVAL;
	if (dead(c))
		return c->fail_code;
	if (c->state == CONN_ESTABLISHED)
		return RDMX_TLS_DONE;
	ERR_clear_error();
	errno = 0;
	ret = SSL_do_handshake(c->ssl);
	if (ret == 1) {
		if (SSL_version(c->ssl) != TLS1_3_VERSION || !c->peer_name)
			return fail(c, RDMX_E_AUTH, "handshake ended without a verified peer");
		c->state = CONN_ESTABLISHED;
		RDMX_SEC_DBG(
		    "tls: session established with %s (peer %s)",
		    rdmx__log_escape(c->peer_name, strlen(c->peer_name), name, sizeof(name)),
		    c->peer_addr);
		return RDMX_TLS_DONE;
	}
	err = SSL_get_error(c->ssl, ret);
	if (err == SSL_ERROR_WANT_READ)
		return RDMX_TLS_WANT_READ;
	if (err == SSL_ERROR_WANT_WRITE)
		return RDMX_TLS_WANT_WRITE;
	return fail_ssl(c, ret, 1);
}

/* ---- sending ---- */

static int tx_reserve(struct rdmx_tls_conn *c, size_t add)
{
	size_t limit = 2 * ((size_t)c->max_frame + FRAME_HDR);
	size_t need, cap;
	uint8_t *p;

	if (c->tx_off > 0) {
		memmove(c->tx, c->tx + c->tx_off, c->tx_len - c->tx_off);
		c->tx_len -= c->tx_off;
		c->tx_off = 0;
	}
	need = c->tx_len + add;
	if (need > limit)
		return RDMX_E_AGAIN;
	if (need <= c->tx_cap)
		return RDMX_OK;
	cap = c->tx_cap ? c->tx_cap : 4096;
	while (cap < need)
		cap *= 2;
	if (cap > limit)
		cap = limit;
	p = realloc(c->tx, cap);
	if (!p)
		return RDMX_E_NOMEM;
	c->tx = p;
	c->tx_cap = cap;
	return RDMX_OK;
}

int rdmx_tls_conn_flush(struct rdmx_tls_conn *c)
{
	if (!c)
		return RDMX_E_INVAL;
	if (dead(c))
		return c->fail_code;
	if (c->state != CONN_ESTABLISHED)
		return RDMX_E_BAD_STATE;
	while (c->tx_off < c->tx_len) {
		size_t left = c->tx_len - c->tx_off;
		int chunk = left > (1u << 30) ? (1 << 30) : (int)left;
		int n, err;

		ERR_clear_error();
		errno = 0;
		n = SSL_write(c->ssl, c->tx + c->tx_off, chunk);
		if (n > 0) {
			c->tx_off += (size_t)n;
			continue;
		}
		err = SSL_get_error(c->ssl, n);
		if (err == SSL_ERROR_WANT_WRITE)
			return RDMX_TLS_WANT_WRITE;
		if (err == SSL_ERROR_WANT_READ)
			return RDMX_TLS_WANT_READ;
		return fail_write(c, n);
	}
	c->tx_off = c->tx_len = 0;
	return RDMX_TLS_DONE;
}

int rdmx_tls_conn_send(struct rdmx_tls_conn *c, const void *buf, size_t len)
{
	int ret;

	if (!c || (!buf && len))
		return RDMX_E_INVAL;
	if (dead(c))
		return c->fail_code;
	if (c->state != CONN_ESTABLISHED)
		return RDMX_E_BAD_STATE;
	if (len > c->max_frame) {
		RDMX_SEC_WARN("tls: frame of %zu bytes not sent: over the maximum of %u bytes "
		              "(peer %s)",
		              len, c->max_frame, c->peer_addr);
		return RDMX_E_TOO_BIG;
	}
	ret = tx_reserve(c, FRAME_HDR + len);
	if (ret)
		return ret;
	c->tx[c->tx_len++] = (uint8_t)(len >> 24);
	c->tx[c->tx_len++] = (uint8_t)(len >> 16);
	c->tx[c->tx_len++] = (uint8_t)(len >> 8);
	c->tx[c->tx_len++] = (uint8_t)len;
	if (len)
		memcpy(c->tx + c->tx_len, buf, len);
	c->tx_len += len;
	ret = rdmx_tls_conn_flush(c);
	return ret < 0 ? ret : RDMX_OK;
}

int rdmx_tls_conn_want_write(const struct rdmx_tls_conn *c)
{
	return c && !dead(c) && c->tx_off < c->tx_len;
}

/* ---- receiving ---- */

static uint32_t frame_len(const uint8_t *h)
{
	return (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
}

static int rx_reserve(struct rdmx_tls_conn *c, size_t need)
{
	size_t cap;
	uint8_t *p;

	if (need <= c->rx_cap)
		return RDMX_OK;
	cap = c->rx_cap ? c->rx_cap : 4096;
	while (cap < need)
		cap *= 2;
	if (cap > (size_t)c->max_frame + FRAME_HDR)
		cap = (size_t)c->max_frame + FRAME_HDR;
	p = realloc(c->rx, cap);
	if (!p)
		return RDMX_E_NOMEM;
	c->rx = p;
	c->rx_cap = cap;
	return RDMX_OK;
}

int rdmx_tls_conn_recv(struct rdmx_tls_conn *c, const void **frame, size_t *len)
{
	if (!c || !frame || !len)
		return RDMX_E_INVAL;
	if (dead(c))
		return c->fail_code;
	if (c->state != CONN_ESTABLISHED)
		return RDMX_E_BAD_STATE;
	if (c->rx_delivered) {
		c->rx_len = 0;
		c->rx_delivered = 0;
	}
	c->rx_blocked = 0;
	for (;;) {
		/* read only what the current frame still needs, so that no
		 * more than one frame is ever held in memory */
		size_t want = FRAME_HDR;
		int n, err;

		if (c->rx_len >= FRAME_HDR) {
			uint32_t flen = frame_len(c->rx);

			want = FRAME_HDR + flen;
			if (c->rx_len == want) {
				c->rx_delivered = 1;
				*frame = c->rx + FRAME_HDR;
				*len = flen;
				return RDMX_TLS_DONE;
			}
		}
		if (rx_reserve(c, want))
			return fail(c, RDMX_E_NOMEM, "out of memory for a frame of %zu bytes",
			            want - FRAME_HDR);
		ERR_clear_error();
		errno = 0;
		n = SSL_read(
		    c->ssl, c->rx + c->rx_len,
		    (int)((want - c->rx_len) > (1u << 30) ? (1u << 30) : want - c->rx_len));
		if (n <= 0) {
			err = SSL_get_error(c->ssl, n);
			if (err == SSL_ERROR_WANT_READ)
				return RDMX_TLS_WANT_READ;
			if (err == SSL_ERROR_WANT_WRITE) {
				c->rx_blocked = 1;
				return RDMX_TLS_WANT_WRITE;
			}
			if (err == SSL_ERROR_ZERO_RETURN && c->rx_len == 0)
				return fail(c, RDMX_E_DISCONNECTED, "peer closed the session");
			return fail_ssl(c, n, 0);
		}
		c->rx_len += (size_t)n;
		if (c->rx_len == FRAME_HDR && frame_len(c->rx) > c->max_frame) {
			uint32_t flen = frame_len(c->rx);

			/* no TLS write after this: shut the socket so that the
			 * peer sees the connection end now */
			fail(c, RDMX_E_TOO_BIG,
			     "frame of %u bytes refused: over the maximum of %u bytes, "
			     "connection closed",
			     flen, c->max_frame);
			shutdown(c->fd, SHUT_RDWR);
			return RDMX_E_TOO_BIG;
		}
	}
}

/* ---- the step of a loop ---- */

int rdmx__tls_conn_step(struct rdmx_tls_conn *c, const void **frame, size_t *len)
{
	int out = RDMX_TLS_DONE, ret;

	if (rdmx_tls_conn_want_write(c)) {
		out = rdmx_tls_conn_flush(c);
		if (out < 0)
			return out;
	}
	ret = rdmx_tls_conn_recv(c, frame, len);
	/* nothing the receive does queues frames: bytes left after the
	 * flush are all that the write waits for */
	return ret <= 0 ? ret : ret | out;
}

int rdmx__tls_conn_waits_to_write(const struct rdmx_tls_conn *c)
{
	return !dead(c) && (c->tx_off < c->tx_len || c->rx_blocked);
}

void rdmx__tls_conn_set_quiet_fail(struct rdmx_tls_conn *c, int on)
{
	c->quiet_fail = on;
}

int rdmx__tls_conn_hello_done(const struct rdmx_tls_conn *c)
{
	/* past TLS_ST_BEFORE once the peer's whole first flight was read */
	return c && c->ssl && SSL_get_state(c->ssl) != TLS_ST_BEFORE;
}

int rdmx_tls_conn_rx_partial(const struct rdmx_tls_conn *c)
{
	if (!c || dead(c) || c->state != CONN_ESTABLISHED)
		return 0;
	if (c->rx_len && !c->rx_delivered)
		return 1;
	/* bytes of a TLS record that is not complete yet */
	return SSL_has_pending(c->ssl) ? 1 : 0;
}

/* ---- getters ---- */

int rdmx_tls_conn_get_fd(const struct rdmx_tls_conn *c, int *fd)
{
	if (!c || !fd)
		return RDMX_E_INVAL;
	*fd = c->fd;
	return RDMX_OK;
}

int rdmx_tls_conn_get_peer_name(const struct rdmx_tls_conn *c, const char **name)
{
	if (!c || !name)
		return RDMX_E_INVAL;
	if (c->state != CONN_ESTABLISHED || !c->peer_name)
		return RDMX_E_BAD_STATE;
	*name = c->peer_name;
	return RDMX_OK;
}

int rdmx_tls_conn_get_peer_addr(const struct rdmx_tls_conn *c, const char **addr)
{
	if (!c || !addr)
		return RDMX_E_INVAL;
	*addr = c->peer_addr;
	return RDMX_OK;
}

const char *rdmx_tls_conn_get_failure(const struct rdmx_tls_conn *c)
{
	return c && c->reason[0] ? c->reason : NULL;
}
