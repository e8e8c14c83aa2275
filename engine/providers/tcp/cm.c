/* tcp provider: the rdma_cm style flow (listen / connect_to_addr / accept /
 * reject).
 *
 * The listener belongs to the context (its socket set): an accepted socket
 * must send one CM_REQ frame (private data up to 56 bytes, the peer's initial
 * psn and send queue depth) within TCP_HELLO_TIMEOUT_MS, or it is closed; at
 * most TCP_MAX_CMREQS wait at a time. A complete request becomes a connection
 * (rdmx__conn_new, on the progress thread) and the request event; accept
 * answers CM_ACCEPT with our private data, reject answers CM_REJECT. The
 * initiator dials with the context's connection request timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp.h"

int rdmx__tcp_listen(struct rdmx_ctx *ctx, uint16_t port)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	struct sockaddr_storage ss = tc->td->addr;
	int fd, rc;

	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
	fd = rdmx__tcp_listen_socket(&ss, tc->td->addr_len, 128);
	if (fd < 0)
		return fd;
	pthread_mutex_lock(&tc->lock);
	rc = rdmx__tcp_ep_set(tc, fd, &tc->listen_ep, EPOLLIN, true);
	if (rc)
		close(fd);
	else
		tc->lfd = fd;
	pthread_mutex_unlock(&tc->lock);
	return rc;
}

void rdmx__tcp_stop_listen(struct rdmx_ctx *ctx)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	struct tcp_cmreq **pp;

	pthread_mutex_lock(&tc->lock);
	if (tc->lfd >= 0) {
		rdmx__tcp_ep_del(tc, tc->lfd, &tc->listen_ep);
		close(tc->lfd);
		tc->lfd = -1;
	}
	rdmx__tcp_lgroup_leave(tc); /* no more dealing */
	/* requests not yet reported go with the listener */
	for (pp = &tc->cmreqs; *pp;) {
		if (!(*pp)->queued)
			rdmx__tcp_cmreq_free(tc, *pp);
		else
			pp = &(*pp)->next;
	}
	pthread_mutex_unlock(&tc->lock);
}

/* A new cm socket waiting for its request, on `tc` (its lock held). */
static void cmreq_add(struct tcp_ctx *tc, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	struct tcp_cmreq *r;

	if (tc->num_cmreqs >= TCP_MAX_CMREQS) {
		RDMX_WARN("tcp: cm connection refused: %u requests pending", tc->num_cmreqs);
		close(fd);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return;
	}
	rdmx__tcp_data_sockopts(fd);
	r->ep.kind = TCP_EP_CMREQ;
	r->fd = fd;
	r->peer = *ss;
	r->peer_len = len;
	r->deadline = rdmx__now_ns() + (uint64_t)TCP_HELLO_TIMEOUT_MS * 1000000u;
	if (rdmx__tcp_ep_set(tc, fd, &r->ep, EPOLLIN, true)) {
		close(fd);
		free(r);
		return;
	}
	r->next = tc->cmreqs;
	tc->cmreqs = r;
	tc->num_cmreqs++;
	rdmx__tcp_ctx_timer(tc, r->deadline);
}

/* The listener's lock is held; a socket dealt to another member of its
 * group waits there (that member's progress reads its request). */
static void deal(struct tcp_ctx *tc, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	struct tcp_lgroup *g = tc->lgroup;
	struct tcp_ctx *to;

	if (!g) {
		cmreq_add(tc, fd, ss, len);
		return;
	}
	pthread_mutex_lock(&g->lock);
	to = g->m[g->next % g->n];
	g->next = (g->next + 1) % g->n;
	if (to == tc) {
		pthread_mutex_unlock(&g->lock);
		cmreq_add(tc, fd, ss, len);
		return;
	}
	pthread_mutex_lock(&to->lock);
	cmreq_add(to, fd, ss, len);
	pthread_mutex_unlock(&to->lock);
	pthread_mutex_unlock(&g->lock);
}

/* The cm listener out of its sets until cm_rest.until (tcp.h: struct
 * tcp_accept_rest); rdmx__tcp_cm_resume puts it back. */
static void cm_rest(struct tcp_ctx *tc)
{
	if (rdmx__tcp_ep_set(tc, tc->lfd, &tc->listen_ep, 0, false)) {
		tc->cm_rest.until = 0; /* still watched: the next look retries */
		return;
	}
	rdmx__tcp_ctx_timer(tc, tc->cm_rest.until);
}

void rdmx__tcp_cm_resume(struct tcp_ctx *tc, uint64_t now)
{
	if (!tc->cm_rest.until)
		return;
	if (tc->cm_rest.until > now) {
		rdmx__tcp_ctx_timer(tc, tc->cm_rest.until);
		return;
	}
	tc->cm_rest.until = 0;
	if (tc->lfd >= 0)
		rdmx__tcp_ep_set(tc, tc->lfd, &tc->listen_ep, EPOLLIN, false);
}

void rdmx__tcp_cm_accept(struct tcp_ctx *tc)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd =
		    accept4(tc->lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				int err = errno;

				if (rdmx__tcp_accept_rests(&tc->cm_rest, err))
					cm_rest(tc);
				rdmx__tcp_accept_log(&tc->cm_rest, err, "cm listener");
			}
			return;
		}
		deal(tc, fd, &ss, len);
	}
}

int rdmx__tcp_listen_join(struct rdmx_ctx *ctx, struct rdmx_ctx *listener)
{
	struct tcp_ctx *tc = TCP_CTX(ctx), *lc = TCP_CTX(listener);
	struct tcp_lgroup *g;
	int rc = 0;

	pthread_mutex_lock(&lc->lock);
	if (lc->lfd < 0 || tc->lgroup) {
		rc = RDMX_E_BAD_STATE;
		goto unlock;
	}
	if (!lc->lgroup) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			rc = RDMX_E_NOMEM;
			goto unlock;
		}
		pthread_mutex_init(&g->lock, NULL);
		g->m[0] = lc;
		g->n = 1;
		g->refs = 1;
		lc->lgroup = g;
	}
	g = lc->lgroup;
	pthread_mutex_lock(&g->lock);
	if (g->n == RDMX_CTX_MAX_LISTEN_GROUP) {
		rc = RDMX_E_FULL;
	} else {
		g->m[g->n++] = tc;
		g->refs++;
		tc->lgroup = g;
	}
	pthread_mutex_unlock(&g->lock);
unlock:
	pthread_mutex_unlock(&lc->lock);
	return rc;
}

void rdmx__tcp_lgroup_leave(struct tcp_ctx *tc)
{
	struct tcp_lgroup *g = tc->lgroup;
	bool last;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	rdmx__lgroup_remove(g->m, sizeof(g->m[0]), &g->n, &g->next, &tc);
	last = --g->refs == 0;
	pthread_mutex_unlock(&g->lock);
	tc->lgroup = NULL;
	if (last) {
		pthread_mutex_destroy(&g->lock);
		free(g);
	}
}

void rdmx__tcp_cmreq_free(struct tcp_ctx *tc, struct tcp_cmreq *r)
{
	for (struct tcp_cmreq **pp = &tc->cmreqs; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			tc->num_cmreqs--;
			break;
		}
	}
	if (r->fd >= 0) {
		if (!r->queued)
			rdmx__tcp_ep_del(tc, r->fd, &r->ep);
		close(r->fd);
	}
	free(r);
}

void rdmx__tcp_cmreq_read(struct tcp_ctx *tc, struct tcp_cmreq *r)
{
	struct rdmx__tcp_hdr h;
	ssize_t n;

	n = recv(r->fd, r->buf + r->got, sizeof(r->buf) - r->got, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		RDMX_DBG("tcp: cm connection closed before its request");
		rdmx__tcp_cmreq_free(tc, r);
		return;
	}
	r->got += (uint32_t)n;
	if (r->got < RDMX__TCP_HDR_SIZE)
		return;
	rdmx__tcp_hdr_decode(r->buf, &h);
	if (h.op != RDMX__TCP_OP_CM_REQ || rdmx__tcp_hdr_check(&h, TCP_MAX_MSG) ||
	    h.op0 != RDMX__TCP_HELLO_WORD || !rdmx__tcp_depth_ok(h.op1) ||
	    r->got > RDMX__TCP_HDR_SIZE + h.len) {
		RDMX_WARN("tcp: cm connection rejected: malformed request");
		rdmx__tcp_cmreq_free(tc, r);
		return;
	}
	if (r->got < RDMX__TCP_HDR_SIZE + h.len)
		return;
	/* complete: stop reading until the user accepts */
	rdmx__tcp_ep_del(tc, r->fd, &r->ep);
	r->queued = true;
	rdmx__tcp_cq_event(tc, TCP_CQE_REQUEST, r);
}

static void send_reject(int fd)
{
	struct rdmx__tcp_hdr h;
	uint8_t buf[RDMX__TCP_HDR_SIZE];

	memset(&h, 0, sizeof(h));
	h.op = RDMX__TCP_OP_CM_REJECT;
	rdmx__tcp_hdr_encode(&h, buf);
	if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(buf))
		RDMX_DBG("tcp: sending a cm reject failed");
}

void rdmx__tcp_cm_deliver(struct tcp_ctx *tc, struct tcp_cmreq *r)
{
	struct rdmx__tcp_hdr h;
	struct rdmx_conn *conn;
	struct tcp_conn *c;
	int fd;

	pthread_mutex_lock(&tc->lock);
	for (struct tcp_cmreq **pp = &tc->cmreqs; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			tc->num_cmreqs--;
			break;
		}
	}
	pthread_mutex_unlock(&tc->lock);
	fd = r->fd;
	rdmx__tcp_hdr_decode(r->buf, &h);
	conn = rdmx__conn_new(tc->ctx, RDMX_CONN_REQUESTED);
	if (!conn) {
		if (tc->ctx->num_conns >= tc->ctx->props.max_connections)
			RDMX_DBG("tcp: cm request rejected: at max connections");
		else
			RDMX_ERR("tcp: no memory for a cm request: rejected");
		send_reject(fd);
		close(fd);
		free(r);
		return;
	}
	c = rdmx__tcp_conn_create(tc, conn);
	if (!c) {
		send_reject(fd);
		close(fd);
		free(r);
		rdmx_conn_reject(conn);
		return;
	}
	c->cm = true;
	c->fd = fd;
	c->state = TC_REQUESTED;
	c->peer = r->peer;
	c->peer_len = r->peer_len;
	c->peer_psn0 = h.psn;
	c->peer_depth = (uint32_t)h.op1;
	rdmx__tcp_fill_addr(&conn->peer_addr, &r->peer, r->peer_len);
	conn->has_peer_addr = true;
	memcpy(conn->private_data, r->buf + RDMX__TCP_HDR_SIZE, h.len);
	conn->private_data_len = h.len;
	conn->prov = c;
	free(r);
	pthread_mutex_lock(&tc->lock);
	if (rdmx__tcp_conn_link(tc, c)) {
		pthread_mutex_unlock(&tc->lock);
		rdmx_conn_reject(conn); /* answers the peer; the engine releases c */
		return;
	}
	pthread_mutex_unlock(&tc->lock);
	rdmx__conn_event(conn, RDMX__CONN_EV_REQUEST);
}

int rdmx__tcp_conn_accept(struct rdmx_conn *conn, const void *pd, size_t pd_len)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc = c->tc;
	int rc = 0;

	rdmx__tcp_ctx_enter(tc);
	if (c->state != TC_REQUESTED) {
		rc = RDMX_E_BAD_STATE;
		goto unlock;
	}
	rdmx__tcp_ctl_handshake(c, RDMX__TCP_OP_CM_ACCEPT, pd, (uint32_t)pd_len);
	rc = rdmx__tcp_conn_up(c, c->peer_psn0, c->peer_depth);
unlock:
	pthread_mutex_unlock(&tc->lock);
	return rc;
}

int rdmx__tcp_conn_reject(struct rdmx_conn *conn)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc;

	if (!c)
		return 0;
	tc = c->tc;
	pthread_mutex_lock(&tc->lock);
	if (c->fd >= 0 && c->state == TC_REQUESTED)
		send_reject(c->fd);
	rdmx__tcp_conn_close_fd(c);
	c->state = TC_DOWN;
	rdmx__tcp_conn_unlink(tc, c);
	pthread_mutex_unlock(&tc->lock);
	return 0;
}

int rdmx__tcp_connect_to_addr(struct rdmx_conn *conn, const struct rdmx_addr *addr, const void *pd,
                              size_t pd_len)
{
	struct tcp_ctx *tc = TCP_CTX(conn->ctx);
	struct tcp_conn *c;
	int rc;

	if (addr->type != RDMX_ADDR_IPV4 && addr->type != RDMX_ADDR_IPV6)
		return RDMX_E_NOT_SUPPORTED;
	c = rdmx__tcp_conn_create(tc, conn);
	if (!c)
		return RDMX_E_NOMEM;
	c->cm = true;
	c->peer = addr->ss;
	c->peer_len = addr->ss_len;
	rdmx__tcp_ctx_enter(tc);
	rc = rdmx__tcp_conn_link(tc, c);
	if (rc) {
		pthread_mutex_unlock(&tc->lock);
		rdmx__tcp_conn_free(c);
		return rc;
	}
	conn->prov = c;
	rdmx__tcp_ctl_handshake(c, RDMX__TCP_OP_CM_REQ, pd, (uint32_t)pd_len);
	rdmx__tcp_dial(c);
	pthread_mutex_unlock(&tc->lock);
	rdmx__tcp_nic_nudge(tc); /* the connect timer */
	return 0;
}
