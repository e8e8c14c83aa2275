/* tcp provider: connections.
 *
 * Export/connect: each side exports {listener address, port, a fresh random
 * 128-bit token, nonce}; both call connect with the other's details. The
 * side whose token is smaller dials the other's device listener and sends a
 * HELLO carrying the peer's token (the secret the peer exported) and its own;
 * the peer's NIC thread hands the socket to the export with that token
 * (nic.c), checks the second token once its own connect has run, and answers
 * HELLO_ACK. The listen/connect_to_addr flow is in cm.c.
 *
 * End of life: an RC error (access violation, receive too small, rnr retries
 * exhausted, a malformed frame) flushes the tasks and keeps the connection in
 * error until the user or the peer disconnects (the object stays valid for
 * the user's later submits, which complete RDMX_E_CONN_ABORTED). Disconnect,
 * peer death and handshake failures bring it down: tasks flushed, then the
 * final event (disconnected, or failure when it never got established). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp.h"

/* Data sockets: no Nagle delay; keepalive notices a peer host that
 * vanished without closing (a killed process closes its sockets itself). */
void rdmx__tcp_data_sockopts(int fd)
{
	int one = 1, idle = 30, intvl = 5, cnt = 4;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		RDMX_WARN("tcp: TCP_NODELAY failed: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)))
		RDMX_DBG("tcp: keepalive options failed: %s", strerror(errno));
}

void rdmx__tcp_fill_addr(struct rdmx_addr *a, const struct sockaddr_storage *ss, socklen_t len)
{
	memset(a, 0, sizeof(*a));
	a->ss = *ss;
	a->ss_len = len;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		a->type = RDMX_ADDR_IPV4;
		a->port = ntohs(s4->sin_port);
		inet_ntop(AF_INET, &s4->sin_addr, a->text, sizeof(a->text));
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		a->type = RDMX_ADDR_IPV6;
		a->port = ntohs(s6->sin6_port);
		inet_ntop(AF_INET6, &s6->sin6_addr, a->text, sizeof(a->text));
	}
}

struct tcp_conn *rdmx__tcp_conn_create(struct tcp_ctx *tc, struct rdmx_conn *conn)
{
	struct tcp_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ep.kind = TCP_EP_CONN;
	c->conn = conn;
	c->tc = tc;
	c->td = tc->td;
	c->state = TC_IDLE;
	c->fd = -1;
	c->conn_deadline = TCP_NEVER;
	c->timeout_ms = tc->ctx->props.conn_request_timeout_ms;
	if (!c->timeout_ms)
		c->timeout_ms = TCP_HELLO_TIMEOUT_MS;
	c->tt_ns = (uint64_t)tc->ctx->props.transport_timeout_ms * 1000000u *
	           ((uint64_t)tc->ctx->props.retry_count + 1);
	if (rdmx__tcp_random(&c->my_psn0, sizeof(c->my_psn0))) {
		free(c);
		return NULL;
	}
	c->next_psn = c->my_psn0;
	return c;
}

void rdmx__tcp_conn_free(struct tcp_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->rx.stage);
	free(c->resp);
	rdmx__tcp_seal_destroy(c->seal);
	free(c);
}

/* Links a new conn into its context (lock held). */
int rdmx__tcp_conn_link(struct tcp_ctx *tc, struct tcp_conn *c)
{
	int rc = rdmx__tcp_cq_reserve(tc, 4);

	if (rc)
		return rc;
	c->next = tc->conns;
	tc->conns = c;
	c->linked = true;
	return 0;
}

void rdmx__tcp_conn_unlink(struct tcp_ctx *tc, struct tcp_conn *c)
{
	if (!c->linked)
		return;
	for (struct tcp_conn **pp = &tc->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	c->next = NULL;
	c->linked = false;
	if (tc->wait_staged == c)
		tc->wait_staged = NULL;
	if (tc->last_conn == c)
		tc->last_conn = NULL;
	if (c->dirty) {
		for (struct tcp_conn **pp = &tc->dirty; *pp; pp = &(*pp)->next_dirty) {
			if (*pp == c) {
				*pp = c->next_dirty;
				break;
			}
		}
		c->dirty = false;
		c->next_dirty = NULL;
	}
	if (c->final_pending) {
		c->final_pending = false;
		tc->num_finals--;
	}
}

void rdmx__tcp_pending_del(struct tcp_dev *td, struct tcp_conn *c)
{
	if (!c->pending)
		return;
	for (struct tcp_conn **pp = &td->pending; *pp; pp = &(*pp)->pend_next) {
		if (*pp == c) {
			*pp = c->pend_next;
			break;
		}
	}
	c->pend_next = NULL;
	c->pending = false;
}

void rdmx__tcp_conn_ctl(struct tcp_conn *c, uint8_t op, uint16_t status, const void *payload,
                        uint32_t len)
{
	memset(&c->ctl, 0, sizeof(c->ctl));
	c->ctl.op = op;
	c->ctl.status = status;
	c->ctl.len = len;
	if (len)
		memcpy(c->ctl_payload, payload, len);
	c->ctl_pending = true;
}

/* A handshake frame announcing our initial psn and send queue depth. */
void rdmx__tcp_ctl_handshake(struct tcp_conn *c, uint8_t op, const void *payload, uint32_t len)
{
	rdmx__tcp_conn_ctl(c, op, 0, payload, len);
	c->ctl.psn = c->my_psn0;
	c->ctl.op0 = RDMX__TCP_HELLO_WORD;
	c->ctl.op1 = c->tc->ctx->props.send_queue_size;
}

void rdmx__tcp_conn_close_fd(struct tcp_conn *c)
{
	if (c->fd < 0)
		return;
	if (c->ep_events && c->tc)
		rdmx__tcp_ep_del(c->tc, c->fd, &c->ep);
	close(c->fd);
	c->fd = -1;
	c->ep_events = 0;
	/* whatever was half sent or half received is gone with the stream */
	rdmx__tcp_tx_reset(c);
	rdmx__tcp_seal_reset(c->seal);
	c->rx.stage_len = c->rx.stage_off = 0;
	c->rx.hdr_got = 0;
	c->rx.in_payload = false;
	c->rx.left = 0;
	c->rx.sink = TCP_SINK_DISCARD;
	c->resp_count = 0;
	c->ctl_pending = false;
}

bool rdmx__tcp_conn_flush_tasks(struct tcp_conn *c, int head_status, int rest_status)
{
	struct tcp_ctx *tc = c->tc;
	struct rdmx_task *t = c->sq_head;
	bool first = true, cut;

	cut = rdmx__tcp_tx_forget_task(c);
	rdmx__tcp_rx_forget_task(c, RDMX_E_CONN_ABORTED);
	while (t) {
		struct rdmx_task *next = t->next;

		rdmx__tcp_cq_task(tc, t, first ? head_status : rest_status);
		first = false;
		t = next;
	}
	c->sq_head = c->sq_cur = c->sq_tail = NULL;
	c->sq_count = 0;
	c->rnr_wait = false;
	c->rewind_pending = false;
	return cut;
}

void rdmx__tcp_conn_error(struct tcp_conn *c, int head_status, uint16_t frame, bool close_fd)
{
	if (c->state != TC_UP) {
		if (close_fd && c->state == TC_ERROR)
			rdmx__tcp_conn_close_fd(c);
		return;
	}
	c->state = TC_ERROR;
	rdmx__tcp_cq_event(c->tc, TCP_CQE_SET_ERROR, c);
	if (rdmx__tcp_conn_flush_tasks(c, head_status, RDMX_E_CONN_ABORTED) && !close_fd) {
		RDMX_WARN("tcp: connection %u: to error with a request half sent: the stream "
		          "closes (its end cannot be told in-band)",
		          c->conn->id);
		close_fd = true;
	}
	c->rnr_discard = false;
	if (close_fd) {
		rdmx__tcp_conn_close_fd(c);
		return;
	}
	if (frame)
		rdmx__tcp_conn_ctl(c, RDMX__TCP_OP_ERROR, frame, NULL, 0);
	rdmx__tcp_tx_flush(c);
}

void rdmx__tcp_conn_down(struct tcp_conn *c, int status, enum rdmx__conn_event ev)
{
	struct tcp_ctx *tc = c->tc;

	if (c->final_pending || c->final_done || !tc)
		return;
	if (c->state != TC_ERROR)
		rdmx__tcp_conn_flush_tasks(c, status, status);
	rdmx__tcp_conn_close_fd(c);
	c->state = TC_DOWN;
	c->conn_deadline = TCP_NEVER;
	c->final_pending = true;
	c->final_ev = (uint8_t)ev;
	tc->num_finals++;
	tc->produced = true;
}

int rdmx__tcp_conn_up(struct tcp_conn *c, uint32_t peer_psn, uint32_t peer_depth)
{
	struct tcp_ctx *tc = c->tc;

	if (!c->rx.stage) {
		c->rx.stage = malloc(TCP_STAGE_SIZE);
		if (!c->rx.stage)
			goto nomem;
	}
	c->resp = calloc(rdmx__tcp_pow2(peer_depth), sizeof(*c->resp));
	if (!c->resp)
		goto nomem;
	c->resp_cap = peer_depth;
	c->resp_mask = rdmx__tcp_pow2(peer_depth) - 1;
	c->peer_depth = peer_depth;
	c->expect_psn = peer_psn;
	c->state = TC_UP;
	c->conn_deadline = TCP_NEVER;
	c->tt_last = rdmx__now_ns(); /* tasks queued meanwhile start now */
	if (c->sq_count && c->tt_ns)
		rdmx__tcp_ctx_timer(tc, c->tt_last + c->tt_ns);
	c->est_queued = true;
	rdmx__tcp_cq_event(tc, TCP_CQE_ESTABLISHED, c);
	rdmx__tcp_conn_want(c, false);
	rdmx__tcp_tx_flush(c);
	return 0;

nomem:
	RDMX_ERR("tcp: connection %u: out of memory for its buffers", c->conn->id);
	rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_FAILURE);
	return RDMX_E_NOMEM;
}

bool rdmx__tcp_depth_ok(uint64_t depth)
{
	return depth >= 1 && depth <= TCP_MAX_QUEUE;
}

/* Starts a non-blocking connect to c->peer (lock held); failures are
 * reported as the failure event, never synchronously. */
void rdmx__tcp_dial(struct tcp_conn *c)
{
	int fd, rc;

	c->conn_deadline = rdmx__now_ns() + (uint64_t)c->timeout_ms * 1000000u;
	rdmx__tcp_ctx_timer(c->tc, c->conn_deadline);
	fd = socket(c->peer.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		RDMX_ERR("tcp: socket failed: %s", strerror(errno));
		rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_FAILURE);
		return;
	}
	rdmx__tcp_data_sockopts(fd);
	c->fd = fd;
	c->state = TC_DIALING;
	rc = connect(fd, (struct sockaddr *)&c->peer, c->peer_len);
	if (rc && errno != EINPROGRESS) {
		RDMX_DBG("tcp: connection %u: connect failed: %s", c->conn->id, strerror(errno));
		rdmx__tcp_conn_down(c, RDMX_E_CONN_REFUSED, RDMX__CONN_EV_FAILURE);
		return;
	}
	c->ep_events = EPOLLOUT;
	if (rdmx__tcp_ep_set(c->tc, fd, &c->ep, EPOLLOUT, true)) {
		c->ep_events = 0;
		rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_FAILURE);
	}
}

void rdmx__tcp_conn_dialed(struct tcp_conn *c)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		RDMX_DBG("tcp: connection %u: connect failed: %s", c->conn->id,
		         strerror(err ? err : errno));
		rdmx__tcp_conn_down(c, RDMX_E_CONN_REFUSED, RDMX__CONN_EV_FAILURE);
		return;
	}
	c->state = TC_HELLO_WAIT;
	rdmx__tcp_conn_want(c, false);
	rdmx__tcp_tx_flush(c);
}

void rdmx__tcp_conn_handshake(struct tcp_conn *c, const struct rdmx__tcp_hdr *h,
                              const uint8_t *payload)
{
	const char *why = NULL;

	switch (h->op) {
	case RDMX__TCP_OP_HELLO_ACK:
		if (c->cm)
			why = "hello answer on a cm connection";
		break;
	case RDMX__TCP_OP_CM_ACCEPT:
		if (!c->cm)
			why = "cm accept on an exported connection";
		break;
	case RDMX__TCP_OP_CM_REJECT:
		if (!c->cm) {
			why = "cm reject on an exported connection";
			break;
		}
		RDMX_DBG("tcp: connection %u: rejected by the peer", c->conn->id);
		rdmx__tcp_conn_down(c, RDMX_E_CONN_REFUSED, RDMX__CONN_EV_FAILURE);
		return;
	default:
		why = "unexpected handshake frame";
		break;
	}
	if (!why && (h->op0 != RDMX__TCP_HELLO_WORD || !rdmx__tcp_depth_ok(h->op1)))
		why = "bad version or queue depth in the handshake";
	if (why) {
		RDMX_WARN("tcp: connection %u: %s", c->conn->id, why);
		rdmx__tcp_conn_down(c, RDMX_E_PROTOCOL, RDMX__CONN_EV_FAILURE);
		return;
	}
	if (h->op == RDMX__TCP_OP_CM_ACCEPT) {
		memcpy(c->pd, payload, h->len);
		c->pd_len = (uint32_t)h->len;
	}
	rdmx__tcp_conn_up(c, h->psn, (uint32_t)h->op1);
}

/* RC's retry-exceeded: outstanding work and no sign of life from the peer
 * for the whole transport timeout (lock held). True when it ended c. */
static bool transport_timer(struct tcp_conn *c, uint64_t now)
{
	const struct rdmx_ctx_props *p;
	uint64_t dl;

	if (!c->tt_ns || c->state != TC_UP || !c->sq_count)
		return false;
	dl = c->tt_last + c->tt_ns;
	if (dl > now) {
		rdmx__tcp_ctx_timer(c->tc, dl);
		return false;
	}
	p = &c->tc->ctx->props;
	RDMX_WARN("tcp: connection %u: peer lost: nothing acknowledged or received for %u ms "
	          "x %u tries with %u tasks outstanding",
	          c->conn->id, p->transport_timeout_ms, p->retry_count + 1u, c->sq_count);
	rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
	rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_DISCONNECTED);
	return true;
}

void rdmx__tcp_conn_alive(struct tcp_conn *c)
{
	/* tt_last counts only while tasks are outstanding (transport_timer),
	 * and the post that makes them outstanding sets it: with none there is
	 * nothing to note and no clock to read */
	if (c->tt_ns && c->sq_count)
		c->tt_last = rdmx__stamp_ns();
}

void rdmx__tcp_conn_timer(struct tcp_conn *c, uint64_t now)
{
	if (transport_timer(c, now))
		return;
	if (c->conn_deadline != TCP_NEVER) {
		if (c->conn_deadline <= now) {
			c->conn_deadline = TCP_NEVER;
			RDMX_DBG("tcp: connection %u: no answer within %u ms", c->conn->id,
			         c->timeout_ms);
			rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_FAILURE);
			return;
		}
		rdmx__tcp_ctx_timer(c->tc, c->conn_deadline);
	}
	if (c->rnr_wait) {
		if (c->rnr_deadline <= now)
			rdmx__tcp_conn_rnr_timer(c);
		else
			rdmx__tcp_ctx_timer(c->tc, c->rnr_deadline);
	}
}

/* ---- export / connect ---- */

int rdmx__tcp_conn_export(struct rdmx_conn *conn, void *details, size_t *len)
{
	struct tcp_ctx *tc = TCP_CTX(conn->ctx);
	struct tcp_dev *td = tc->td;
	struct rdmx__tcp_details d;
	struct tcp_conn *c;
	int rc;

	if (*len < RDMX__TCP_DETAILS_SIZE)
		return RDMX_E_TOO_BIG;
	c = rdmx__tcp_conn_create(tc, conn);
	if (!c)
		return RDMX_E_NOMEM;
	rc = rdmx__tcp_random(c->my_token, sizeof(c->my_token));
	if (rc)
		goto free_conn;
	memset(&d, 0, sizeof(d));
	d.provider = RDMX_PROVIDER_ID_TCP;
	d.family = td->family == AF_INET ? 4 : 6;
	d.port = td->port;
	memcpy(d.addr, td->addr_raw, td->family == AF_INET ? 4 : 16);
	memcpy(d.token, c->my_token, sizeof(d.token));
	d.nonce = c->my_psn0;
	pthread_mutex_lock(&tc->lock);
	rc = rdmx__tcp_conn_link(tc, c);
	pthread_mutex_unlock(&tc->lock);
	if (rc)
		goto free_conn;
	conn->prov = c;
	pthread_mutex_lock(&td->lock);
	c->pend_next = td->pending;
	td->pending = c;
	c->pending = true;
	pthread_mutex_unlock(&td->lock);
	rdmx__tcp_details_encode(&d, details);
	*len = RDMX__TCP_DETAILS_SIZE;
	return 0;

free_conn:
	rdmx__tcp_conn_free(c);
	return rc;
}

/* Export flow acceptor: both the peer's socket and our connect are there. */
static void finish_accept(struct tcp_conn *c)
{
	if (!rdmx__tcp_ct_equal(c->presented, c->peer_token, RDMX__TCP_TOKEN_SIZE)) {
		RDMX_WARN("tcp: data connection rejected: bad token");
		rdmx__tcp_conn_down(c, RDMX_E_AUTH, RDMX__CONN_EV_FAILURE);
		return;
	}
	rdmx__tcp_ctl_handshake(c, RDMX__TCP_OP_HELLO_ACK, NULL, 0);
	rdmx__tcp_conn_up(c, c->peer_psn0, c->peer_depth);
}

int rdmx__tcp_conn_connect(struct rdmx_conn *conn, const void *details, size_t len)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc = c->tc;
	struct rdmx__tcp_details d;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	bool initiator;
	int rc = 0;

	if (rdmx__tcp_details_decode(details, len, RDMX_PROVIDER_ID_TCP, &d))
		return RDMX_E_INVAL;
	if (rdmx__tcp_ct_equal(d.token, c->my_token, RDMX__TCP_TOKEN_SIZE))
		return RDMX_E_INVAL; /* our own details */
	memset(&peer, 0, sizeof(peer));
	if (d.family == 4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&peer;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(d.port);
		memcpy(&s4->sin_addr, d.addr, 4);
		peer_len = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&peer;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(d.port);
		memcpy(&s6->sin6_addr, d.addr, 16);
		peer_len = sizeof(*s6);
	}
	initiator = memcmp(c->my_token, d.token, RDMX__TCP_TOKEN_SIZE) < 0;
	if (initiator) {
		/* nobody is to dial us for this connection any more */
		pthread_mutex_lock(&tc->td->lock);
		rdmx__tcp_pending_del(tc->td, c);
		pthread_mutex_unlock(&tc->td->lock);
	}
	rdmx__tcp_ctx_enter(tc);
	if (c->state != TC_IDLE || c->local_connected) {
		rc = RDMX_E_BAD_STATE;
		goto unlock;
	}
	/* the NIC thread reads these under the lock (attach) */
	c->peer = peer;
	c->peer_len = peer_len;
	memcpy(c->peer_token, d.token, sizeof(c->peer_token));
	c->initiator = initiator;
	c->local_connected = true;
	rdmx__tcp_fill_addr(&conn->peer_addr, &peer, peer_len);
	conn->has_peer_addr = true;
	if (initiator) {
		uint8_t hello[RDMX__TCP_HELLO_LEN];

		if (c->peer_arrived) {
			/* someone with our token dialed although we dial: not the peer */
			RDMX_WARN("tcp: data connection rejected: bad token");
			rdmx__tcp_conn_close_fd(c);
			c->peer_arrived = false;
		}
		memcpy(hello, c->peer_token, RDMX__TCP_TOKEN_SIZE);
		memcpy(hello + RDMX__TCP_TOKEN_SIZE, c->my_token, RDMX__TCP_TOKEN_SIZE);
		rdmx__tcp_ctl_handshake(c, RDMX__TCP_OP_HELLO, hello, sizeof(hello));
		rdmx__tcp_dial(c);
	} else if (c->peer_arrived) {
		finish_accept(c);
	} else {
		c->state = TC_ACCEPT_WAIT;
		c->conn_deadline = rdmx__now_ns() + (uint64_t)c->timeout_ms * 1000000u;
		rdmx__tcp_ctx_timer(tc, c->conn_deadline);
	}
unlock:
	pthread_mutex_unlock(&tc->lock);
	rdmx__tcp_nic_nudge(tc); /* the handshake timer */
	return rc;
}

void rdmx__tcp_conn_attach(struct tcp_conn *c, int fd, const struct rdmx__tcp_hdr *h,
                           const uint8_t *payload)
{
	struct tcp_ctx *tc = c->tc;
	bool produced;

	if (!tc) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&tc->lock);
	if ((c->state != TC_IDLE && c->state != TC_ACCEPT_WAIT) || c->peer_arrived ||
	    c->initiator || tc->stopping) {
		RDMX_DBG("tcp: data connection for a connection not waiting for one: closed");
		close(fd);
		goto unlock;
	}
	if (!rdmx__tcp_depth_ok(h->op1)) {
		RDMX_WARN("tcp: data connection rejected: bad queue depth %llu",
		          (unsigned long long)h->op1);
		close(fd);
		goto unlock;
	}
	rdmx__tcp_data_sockopts(fd);
	c->fd = fd;
	c->peer_arrived = true;
	c->peer_psn0 = h->psn;
	c->peer_depth = (uint32_t)h->op1;
	memcpy(c->presented, payload + RDMX__TCP_TOKEN_SIZE, RDMX__TCP_TOKEN_SIZE);
	if (!c->rx.stage)
		c->rx.stage = malloc(TCP_STAGE_SIZE);
	if (!c->rx.stage) {
		rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_FAILURE);
		goto unlock;
	}
	rdmx__tcp_conn_want(c, false); /* notices the peer going away meanwhile */
	if (c->local_connected)
		finish_accept(c);
unlock:
	produced = tc->produced;
	tc->produced = false;
	pthread_mutex_unlock(&tc->lock);
	if (produced)
		rdmx__tcp_ctx_signal(tc);
}

/* The NIC thread matches a sealed hello against pending conns' keys under
 * the device lock: the seal is installed under it. */
int rdmx__tcp_conn_set_keys(struct rdmx_conn *conn, const struct rdmx_conn_keys *keys)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc = c->tc;
	struct tcp_seal *seal;
	int rc;

	if (!tc)
		return RDMX_E_BAD_STATE;
	rc = rdmx__tcp_seal_create(keys->tx_key, keys->tx_iv, keys->rx_key, keys->rx_iv, &seal);
	if (rc)
		return rc;
	pthread_mutex_lock(&tc->td->lock);
	pthread_mutex_lock(&tc->lock);
	if (c->cm || c->state != TC_IDLE || c->local_connected || c->peer_arrived || c->seal) {
		rc = RDMX_E_BAD_STATE;
	} else {
		c->seal = seal;
		seal = NULL;
	}
	pthread_mutex_unlock(&tc->lock);
	pthread_mutex_unlock(&tc->td->lock);
	rdmx__tcp_seal_destroy(seal);
	return rc;
}

/* ---- disconnect / release ---- */

int rdmx__tcp_conn_disconnect(struct rdmx_conn *conn)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc = c->tc;

	rdmx__tcp_ctx_enter(tc);
	rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_DISCONNECTED);
	pthread_mutex_unlock(&tc->lock);
	return 0;
}

void rdmx__tcp_conn_release(struct rdmx_conn *conn)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc;

	if (!c)
		return;
	pthread_mutex_lock(&c->td->lock);
	rdmx__tcp_pending_del(c->td, c);
	tc = c->tc; /* NULL once the context stopped */
	pthread_mutex_unlock(&c->td->lock);
	if (tc) {
		pthread_mutex_lock(&tc->lock);
		rdmx__tcp_conn_unlink(tc, c);
		rdmx__tcp_conn_close_fd(c);
		pthread_mutex_unlock(&tc->lock);
	}
	rdmx__tcp_conn_free(c);
	conn->prov = NULL;
}
