/* tcp provider: the send side of a connection's wire.
 *
 * One frame is on the wire at a time (header + payload through sendmsg with
 * an iovec over the source chain, so no payload is copied). The next frame
 * is, in order of preference: a control frame (handshake, error), the
 * oldest queued response (answers keep the peer moving), the next request.
 * Read responses stream from the registered region under the key table's
 * read lock, re-checked on every sendmsg. A request whose task completes
 * while its frame is half sent (connection to error) finishes with zeros:
 * the stream stays in sync and the user's buffer is never touched again. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp.h"

#define TX_IOV 16
#define TX_ZEROS 16384u

static const uint8_t zeros[TX_ZEROS];

void rdmx__tcp_conn_want(struct tcp_conn *c, bool out)
{
	uint32_t want = EPOLLIN | (out ? EPOLLOUT : 0u);

	if (c->fd < 0 || !c->tc || c->ep_events == want)
		return;
	if (rdmx__tcp_ep_set(c->tc, c->fd, &c->ep, want, c->ep_events == 0) == 0)
		c->ep_events = want;
}

void rdmx__tcp_tx_forget_task(struct tcp_conn *c)
{
	struct tcp_tx *tx = &c->tx;

	if (tx->what != TCP_TX_REQ)
		return;
	tx->what = TCP_TX_CTL; /* no bookkeeping when it ends */
	if (tx->left)
		tx->src = TCP_SRC_ZERO;
}

static void build_request(struct tcp_conn *c, struct rdmx_task *t, struct rdmx__tcp_hdr *h)
{
	struct tcp_tx *tx = &c->tx;

	h->psn = (uint32_t)t->prov_u64[0];
	h->rkey = (uint32_t)t->prov_u64[1];
	h->offset = t->remote.offset;
	switch (t->op) {
	case RDMX__OP_SEND:
	case RDMX__OP_SEND_IMM:
		h->op = t->op == RDMX__OP_SEND ? RDMX__TCP_OP_SEND : RDMX__TCP_OP_SEND_IMM;
		h->imm = t->op == RDMX__OP_SEND_IMM ? t->imm : 0;
		h->rkey = 0;
		h->offset = 0;
		h->len = t->len;
		break;
	case RDMX__OP_WRITE:
	case RDMX__OP_WRITE_IMM:
		h->op = t->op == RDMX__OP_WRITE ? RDMX__TCP_OP_WRITE : RDMX__TCP_OP_WRITE_IMM;
		h->imm = t->op == RDMX__OP_WRITE_IMM ? t->imm : 0;
		h->len = t->len;
		break;
	case RDMX__OP_READ:
		h->op = RDMX__TCP_OP_READ_REQ;
		h->op0 = t->len;
		break;
	case RDMX__OP_CAS:
		h->op = RDMX__TCP_OP_CAS;
		h->op0 = t->op0;
		h->op1 = t->op1;
		break;
	case RDMX__OP_FADD:
		h->op = RDMX__TCP_OP_FADD;
		h->op0 = t->op0;
		break;
	case RDMX__OP_ATOMIC_WRITE:
		h->op = RDMX__TCP_OP_AWRITE;
		h->op0 = t->op0;
		break;
	case RDMX__OP_FLUSH:
	default:
		h->op = RDMX__TCP_OP_FLUSH;
		h->op0 = t->len;
		break;
	}
	if (h->len) {
		tx->src = TCP_SRC_CHAIN;
		tx->buf = t->local;
		tx->buf_off = 0;
	}
}

/* Picks the next frame; false when there is nothing to send. */
static bool tx_next(struct tcp_conn *c)
{
	struct tcp_tx *tx = &c->tx;
	struct rdmx__tcp_hdr h;

	memset(tx, 0, sizeof(*tx));
	memset(&h, 0, sizeof(h));
	if (c->ctl_pending) {
		h = c->ctl;
		c->ctl_pending = false;
		tx->what = TCP_TX_CTL;
		if (h.len) {
			tx->src = TCP_SRC_INLINE;
			tx->inl = c->ctl_payload;
		}
	} else if (c->resp_count) {
		struct tcp_resp *r = &c->resp[c->resp_head];

		h.op = r->op;
		h.status = r->status;
		h.psn = r->psn;
		if (r->op == RDMX__TCP_OP_ATOMIC_RESP) {
			h.op0 = r->val;
		} else if (r->op == RDMX__TCP_OP_READ_RESP) {
			const struct rdmx__tcp_region *reg;
			bool live;

			rdmx__tcp_keytab_rdlock(&c->td->keys);
			reg = rdmx__tcp_keytab_find(&c->td->keys, r->rkey);
			live = reg && reg->serial == r->serial;
			rdmx__tcp_keytab_unlock(&c->td->keys);
			if (!live) {
				/* deregistered since the request was checked */
				h.op = RDMX__TCP_OP_NAK;
				h.status = RDMX__TCP_ST_REMOTE_ACCESS;
				c->err_after_tx = true;
			} else {
				h.len = r->len;
				tx->src = h.len ? TCP_SRC_MR : TCP_SRC_NONE;
				tx->rkey = r->rkey;
				tx->serial = r->serial;
				tx->mr_off = r->off;
			}
		}
		tx->what = TCP_TX_RESP;
	} else if (c->state == TC_UP && !c->rnr_wait && c->sq_cur) {
		build_request(c, c->sq_cur, &h);
		tx->what = TCP_TX_REQ;
	} else {
		return false;
	}
	tx->left = h.len;
	if (!tx->left)
		tx->src = TCP_SRC_NONE;
	rdmx__tcp_hdr_encode(&h, tx->hdr);
	return true;
}

static void tx_done(struct tcp_conn *c)
{
	struct tcp_tx *tx = &c->tx;

	switch (tx->what) {
	case TCP_TX_RESP:
		c->resp_head = (c->resp_head + 1) % c->resp_cap;
		c->resp_count--;
		break;
	case TCP_TX_REQ:
		if (c->rewind_pending) {
			c->rewind_pending = false;
			c->sq_cur = c->sq_head;
		} else {
			c->sq_cur = c->sq_cur->next;
		}
		break;
	default:
		break;
	}
	tx->what = 0;
}

/* Fills iov with the payload still to send; false if its region vanished.
 * *locked: the key table read lock is held (release after sendmsg). */
static bool payload_iov(struct tcp_conn *c, struct iovec *iov, int *n, bool *locked)
{
	struct tcp_tx *tx = &c->tx;
	const struct rdmx__tcp_region *r;
	uint64_t left = tx->left;

	switch (tx->src) {
	case TCP_SRC_CHAIN: {
		const struct rdmx_buf *b = tx->buf;
		size_t off = tx->buf_off;

		while (b && left && *n < TX_IOV) {
			size_t piece = b->len - off;

			if (piece > left)
				piece = (size_t)left;
			if (piece) {
				iov[*n].iov_base = (uint8_t *)b->addr + off;
				iov[*n].iov_len = piece;
				(*n)++;
				left -= piece;
			}
			b = b->next;
			off = 0;
		}
		return true;
	}
	case TCP_SRC_MR:
		rdmx__tcp_keytab_rdlock(&c->td->keys);
		r = rdmx__tcp_keytab_find(&c->td->keys, tx->rkey);
		if (!r || r->serial != tx->serial) {
			rdmx__tcp_keytab_unlock(&c->td->keys);
			return false;
		}
		*locked = true;
		iov[*n].iov_base = r->addr + tx->mr_off;
		iov[*n].iov_len = left > (1u << 30) ? (1u << 30) : (size_t)left;
		(*n)++;
		return true;
	case TCP_SRC_INLINE:
		iov[*n].iov_base = (void *)(uintptr_t)tx->inl;
		iov[*n].iov_len = (size_t)left;
		(*n)++;
		return true;
	case TCP_SRC_ZERO:
		iov[*n].iov_base = (void *)(uintptr_t)zeros;
		iov[*n].iov_len = left > TX_ZEROS ? TX_ZEROS : (size_t)left;
		(*n)++;
		return true;
	default:
		return true;
	}
}

static void advance(struct tcp_conn *c, size_t sent)
{
	struct tcp_tx *tx = &c->tx;
	size_t take = RDMX__TCP_HDR_SIZE - tx->hdr_off;

	if (take > sent)
		take = sent;
	tx->hdr_off += (uint32_t)take;
	sent -= take;
	if (!sent)
		return;
	tx->left -= sent;
	switch (tx->src) {
	case TCP_SRC_CHAIN:
		while (sent && tx->buf) {
			size_t piece = tx->buf->len - tx->buf_off;

			if (piece > sent)
				piece = sent;
			tx->buf_off += piece;
			sent -= piece;
			if (tx->buf_off == tx->buf->len) {
				tx->buf = tx->buf->next;
				tx->buf_off = 0;
			}
		}
		break;
	case TCP_SRC_MR:
		tx->mr_off += sent;
		break;
	case TCP_SRC_INLINE:
		tx->inl += sent;
		break;
	default:
		break;
	}
}

void rdmx__tcp_tx_flush(struct tcp_conn *c)
{
	struct tcp_tx *tx = &c->tx;

	while (c->fd >= 0 && c->state != TC_DIALING) {
		struct iovec iov[TX_IOV];
		struct msghdr msg;
		bool locked = false;
		ssize_t s;
		int n = 0;

		if (!tx->what && !tx_next(c))
			break;
		if (tx->hdr_off < RDMX__TCP_HDR_SIZE) {
			iov[n].iov_base = tx->hdr + tx->hdr_off;
			iov[n].iov_len = RDMX__TCP_HDR_SIZE - tx->hdr_off;
			n++;
		}
		if (tx->left && !payload_iov(c, iov, &n, &locked)) {
			RDMX_WARN("tcp: connection %u: region deregistered during a read response",
				  c->conn->id);
			rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, true);
			return;
		}
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)n;
		s = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (locked)
			rdmx__tcp_keytab_unlock(&c->td->keys);
		if (s < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				rdmx__tcp_conn_want(c, true);
				return;
			}
			RDMX_DBG("tcp: connection %u: send failed: %s", c->conn->id,
				 strerror(errno));
			rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED,
					    c->est_queued ? RDMX__CONN_EV_DISCONNECTED
							  : RDMX__CONN_EV_FAILURE);
			return;
		}
		advance(c, (size_t)s);
		if (tx->hdr_off == RDMX__TCP_HDR_SIZE && !tx->left)
			tx_done(c);
	}
	if (c->fd >= 0 && c->state != TC_DIALING)
		rdmx__tcp_conn_want(c, false);
	if (c->err_after_tx && c->fd >= 0 && !c->resp_count) {
		c->err_after_tx = false;
		rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
	}
}
