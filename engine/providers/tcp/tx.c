/* tcp provider: the send side of a connection's wire.
 *
 * Frames are picked into a small queue (in order of preference: a control
 * frame, the oldest queued response, the next request) and go out together,
 * several per sendmsg, with an iovec over the headers and the source chains:
 * no payload is copied, and an acknowledgement shares its segment with the
 * request that follows it. Read responses stream from the registered region
 * under the key table's read lock, re-checked on every sendmsg. A request
 * whose task completes while its frame is half sent (connection to error)
 * cannot be finished: the user's buffer is never touched again, and bytes
 * made up in its place would complete the peer's side with them; the stream
 * is closed instead (rdmx__tcp_tx_forget_task). A header half sent with no
 * payload is finished; requests not yet started are simply dropped. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp.h"

#define TX_IOV 64
#define TX_GATHER 1024 /* bytes: a send this small goes gathered (tx_sendmsg) */

void rdmx__tcp_conn_want(struct tcp_conn *c, bool out)
{
	uint32_t want = EPOLLIN | (out ? EPOLLOUT : 0u);

	if (c->fd < 0 || !c->tc || c->ep_events == want)
		return;
	if (rdmx__tcp_ep_set(c->tc, c->fd, &c->ep, want, c->ep_events == 0) == 0)
		c->ep_events = want;
}

static struct tcp_frame *frame_at(struct tcp_conn *c, unsigned i)
{
	return &c->tx.q[(c->tx.head + i) % TCP_TX_FRAMES];
}

void rdmx__tcp_tx_reset(struct tcp_conn *c)
{
	memset(&c->tx, 0, sizeof(c->tx));
}

bool rdmx__tcp_tx_pending(const struct tcp_conn *c)
{
	return c->tx.count || c->ctl_pending || c->resp_count > c->tx.resp_picked ||
	       (c->seal && c->seal->slot_count) || (c->state == TC_UP && !c->rnr_wait && c->sq_cur);
}

static bool frame_started(const struct tcp_frame *f)
{
	return f->hdr_off > 0;
}

/* A request frame not yet started that carried an ACK becomes that ACK's
 * own frame (its request will not go). */
static void ack_alone(struct tcp_frame *f)
{
	struct rdmx__tcp_hdr carried, h;

	rdmx__tcp_hdr_decode(f->hdr, &carried);
	memset(&h, 0, sizeof(h));
	h.op = RDMX__TCP_OP_ACK;
	h.psn = (uint32_t)carried.op1;
	rdmx__tcp_hdr_encode(&h, f->hdr);
	f->what = TCP_TX_RESP;
	f->acks = false;
	f->task = NULL;
	f->src = TCP_SRC_NONE;
	f->left = 0;
}

/* Every task of the connection is being completed: no frame may refer to
 * one any more, nor may the seal pipe still read their buffers. */
bool rdmx__tcp_tx_forget_task(struct tcp_conn *c)
{
	struct tcp_tx *tx = &c->tx;
	struct tcp_frame keep[TCP_TX_FRAMES];
	unsigned n = 0;
	bool cut = false;

	if (c->seal)
		rdmx__tcp_seal_pipe_settle(c->seal, false);

	for (unsigned i = 0; i < tx->count; i++) {
		struct tcp_frame *f = frame_at(c, i);

		if (f->what == TCP_TX_REQ) {
			if ((i > 0 || !frame_started(f)) && f->acks) {
				ack_alone(f); /* the ACK it carried still goes, in its place */
				keep[n++] = *f;
				continue;
			}
			if (i > 0 || !frame_started(f))
				continue; /* never started: drop it */
			if (f->left) {
				cut = true; /* payload on its way: the caller closes */
				continue;
			}
			f->what = TCP_TX_ORPHAN; /* the rest of its header still goes */
			f->task = NULL;
		}
		keep[n++] = *f;
	}
	for (unsigned i = 0; i < n; i++)
		tx->q[i] = keep[i];
	tx->head = 0;
	tx->count = (uint8_t)n;
	tx->reqs = 0;
	return cut;
}

void rdmx__tcp_tx_rewind(struct tcp_conn *c)
{
	if (c->tx.reqs) {
		c->rewind_pending = true; /* once the frames on the wire are out */
		return;
	}
	for (struct rdmx_task *t = c->sq_head; t && t != c->sq_cur; t = t->next)
		t->prov_u64[1] &= ~(TCP_TASK_SENT | TCP_TASK_PIPED);
	c->sq_cur = c->sq_head;
	c->rewind_pending = false;
}

static void build_request(struct tcp_frame *f, struct rdmx_task *t, struct rdmx__tcp_hdr *h)
{
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
		f->src = TCP_SRC_CHAIN;
		f->buf = t->local;
		f->buf_off = 0;
	}
	f->task = t;
}

static bool region_live(struct tcp_conn *c, uint32_t rkey, uint64_t serial)
{
	const struct rdmx__tcp_region *r = rdmx__tcp_keytab_find(&c->td->keys, rkey);

	return r && r->serial == serial;
}

/* Turns a read response whose region went away before any byte of it was
 * sent into an access NAK (and the connection into error once it is out). */
static void resp_to_nak(struct tcp_conn *c, struct tcp_frame *f)
{
	struct rdmx__tcp_hdr h;

	rdmx__tcp_hdr_decode(f->hdr, &h);
	h.op = RDMX__TCP_OP_NAK;
	h.status = RDMX__TCP_ST_REMOTE_ACCESS;
	h.len = 0;
	rdmx__tcp_hdr_encode(&h, f->hdr);
	f->src = TCP_SRC_NONE;
	f->left = 0;
	c->err_after_tx = true;
}

/* The owed response the next frame would carry (resp_count > resp_picked). */
static const struct tcp_resp *next_resp(const struct tcp_conn *c)
{
	return &c->resp[(c->resp_head + c->tx.resp_picked) & c->resp_mask];
}

/* Whether the owed response r may ride on the next request instead of going
 * as a frame (wire.h, RDMX__TCP_F_ACK): a plain ACK, the last response owed,
 * and a request ready to go right after it that has room (not CAS). */
static bool ack_rides(const struct tcp_conn *c, const struct tcp_resp *r)
{
	return r->op == RDMX__TCP_OP_ACK && c->resp_count == c->tx.resp_picked + 1 &&
	       c->state == TC_UP && !c->rnr_wait && !c->rewind_pending && c->sq_cur &&
	       c->sq_cur->op != RDMX__OP_CAS;
}

/* Picks the next frame into f; false when there is nothing to send. */
static bool pick(struct tcp_conn *c, struct tcp_frame *f)
{
	struct tcp_tx *tx = &c->tx;
	struct rdmx__tcp_hdr h;

	/* the last call of every flush finds nothing: it clears nothing */
	if (!c->ctl_pending && c->resp_count <= tx->resp_picked &&
	    (c->state != TC_UP || c->rnr_wait || c->rewind_pending || !c->sq_cur))
		return false;
	memset(f, 0, offsetof(struct tcp_frame, inl));
	memset(&h, 0, sizeof(h));
	if (c->ctl_pending) {
		h = c->ctl;
		c->ctl_pending = false;
		f->what = TCP_TX_CTL;
		if (h.len) {
			memcpy(f->inl, c->ctl_payload, h.len);
			f->src = TCP_SRC_INLINE;
		}
	} else if (c->resp_count > tx->resp_picked && !ack_rides(c, next_resp(c))) {
		const struct tcp_resp *r = next_resp(c);

		h.op = r->op;
		h.status = r->status;
		h.psn = r->psn;
		if (r->op == RDMX__TCP_OP_ATOMIC_RESP) {
			h.op0 = r->val;
		} else if (r->op == RDMX__TCP_OP_READ_RESP) {
			h.len = r->len;
			f->src = TCP_SRC_MR;
			f->rkey = r->rkey;
			f->serial = r->serial;
			f->mr_off = r->off;
		}
		f->what = TCP_TX_RESP;
		tx->resp_picked++;
	} else { /* a request: the check above saw one ready */
		if (c->resp_count > tx->resp_picked) { /* the owed ACK rides on it */
			h.flags = RDMX__TCP_F_ACK;
			h.op1 = next_resp(c)->psn;
			f->acks = true;
			tx->resp_picked++;
		}
		build_request(f, c->sq_cur, &h);
		c->sq_cur = c->sq_cur->next;
		f->what = TCP_TX_REQ;
		tx->reqs++;
	}
	f->left = h.len;
	if (!f->left)
		f->src = TCP_SRC_NONE;
	rdmx__tcp_hdr_encode(&h, f->hdr);
	return true;
}

/* Whether a light message of len bytes may go now (tcp.h rdmx__tcp_tx_msg). */
static bool msg_may_go(const struct tcp_conn *c, uint32_t len)
{
	return c->state == TC_UP && !c->sq_head && !c->rnr_wait && !c->rewind_pending &&
	       len <= RDMX__TCP_MSG_MAX;
}

/* A light message's frame into hdr (its header) and inl (its payload). */
static void msg_build(uint8_t *hdr, uint8_t *inl, const struct rdmx_buf *src,
                      const struct rdmx_rbuf *dst, uint32_t imm, uint32_t len)
{
	struct rdmx__tcp_hdr h;
	uint32_t off = 0;

	for (const struct rdmx_buf *b = src; b && off < len; b = b->next) {
		memcpy(inl + off, b->addr, b->len);
		off += (uint32_t)b->len;
	}
	memset(&h, 0, sizeof(h));
	h.op = RDMX__TCP_OP_MSG;
	h.rkey = dst->mr->rkey;
	h.offset = dst->offset;
	h.imm = imm;
	h.len = len;
	rdmx__tcp_hdr_encode(&h, hdr);
}

/* The next frame of the queue, made a light message's of len payload bytes
 * and counted in; the caller writes its header and payload. */
static struct tcp_frame *msg_queue(struct tcp_conn *c, uint32_t len)
{
	struct tcp_frame *f = frame_at(c, c->tx.count);

	memset(f, 0, offsetof(struct tcp_frame, inl));
	f->what = TCP_TX_MSG;
	f->src = len ? TCP_SRC_INLINE : TCP_SRC_NONE;
	f->left = len;
	c->tx.count++;
	return f;
}

bool rdmx__tcp_tx_msg(struct tcp_conn *c, const struct rdmx_buf *src, const struct rdmx_rbuf *dst,
                      uint32_t imm, uint32_t len)
{
	struct tcp_tx *tx = &c->tx;
	struct tcp_frame *f;

	if (!msg_may_go(c, len))
		return false;
	/* the answers owed go first: the peer's requests they answer leave its
	 * send queue before it reads this, and it may send light ones again */
	while (tx->count < TCP_TX_FRAMES - 1 && pick(c, frame_at(c, tx->count)))
		tx->count++;
	if (tx->count >= TCP_TX_FRAMES)
		return false;
	f = msg_queue(c, len);
	msg_build(f->hdr, f->inl, src, dst, imm, len);
	return true;
}

/* The owed response at the head of the ring is on the wire. */
static void resp_done(struct tcp_conn *c)
{
	c->resp_head = (c->resp_head + 1) & c->resp_mask;
	c->resp_count--;
	c->tx.resp_picked--;
}

static void frame_done(struct tcp_conn *c, struct tcp_frame *f)
{
	struct tcp_tx *tx = &c->tx;

	switch (f->what) {
	case TCP_TX_RESP:
		resp_done(c);
		break;
	case TCP_TX_REQ:
		f->task->prov_u64[1] |= tx->piping ? TCP_TASK_PIPED : TCP_TASK_SENT;
		tx->reqs--;
		if (!tx->reqs && c->rewind_pending)
			rdmx__tcp_tx_rewind(c);
		break;
	default:
		break;
	}
	tx->head = (uint8_t)((tx->head + 1) % TCP_TX_FRAMES);
	tx->count--;
}

/* Adds f's unsent bytes to iov. */
static void frame_iov(const struct tcp_frame *f, struct iovec *iov, int *n)
{
	uint64_t left = f->left;

	if (f->hdr_off < RDMX__TCP_HDR_SIZE && *n < TX_IOV) {
		iov[*n].iov_base = (uint8_t *)f->hdr + f->hdr_off;
		iov[*n].iov_len = RDMX__TCP_HDR_SIZE - f->hdr_off;
		(*n)++;
	}
	if (!left)
		return;
	switch (f->src) {
	case TCP_SRC_CHAIN: {
		const struct rdmx_buf *b = f->buf;
		size_t off = f->buf_off;

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
		break;
	}
	case TCP_SRC_INLINE:
		if (*n < TX_IOV) {
			iov[*n].iov_base = (uint8_t *)f->inl + f->inl_off;
			iov[*n].iov_len = (size_t)left;
			(*n)++;
		}
		break;
	default:
		break;
	}
}

/* Region source (key table read lock held): the region's bytes. */
static void frame_iov_mr(struct tcp_conn *c, const struct tcp_frame *f, struct iovec *iov, int *n)
{
	const struct rdmx__tcp_region *r = rdmx__tcp_keytab_find(&c->td->keys, f->rkey);

	if (*n >= TX_IOV)
		return;
	iov[*n].iov_base = r->addr + f->mr_off;
	iov[*n].iov_len = f->left > (1u << 30) ? (1u << 30) : (size_t)f->left;
	(*n)++;
}

/* Advances the queue by `sent` bytes; completed frames leave it. */
static void advance(struct tcp_conn *c, size_t sent)
{
	while (sent && c->tx.count) {
		struct tcp_frame *f = frame_at(c, 0);
		size_t take = RDMX__TCP_HDR_SIZE - f->hdr_off;

		if (take > sent)
			take = sent;
		f->hdr_off += (uint32_t)take;
		sent -= take;
		if (f->acks && f->hdr_off == RDMX__TCP_HDR_SIZE) {
			/* the carried ACK is the peer's with the header: it may post
			 * again before the payload is through */
			resp_done(c);
			f->acks = false;
		}
		take = f->left < sent ? (size_t)f->left : sent;
		f->left -= take;
		sent -= take;
		switch (f->src) {
		case TCP_SRC_CHAIN:
			while (take && f->buf) {
				size_t piece = f->buf->len - f->buf_off;

				if (piece > take)
					piece = take;
				f->buf_off += piece;
				take -= piece;
				if (f->buf_off == f->buf->len) {
					f->buf = f->buf->next;
					f->buf_off = 0;
				}
			}
			break;
		case TCP_SRC_MR:
			f->mr_off += take;
			break;
		case TCP_SRC_INLINE:
			f->inl_off += (uint32_t)take;
			break;
		default:
			break;
		}
		if (f->hdr_off == RDMX__TCP_HDR_SIZE && !f->left)
			frame_done(c, f);
	}
	/* zero-length leftovers (cannot happen with sent > 0 frames) */
}

/* Builds the iovec over the queued frames. Returns false when the
 * connection had to go to error (region gone under a started response). */
static bool build_iov(struct tcp_conn *c, struct iovec *iov, int *n, bool *locked)
{
	*n = 0;
	for (unsigned i = 0; i < c->tx.count && *n < TX_IOV; i++) {
		struct tcp_frame *f = frame_at(c, i);

		if (f->src == TCP_SRC_MR && f->left) {
			if (!*locked) {
				rdmx__tcp_keytab_rdlock(&c->td->keys);
				*locked = true;
			}
			if (!region_live(c, f->rkey, f->serial)) {
				if (i > 0)
					break; /* judged when it is first */
				if (frame_started(f)) {
					rdmx__tcp_keytab_unlock(&c->td->keys);
					*locked = false;
					RDMX_WARN(
					    "tcp: connection %u: region deregistered during a "
					    "read response",
					    c->conn->id);
					rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, true);
					return false;
				}
				resp_to_nak(c, f);
				frame_iov(f, iov, n);
				continue;
			}
			frame_iov(f, iov, n); /* the header */
			frame_iov_mr(c, f, iov, n);
			/* the rest of this frame follows in a later sendmsg */
			break;
		}
		frame_iov(f, iov, n);
	}
	return true;
}

/* One send of iov[n], again after EINTR: the bytes the socket took, or
 * -errno. A small send (every piece of it at most TX_GATHER bytes in all) is
 * gathered into one buffer and goes by send(): the kernel's single-buffer
 * path costs ~500 cycles less than sendmsg's iovec import (measured here,
 * docs/BENCHMARKS.md), the copy a few dozen; the raw TCP ping-pong it is
 * measured beside uses send() too. */
static ssize_t tx_sendmsg(struct tcp_conn *c, struct iovec *iov, int n, size_t total)
{
	uint8_t gather[TX_GATHER];
	const void *one = NULL;
	struct msghdr msg;
	ssize_t s;

	if (n == 1) {
		one = iov[0].iov_base;
	} else if (total <= sizeof(gather)) {
		size_t off = 0;

		for (int i = 0; i < n; i++) {
			memcpy(gather + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		one = gather;
	}
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t)n;
	do
		s = one ? send(c->fd, one, total, MSG_NOSIGNAL | MSG_DONTWAIT)
		        : sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (s < 0 && errno == EINTR);
	return s < 0 ? -errno : s;
}

/* What a send of `total` bytes that returned s (tx_sendmsg) means for the
 * flush; called once the caller advanced its queue by what was sent. True:
 * everything went, go on. False: stop; the socket is full (EAGAIN, or a
 * short write: EPOLLOUT is wanted instead of a send that would only answer
 * EAGAIN) or the connection failed and went down. */
static bool tx_sent(struct tcp_conn *c, ssize_t s, size_t total)
{
	if (s == -EAGAIN || s == -EWOULDBLOCK) {
		rdmx__tcp_conn_want(c, true);
		return false;
	}
	if (s < 0) {
		RDMX_DBG("tcp: connection %u: send failed: %s", c->conn->id, strerror((int)-s));
		rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED,
		                    c->est_queued ? RDMX__CONN_EV_DISCONNECTED
		                                  : RDMX__CONN_EV_FAILURE);
		return false;
	}
	if (s > 0)
		rdmx__tcp_conn_alive(c);
	if ((size_t)s < total) {
		rdmx__tcp_conn_want(c, true);
		return false;
	}
	return true;
}

/* A record ends right after the header of a frame with a large payload, so
 * that the payload starts a record of its own: the receiver then decrypts it
 * straight into its destination (rx.c), which it does only for payload
 * bytes whose header came in an earlier, verified record. */
static size_t record_cut(struct tcp_conn *c, size_t take)
{
	size_t at = 0;

	for (unsigned i = 0; i < c->tx.count && at < take; i++) {
		const struct tcp_frame *f = frame_at(c, i);
		size_t hdr_left = RDMX__TCP_HDR_SIZE - f->hdr_off;

		if (hdr_left && f->left >= TCP_DIRECT_MIN)
			return at + hdr_left < take ? at + hdr_left : take;
		at += hdr_left + (size_t)f->left;
	}
	return take;
}

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t sum = 0;

	for (int i = 0; i < n; i++)
		sum += iov[i].iov_len;
	return sum;
}

static uint8_t *slot_at(const struct tcp_seal *s, unsigned i)
{
	return s->txbuf + (size_t)((s->slot_head + i) % TCP_SEAL_SLOTS) * TCP_SEAL_REC;
}

static uint32_t *slot_len_at(struct tcp_seal *s, unsigned i)
{
	return &s->slot_len[(s->slot_head + i) % TCP_SEAL_SLOTS];
}

/* Whether the record of the first `take` bytes of iov[n] can go to the seal
 * pipe: bytes of one request's payload whose header is already sealed (a
 * pure function of the key, the record number and the task's buffer; headers,
 * control frames and read responses, which need the key table's lock, stay
 * inline), few enough pieces, and a flush that is not running on the NIC
 * thread (which seals the pipe's records). */
static int pipe_pieces(struct tcp_conn *c, const struct iovec *iov, int n, size_t take)
{
	const struct tcp_frame *f = frame_at(c, 0);
	size_t sum = 0;
	int k = 0;

	if (f->hdr_off != RDMX__TCP_HDR_SIZE || f->src != TCP_SRC_CHAIN || f->left < take ||
	    f->what != TCP_TX_REQ || c->seal->tx.seq == UINT64_MAX)
		return 0;
	while (k < n && sum < take)
		sum += iov[k++].iov_len;
	return k <= TCP_PIPE_IOV ? k : 0;
}

/* Whether the payload after this record (the header of a request, cut
 * right after it) fills a whole pipe: then it goes to the pipe in this
 * flush. A shorter one stays inline, with the frames after it: a pipe of
 * one or two records costs a wake-up of the NIC for little cipher work and
 * keeps the next frames out of the flush (measured: 64 KiB writes at half
 * the rate). */
static bool pipe_after(struct tcp_conn *c, size_t take)
{
	const struct tcp_frame *f = frame_at(c, 0);

	return f->hdr_off < RDMX__TCP_HDR_SIZE && take == RDMX__TCP_HDR_SIZE - f->hdr_off &&
	       f->src == TCP_SRC_CHAIN && f->what == TCP_TX_REQ &&
	       f->left >= (uint64_t)TCP_PIPE_RECS * TCP_SEAL_MAX;
}

static bool pipe_usable(struct tcp_conn *c)
{
	return c->td->nic_started && !pthread_equal(pthread_self(), c->td->nic) &&
	       rdmx__tcp_seal_pipe_enabled();
}

/* Waits for the records posted for this connection (or seals them here);
 * their slots get their sizes. False when one failed: the connection went to
 * error. */
static bool pipe_join(struct tcp_conn *c)
{
	int rc = rdmx__tcp_seal_pipe_settle(c->seal, pipe_usable(c));

	if (!rc) {
		/* no record reads a task's buffer any more (tcp.h TCP_TASK_PIPED) */
		for (struct rdmx_task *t = c->sq_head; t && t != c->sq_cur; t = t->next) {
			if (t->prov_u64[1] & TCP_TASK_PIPED)
				t->prov_u64[1] ^= TCP_TASK_PIPED | TCP_TASK_SENT;
		}
		return true;
	}
	RDMX_ERR("tcp: connection %u: cannot seal a record: %s", c->conn->id, rdmx_strerror(rc));
	rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, true);
	if (c->state != TC_ERROR && c->state != TC_DOWN)
		rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_FAILURE);
	return false;
}

/* Seals picked frames into records while a slot is free (none of ours in
 * the pipe): inline, or payload records into the seal pipe (claimed, posted
 * at the end: the NIC thread seals them while the flush sends the records
 * before them). False when the connection had to go to error. */
static bool seal_frames(struct tcp_conn *c)
{
	struct tcp_seal *s = c->seal;
	struct tcp_tx *tx = &c->tx;
	struct tcp_seal_pipe *p = &c->td->seal_pipe;
	bool try_pipe = pipe_usable(c), held = false;

	while (s->slot_count < TCP_SEAL_SLOTS) {
		struct iovec iov[TX_IOV];
		uint8_t *out = slot_at(s, s->slot_count);
		bool locked = false;
		size_t take = 0;
		int n, k, rc;

		while (tx->count < TCP_TX_FRAMES &&
		       pick(c, &tx->q[(tx->head + tx->count) % TCP_TX_FRAMES]))
			tx->count++;
		if (!tx->count)
			break;
		if (!build_iov(c, iov, &n, &locked)) {
			if (held) { /* filled, not posted: sealed here by the join */
				s->posted = p;
				pipe_join(c);
			}
			return false;
		}
		for (int i = 0; i < n && take < TCP_SEAL_MAX; i++)
			take += iov[i].iov_len;
		if (take > TCP_SEAL_MAX)
			take = TCP_SEAL_MAX;
		take = record_cut(c, take);
		k = try_pipe && take ? pipe_pieces(c, iov, n, take) : 0;
		if (k && (held || rdmx__tcp_seal_pipe_claim(p, &s->tx_pipe))) {
			struct tcp_seal_pipe_rec *r = rdmx__tcp_seal_pipe_next(p);

			if (locked) /* a read response further down the queue */
				rdmx__tcp_keytab_unlock(&c->td->keys);
			held = true;
			r->seq = s->tx.seq++;
			r->out = out;
			r->take = take;
			r->niov = k;
			r->rc = RDMX_E_INVAL;
			memcpy(r->iov, iov, (size_t)k * sizeof(iov[0]));
			p->nrec++;
			*slot_len_at(s, s->slot_count++) = 0; /* being sealed */
			tx->piping = true;
			advance(c, take);
			tx->piping = false;
			if (!rdmx__tcp_seal_pipe_next(p))
				break;
			continue;
		}
		if (held) {
			/* the pipe's records go first: this one waits for the next
			 * round (the flush sends meanwhile) */
			if (locked)
				rdmx__tcp_keytab_unlock(&c->td->keys);
			break;
		}
		if (k || !pipe_after(c, take)) /* the rest inline */
			try_pipe = false;
		rc = take ? rdmx__tcp_seal_record(&s->tx, iov, n, take, out) : RDMX_E_INVAL;
		if (locked)
			rdmx__tcp_keytab_unlock(&c->td->keys);
		if (rc < 0) {
			RDMX_ERR("tcp: connection %u: cannot seal record %llu: %s", c->conn->id,
			         (unsigned long long)s->tx.seq,
			         rc == RDMX_E_FULL ? "record counter exhausted"
			                           : rdmx_strerror(rc));
			rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, true);
			if (c->state != TC_ERROR && c->state != TC_DOWN)
				rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED, RDMX__CONN_EV_FAILURE);
			return false;
		}
		*slot_len_at(s, s->slot_count++) = (uint32_t)rc;
		advance(c, take);
	}
	if (held) {
		s->posted = p;
		rdmx__tcp_seal_pipe_post(p);
		rdmx__tcp_nic_kick(c->td);
	}
	return true;
}

/* The sealed records at the head of the ring that can go out (up to the
 * first one the pipe is sealing), as an iovec; their total. */
static size_t sealed_iov(struct tcp_seal *s, struct iovec *iov, int *n)
{
	size_t total = 0;

	*n = 0;
	for (unsigned i = 0; i < s->slot_count && *slot_len_at(s, i); i++) {
		uint32_t off = i ? 0 : s->tx_off;

		iov[*n].iov_base = slot_at(s, i) + off;
		iov[*n].iov_len = *slot_len_at(s, i) - off;
		total += iov[(*n)++].iov_len;
	}
	return total;
}

/* `sent` bytes of the head records went out: whole ones free their slots. */
static void slots_sent(struct tcp_seal *s, size_t sent)
{
	while (sent) {
		uint32_t left = *slot_len_at(s, 0) - s->tx_off;

		if (sent < left) {
			s->tx_off += (uint32_t)sent;
			return;
		}
		sent -= left;
		s->tx_off = 0;
		s->slot_head = (uint8_t)((s->slot_head + 1) % TCP_SEAL_SLOTS);
		s->slot_count--;
	}
}

/* The sealed path: frames are sealed into records (the plaintext is copied
 * out of the sources by the cipher), then the records go out; with the seal
 * pipe, the next records are sealed on the NIC thread while these go. A
 * flush that ends on a full socket leaves its posted records to the NIC. */
static void tx_flush_sealed(struct tcp_conn *c)
{
	struct tcp_seal *s = c->seal;

	while (c->fd >= 0 && c->state != TC_DIALING) {
		struct iovec iov[TCP_SEAL_SLOTS];
		size_t total;
		ssize_t n;
		int k;

		if (!s->posted && !seal_frames(c))
			return;
		total = sealed_iov(s, iov, &k);
		if (!total) {
			if (!s->posted)
				break;
			if (!pipe_join(c))
				return;
			continue;
		}
		n = tx_sendmsg(c, iov, k, total);
		if (n > 0)
			slots_sent(s, (size_t)n);
		if (!tx_sent(c, n, total))
			return;
	}
	if (c->fd >= 0 && c->state != TC_DIALING)
		rdmx__tcp_conn_want(c, false);
	if (c->err_after_tx && c->fd >= 0 && !c->tx.count && !s->slot_count) {
		c->err_after_tx = false;
		rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
	}
}

bool rdmx__tcp_tx_msg_now(struct tcp_conn *c, const struct rdmx_buf *src,
                          const struct rdmx_rbuf *dst, uint32_t imm, uint32_t len)
{
	uint8_t frame[RDMX__TCP_HDR_SIZE + RDMX__TCP_MSG_MAX];
	size_t total = RDMX__TCP_HDR_SIZE + len;
	struct tcp_frame *f;
	ssize_t s;

	if (c->seal || c->fd < 0 || c->tx.count || c->ctl_pending || c->resp_count ||
	    c->err_after_tx || c->ep_events != EPOLLIN || !msg_may_go(c, len))
		return false; /* something goes before it, or the socket is full */
	msg_build(frame, frame + RDMX__TCP_HDR_SIZE, src, dst, imm, len);
	do
		s = send(c->fd, frame, total, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (s < 0 && errno == EINTR);
	if (s == (ssize_t)total) {
		rdmx__tcp_conn_alive(c);
		return true;
	}
	/* the rest goes as a queued frame, when the socket takes it */
	s = s < 0 ? -errno : s;
	f = msg_queue(c, len); /* the first: nothing was queued */
	memcpy(f->hdr, frame, sizeof(f->hdr));
	memcpy(f->inl, frame + sizeof(f->hdr), len);
	if (s > 0)
		advance(c, (size_t)s);
	tx_sent(c, s, total);
	return true;
}

void rdmx__tcp_tx_flush(struct tcp_conn *c)
{
	struct tcp_tx *tx = &c->tx;

	if (c->seal) {
		tx_flush_sealed(c);
		return;
	}
	while (c->fd >= 0 && c->state != TC_DIALING) {
		struct iovec iov[TX_IOV];
		bool locked = false;
		size_t total;
		ssize_t s;
		int n;

		while (tx->count < TCP_TX_FRAMES &&
		       pick(c, &tx->q[(tx->head + tx->count) % TCP_TX_FRAMES]))
			tx->count++;
		if (!tx->count)
			break;
		if (!build_iov(c, iov, &n, &locked))
			return;
		total = iov_total(iov, n);
		s = tx_sendmsg(c, iov, n, total);
		if (locked)
			rdmx__tcp_keytab_unlock(&c->td->keys);
		if (s > 0)
			advance(c, (size_t)s);
		if (!tx_sent(c, s, total))
			return;
	}
	if (c->fd >= 0 && c->state != TC_DIALING)
		rdmx__tcp_conn_want(c, false);
	if (c->err_after_tx && c->fd >= 0 && !tx->count) {
		c->err_after_tx = false;
		rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
	}
}

void rdmx__tcp_conn_dirty(struct tcp_conn *c)
{
	if (c->dirty || !c->tc)
		return;
	c->dirty = true;
	c->next_dirty = c->tc->dirty;
	c->tc->dirty = c;
	atomic_store(&c->tc->has_dirty, true); /* seq_cst: see nic_nudge */
}

void rdmx__tcp_ctx_flush_dirty(struct tcp_ctx *tc)
{
	atomic_store_explicit(&tc->has_dirty, false, memory_order_relaxed);
	while (tc->dirty) {
		struct tcp_conn *c = tc->dirty;

		tc->dirty = c->next_dirty;
		c->next_dirty = NULL;
		c->dirty = false;
		if (c->fd >= 0 && rdmx__tcp_tx_pending(c))
			rdmx__tcp_tx_flush(c);
	}
}
