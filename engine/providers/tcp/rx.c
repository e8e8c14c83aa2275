/* tcp provider: the receive side of a connection's wire.
 *
 * Bytes come into a small staging buffer (several small frames per recv);
 * a payload remainder of TCP_DIRECT_MIN bytes or more is received straight
 * into its destination: the receive task's buffers, the read's buffers or
 * the target region (under the key table's read lock, re-checked on every
 * recv, so a deregistration in the middle of a streamed write stops it). A
 * frame the target refuses is drained, never buffered.
 *
 * Requests are checked in order: frame shape (wire.h), state, psn (go-back-N
 * after a receiver-not-ready NAK: later requests are dropped until the NAKed
 * psn comes again), response ring room, then key / bounds / access. Every
 * accepted request gets exactly one response, queued in request order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "tcp.h"

#include "../../msg.h"

enum rx_post {
	RX_POST_NONE = 0,
	RX_POST_DROP,       /* drained: no answer (error state, go-back-N) */
	RX_POST_HANDSHAKE,  /* handshake answer (inline payload) */
	RX_POST_REQUEST,    /* an accepted request: act and answer at its end */
	RX_POST_NAK,        /* refused at its start: answer rx.nak at its end */
	RX_POST_RESPONSE,   /* a response to the oldest outstanding task */
	RX_POST_PEER_ERROR, /* the peer moved the connection to error */
	RX_POST_MSG,        /* a light message placed: hand it over at its end */
};

static uint32_t task_psn(const struct rdmx_task *t)
{
	return (uint32_t)t->prov_u64[0];
}

static int nak_status(uint16_t st)
{
	switch (st) {
	case RDMX__TCP_ST_REMOTE_ACCESS:
		return RDMX_E_REMOTE_ACCESS;
	case RDMX__TCP_ST_PROTOCOL:
		return RDMX_E_PROTOCOL;
	default:
		return RDMX_E_REMOTE_OP;
	}
}

/* The peer broke the protocol: the stream cannot be trusted any more. */
static void proto_error(struct tcp_conn *c, const char *why)
{
	RDMX_WARN("tcp: connection %u: malformed frame (op %u): %s: connection to error",
	          c->conn->id, c->rx.h.op, why);
	if (c->state == TC_UP) {
		/* tell the peer, best effort, before the socket goes */
		rdmx__tcp_conn_error(c, RDMX_E_PROTOCOL, RDMX__TCP_ST_PROTOCOL, false);
		rdmx__tcp_conn_error(c, RDMX_E_PROTOCOL, 0, true);
	} else if (c->state == TC_ERROR) {
		rdmx__tcp_conn_close_fd(c);
	} else {
		rdmx__tcp_conn_down(c, RDMX_E_PROTOCOL, RDMX__CONN_EV_FAILURE);
	}
}

struct tcp_resp *rdmx__tcp_resp_push(struct tcp_conn *c)
{
	struct tcp_resp *r;

	if (c->resp_count == c->resp_cap)
		return NULL;
	r = &c->resp[(c->resp_head + c->resp_count) & c->resp_mask];
	memset(r, 0, sizeof(*r));
	c->resp_count++;
	return r;
}

static void respond(struct tcp_conn *c, uint8_t op, uint16_t status, uint64_t val)
{
	struct tcp_resp *r = rdmx__tcp_resp_push(c); /* room checked at frame start */

	if (!r)
		return;
	r->op = op;
	r->status = status;
	r->psn = c->rx.h.psn;
	r->val = val;
}

/* The receive task a frame consumes has no home any more. */
void rdmx__tcp_rx_forget_task(struct tcp_conn *c, int status)
{
	struct rdmx_task *t = c->rx.task;

	if (!t)
		return;
	c->rx.task = NULL;
	c->rx.sink = TCP_SINK_DISCARD;
	if (t->op == RDMX__OP_RECV && c->tc)
		rdmx__tcp_cq_task(c->tc, t, status);
	/* a read being filled stays on the send queue: flushed with it */
}

static struct rdmx_task *srq_pop(struct tcp_ctx *tc)
{
	struct rdmx_task *t = tc->rq_head;

	if (!t)
		return NULL;
	tc->rq_head = t->next;
	if (!tc->rq_head)
		tc->rq_tail = NULL;
	tc->rq_count--;
	t->next = NULL;
	return t;
}

/* Receiver not ready: NAK this psn and drop everything after it. */
static void rnr(struct tcp_conn *c)
{
	c->rnr_discard = true;
	c->rnr_psn = c->rx.h.psn;
	c->rx.post = RX_POST_NAK;
	c->rx.nak = RDMX__TCP_ST_RNR;
}

/* Receive results wait in the provider's scratch fields: the engine may scan
 * tasks' result fields on the application thread (ctx.c copies them there
 * when it delivers the completion). */
static void take_recv(struct tcp_conn *c, struct rdmx_task *t, enum rdmx_opcode opcode)
{
	t->prov_ptr = c->conn;
	t->prov_u64[0] = (uint64_t)opcode;
	t->prov_u64[1] = ((uint64_t)c->rx.h.imm << 32) | (uint32_t)c->rx.h.len;
	c->rx.task = t;
}

/* Start of a request frame (state UP or ERROR). */
static void request_begin(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_hdr *h = &rx->h;
	struct tcp_ctx *tc = c->tc;
	const struct rdmx__tcp_region *r;
	struct rdmx_task *t;
	char why[80];
	bool ok;

	if (c->state != TC_UP) {
		rx->post = RX_POST_DROP;
		return;
	}
	if (c->rnr_discard) {
		if (h->psn != c->rnr_psn) {
			rx->post = RX_POST_DROP;
			return;
		}
		c->rnr_discard = false;
	}
	if (h->psn != c->expect_psn) {
		snprintf(why, sizeof(why), "psn %u, expected %u", h->psn, c->expect_psn);
		proto_error(c, why);
		return;
	}
	if (c->resp_count == c->resp_cap) {
		snprintf(why, sizeof(why), "more than the %u outstanding requests announced",
		         c->resp_cap);
		proto_error(c, why);
		return;
	}
	rx->post = RX_POST_REQUEST;
	switch (h->op) {
	case RDMX__TCP_OP_SEND:
	case RDMX__TCP_OP_SEND_IMM:
		t = srq_pop(tc);
		if (!t) {
			rnr(c);
			return;
		}
		take_recv(c, t,
		          h->op == RDMX__TCP_OP_SEND ? RDMX_OPCODE_SEND
		                                     : RDMX_OPCODE_SEND_WITH_IMM);
		if (h->len > t->len) {
			/* does not fit: the receive fails, the sender's task too */
			rx->nak = RDMX__TCP_ST_REMOTE_OP;
			return;
		}
		rx->sink = TCP_SINK_CHAIN;
		rx->buf = t->local;
		rx->buf_off = 0;
		return;
	case RDMX__TCP_OP_WRITE:
	case RDMX__TCP_OP_WRITE_IMM:
		/* as IB does, a zero-length write names no memory: its key is
		 * not checked (a write_imm without data is a notification) */
		ok = true;
		rx->serial = 0;
		if (h->len) {
			rdmx__tcp_keytab_rdlock(&c->td->keys);
			r = rdmx__tcp_remote_access(c, h->rkey, h->offset, h->len,
			                            RDMX_ACCESS_REMOTE_WRITE);
			ok = r != NULL;
			rx->serial = ok ? r->serial : 0;
			rdmx__tcp_keytab_unlock(&c->td->keys);
		}
		if (!ok) {
			rx->post = RX_POST_NAK;
			rx->nak = RDMX__TCP_ST_REMOTE_ACCESS;
			return;
		}
		if (h->op == RDMX__TCP_OP_WRITE_IMM) {
			t = srq_pop(tc);
			if (!t) {
				rnr(c);
				return;
			}
			take_recv(c, t, RDMX_OPCODE_WRITE_WITH_IMM);
		}
		rx->sink = TCP_SINK_MR;
		rx->rkey = h->rkey;
		rx->mr_off = h->offset;
		return;
	default:
		return; /* no payload: handled at the end */
	}
}

/* Start of a light message (engine/msg.h; state UP or ERROR): placed as a
 * write is, handed to the context's handler at its end; no psn, no answer. */
static void msg_begin(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_hdr *h = &rx->h;

	if (c->state != TC_UP)
		return; /* drained */
	if (!c->tc->ctx->msg_fn) {
		proto_error(c, "light message to a context that takes none");
		return;
	}
	if (c->msg_backlog >= RDMX__MSG_BACKLOG_MAX) {
		proto_error(c, "more light messages undelivered than allowed");
		return;
	}
	rx->serial = 0; /* its target is checked with its first bytes (sink_region_lock) */
	rx->post = RX_POST_MSG;
	rx->sink = TCP_SINK_MR;
	rx->rkey = h->rkey;
	rx->mr_off = h->offset;
}

/* End of a light message: to the handler, unless its region went away
 * while it came (deregistered: the connection cannot go on). */
static void msg_end(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;

	if (rx->nak) {
		RDMX_WARN("tcp: connection %u: region gone under a light message: connection "
		          "to error",
		          c->conn->id);
		rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, true);
		return;
	}
	if (!rdmx__tcp_cq_msg(c->tc, c, rx->h.imm, (uint32_t)rx->h.len)) {
		RDMX_ERR("tcp: connection %u: no memory for a light message: connection to error",
		         c->conn->id);
		rdmx__tcp_conn_error(c, RDMX_E_NOMEM, 0, true);
	}
}

/* One-sided requests without payload, answered from registered memory. */
static void request_oneshot(struct tcp_conn *c)
{
	const struct rdmx__tcp_hdr *h = &c->rx.h;
	struct rdmx__tcp_keytab *kt = &c->td->keys;
	const struct rdmx__tcp_region *r;
	struct tcp_resp *resp;
	uint64_t old = 0, *word;
	unsigned need;
	uint64_t len;
	bool ok;

	if (h->op == RDMX__TCP_OP_READ_REQ && h->op0 == 0) {
		/* zero-length read: no memory named, no key checked (IB) */
		resp = rdmx__tcp_resp_push(c);
		resp->op = RDMX__TCP_OP_READ_RESP;
		resp->psn = h->psn;
		c->expect_psn++;
		return;
	}
	switch (h->op) {
	case RDMX__TCP_OP_READ_REQ:
	case RDMX__TCP_OP_FLUSH:
		need = RDMX_ACCESS_REMOTE_READ;
		len = h->op0;
		break;
	default:
		need = RDMX_ACCESS_REMOTE_ATOMIC;
		len = 8;
		break;
	}
	rdmx__tcp_keytab_rdlock(kt);
	r = rdmx__tcp_remote_access(c, h->rkey, h->offset, len, need);
	ok = r != NULL;
	if (ok && need == RDMX_ACCESS_REMOTE_ATOMIC && ((uintptr_t)(r->addr + h->offset) & 7u))
		ok = false;
	if (!ok) {
		rdmx__tcp_keytab_unlock(kt);
		respond(c, RDMX__TCP_OP_NAK, RDMX__TCP_ST_REMOTE_ACCESS, 0);
		c->expect_psn++;
		rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
		return;
	}
	switch (h->op) {
	case RDMX__TCP_OP_READ_REQ:
		resp = rdmx__tcp_resp_push(c);
		resp->op = RDMX__TCP_OP_READ_RESP;
		resp->psn = h->psn;
		resp->rkey = h->rkey;
		resp->serial = r->serial;
		resp->off = h->offset;
		resp->len = len;
		rdmx__tcp_keytab_unlock(kt);
		break;
	case RDMX__TCP_OP_FLUSH:
		/* earlier writes of the connection were placed (copied into
		 * the region, under this lock) before this frame was read */
		rdmx__tcp_keytab_unlock(kt);
		respond(c, RDMX__TCP_OP_ACK, 0, 0);
		break;
	default:
		word = (uint64_t *)(void *)(r->addr + h->offset);
		if (h->op == RDMX__TCP_OP_CAS) {
			old = h->op0;
			__atomic_compare_exchange_n(word, &old, h->op1, false, __ATOMIC_SEQ_CST,
			                            __ATOMIC_SEQ_CST);
		} else if (h->op == RDMX__TCP_OP_FADD) {
			old = __atomic_fetch_add(word, h->op0, __ATOMIC_SEQ_CST);
		} else {
			__atomic_store_n(word, h->op0, __ATOMIC_SEQ_CST);
		}
		rdmx__tcp_keytab_unlock(kt);
		if (h->op == RDMX__TCP_OP_AWRITE)
			respond(c, RDMX__TCP_OP_ACK, 0, 0);
		else
			respond(c, RDMX__TCP_OP_ATOMIC_RESP, 0, old);
		break;
	}
	c->expect_psn++;
}

/* End of an accepted request frame. */
static void request_end(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	struct rdmx_task *t = rx->task;

	switch (rx->h.op) {
	case RDMX__TCP_OP_SEND:
	case RDMX__TCP_OP_SEND_IMM:
	case RDMX__TCP_OP_WRITE_IMM:
	case RDMX__TCP_OP_WRITE:
		rx->task = NULL;
		c->expect_psn++;
		if (rx->nak) {
			/* receive too small, or the region went away mid-write */
			if (t)
				rdmx__tcp_cq_task(c->tc, t,
				                  rx->nak == RDMX__TCP_ST_REMOTE_OP
				                      ? RDMX_E_LOCAL_LENGTH
				                      : RDMX_E_CONN_ABORTED);
			respond(c, RDMX__TCP_OP_NAK, rx->nak, 0);
			rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
			return;
		}
		if (t)
			rdmx__tcp_cq_task(c->tc, t, 0);
		respond(c, RDMX__TCP_OP_ACK, 0, 0);
		return;
	default:
		request_oneshot(c);
		return;
	}
}

static void pop_head(struct tcp_conn *c, int status)
{
	struct rdmx_task *t = c->sq_head;

	c->sq_head = t->next;
	if (!c->sq_head)
		c->sq_tail = NULL;
	c->sq_count--;
	c->rnr_tries = 0;
	c->rnr_backoff_us = 0;
	rdmx__tcp_cq_task(c->tc, t, status);
}

/* Receiver not ready for our oldest task: wait, then go back to it. */
static void rnr_nak(struct tcp_conn *c)
{
	uint8_t retries = c->tc->ctx->props.rnr_retry_count;

	if (retries != 7 && c->rnr_tries >= retries) {
		RDMX_DBG("tcp: connection %u: receiver not ready after %u retries", c->conn->id,
		         c->rnr_tries);
		rdmx__tcp_conn_error(c, RDMX_E_RNR, RDMX__TCP_ST_RNR_EXCEEDED, false);
		return;
	}
	c->rnr_tries++;
	c->rnr_backoff_us = c->rnr_backoff_us ? c->rnr_backoff_us * 2 : TCP_RNR_MIN_US;
	if (c->rnr_backoff_us > TCP_RNR_MAX_US)
		c->rnr_backoff_us = TCP_RNR_MAX_US;
	c->rnr_wait = true;
	c->rnr_deadline = rdmx__now_ns() + (uint64_t)c->rnr_backoff_us * 1000u;
	rdmx__tcp_ctx_timer(c->tc, c->rnr_deadline);
}

void rdmx__tcp_conn_rnr_timer(struct tcp_conn *c)
{
	c->rnr_wait = false;
	rdmx__tcp_tx_rewind(c);
	rdmx__tcp_tx_flush(c);
}

static bool ack_kind(enum rdmx__op op)
{
	return op == RDMX__OP_SEND || op == RDMX__OP_SEND_IMM || op == RDMX__OP_WRITE ||
	       op == RDMX__OP_WRITE_IMM || op == RDMX__OP_ATOMIC_WRITE || op == RDMX__OP_FLUSH;
}

/* Whether a response with this psn (an ACK when `ack`) answers our oldest
 * outstanding request; a protocol error when not. */
static bool answers_head(struct tcp_conn *c, uint32_t psn, bool ack)
{
	struct rdmx_task *t = c->sq_head;
	char why[80];

	if (!t || !(t->prov_u64[1] & TCP_TASK_SENT)) {
		proto_error(c, "response with no request outstanding");
		return false;
	}
	if (psn != task_psn(t)) {
		snprintf(why, sizeof(why), "response psn %u, expected %u", psn, task_psn(t));
		proto_error(c, why);
		return false;
	}
	if (ack && !ack_kind(t->op)) {
		proto_error(c, "ack for a read or an atomic");
		return false;
	}
	return true;
}

/* The ACK a request frame carries (RDMX__TCP_F_ACK), taken as the ACK frame
 * it stands for, which would have come just before it. False when the
 * connection went to error. */
static bool carried_ack(struct tcp_conn *c)
{
	if (c->state != TC_UP)
		return true; /* drained, as that frame would be */
	if (!answers_head(c, (uint32_t)c->rx.h.op1, true))
		return false;
	pop_head(c, 0);
	return true;
}

static void response_begin(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_hdr *h = &rx->h;
	struct rdmx_task *t = c->sq_head;

	if (c->state != TC_UP) {
		rx->post = RX_POST_DROP;
		return;
	}
	if (!answers_head(c, h->psn, h->op == RDMX__TCP_OP_ACK))
		return;
	switch (h->op) {
	case RDMX__TCP_OP_ACK:
		break;
	case RDMX__TCP_OP_ATOMIC_RESP:
		if (t->op != RDMX__OP_CAS && t->op != RDMX__OP_FADD) {
			proto_error(c, "atomic response for another operation");
			return;
		}
		break;
	case RDMX__TCP_OP_READ_RESP:
		if (t->op != RDMX__OP_READ || h->len != t->len) {
			proto_error(c, "read response of the wrong length or operation");
			return;
		}
		rx->sink = TCP_SINK_CHAIN;
		rx->buf = t->local;
		rx->buf_off = 0;
		rx->task = t;
		break;
	case RDMX__TCP_OP_NAK:
		if (h->status == RDMX__TCP_ST_RNR && t->op != RDMX__OP_SEND &&
		    t->op != RDMX__OP_SEND_IMM && t->op != RDMX__OP_WRITE_IMM) {
			proto_error(c, "receiver-not-ready for an operation that takes no receive");
			return;
		}
		break;
	default:
		break;
	}
	rx->post = RX_POST_RESPONSE;
}

static void response_end(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_hdr *h = &rx->h;
	struct rdmx_task *t = c->sq_head;

	if (!t)
		return; /* flushed meanwhile (cannot happen while UP) */
	switch (h->op) {
	case RDMX__TCP_OP_ACK:
		pop_head(c, 0);
		break;
	case RDMX__TCP_OP_ATOMIC_RESP:
		memcpy(t->local->addr, &h->op0, sizeof(h->op0));
		pop_head(c, 0);
		break;
	case RDMX__TCP_OP_READ_RESP:
		rx->task = NULL; /* ctx.c sets res_len (= t->len) at delivery */
		pop_head(c, 0);
		break;
	case RDMX__TCP_OP_NAK:
		if (h->status == RDMX__TCP_ST_RNR)
			rnr_nak(c);
		else
			rdmx__tcp_conn_error(c, nak_status(h->status), 0, false);
		break;
	default:
		break;
	}
}

static void frame_end(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	uint8_t post = rx->post;

	rx->in_payload = false;
	rx->post = RX_POST_NONE;
	rx->sink = TCP_SINK_DISCARD;
	if (c->state != TC_UP && (post == RX_POST_REQUEST || post == RX_POST_NAK ||
	                          post == RX_POST_RESPONSE || post == RX_POST_MSG))
		return; /* the connection went to error while the frame came: drained
		         * (its receive or read was flushed with the other tasks) */
	switch (post) {
	case RX_POST_HANDSHAKE:
		rdmx__tcp_conn_handshake(c, &rx->h, rx->inl);
		break;
	case RX_POST_REQUEST:
		request_end(c);
		break;
	case RX_POST_NAK:
		/* refused at its start; an RNR keeps the psn for the retransmission */
		if (rx->task) {
			struct rdmx_task *t = rx->task;

			rx->task = NULL;
			rdmx__tcp_cq_task(c->tc, t, RDMX_E_CONN_ABORTED);
		}
		respond(c, RDMX__TCP_OP_NAK, rx->nak, 0);
		if (rx->nak != RDMX__TCP_ST_RNR) {
			c->expect_psn++;
			rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
		}
		break;
	case RX_POST_RESPONSE:
		response_end(c);
		break;
	case RX_POST_MSG:
		msg_end(c);
		break;
	case RX_POST_PEER_ERROR:
		RDMX_DBG("tcp: connection %u: peer moved it to error (status %u)", c->conn->id,
		         rx->h.status);
		rdmx__tcp_conn_error(c, RDMX_E_CONN_ABORTED, 0, false);
		break;
	default:
		break;
	}
}

static void frame_begin(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_hdr *h = &rx->h;
	const char *why;

	rdmx__tcp_hdr_decode(rx->hdr, &rx->h);
	rx->post = RX_POST_DROP;
	rx->nak = 0;
	rx->sink = TCP_SINK_DISCARD;
	rx->task = NULL;
	rx->left = h->len;
	rx->inl_got = 0;
	why = rdmx__tcp_hdr_check(h, TCP_MAX_MSG);
	if (why) {
		proto_error(c, why);
		return;
	}
	if (rdmx__tcp_op_is_request(h->op) || rdmx__tcp_op_is_response(h->op) ||
	    h->op == RDMX__TCP_OP_MSG || h->op == RDMX__TCP_OP_ERROR) {
		if (c->state != TC_UP && c->state != TC_ERROR) {
			proto_error(c, "data frame before the handshake finished");
			return;
		}
		c->msgs_unheard = 0;
		if (h->op == RDMX__TCP_OP_MSG) {
			msg_begin(c);
		} else if (rdmx__tcp_op_is_request(h->op)) {
			if ((h->flags & RDMX__TCP_F_ACK) && !carried_ack(c))
				return;
			request_begin(c);
		} else if (rdmx__tcp_op_is_response(h->op))
			response_begin(c);
		else if (c->state == TC_UP)
			rx->post = RX_POST_PEER_ERROR;
	} else {
		/* handshake frames: only the answer we wait for */
		if (c->state != TC_HELLO_WAIT) {
			proto_error(c, "handshake frame out of place");
			return;
		}
		rx->post = RX_POST_HANDSHAKE;
		rx->sink = TCP_SINK_INLINE;
	}
	if (c->fd < 0)
		return;
	if (rx->left)
		rx->in_payload = true;
	else
		frame_end(c);
}

/* The region of the TCP_SINK_MR sink, with the key table read-locked (the
 * caller unlocks); NULL, with the table unlocked and the rest of the payload
 * discarded and refused, when the region is gone (deregistered or reused),
 * or, at a light message's first bytes, when the message may not write
 * where it names (the connection goes to error and its stream closes: the
 * caller then touches no more of the frame, c->fd < 0). */
static const struct rdmx__tcp_region *sink_region_lock(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_region *r;

	rdmx__tcp_keytab_rdlock(&c->td->keys);
	if (!rx->serial) {
		/* a light message's first bytes: its whole target is checked
		 * under the lock their copy holds (one lock, not two) */
		r = rdmx__tcp_remote_access(c, rx->rkey, rx->mr_off, rx->left,
		                            RDMX_ACCESS_REMOTE_WRITE);
		if (r) {
			rx->serial = r->serial;
			return r;
		}
		rdmx__tcp_keytab_unlock(&c->td->keys);
		rx->sink = TCP_SINK_DISCARD;
		proto_error(c, "light message outside the memory it may write");
		return NULL;
	}
	r = rdmx__tcp_keytab_find(&c->td->keys, rx->rkey);
	if (!r || r->serial != rx->serial) {
		rdmx__tcp_keytab_unlock(&c->td->keys);
		rx->sink = TCP_SINK_DISCARD;
		rx->nak = RDMX__TCP_ST_REMOTE_ACCESS;
		return NULL;
	}
	return r;
}

/* Copies staged payload bytes to the frame's sink. */
static void sink_copy(struct tcp_conn *c, const uint8_t *p, size_t n)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_region *r;

	switch (rx->sink) {
	case TCP_SINK_CHAIN:
		while (n) {
			size_t piece;

			if (!rx->buf) { /* cannot happen: lengths were checked */
				rx->sink = TCP_SINK_DISCARD;
				return;
			}
			piece = rx->buf->len - rx->buf_off;
			if (piece > n)
				piece = n;
			memcpy((uint8_t *)rx->buf->addr + rx->buf_off, p, piece);
			rx->buf_off += piece;
			p += piece;
			n -= piece;
			if (rx->buf_off == rx->buf->len) {
				rx->buf = rx->buf->next;
				rx->buf_off = 0;
			}
		}
		return;
	case TCP_SINK_MR:
		r = sink_region_lock(c);
		if (!r)
			return;
		memcpy(r->addr + rx->mr_off, p, n);
		rdmx__tcp_keytab_unlock(&c->td->keys);
		rx->mr_off += n;
		return;
	case TCP_SINK_INLINE:
		memcpy(rx->inl + rx->inl_got, p, n);
		rx->inl_got += (uint32_t)n;
		return;
	default:
		return;
	}
}

static size_t consume(struct tcp_conn *c, const uint8_t *p, size_t n)
{
	struct tcp_rx *rx = &c->rx;
	size_t used = 0;

	while (used < n && c->fd >= 0) {
		size_t take;

		if (!rx->in_payload) {
			take = RDMX__TCP_HDR_SIZE - rx->hdr_got;
			if (take > n - used)
				take = n - used;
			memcpy(rx->hdr + rx->hdr_got, p + used, take);
			rx->hdr_got += (uint32_t)take;
			used += take;
			if (rx->hdr_got < RDMX__TCP_HDR_SIZE)
				break;
			rx->hdr_got = 0;
			frame_begin(c);
			continue;
		}
		take = rx->left < n - used ? (size_t)rx->left : n - used;
		sink_copy(c, p + used, take);
		if (c->fd < 0)
			break; /* refused at its first bytes: the stream is gone */
		used += take;
		rx->left -= take;
		if (!rx->left)
			frame_end(c);
	}
	return used;
}

/* Receives a payload piece straight into its destination. Returns what
 * recv returned; *again when the sink changed instead (nothing read). */
static ssize_t recv_direct(struct tcp_conn *c, bool *again, size_t *asked)
{
	struct tcp_rx *rx = &c->rx;
	const struct rdmx__tcp_region *r;
	size_t want;
	ssize_t n;

	*again = false;
	if (rx->sink == TCP_SINK_CHAIN) {
		while (rx->buf && rx->buf_off == rx->buf->len) {
			rx->buf = rx->buf->next;
			rx->buf_off = 0;
		}
		if (!rx->buf) {
			rx->sink = TCP_SINK_DISCARD;
			*again = true;
			return 0;
		}
		want = rx->buf->len - rx->buf_off;
		if (want > rx->left)
			want = (size_t)rx->left;
		*asked = want;
		n = recv(c->fd, (uint8_t *)rx->buf->addr + rx->buf_off, want, MSG_DONTWAIT);
		if (n > 0)
			rx->buf_off += (size_t)n;
		return n;
	}
	r = sink_region_lock(c);
	if (!r) {
		*again = true;
		return 0;
	}
	want = rx->left > (1u << 30) ? (1u << 30) : (size_t)rx->left;
	*asked = want;
	n = recv(c->fd, r->addr + rx->mr_off, want, MSG_DONTWAIT);
	rdmx__tcp_keytab_unlock(&c->td->keys);
	if (n > 0)
		rx->mr_off += (uint64_t)n;
	return n;
}

static void peer_gone(struct tcp_conn *c, int err)
{
	if (err)
		RDMX_DBG("tcp: connection %u: %s", c->conn->id, strerror(err));
	else
		RDMX_DBG("tcp: connection %u: closed by the peer", c->conn->id);
	rdmx__tcp_conn_down(c, RDMX_E_CONN_ABORTED,
	                    c->est_queued ? RDMX__CONN_EV_DISCONNECTED : RDMX__CONN_EV_FAILURE);
}

/* A record failed to open: nothing more of this stream can be trusted. */
static void seal_failed(struct tcp_conn *c, int rc)
{
	RDMX_WARN("tcp: connection %u: record %llu refused: %s: connection to error", c->conn->id,
	          (unsigned long long)c->seal->rx.seq,
	          rc == RDMX_E_AUTH   ? "authentication failed (forged, altered, replayed or "
	                                "reordered record)"
	          : rc == RDMX_E_FULL ? "record counter exhausted"
	                              : "bad record length");
	if (c->state == TC_UP) {
		rdmx__tcp_conn_error(c, RDMX_E_AUTH, 0, true);
	} else if (c->state == TC_ERROR) {
		rdmx__tcp_conn_close_fd(c);
	} else {
		rdmx__tcp_conn_down(c, RDMX_E_AUTH, RDMX__CONN_EV_FAILURE);
	}
}

/* Decrypts the first n ciphertext bytes of a record's body (in) straight
 * into the sink of the frame under way, whose header came in an earlier,
 * verified record (the grant and bounds were checked at its start). The
 * bytes stay unverified until the record's tag is: the destination is the
 * memory of an operation still in flight (undefined until it completes), and
 * a bad tag moves the connection to error before anything completes. What
 * the sink cannot take any more (region gone) is decrypted in place. Returns
 * the bytes placed, or -1 when the cipher failed. */
static ssize_t sink_decrypt(struct tcp_conn *c, uint8_t *in, size_t n)
{
	struct tcp_rx *rx = &c->rx;
	struct tcp_seal_dir *d = &c->seal->rx;
	const struct rdmx__tcp_region *r;
	size_t done = 0;

	if (rx->sink == TCP_SINK_CHAIN) {
		while (done < n && rx->buf) {
			size_t piece = rx->buf->len - rx->buf_off;

			if (piece > n - done)
				piece = n - done;
			if (rdmx__tcp_seal_open_update(d, (uint8_t *)rx->buf->addr + rx->buf_off,
			                               in + done, piece))
				return -1;
			rx->buf_off += piece;
			done += piece;
			if (rx->buf_off == rx->buf->len) {
				rx->buf = rx->buf->next;
				rx->buf_off = 0;
			}
		}
		if (done < n)
			rx->sink = TCP_SINK_DISCARD; /* cannot happen: lengths were checked */
		return (ssize_t)done;
	}
	r = sink_region_lock(c);
	if (!r)
		return 0;
	if (rdmx__tcp_seal_open_update(d, r->addr + rx->mr_off, in, n)) {
		rdmx__tcp_keytab_unlock(&c->td->keys);
		return -1;
	}
	rdmx__tcp_keytab_unlock(&c->td->keys);
	rx->mr_off += n;
	return (ssize_t)n;
}

/* Opens the complete records at the front of the buffer and hands their
 * plaintext to the frame engine. The continuation of a payload already under
 * way is decrypted straight into its sink; the rest of a record (headers, the
 * start of payloads) is decrypted in place, and no frame is acted on before
 * the record's tag is verified. False once the connection lost its socket. */
static bool open_records(struct tcp_conn *c)
{
	struct tcp_seal *s = c->seal;
	struct tcp_rx *rx = &c->rx;

	while (s->rx_len - s->rx_off >= TCP_SEAL_HDR) {
		uint8_t *rec = s->rxbuf + s->rx_off;
		uint8_t *body = rec + TCP_SEAL_HDR;
		uint32_t len = rdmx__ld32(rec);
		uint32_t size = TCP_SEAL_HDR + len + TCP_SEAL_TAG;
		size_t placed = 0;
		int rc;

		if (!len || len > TCP_SEAL_MAX) {
			seal_failed(c, RDMX_E_PROTOCOL);
			return false;
		}
		if (s->rx_len - s->rx_off < size)
			break;
		rc = rdmx__tcp_seal_open_begin(&s->rx, rec);
		if (!rc && rx->in_payload &&
		    (rx->sink == TCP_SINK_CHAIN || rx->sink == TCP_SINK_MR)) {
			size_t want = rx->left < len ? (size_t)rx->left : len;
			ssize_t got = sink_decrypt(c, body, want);

			if (c->fd < 0)
				return false; /* refused at its first bytes: the stream is gone */
			if (got < 0)
				rc = RDMX_E_AUTH;
			else
				placed = (size_t)got;
		}
		if (!rc)
			rc = rdmx__tcp_seal_open_update(&s->rx, body + placed, body + placed,
			                                len - placed);
		if (!rc)
			rc = rdmx__tcp_seal_open_final(&s->rx, body + len);
		if (rc) {
			seal_failed(c, rc);
			return false;
		}
		s->rx_off += size;
		if (placed) {
			rx->left -= placed;
			if (!rx->left)
				frame_end(c);
			if (c->fd < 0)
				return false;
		}
		consume(c, body + placed, len - placed);
		if (c->fd < 0)
			return false;
	}
	if (s->rx_off == s->rx_len) {
		s->rx_off = s->rx_len = 0;
	} else if (s->rx_off && s->rx_len + TCP_SEAL_REC > TCP_SEAL_RXBUF) {
		/* the partial record moves to the front: room for a whole one */
		memmove(s->rxbuf, s->rxbuf + s->rx_off, s->rx_len - s->rx_off);
		s->rx_len -= s->rx_off;
		s->rx_off = 0;
	}
	return true;
}

static bool frame_partial(const struct tcp_conn *c)
{
	return c->rx.hdr_got || c->rx.in_payload || (c->seal && c->seal->rx_len > c->seal->rx_off);
}

/* What a serve loop does after recv returned n: use the bytes, call recv
 * again (EINTR), or stop (the socket is empty, or the connection is gone:
 * an end of stream or an error takes it down, an end inside a record or
 * frame with a log line). */
enum recv_step { RECV_GOT, RECV_RETRY, RECV_STOP };

static enum recv_step recv_step(struct tcp_conn *c, ssize_t n)
{
	if (n > 0)
		return RECV_GOT;
	if (n == 0) {
		if (frame_partial(c))
			RDMX_WARN("tcp: connection %u: stream truncated inside a record or "
			          "frame: connection lost",
			          c->conn->id);
		peer_gone(c, 0);
		return RECV_STOP;
	}
	if (errno == EINTR)
		return RECV_RETRY;
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		peer_gone(c, errno);
	return RECV_STOP;
}

static size_t rx_serve_sealed(struct tcp_conn *c, size_t budget)
{
	struct tcp_seal *s = c->seal;
	size_t got = 0;

	while (c->fd >= 0 && got < budget) {
		size_t want = TCP_SEAL_RXBUF - s->rx_len;
		ssize_t n;

		n = recv(c->fd, s->rxbuf + s->rx_len, want, MSG_DONTWAIT);
		enum recv_step step = recv_step(c, n);
		if (step == RECV_RETRY)
			continue;
		if (step == RECV_STOP)
			break;
		got += (size_t)n;
		s->rx_len += (uint32_t)n;
		if (!open_records(c))
			break;
		if ((size_t)n < want)
			break; /* a short read emptied the socket: no EAGAIN round */
	}
	return got;
}

/* The payload under way is read straight into its destination. */
static bool goes_direct(const struct tcp_rx *rx)
{
	return rx->in_payload && rx->left >= TCP_DIRECT_MIN &&
	       (rx->sink == TCP_SINK_CHAIN || rx->sink == TCP_SINK_MR);
}

/* Makes the socket blocking with a receive timeout of TCP_WAIT_READ_US, once:
 * every other read passes MSG_DONTWAIT, every send too (tx.c). */
static bool wait_read_prepare(struct tcp_conn *c)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = TCP_WAIT_READ_US};
	int fl = fcntl(c->fd, F_GETFL);

	if (fl < 0 || setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK)) {
		RDMX_DBG("tcp: connection %u: no blocking read in waits: %s", c->conn->id,
		         strerror(errno));
		c->wait_read_off = true;
		return false;
	}
	c->wait_read_on = true;
	return true;
}

int rdmx__tcp_rx_wait(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	ssize_t n;
	int err;

	if (c->seal || !rx->stage || rx->stage_off < rx->stage_len || goes_direct(rx) ||
	    c->wait_read_off || (!c->wait_read_on && !wait_read_prepare(c)))
		return 0;
	n = recv(c->fd, rx->stage, TCP_STAGE_SIZE, 0);
	if (n > 0) {
		rx->stage_off = 0;
		rx->stage_len = (uint32_t)n;
		c->tc->wait_reads++;
		rdmx__tcp_conn_alive(c);
		return 1;
	}
	err = errno;
	if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK))
		return 0; /* the timeout */
	if (n < 0 && err == EINTR)
		return 1; /* a signal: the caller looks, then waits again */
	errno = err;
	recv_step(c, n); /* the end of the stream, or its error: as rx_serve */
	return 1;
}

size_t rdmx__tcp_rx_serve(struct tcp_conn *c, size_t budget)
{
	struct tcp_rx *rx = &c->rx;
	size_t got = 0;

	if (c->seal) {
		got = rx_serve_sealed(c, budget);
		goto done;
	}

	if (!rx->stage) {
		rx->stage = malloc(TCP_STAGE_SIZE);
		if (!rx->stage) {
			rdmx__tcp_conn_down(c, RDMX_E_NOMEM, RDMX__CONN_EV_FAILURE);
			return 0;
		}
	}
	/* the budget is checked before reading, never with staged bytes
	 * left: an armed sleeper is woken by the socket, not by the stage */
	while (c->fd >= 0) {
		bool direct, again = false;
		size_t want;
		ssize_t n;

		if (rx->stage_off < rx->stage_len) {
			size_t used =
			    consume(c, rx->stage + rx->stage_off, rx->stage_len - rx->stage_off);

			if (c->fd < 0)
				break;
			rx->stage_off += (uint32_t)used;
			if (rx->stage_off == rx->stage_len && rx->stage_len < TCP_STAGE_SIZE)
				break; /* a short read emptied the socket: no EAGAIN round */
			continue;
		}
		rx->stage_off = rx->stage_len = 0;
		if (got >= budget)
			break;
		direct = goes_direct(rx);
		if (direct) {
			n = recv_direct(c, &again, &want);
			if (again)
				continue;
		} else {
			want = TCP_STAGE_SIZE;
			n = recv(c->fd, rx->stage, TCP_STAGE_SIZE, MSG_DONTWAIT);
		}
		enum recv_step step = recv_step(c, n);
		if (step == RECV_RETRY)
			continue;
		if (step == RECV_STOP)
			break;
		got += (size_t)n;
		if (direct) {
			rx->left -= (uint64_t)n;
			if (!rx->left)
				frame_end(c);
			if ((size_t)n < want)
				break;
		} else {
			rx->stage_len = (uint32_t)n;
		}
	}
done:
	if (got)
		rdmx__tcp_conn_alive(c);
	/* answers go out after the callbacks ran (ctx_poll) or at the end of
	 * the NIC's pass: an acknowledgement can share a segment with a reply */
	if (c->fd >= 0 && rdmx__tcp_tx_pending(c))
		rdmx__tcp_conn_dirty(c);
	return got;
}
