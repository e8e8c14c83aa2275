/* RPC streams (rdmx/rpc_stream.h): the stream object on both sides (life cycle, frames out, the
 * API; frames in are stream_rx.c), its frames (RPC_T_S_* in rpc_priv.h), per-stream credits,
 * half-close, cancel, the one deadline, and the final status.
 *
 * Exactly once: a stream lives in its endpoint's `out` (opened here) or
 * `in` (opened by the peer) table until rdmx__stream_end takes it out and runs
 * on_done; every outcome goes through rdmx__stream_end, which does nothing for a
 * stream already ended. The object is freed once on_done returned and no
 * callback of the stream is on the stack (`busy`). The peer learns every end
 * too: a status that cannot go as given gives way to a bare one, and when no
 * frame that ends the stream (status, reset) can go, the connection closes.
 *
 * Credits count messages and bytes (length + RDMX_RPC_STREAM_MSG_COST). The
 * receiver's `granted` / `granted_bytes` are what the writer may have sent in
 * total (a message may start while any byte credit is left); a message
 * beyond them is a protocol violation. Credits go back as the application
 * consumes (delivered to on_msg), so a paused reader holds at most
 * `granted - consumed` copies and `granted_bytes - consumed_bytes` bytes
 * plus its last message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan/chan_rpc.h"
#include "stream_priv.h"

static const struct rdmx_rpc_md no_md;

void rdmx__rpc_streams_init(struct rdmx_rpc_ep *ep)
{
	rdmx__map_init(&ep->streams.out);
	rdmx__map_init(&ep->streams.in);
	ep->streams.peer_max_id = 0;
	ep->streams.max_md = RDMX_RPC_DEFAULT_MAX_MD;
}

static struct rdmx__map *stream_map(struct rdmx_rpc_stream *s)
{
	return s->opener ? &s->ep->streams.out : &s->ep->streams.in;
}

static void queue_free(struct rdmx_rpc_stream *s)
{
	while (s->qhead) {
		struct qmsg *q = s->qhead;

		s->qhead = q->next;
		free(q);
	}
	s->qtail = NULL;
	s->queued = 0;
	s->queued_bytes = 0;
}

void rdmx__stream_free(struct rdmx_rpc_stream *s)
{
	queue_free(s);
	rdmx_rpc_md_fini(&s->headers);
	rdmx_rpc_md_fini(&s->st_trailers);
	rdmx_rpc_md_fini(&s->ann);
	rdmx__ic_done(&s->ic, RDMX_RPC_CANCELLED, "never started");
	free(s->batch);
	free(s->st_msg);
	free(s->st_details);
	free(s);
}

void rdmx__stream_drop(struct rdmx_rpc_stream *s)
{
	if (--s->busy == 0 && s->ended)
		rdmx__stream_free(s);
}

/* ---- counters ---- */

static void count_one(struct rdmx_rpc_stats *st, enum rdmx__sstat ev, enum rdmx_rpc_code code,
                      size_t bytes)
{
	switch (ev) {
	case SST_OPEN:
		st->streams_opened++;
		break;
	case SST_END:
		st->streams_ended++;
		if ((unsigned)code < RDMX_RPC_CODE_COUNT)
			st->streams_by_code[code]++;
		break;
	case SST_TX:
		st->stream_msgs_sent++;
		st->stream_bytes_sent += bytes;
		break;
	case SST_RX:
		st->stream_msgs_received++;
		st->stream_bytes_received += bytes;
		break;
	}
}

void rdmx__stream_count(struct rdmx_rpc_stream *s, enum rdmx__sstat ev, enum rdmx_rpc_code code,
                        size_t bytes)
{
	enum rdmx_rpc_role role = s->opener ? RDMX_RPC_ROLE_CLIENT : RDMX_RPC_ROLE_SERVER;
	struct rdmx_rpc_stats *ms;

	count_one(&s->ep->st[role], ev, code, bytes);
	if (s->ms)
		count_one(&s->ms->st[role], ev, code, bytes);
	if (s->m && (ms = rdmx__method_stats_get(s->m)) != NULL) {
		count_one(ms, ev, code, bytes);
		rdmx__method_stats_put(ms);
	}
}

/* ---- frames out ---- */

struct sfill {
	struct rpc_hdr h;
	const uint8_t *pre;
	size_t prelen;
	const struct rdmx_rpc_payload *body;
};

static int sfill_fn(void *dst, size_t len, void *arg)
{
	struct sfill *f = arg;
	uint8_t *p = dst;

	(void)len;
	rdmx__rpc_hdr_encode(&f->h, p);
	if (f->prelen)
		memcpy(p + RDMX_RPC_HDR_SIZE, f->pre, f->prelen);
	if (f->body && f->body->len) {
		uint8_t *b = p + RDMX_RPC_HDR_SIZE + f->prelen;

		if (f->body->encode)
			return f->body->encode(f->body->obj, b, f->body->len);
		memcpy(b, f->body->obj, f->body->len);
	}
	return 0;
}

/* Stream frames are forced past the channel's queue bound: what a stream
 * may send is bounded by its peer's credits already. */
int rdmx__stream_send_frame(struct rdmx_rpc_ep *ep, uint8_t type, uint8_t flags, uint8_t code,
                            uint32_t word, uint64_t id, uint64_t timeout_us, const uint8_t *pre,
                            size_t prelen, const struct rdmx_rpc_payload *body)
{
	struct sfill f = {.h = {.type = type,
	                        .flags = flags,
	                        .code = code,
	                        .word = word,
	                        .call_id = id,
	                        .timeout_us = timeout_us},
	                  .pre = pre,
	                  .prelen = prelen,
	                  .body = body};
	size_t blen = body ? body->len : 0;
	uint64_t max = 0;

	if (ep->closed)
		return RDMX_E_BAD_STATE;
	rdmx_chan_get_max_msg_size(ep->chan, &max);
	if (blen > max || prelen > max || RDMX_RPC_HDR_SIZE + prelen + blen > max)
		return RDMX_E_TOO_BIG;
	return rdmx__chan_send_ex(ep->chan, RDMX_RPC_HDR_SIZE + prelen + blen, sfill_fn, &f, NULL,
	                          NULL, RDMX__SEND_FORCE, NULL);
}

int rdmx__stream_send(struct rdmx_rpc_stream *s, uint8_t type, uint8_t code, uint32_t word,
                      uint64_t wide, const uint8_t *pre, size_t prelen,
                      const struct rdmx_rpc_payload *body)
{
	if (rdmx__stream_silent(s))
		return 0;
	return rdmx__stream_send_frame(s->ep, type, rdmx__stream_dir_flag(s), code, word, s->id,
	                               wide, pre, prelen, body);
}

/* ---- coalescing small messages ----
 * A message written from inside a callback of the engine (a handler,
 * on_msg, on_writable, a timer: the writer is likely to write more before
 * it returns) waits in the stream's batch; the batch goes as one channel
 * message when that callback returns (a timer due at once, run at the end
 * of the same progress call), when it is full, or before any other frame of
 * the stream. A message written outside every callback goes at once, so a
 * lone message is never delayed. Credits still count every message. A batch
 * larger than the channel's eager threshold spans several ring slots' worth:
 * the channel sends it by rendezvous, one read for all its messages. */
#define BATCH_MAX_MSG 16384u   /* larger messages go alone */
#define BATCH_MAX_BYTES 65536u /* and at most this much waits */

void rdmx__stream_batch_drop(struct rdmx_rpc_stream *s)
{
	rdmx__worker_timer_disarm(s->ep->worker, &s->flush_timer);
	s->batch_len = 0;
	s->batch_n = 0;
}

int rdmx__stream_flush(struct rdmx_rpc_stream *s)
{
	struct rdmx_rpc_payload one;
	int rc;

	if (!s->batch_n)
		return 0;
	rdmx__worker_timer_disarm(s->ep->worker, &s->flush_timer);
	/* a close inside the send (the engine refused the write) ends s, and
	 * frees it when nothing else holds it: released at the end */
	s->busy++;
	if (s->batch_n == 1) {
		one = rdmx_rpc_bytes(s->batch + 4, s->batch_len - 4);
		rc = rdmx__stream_send(s, RPC_T_S_MSG, 0, 0, 0, NULL, 0, &one);
	} else {
		rc = rdmx__stream_send(s, RPC_T_S_MSG, 0, s->batch_n, 0, s->batch, s->batch_len,
		                       NULL);
	}
	s->batch_len = 0;
	s->batch_n = 0;
	rdmx__stream_drop(s);
	return rc;
}

static void flush_fired(struct rdmx__timer *t)
{
	struct rdmx_rpc_stream *s =
	    (struct rdmx_rpc_stream *)((char *)t - offsetof(struct rdmx_rpc_stream, flush_timer));
	uint64_t id = s->id; /* s may be gone after the flush */
	int rc;

	if (s->ended)
		return;
	rc = rdmx__stream_flush(s);
	if (rc && rc != RDMX_E_BAD_STATE)
		RDMX_WARN("rpc: stream %llu: batched messages not sent: %s", (unsigned long long)id,
		          rdmx_err_name(rc));
}

/* 1: batched (0 returned in *rc), 0: not batched (send it alone). */
static int batch_add(struct rdmx_rpc_stream *s, const struct rdmx_rpc_payload *msg, int *rc)
{
	size_t len = msg ? msg->len : 0;
	uint8_t *dst;

	*rc = 0;
	if (len > BATCH_MAX_MSG || rdmx__worker_depth(s->ep->worker) <= 0)
		return 0;
	if (!s->batch) {
		uint64_t max = 0;

		if (rdmx_chan_get_max_msg_size(s->ep->chan, &max) ||
		    max < BATCH_MAX_BYTES + RDMX_RPC_HDR_SIZE)
			return 0;
		s->batch_cap = BATCH_MAX_BYTES;
		s->batch = malloc(s->batch_cap);
		if (!s->batch)
			return 0;
	}
	if (s->batch_len + 4 + len > s->batch_cap && (*rc = rdmx__stream_flush(s)) != 0)
		return 1;
	dst = s->batch + s->batch_len;
	rdmx__st32(dst, (uint32_t)len);
	if (len && msg->encode)
		*rc = msg->encode(msg->obj, dst + 4, len);
	else if (len)
		memcpy(dst + 4, msg->obj, len);
	if (*rc)
		return 1;
	s->batch_len += 4 + len;
	if (s->batch_n++ == 0) {
		s->flush_timer.fn = flush_fired;
		if (rdmx__worker_timer_arm(s->ep->worker, &s->flush_timer, 0) != 0)
			*rc = rdmx__stream_flush(s); /* no timer: at once */
	}
	return 1;
}

#define STATUS_STACK_BYTES 256u /* a status this small is built on the stack */

/* A status frame with the message's first mlen bytes. A small one is
 * built on the stack: the bare statuses that stand in for others (below)
 * then need no memory of their own. */
static int send_status_n(struct rdmx_rpc_ep *ep, uint64_t id, enum rdmx_rpc_code code,
                         const char *msg, size_t mlen, const void *details, size_t dlen,
                         const struct rdmx_rpc_md *trailers)
{
	uint8_t small[STATUS_STACK_BYTES];
	size_t n = mlen + 4 + dlen + rdmx__md_wire_size(trailers);
	uint8_t *buf = n <= sizeof(small) ? small : malloc(n);
	int rc;

	if (!buf)
		return RDMX_E_NOMEM;
	memcpy(buf, msg ? msg : "", mlen);
	rdmx__st32(buf + mlen, (uint32_t)dlen);
	if (dlen)
		memcpy(buf + mlen + 4, details, dlen);
	rdmx__md_encode(trailers, buf + mlen + 4 + dlen);
	rc = rdmx__stream_send_frame(ep, RPC_T_S_STATUS, 0, (uint8_t)code, (uint32_t)mlen, id, 0,
	                             buf, n, NULL);
	if (buf != small)
		free(buf);
	return rc;
}

/* A status frame (also for calls refused before a stream object exists). */
int rdmx__stream_send_status(struct rdmx_rpc_ep *ep, uint64_t id, enum rdmx_rpc_code code,
                             const char *msg, const void *details, size_t dlen,
                             const struct rdmx_rpc_md *trailers)
{
	size_t mlen = msg ? strlen(msg) : 0;

	if (mlen > RDMX_RPC_MAX_STATUS_MESSAGE)
		mlen = RDMX_RPC_MAX_STATUS_MESSAGE;
	return send_status_n(ep, id, code, msg, mlen, details, dlen, trailers);
}

/* The least a peer can be told of a stream's end: a status without details
 * or trailers, its message cut to what the channel carries and to a stack
 * buffer (no allocation to fail). RDMX_E_TOO_BIG only when not even an
 * empty one fits. */
static int send_bare_status(struct rdmx_rpc_ep *ep, uint64_t id, enum rdmx_rpc_code code,
                            const char *msg)
{
	const size_t fixed = RDMX_RPC_HDR_SIZE + 4 + rdmx__md_wire_size(NULL);
	size_t mlen = msg ? strlen(msg) : 0;
	uint64_t max = 0;

	rdmx_chan_get_max_msg_size(ep->chan, &max);
	if (max < fixed)
		return RDMX_E_TOO_BIG;
	if (mlen > max - fixed)
		mlen = (size_t)(max - fixed);
	if (mlen > STATUS_STACK_BYTES - 4 - rdmx__md_wire_size(NULL))
		mlen = STATUS_STACK_BYTES - 4 - rdmx__md_wire_size(NULL); /* no allocation */
	return send_status_n(ep, id, code, msg, mlen, NULL, 0, NULL);
}

/* A frame that ends stream id for the peer (a status, a reset) did not go
 * (rc), and the peer's stream would wait for its deadline, or forever:
 * closing the connection tells it (its calls and streams end UNAVAILABLE),
 * as batch.c does for unary answers. Nothing when it went (0) or when the
 * endpoint or the channel closes anyway (RDMX_E_BAD_STATE). */
static void close_if_unsent(struct rdmx_rpc_ep *ep, uint64_t id, int rc)
{
	if (rc == 0 || rc == RDMX_E_BAD_STATE || ep->closed)
		return;
	RDMX_WARN("rpc: the end of stream %llu not sent (%s): closing the connection",
	          (unsigned long long)id, rdmx_err_name(rc));
	rdmx__chan_fail(ep->chan, rc, NULL);
}

void rdmx__stream_refuse(struct rdmx_rpc_ep *ep, uint64_t id, enum rdmx_rpc_code code,
                         const char *msg)
{
	close_if_unsent(ep, id, send_bare_status(ep, id, code, msg));
}

static int send_md_frame(struct rdmx_rpc_ep *ep, uint8_t type, uint8_t flags, uint32_t word,
                         uint64_t id, uint64_t timeout_us, const struct rdmx_rpc_md *md)
{
	size_t n = rdmx__md_wire_size(md);
	uint8_t *buf = malloc(n);
	int rc;

	if (!buf)
		return RDMX_E_NOMEM;
	rdmx__md_encode(md, buf);
	rc = rdmx__stream_send_frame(ep, type, flags, 0, word, id, timeout_us, buf, n, NULL);
	free(buf);
	return rc;
}

/* ---- the end ---- */

void rdmx__stream_end(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *msg,
                      const void *details, size_t dlen, const struct rdmx_rpc_md *trailers)
{
	struct rdmx_rpc_ep *ep = s->ep;
	struct rdmx_rpc_rich_status st = {.code = code,
	                                  .message = msg ? msg : "",
	                                  .details = dlen ? details : NULL,
	                                  .details_len = dlen,
	                                  .trailers = trailers ? trailers : &no_md};

	if (s->ended)
		return;
	s->ended = true;
	rdmx__stream_count(s, SST_END, code, 0);
	rdmx__map_del(stream_map(s), s->id);
	rdmx__worker_timer_disarm(ep->worker, &s->timer);
	rdmx__stream_batch_drop(s);
	queue_free(s);
	s->busy++;
	ep->busy++;
	rdmx__ic_done(&s->ic, code, st.message);
	if (s->cbs.on_done)
		s->cbs.on_done(s, &st, s->arg);
	ep->busy--;
	rdmx__stream_drop(s);
}

void rdmx__stream_abort(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *peer_msg,
                        const char *msg)
{
	struct rdmx_rpc_ep *ep = s->ep;
	uint64_t id = s->id;
	int rc;

	s->busy++; /* a send that fails in the post closes the channel, which ends s */
	s->abort_code = code;
	s->abort_msg = msg;
	if (s->opener)
		rc = rdmx__stream_send(s, RPC_T_S_RST, (uint8_t)code, 0, 0, NULL, 0, NULL);
	else
		rc = send_bare_status(ep, id, code, peer_msg);
	/* here first: on_done sees code, not the close it may take to tell the peer */
	rdmx__stream_end(s, code, msg, NULL, 0, NULL);
	rdmx__stream_drop(s);
	close_if_unsent(ep, id, rc);
}

/* The opener's held status, once nothing waits before it. */
void rdmx__stream_end_held(struct rdmx_rpc_stream *s)
{
	s->status_pending = false;
	rdmx__stream_end(s, s->st_code, s->st_msg, s->st_details, s->st_details_len,
	                 &s->st_trailers);
}

void rdmx__rpc_streams_fail(struct rdmx_rpc_ep *ep, const char *why)
{
	struct rdmx_rpc_stream *list = NULL, *s;
	struct rdmx__map *maps[2] = {&ep->streams.out, &ep->streams.in};

	for (int i = 0; i < 2; i++) {
		uint32_t pos = 0;

		while ((s = rdmx__map_next(maps[i], &pos, NULL))) {
			if (s->opening)
				continue; /* rdmx_rpc_stream_open returns the error */
			s->next = list;
			list = s;
			s->busy++; /* kept while the list is walked */
		}
	}
	while ((s = list)) {
		list = s->next;
		if (s->abort_msg) /* its abort's send closed the channel */
			rdmx__stream_end(s, s->abort_code, s->abort_msg, NULL, 0, NULL);
		else
			rdmx__stream_end(s, RDMX_RPC_UNAVAILABLE, why, NULL, 0, NULL);
		rdmx__stream_drop(s);
	}
}

void rdmx__rpc_streams_fini(struct rdmx_rpc_ep *ep)
{
	rdmx__map_fini(&ep->streams.out);
	rdmx__map_fini(&ep->streams.in);
}

/* ---- receiving ---- */

static void stream_deadline(struct rdmx__timer *t)
{
	struct rdmx_rpc_stream *s =
	    (struct rdmx_rpc_stream *)((char *)t - offsetof(struct rdmx_rpc_stream, timer));
	struct rdmx_rpc_ep *ep = s->ep;

	ep->busy++;
	if (s->rejected) { /* an interceptor refused it: nothing went out */
		rdmx__stream_end(s, s->rejected, s->reject_msg, NULL, 0, NULL);
	} else {
		rdmx__stream_abort(s, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded",
		                   "deadline exceeded");
	}
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

void rdmx__stream_arm_deadline(struct rdmx_rpc_stream *s, uint64_t start_ns, uint64_t us)
{
	if (!us)
		return;
	s->deadline_ns = rdmx__deadline_after(start_ns, us);
	s->timer.fn = stream_deadline;
	if (rdmx__worker_timer_arm(s->ep->worker, &s->timer, s->deadline_ns))
		RDMX_WARN("rpc: no memory for the deadline of stream %llu",
		          (unsigned long long)s->id);
}

struct rdmx_rpc_stream *rdmx__stream_new(struct rdmx_rpc_ep *ep, uint64_t id, uint32_t method,
                                         enum rdmx_rpc_stream_kind kind, bool opener)
{
	struct rdmx_rpc_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ep = ep;
	s->id = id;
	s->method = method;
	s->kind = kind;
	s->opener = opener;
	/* the protocol's grant at open; the reader's window follows with its
	 * first credits */
	s->window = RDMX_RPC_STREAM_MAX_WINDOW;
	s->window_bytes = RDMX_RPC_STREAM_WINDOW_BYTES;
	s->granted = RDMX_RPC_STREAM_WINDOW;
	s->granted_bytes = RDMX_RPC_STREAM_WINDOW_BYTES;
	s->send_limit = RDMX_RPC_STREAM_WINDOW;
	s->send_limit_bytes = RDMX_RPC_STREAM_WINDOW_BYTES;
	s->timer.fn = stream_deadline;
	rdmx_rpc_md_init(&s->headers);
	rdmx_rpc_md_init(&s->st_trailers);
	rdmx_rpc_md_init(&s->ann);
	return s;
}

int rdmx_rpc_server_register_stream(struct rdmx_rpc_server *server, uint32_t method_id,
                                    const char *name, enum rdmx_rpc_stream_kind kind,
                                    rdmx_rpc_stream_handler handler, void *arg)
{
	struct rpc_method tmpl = {
	    .id = method_id, .stream_handler = handler, .kind = kind, .arg = arg};

	if (!server || !handler || kind < RDMX_RPC_SERVER_STREAMING ||
	    kind > RDMX_RPC_BIDI_STREAMING)
		return RDMX_E_INVAL;
	return rdmx__rpc_server_add_method(server, &tmpl, name);
}

int rdmx_rpc_stream_open(struct rdmx_rpc_ep *ep, uint32_t method_id, enum rdmx_rpc_stream_kind kind,
                         const struct rdmx_rpc_stream_opts *opts,
                         const struct rdmx_rpc_stream_cbs *cbs, void *arg,
                         struct rdmx_rpc_stream **out)
{
	const struct rdmx_rpc_md *hd = opts ? opts->headers : NULL;
	struct rdmx_rpc_stream *s;
	int rc;

	if (!ep || !cbs || !cbs->on_done || !out || kind < RDMX_RPC_SERVER_STREAMING ||
	    kind > RDMX_RPC_BIDI_STREAMING)
		return RDMX_E_INVAL;
	if (ep->closed || ep->draining || ep->peer_goaway || ep->destroy_pending)
		return RDMX_E_BAD_STATE;
	if (ep->calls.len + ep->streams.out.len >= ep->max_inflight)
		return RDMX_E_AGAIN;
	if (hd && hd->bytes > ep->streams.max_md)
		return RDMX_E_TOO_BIG;
	s = rdmx__stream_new(ep, ep->next_id, method_id, kind, true);
	if (!s)
		return RDMX_E_NOMEM;
	s->cbs = *cbs;
	s->arg = arg;
	s->ms = rdmx__mstats_get(&ep->mstats, method_id, true);
	if (ep->chain) { /* interceptors: may annotate the headers or refuse */
		const char *why = NULL;
		enum rdmx_rpc_code code = rdmx__ic_client_start(
		    ep, method_id, s->id, opts ? opts->timeout_us : 0, true, hd, &why, &s->ic);

		if (code != RDMX_RPC_OK) {
			/* ends from progress, as every outcome does */
			s->rejected = code;
			s->reject_msg = why;
			ep->next_id++;
			if ((rc = rdmx__map_put(&ep->streams.out, s->id, s)) != 0 ||
			    (rc = rdmx__worker_timer_arm(ep->worker, &s->timer, rdmx__now_ns())) !=
			        0) {
				rdmx__map_del(&ep->streams.out, s->id);
				rdmx__stream_free(s);
				return rc;
			}
			rdmx__stream_count(s, SST_OPEN, RDMX_RPC_OK, 0);
			*out = s;
			return 0;
		}
		hd = &s->ic->own;
	}
	/* in the table before the open goes: a table without room fails the
	 * open with nothing on the wire */
	ep->next_id++;
	if ((rc = rdmx__map_put(&ep->streams.out, s->id, s)) != 0) {
		rdmx__ic_done(&s->ic, RDMX_RPC_RESOURCE_EXHAUSTED, "not started");
		rdmx__stream_free(s);
		return rc;
	}
	s->opening = true; /* a close inside the send leaves it to us (streams_fail) */
	ep->busy++;        /* that close runs callbacks that may destroy ep */
	rc = send_md_frame(ep, RPC_T_S_OPEN, (uint8_t)kind, method_id, s->id,
	                   opts ? opts->timeout_us : 0, hd);
	if (rc == 0 && opts && (opts->window || opts->window_bytes)) {
		/* the reader's window, one grant for both, still opening: a close
		 * inside its send fails the open too (the caller never had s) */
		if (opts->window)
			s->window = opts->window;
		if (opts->window_bytes)
			s->window_bytes = opts->window_bytes;
		rdmx__stream_grant(s);
	}
	if (rc == 0 && ep->closed)
		rc = RDMX_E_BAD_STATE; /* closed by the send itself: the open never counts */
	s->opening = false;
	ep->busy--;
	if (rc) {
		rdmx__map_del(&ep->streams.out, s->id);
		rdmx__ic_done(&s->ic, RDMX_RPC_UNAVAILABLE, "not sent");
		rdmx__stream_free(s);
		rdmx__rpc_release(ep);
		return rc;
	}
	rdmx__stream_count(s, SST_OPEN, RDMX_RPC_OK, 0);
	rdmx__stream_arm_deadline(s, rdmx__now_ns(), opts ? opts->timeout_us : 0);
	*out = s;
	return 0;
}

int rdmx_rpc_stream_set_callbacks(struct rdmx_rpc_stream *s, const struct rdmx_rpc_stream_cbs *cbs,
                                  void *arg)
{
	if (!s || !cbs || s->ended)
		return RDMX_E_INVAL;
	s->cbs = *cbs;
	s->arg = arg;
	return 0;
}

/* After an API call that may have ended the stream or the endpoint. */
static void api_leave(struct rdmx_rpc_ep *ep, struct rdmx_rpc_stream *s)
{
	rdmx__stream_drop(s);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

int rdmx_rpc_stream_write(struct rdmx_rpc_stream *s, const struct rdmx_rpc_payload *msg)
{
	int rc;

	if (!s || (msg && msg->len && !msg->obj))
		return RDMX_E_INVAL;
	if (s->ended || s->local_end || s->ep->closed)
		return RDMX_E_BAD_STATE;
	if (rdmx__stream_silent(s))
		return 0; /* accepted, and no message: the peer never heard of it */
	if (s->sent >= 1 && ((s->opener && s->kind == RDMX_RPC_SERVER_STREAMING) ||
	                     (!s->opener && s->kind == RDMX_RPC_CLIENT_STREAMING)))
		return RDMX_E_BAD_STATE;
	if (s->sent >= s->send_limit || s->sent_bytes >= s->send_limit_bytes) {
		uint64_t max = 0;

		/* a message that could never go is refused, not made to wait */
		if (msg && rdmx_chan_get_max_msg_size(s->ep->chan, &max) == 0 &&
		    (uint64_t)msg->len + RDMX_RPC_HDR_SIZE > max)
			return RDMX_E_TOO_BIG;
		s->want_writable = true;
		return RDMX_E_AGAIN;
	}
	if (!s->opener && !s->headers_out && s->ann.n &&
	    (rc = rdmx_rpc_stream_send_headers(s, NULL)) != 0)
		return rc;
	/* a close inside the sends (the engine refused a write) ends s, and
	 * frees it when nothing else holds it: released at the end */
	s->busy++;
	if (!batch_add(s, msg, &rc) && (rc = rdmx__stream_flush(s)) == 0)
		rc = rdmx__stream_send(s, RPC_T_S_MSG, 0, 0, 0, NULL, 0, msg);
	if (rc == 0 && !s->ended) {
		s->sent++;
		s->sent_bytes += rdmx__stream_cost(msg ? msg->len : 0);
		rdmx__stream_count(s, SST_TX, RDMX_RPC_OK, msg ? msg->len : 0);
		if (s->ic)
			rdmx__ic_message(s->ic, true, msg && !msg->encode ? msg->obj : NULL,
			                 msg ? msg->len : 0);
	}
	rdmx__stream_drop(s);
	return rc;
}

int rdmx_rpc_stream_half_close(struct rdmx_rpc_stream *s)
{
	int rc;

	if (!s)
		return RDMX_E_INVAL;
	if (s->ended || s->local_end)
		return RDMX_E_BAD_STATE;
	/* the interceptors' response headers before the end (after it the
	 * opener takes them for a protocol violation) */
	if (!s->opener && !s->headers_out && s->ann.n &&
	    (rc = rdmx_rpc_stream_send_headers(s, NULL)) != 0)
		return rc;
	s->busy++; /* as in rdmx_rpc_stream_write */
	if ((rc = rdmx__stream_flush(s)) == 0)
		rc = rdmx__stream_send(s, RPC_T_S_END, 0, 0, 0, NULL, 0, NULL);
	if (rc == 0) {
		s->local_end = true;
		s->want_writable = false;
	}
	rdmx__stream_drop(s);
	return rc;
}

int rdmx_rpc_stream_send_headers(struct rdmx_rpc_stream *s, const struct rdmx_rpc_md *headers)
{
	int rc;

	if (!s)
		return RDMX_E_INVAL;
	if (s->opener || s->ended || s->headers_out || s->sent || s->local_end)
		return RDMX_E_BAD_STATE;
	if (headers && headers->bytes > s->ep->streams.max_md)
		return RDMX_E_TOO_BIG;
	/* a close inside the send (the engine refused the write) ends s, and
	 * frees it when nothing else holds it: released at the end */
	s->busy++;
	if (s->ann.n) { /* the interceptors' first */
		size_t n0 = s->ann.n;

		if ((rc = rdmx_rpc_md_append(&s->ann, headers)) != 0) {
			rdmx__stream_drop(s);
			return rc;
		}
		rc = s->ann.bytes > s->ep->streams.max_md
		         ? RDMX_E_TOO_BIG
		         : send_md_frame(s->ep, RPC_T_S_HEADERS, 0, 0, s->id, 0, &s->ann);
		if (rc)
			rdmx__md_truncate(&s->ann, n0); /* the interceptors' alone, for a retry */
	} else {
		rc = send_md_frame(s->ep, RPC_T_S_HEADERS, 0, 0, s->id, 0, headers);
	}
	if (rc == 0)
		s->headers_out = true;
	rdmx__stream_drop(s);
	return rc;
}

/* The acceptor's status as given, after the messages batched before it. */
static bool status_over_limits(const struct rdmx_rpc_stream *s, size_t dlen,
                               const struct rdmx_rpc_md *trailers)
{
	return dlen > RDMX_RPC_MAX_STATUS_DETAILS ||
	       (trailers && trailers->bytes > s->ep->streams.max_md);
}

/* Sends the end as given: the interceptors' response headers when they
 * have not gone yet (the client must not see an OK without them), the
 * batched messages, the status. On failure (rc; a failed send leaves
 * nothing on the wire) why[] says what could not go, for the bare status
 * that takes its place. */
static int send_final(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *message,
                      const void *details, size_t dlen, const struct rdmx_rpc_md *trailers,
                      char *why, size_t why_len)
{
	int rc;

	if (status_over_limits(s, dlen, trailers)) {
		snprintf(why, why_len, "status details or trailers over the limit");
		return RDMX_E_TOO_BIG;
	}
	if (!s->headers_out && s->ann.n && (rc = rdmx_rpc_stream_send_headers(s, NULL)) != 0) {
		if (rc == RDMX_E_TOO_BIG && s->ann.bytes > s->ep->streams.max_md)
			snprintf(why, why_len, "response headers over the metadata limit");
		else if (rc == RDMX_E_TOO_BIG)
			snprintf(why, why_len,
			         "response headers larger than this connection carries");
		else
			snprintf(why, why_len, "response headers not sent: %s", rdmx_err_name(rc));
		return rc;
	}
	if ((rc = rdmx__stream_flush(s)) != 0) {
		snprintf(why, why_len, "status not sent: %s", rdmx_err_name(rc));
		return rc;
	}
	rc = rdmx__stream_send_status(s->ep, s->id, code, message, details, dlen, trailers);
	if (rc == RDMX_E_TOO_BIG)
		snprintf(why, why_len, "status larger than this connection carries");
	else if (rc)
		snprintf(why, why_len, "status not sent: %s", rdmx_err_name(rc));
	return rc;
}

/* The end could not go as given (why): the client still learns it, once. A
 * bare RESOURCE_EXHAUSTED goes in its place, else the connection closes.
 * There is no waiting for room to retry: stream frames are forced past the
 * channel's queue bound, so what fails here is memory, registration, the
 * metadata limit or the message size. */
static void finish_instead(struct rdmx_rpc_stream *s, const char *why)
{
	struct rdmx_rpc_ep *ep = s->ep;
	uint64_t id = s->id;
	int rc = send_bare_status(ep, id, RDMX_RPC_RESOURCE_EXHAUSTED, why);

	if (rc == 0) {
		rdmx__stream_end(s, RDMX_RPC_RESOURCE_EXHAUSTED, why, NULL, 0, NULL);
		return;
	}
	rdmx__stream_end(s, RDMX_RPC_UNAVAILABLE, "status not sent", NULL, 0, NULL);
	close_if_unsent(ep, id, rc);
}

int rdmx_rpc_stream_finish(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *message,
                           const void *details, size_t details_len,
                           const struct rdmx_rpc_md *trailers)
{
	struct rdmx_rpc_ep *ep;
	char why[80];
	int rc;

	if (!s || (unsigned)code >= RDMX_RPC_CODE_COUNT || (details_len && !details))
		return RDMX_E_INVAL;
	if (s->opener || s->ended)
		return RDMX_E_BAD_STATE;
	ep = s->ep;
	ep->busy++;
	s->busy++;
	rc = send_final(s, code, message, details, details_len, trailers, why, sizeof(why));
	if (rc == 0)
		rdmx__stream_end(s, code, message, details, details_len, trailers);
	else if (!s->ended) /* a send that closed the channel ended it already */
		finish_instead(s, why);
	api_leave(ep, s);
	return rc;
}

int rdmx_rpc_stream_cancel(struct rdmx_rpc_stream *s)
{
	struct rdmx_rpc_ep *ep;

	if (!s)
		return RDMX_E_INVAL;
	if (s->ended)
		return RDMX_E_BAD_STATE;
	ep = s->ep;
	ep->busy++;
	s->busy++;
	rdmx__stream_abort(s, RDMX_RPC_CANCELLED, "cancelled by the server", "cancelled");
	api_leave(ep, s);
	return 0;
}

int rdmx_rpc_stream_pause_read(struct rdmx_rpc_stream *s)
{
	if (!s)
		return RDMX_E_INVAL;
	if (s->ended)
		return RDMX_E_BAD_STATE;
	s->paused = true;
	return 0;
}

int rdmx_rpc_stream_resume_read(struct rdmx_rpc_stream *s)
{
	struct rdmx_rpc_ep *ep;

	if (!s)
		return RDMX_E_INVAL;
	if (s->ended)
		return RDMX_E_BAD_STATE;
	ep = s->ep;
	s->paused = false;
	ep->busy++;
	s->busy++;
	rdmx__stream_deliver(s);
	api_leave(ep, s);
	return 0;
}

int rdmx_rpc_stream_set_window(struct rdmx_rpc_stream *s, uint32_t window)
{
	if (!s || !window)
		return RDMX_E_INVAL;
	if (s->ended)
		return RDMX_E_BAD_STATE;
	s->window = window;
	rdmx__stream_grant(s);
	return 0;
}

int rdmx_rpc_stream_set_window_bytes(struct rdmx_rpc_stream *s, uint32_t bytes)
{
	if (!s || !bytes)
		return RDMX_E_INVAL;
	if (s->ended)
		return RDMX_E_BAD_STATE;
	s->window_bytes = bytes;
	rdmx__stream_grant(s);
	return 0;
}

const struct rdmx_rpc_md *rdmx_rpc_stream_get_headers(const struct rdmx_rpc_stream *s)
{
	return s ? &s->headers : &no_md;
}

uint64_t rdmx_rpc_stream_get_id(const struct rdmx_rpc_stream *s)
{
	return s ? s->id : 0;
}

uint32_t rdmx_rpc_stream_get_method(const struct rdmx_rpc_stream *s)
{
	return s ? s->method : 0;
}

uint64_t rdmx_rpc_stream_get_deadline(const struct rdmx_rpc_stream *s)
{
	return s ? s->deadline_ns : 0;
}

uint32_t rdmx_rpc_stream_get_queued(const struct rdmx_rpc_stream *s)
{
	return s ? s->queued : 0;
}

uint64_t rdmx_rpc_stream_get_queued_bytes(const struct rdmx_rpc_stream *s)
{
	return s ? s->queued_bytes : 0;
}

struct rdmx_rpc_ep *rdmx_rpc_stream_get_ep(const struct rdmx_rpc_stream *s)
{
	return s ? s->ep : NULL;
}

uint32_t rdmx_rpc_ep_get_streams(const struct rdmx_rpc_ep *ep)
{
	return ep ? ep->streams.out.len + ep->streams.in.len : 0;
}

int rdmx_rpc_ep_set_max_metadata(struct rdmx_rpc_ep *ep, uint32_t bytes)
{
	if (!ep || bytes < RDMX_RPC_MD_ENTRY_OVERHEAD || bytes > (1u << 20))
		return RDMX_E_INVAL;
	ep->streams.max_md = bytes;
	return 0;
}
