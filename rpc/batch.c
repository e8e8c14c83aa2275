/* Response batching: the answers a server gives while the worker is inside
 * its progress (handlers run from the delivery of a receive batch) are
 * gathered into one channel message and sent when that progress ends, so
 * 16 calls answered from one receive cost one ring write (one send on the
 * tcp provider) instead of 16.
 *
 * The first answer of a pass goes alone, at once, when the poll has no
 * other completion in hand after the one being delivered
 * (rdmx_ctx_get_completions_pending): a lone call (a ping-pong) is answered
 * without waiting for the end of the pass, and the pass's bookkeeping
 * (receive reposts, credits) comes after its send instead of before; the
 * answers given after it in the same pass are batched, and so are those of
 * calls delivered together. The engine's pass number (rdmx__worker_pass)
 * tells whether this pass's first answer went already: a lone answer arms
 * nothing. Only small answers without metadata ride in a batch (an entry is
 * at most RPC_BATCH_ENTRY_MAX bytes, a batch at most the channel's eager
 * size); anything else flushes the batch first and goes alone, so answers
 * leave in the order they were given. A batch of one goes as the plain
 * message. The flush is an engine timer due now, armed with a batch's first
 * entry: the engine runs due timers after it polled its contexts, so it
 * fires at the end of the same progress call.
 *
 * Wire (RPC_T_BATCH): header with word = call_id = N (N >= 2), then N
 * entries, each a u32 length and a whole response message. The receiver
 * checks every entry before it delivers any. */
#include <stdlib.h>
#include <string.h>

#include "chan/chan_rpc.h"
#include "rpc_priv.h"

#define RPC_BATCH_MAX_BYTES (16u << 10)

static void batch_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rdmx_rpc_ep *ep = rdmx__chan_get_owner(chan);
	uint32_t n = (uint32_t)(uintptr_t)arg;

	(void)status; /* a lost answer: the close fails the caller's call */
	if (!ep)
		return;
	ep->resp_pending = ep->resp_pending > n ? ep->resp_pending - n : 0;
	ep->busy++;
	rdmx__rpc_check_active(ep);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

static int copy_fill(void *dst, size_t len, void *arg)
{
	memcpy(dst, arg, len);
	return 0;
}

void rdmx__rpc_batch_flush(struct rdmx_rpc_ep *ep)
{
	struct rpc_batch *b = &ep->batch;
	uint32_t n = b->n;
	const uint8_t *msg;
	unsigned how = 0;
	size_t len;
	int rc;

	if (!n)
		return;
	rdmx__worker_timer_disarm(ep->worker, &b->timer);
	b->n = 0;
	if (n == 1) { /* the plain message */
		msg = b->buf + RDMX_RPC_HDR_SIZE + 4;
		len = b->len - RDMX_RPC_HDR_SIZE - 4;
	} else {
		struct rpc_hdr h = {.type = RPC_T_BATCH, .word = n, .call_id = n};

		rdmx__rpc_hdr_encode(&h, b->buf);
		msg = b->buf;
		len = b->len;
	}
	b->len = RDMX_RPC_HDR_SIZE;
	rc = rdmx__chan_send_ex(ep->chan, len, copy_fill, (void *)msg, batch_sent,
	                        (void *)(uintptr_t)n, RDMX__SEND_FORCE | RDMX__SEND_LIGHT, &how);
	if (rc == 0 && (how & RDMX__SENT_LIGHT)) /* gone: batch_sent will not run */
		ep->resp_pending = ep->resp_pending > n ? ep->resp_pending - n : 0;
	if (rc) {
		ep->resp_pending = ep->resp_pending > n ? ep->resp_pending - n : 0;
		if (rc != RDMX_E_BAD_STATE) {
			/* the callers would wait for answers that never come */
			RDMX_WARN("rpc: %u answers not sent: %s", n, rdmx_err_name(rc));
			rdmx__chan_fail(ep->chan, rc, NULL);
		}
	}
}

static void batch_due(struct rdmx__timer *t)
{
	struct rdmx_rpc_ep *ep =
	    (struct rdmx_rpc_ep *)((char *)t - offsetof(struct rdmx_rpc_ep, batch.timer));

	ep->busy++;
	rdmx__rpc_batch_flush(ep);
	rdmx__rpc_check_active(ep); /* the answers may have left at once */
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

int rdmx__rpc_batch_add(struct rdmx_rpc_ep *ep, size_t len, rdmx_chan_fill_fn fill, void *arg)
{
	struct rpc_batch *b = &ep->batch;
	size_t cap = rdmx__chan_get_eager_max(ep->chan);
	uint64_t pass;
	int rc;

	if (cap > RPC_BATCH_MAX_BYTES)
		cap = RPC_BATCH_MAX_BYTES;
	if (len > RPC_BATCH_ENTRY_MAX || RDMX_RPC_HDR_SIZE + 4 + len > cap ||
	    rdmx__worker_depth(ep->worker) <= 0 || ep->closed)
		return RDMX_E_AGAIN; /* goes alone */
	if (b->n && b->len + 4 + len > cap) {
		rdmx__rpc_batch_flush(ep);
		if (ep->closed)
			return RDMX_E_AGAIN;
	}
	if (!b->buf) {
		b->buf = malloc(RPC_BATCH_MAX_BYTES);
		if (!b->buf)
			return RDMX_E_AGAIN;
		b->len = RDMX_RPC_HDR_SIZE;
		b->timer.fn = batch_due;
	}
	pass = rdmx__worker_pass(ep->worker);
	if (!b->n && b->alone_pass != pass && !rdmx__worker_more_pending(ep->worker)) {
		/* the pass's first answer, nothing else delivered after it: at
		 * once */
		b->alone_pass = pass;
		return RDMX_E_AGAIN;
	}
	rc = fill(b->buf + b->len + 4, len, arg);
	if (rc)
		return rc > 0 ? RDMX_E_INVAL : rc;
	/* due at once (a past time: the end of this progress pass, or of the
	 * next one outside a pass), with no clock read (engine/pe.c) */
	if (!b->n && rdmx__worker_timer_arm(ep->worker, &b->timer, 1))
		return RDMX_E_AGAIN; /* no flush would come: goes alone */
	rdmx__st32(b->buf + b->len, (uint32_t)len);
	b->len += 4 + len;
	b->n++;
	ep->resp_pending++;
	return 0;
}

void rdmx__rpc_batch_drop(struct rdmx_rpc_ep *ep)
{
	struct rpc_batch *b = &ep->batch;

	if (b->buf)
		rdmx__worker_timer_disarm(ep->worker, &b->timer);
	b->alone_pass = 0;
	ep->resp_pending = ep->resp_pending > b->n ? ep->resp_pending - b->n : 0;
	b->n = 0;
	b->len = RDMX_RPC_HDR_SIZE;
}

void rdmx__rpc_batch_fini(struct rdmx_rpc_ep *ep)
{
	rdmx__rpc_batch_drop(ep);
	free(ep->batch.buf);
	ep->batch.buf = NULL;
}

void rdmx__rpc_batch_forget(struct rdmx_rpc_ep *ep)
{
	rdmx__chan_forget_cb(ep->chan, batch_sent);
}

/* Every entry is checked before any is delivered. */
static int batch_check(const struct rpc_hdr *h, const uint8_t *msg, size_t len, const char **why)
{
	size_t off = RDMX_RPC_HDR_SIZE;

	for (uint32_t i = 0; i < h->word; i++) {
		struct rpc_hdr sub;
		uint32_t l;

		if (len - off < 4) {
			*why = "rpc batch shorter than its entries";
			return RDMX_E_PROTOCOL;
		}
		l = rdmx__ld32(msg + off);
		off += 4;
		if (l > len - off) {
			*why = "rpc batch entry longer than the batch";
			return RDMX_E_PROTOCOL;
		}
		if (rdmx__rpc_hdr_decode(msg + off, l, &sub, why))
			return RDMX_E_PROTOCOL;
		if (sub.type != RPC_T_RESPONSE) {
			*why = "rpc batch entry that is not a response";
			return RDMX_E_PROTOCOL;
		}
		off += l;
	}
	if (off != len) {
		*why = "rpc batch with bytes after its entries";
		return RDMX_E_PROTOCOL;
	}
	return 0;
}

void rdmx__rpc_batch_on_frame(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *msg,
                              size_t len)
{
	const char *why = NULL;
	size_t off = RDMX_RPC_HDR_SIZE;

	if (batch_check(h, msg, len, &why)) {
		rdmx__chan_fail(ep->chan, RDMX_E_PROTOCOL, why);
		return;
	}
	for (uint32_t i = 0; i < h->word && !ep->closed && !ep->destroy_pending; i++) {
		uint32_t l = rdmx__ld32(msg + off);
		struct rpc_hdr sub;

		off += 4;
		rdmx__rpc_hdr_decode(msg + off, l, &sub, &why); /* checked above */
		rdmx__rpc_on_response(ep, &sub, msg + off, l);
		off += l;
	}
}
