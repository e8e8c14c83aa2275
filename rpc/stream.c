/* RPC streams (rdmx/rpc_stream.h): the stream object on both sides, its
 * frames (RPC_T_S_* in rpc_priv.h), per-stream credits, half-close, cancel,
 * the one deadline, and the final status.
 *
 * Exactly once: a stream lives in its endpoint's `out` (opened here) or
 * `in` (opened by the peer) table until end_stream takes it out and runs
 * on_done; every outcome goes through end_stream, which does nothing for a
 * stream already ended. The object is freed once on_done returned and no
 * callback of the stream is on the stack (`busy`).
 *
 * Credits count messages. The receiver's `granted` is what the writer may
 * have sent in total; a message beyond it is a protocol violation. Credits
 * go back as the application consumes (delivered to on_msg), so a paused
 * reader holds at most `granted - consumed` copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan/chan_rpc.h"
#include "rpc_priv.h"

struct qmsg {
	struct qmsg *next;
	size_t len;
	uint8_t data[];
};

struct rdmx_rpc_stream {
	struct rdmx_rpc_ep *ep;
	uint64_t id;
	uint32_t method;
	enum rdmx_rpc_stream_kind kind;
	bool opener;
	struct rdmx_rpc_stream_cbs cbs;
	void *arg;
	struct rdmx__timer timer;
	uint64_t deadline_ns;
	struct rdmx_rpc_md headers; /* the peer's */
	bool headers_in, headers_out;
	/* sending */
	uint64_t sent, send_limit;
	bool want_writable, local_end;
	/* receiving */
	uint64_t received, consumed, granted;
	uint32_t window;
	bool paused, delivering, peer_end, half_close_pending;
	struct qmsg *qhead, *qtail;
	uint32_t queued;
	/* opener: a status that waits for the queued messages */
	bool status_pending;
	enum rdmx_rpc_code st_code;
	char *st_msg;
	void *st_details;
	size_t st_details_len;
	struct rdmx_rpc_md st_trailers;
	/* interceptors (interceptor.c) */
	struct rpc_icall *ic;
	struct rdmx_rpc_md ann; /* acceptor: response headers they added */
	enum rdmx_rpc_code rejected;
	const char *reject_msg;
	/* life */
	bool ended;
	int busy;
	struct rdmx_rpc_stream *next; /* fail list */
};

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
}

static void stream_free(struct rdmx_rpc_stream *s)
{
	queue_free(s);
	rdmx_rpc_md_fini(&s->headers);
	rdmx_rpc_md_fini(&s->st_trailers);
	rdmx_rpc_md_fini(&s->ann);
	rdmx__ic_done(&s->ic, RDMX_RPC_CANCELLED, "never started");
	free(s->st_msg);
	free(s->st_details);
	free(s);
}

static void stream_drop(struct rdmx_rpc_stream *s)
{
	if (--s->busy == 0 && s->ended)
		stream_free(s);
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
static int send_frame(struct rdmx_rpc_ep *ep, uint8_t type, uint8_t flags, uint8_t code,
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

static uint8_t dir_flag(const struct rdmx_rpc_stream *s)
{
	return s->opener ? 0 : RPC_SF_ACC;
}

/* A status frame (also for calls refused before a stream object exists). */
static int send_status(struct rdmx_rpc_ep *ep, uint64_t id, enum rdmx_rpc_code code,
                       const char *msg, const void *details, size_t dlen,
                       const struct rdmx_rpc_md *trailers)
{
	size_t mlen = msg ? strlen(msg) : 0;
	size_t n, off;
	uint8_t *buf;
	int rc;

	if (mlen > RDMX_RPC_MAX_STATUS_MESSAGE)
		mlen = RDMX_RPC_MAX_STATUS_MESSAGE;
	n = mlen + 4 + dlen + rdmx__md_wire_size(trailers);
	buf = malloc(n);
	if (!buf)
		return RDMX_E_NOMEM;
	memcpy(buf, msg ? msg : "", mlen);
	rdmx__st32(buf + mlen, (uint32_t)dlen);
	if (dlen)
		memcpy(buf + mlen + 4, details, dlen);
	off = mlen + 4 + dlen;
	rdmx__md_encode(trailers, buf + off);
	rc = send_frame(ep, RPC_T_S_STATUS, 0, (uint8_t)code, (uint32_t)mlen, id, 0, buf, n, NULL);
	free(buf);
	return rc;
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
	rc = send_frame(ep, type, flags, 0, word, id, timeout_us, buf, n, NULL);
	free(buf);
	return rc;
}

/* ---- the end ---- */

static void end_stream(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *msg,
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
	rdmx__map_del(stream_map(s), s->id);
	rdmx__worker_timer_disarm(ep->worker, &s->timer);
	queue_free(s);
	s->busy++;
	ep->busy++;
	rdmx__ic_done(&s->ic, code, st.message);
	if (s->cbs.on_done)
		s->cbs.on_done(s, &st, s->arg);
	ep->busy--;
	stream_drop(s);
}

/* The opener's held status, once nothing waits before it. */
static void end_with_held_status(struct rdmx_rpc_stream *s)
{
	s->status_pending = false;
	end_stream(s, s->st_code, s->st_msg, s->st_details, s->st_details_len, &s->st_trailers);
}

void rdmx__rpc_streams_fail(struct rdmx_rpc_ep *ep, const char *why)
{
	struct rdmx_rpc_stream *list = NULL, *s;
	struct rdmx__map *maps[2] = {&ep->streams.out, &ep->streams.in};

	for (int i = 0; i < 2; i++) {
		uint32_t pos = 0;

		while ((s = rdmx__map_next(maps[i], &pos, NULL))) {
			s->next = list;
			list = s;
			s->busy++; /* kept while the list is walked */
		}
	}
	while ((s = list)) {
		list = s->next;
		end_stream(s, RDMX_RPC_UNAVAILABLE, why, NULL, 0, NULL);
		stream_drop(s);
	}
}

void rdmx__rpc_streams_fini(struct rdmx_rpc_ep *ep)
{
	rdmx__map_fini(&ep->streams.out);
	rdmx__map_fini(&ep->streams.in);
}

/* ---- receiving ---- */

static void maybe_grant(struct rdmx_rpc_stream *s)
{
	uint64_t target = s->consumed + s->window;
	uint64_t half = s->window / 2 ? s->window / 2 : 1;

	if (s->ended || s->peer_end || target <= s->granted || target - s->granted < half)
		return;
	if (send_frame(s->ep, RPC_T_S_WINDOW, dir_flag(s), 0, (uint32_t)(target - s->granted),
	               s->id, 0, NULL, 0, NULL) == 0)
		s->granted = target;
}

/* Delivers what waits while the reader reads; then a held half-close or
 * status. */
static void deliver_queue(struct rdmx_rpc_stream *s)
{
	if (s->delivering || s->ended)
		return;
	s->busy++;
	s->delivering = true;
	while (!s->ended && !s->paused && s->qhead && s->cbs.on_msg) {
		struct qmsg *q = s->qhead;

		s->qhead = q->next;
		if (!s->qhead)
			s->qtail = NULL;
		s->queued--;
		s->consumed++;
		rdmx__ic_message(s->ic, false, q->data, q->len);
		s->cbs.on_msg(s, q->data, q->len, s->arg);
		free(q);
	}
	s->delivering = false;
	if (!s->ended && !s->qhead) {
		maybe_grant(s);
		if (s->half_close_pending) {
			s->half_close_pending = false;
			if (s->cbs.on_half_close)
				s->cbs.on_half_close(s, s->arg);
		}
		if (!s->ended && s->status_pending)
			end_with_held_status(s);
	} else if (!s->ended) {
		maybe_grant(s);
	}
	stream_drop(s);
}

static void on_s_msg(struct rdmx_rpc_stream *s, const uint8_t *data, size_t len)
{
	if (s->peer_end) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream message after its end");
		return;
	}
	if (s->received >= s->granted) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
		                "rpc stream message beyond its window");
		return;
	}
	s->received++;
	if (s->cbs.on_msg && !s->paused && !s->qhead && !s->delivering) {
		s->busy++;
		s->delivering = true;
		s->consumed++;
		rdmx__ic_message(s->ic, false, data, len);
		s->cbs.on_msg(s, data, len, s->arg);
		s->delivering = false;
		maybe_grant(s);
		stream_drop(s);
		return;
	}
	struct qmsg *q = malloc(sizeof(*q) + len);

	if (!q) {
		RDMX_ERR("rpc: no memory for a message of stream %llu (%zu bytes)",
		         (unsigned long long)s->id, len);
		if (s->opener)
			send_frame(s->ep, RPC_T_S_RST, 0, RDMX_RPC_RESOURCE_EXHAUSTED, 0, s->id, 0,
			           NULL, 0, NULL);
		else
			send_status(s->ep, s->id, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory",
			            NULL, 0, NULL);
		end_stream(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0, NULL);
		return;
	}
	q->next = NULL;
	q->len = len;
	memcpy(q->data, data, len);
	if (s->qtail)
		s->qtail->next = q;
	else
		s->qhead = q;
	s->qtail = q;
	s->queued++;
}

static void on_s_end(struct rdmx_rpc_stream *s)
{
	if (s->peer_end) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream half-closed twice");
		return;
	}
	s->peer_end = true;
	if (s->qhead) {
		s->half_close_pending = true;
		return;
	}
	if (s->cbs.on_half_close) {
		s->busy++;
		s->cbs.on_half_close(s, s->arg);
		stream_drop(s);
	}
}

static void on_s_status(struct rdmx_rpc_stream *s, const struct rpc_hdr *h, const uint8_t *body,
                        size_t len)
{
	const char *why = NULL;
	size_t dlen, used = 0, off = h->word;

	if (s->peer_end && s->status_pending) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream status twice");
		return;
	}
	if (len - off < 4 || (dlen = rdmx__ld32(body + off)) > len - off - 4 ||
	    dlen > RDMX_RPC_MAX_STATUS_DETAILS) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
		                "rpc stream status details truncated");
		return;
	}
	rdmx_rpc_md_fini(&s->st_trailers);
	if (rdmx__md_decode(body + off + 4 + dlen, len - off - 4 - dlen, &s->st_trailers, &used,
	                    &why)) {
		if (why)
			rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, why);
		else
			end_stream(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0, NULL);
		return;
	}
	if (off + 4 + dlen + used != len) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
		                "rpc stream status with trailing bytes");
		return;
	}
	s->peer_end = true;
	if (s->st_trailers.bytes > s->ep->streams.max_md) {
		end_stream(s, RDMX_RPC_RESOURCE_EXHAUSTED,
		           "response trailers over the metadata limit", NULL, 0, NULL);
		return;
	}
	s->st_code = (enum rdmx_rpc_code)h->code;
	s->st_msg = malloc(h->word + 1u);
	s->st_details = dlen ? malloc(dlen) : NULL;
	if (!s->st_msg || (dlen && !s->st_details)) {
		end_stream(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0, NULL);
		return;
	}
	memcpy(s->st_msg, body, h->word);
	s->st_msg[h->word] = '\0';
	if (dlen)
		memcpy(s->st_details, body + off + 4, dlen);
	s->st_details_len = dlen;
	s->status_pending = true;
	if (!s->qhead)
		end_with_held_status(s);
}

static void on_s_headers(struct rdmx_rpc_stream *s, const uint8_t *body, size_t len)
{
	const char *why = NULL;
	size_t used = 0;

	if (s->headers_in || s->received || s->peer_end) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream headers out of place");
		return;
	}
	s->headers_in = true;
	if (rdmx__md_decode(body, len, &s->headers, &used, &why) || used != len) {
		if (why || used != len)
			rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
			                why ? why : "rpc stream headers with trailing bytes");
		else
			end_stream(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0, NULL);
		return;
	}
	if (s->headers.bytes > s->ep->streams.max_md) {
		send_frame(s->ep, RPC_T_S_RST, 0, RDMX_RPC_RESOURCE_EXHAUSTED, 0, s->id, 0, NULL, 0,
		           NULL);
		end_stream(s, RDMX_RPC_RESOURCE_EXHAUSTED,
		           "response headers over the metadata limit", NULL, 0, NULL);
		return;
	}
	if (s->cbs.on_headers) {
		s->busy++;
		s->cbs.on_headers(s, &s->headers, s->arg);
		stream_drop(s);
	}
}

static void on_s_window(struct rdmx_rpc_stream *s, uint32_t more)
{
	if (s->send_limit + more - s->sent > (uint64_t)UINT32_MAX) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream window beyond 2^32");
		return;
	}
	s->send_limit += more;
	if (s->want_writable && !s->local_end) {
		s->want_writable = false;
		if (s->cbs.on_writable) {
			s->busy++;
			s->cbs.on_writable(s, s->arg);
			stream_drop(s);
		}
	}
}

/* ---- accepting ---- */

static void stream_deadline(struct rdmx__timer *t)
{
	struct rdmx_rpc_stream *s =
	    (struct rdmx_rpc_stream *)((char *)t - offsetof(struct rdmx_rpc_stream, timer));
	struct rdmx_rpc_ep *ep = s->ep;

	ep->busy++;
	if (s->rejected) { /* an interceptor refused it: nothing went out */
		end_stream(s, s->rejected, s->reject_msg, NULL, 0, NULL);
	} else {
		if (s->opener)
			send_frame(ep, RPC_T_S_RST, 0, RDMX_RPC_DEADLINE_EXCEEDED, 0, s->id, 0,
			           NULL, 0, NULL);
		else
			send_status(ep, s->id, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded",
			            NULL, 0, NULL);
		end_stream(s, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded", NULL, 0, NULL);
	}
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

static void arm_deadline(struct rdmx_rpc_stream *s, uint64_t start_ns, uint64_t us)
{
	if (!us)
		return;
	if (us > UINT64_MAX / 2000u)
		us = UINT64_MAX / 2000u;
	s->deadline_ns = start_ns + us * 1000u;
	s->timer.fn = stream_deadline;
	if (rdmx__worker_timer_arm(s->ep->worker, &s->timer, s->deadline_ns))
		RDMX_WARN("rpc: no memory for the deadline of stream %llu",
		          (unsigned long long)s->id);
}

static struct rdmx_rpc_stream *stream_new(struct rdmx_rpc_ep *ep, uint64_t id, uint32_t method,
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
	s->window = RDMX_RPC_STREAM_WINDOW;
	s->granted = RDMX_RPC_STREAM_WINDOW;
	s->send_limit = RDMX_RPC_STREAM_WINDOW;
	s->timer.fn = stream_deadline;
	rdmx_rpc_md_init(&s->headers);
	rdmx_rpc_md_init(&s->st_trailers);
	rdmx_rpc_md_init(&s->ann);
	return s;
}

static void on_s_open(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *body,
                      size_t len)
{
	struct rpc_method *m;
	struct rdmx_rpc_stream *s;
	const char *why = NULL;
	size_t used = 0;
	uint64_t now = rdmx__now_ns();

	if (h->call_id <= ep->streams.peer_max_id) {
		rdmx__chan_fail(ep->chan, RDMX_E_PROTOCOL, "rpc stream open reuses a stream id");
		return;
	}
	ep->streams.peer_max_id = h->call_id;
	s = stream_new(ep, h->call_id, h->word, (enum rdmx_rpc_stream_kind)h->flags, false);
	if (!s) {
		send_status(ep, h->call_id, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0,
		            NULL);
		return;
	}
	if (rdmx__md_decode(body, len, &s->headers, &used, &why) || used != len) {
		stream_free(s);
		if (why || used != len)
			rdmx__chan_fail(ep->chan, RDMX_E_PROTOCOL,
			                why ? why : "rpc stream headers with trailing bytes");
		else
			send_status(ep, h->call_id, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory",
			            NULL, 0, NULL);
		return;
	}
	m = ep->server ? rdmx__map_get(&ep->server->methods, h->word) : NULL;
	if (ep->draining) {
		send_status(ep, h->call_id, RDMX_RPC_UNAVAILABLE, "server draining", NULL, 0, NULL);
	} else if (!m || !m->stream_handler || m->kind != s->kind) {
		char text[64];

		snprintf(text, sizeof(text), "unknown stream method 0x%08x", h->word);
		send_status(ep, h->call_id, RDMX_RPC_UNIMPLEMENTED, text, NULL, 0, NULL);
	} else if (s->headers.bytes > ep->streams.max_md) {
		send_status(ep, h->call_id, RDMX_RPC_RESOURCE_EXHAUSTED,
		            "request headers over the metadata limit", NULL, 0, NULL);
	} else if (ep->streams.in.len >= ep->max_active) {
		send_status(ep, h->call_id, RDMX_RPC_RESOURCE_EXHAUSTED, "too many streams", NULL,
		            0, NULL);
	} else if (rdmx__map_put(&ep->streams.in, s->id, s) == 0) {
		arm_deadline(s, now, h->timeout_us);
		if (ep->server->chain) {
			struct rdmx_rpc_call_info info = {.role = RDMX_RPC_ROLE_SERVER,
			                                  .method = s->method,
			                                  .method_name = m->name,
			                                  .request_id = s->id,
			                                  .deadline_ns = s->deadline_ns,
			                                  .stream = true,
			                                  .headers = &s->headers,
			                                  .ep = ep};
			enum rdmx_rpc_code code =
			    rdmx__ic_start(ep->server->chain, &info, NULL, &s->ann, &why, &s->ic);

			if (code != RDMX_RPC_OK) {
				send_status(ep, s->id, code, why, NULL, 0, NULL);
				end_stream(s, code, why, NULL, 0, NULL);
				return;
			}
		}
		s->busy++;
		m->stream_handler(s, m->arg);
		stream_drop(s);
		return;
	} else {
		send_status(ep, h->call_id, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0,
		            NULL);
	}
	stream_free(s);
}

void rdmx__rpc_stream_on_frame(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *msg,
                               size_t len)
{
	const uint8_t *body = msg + RDMX_RPC_HDR_SIZE;
	size_t blen = len - RDMX_RPC_HDR_SIZE;
	bool from_acc =
	    (h->flags & RPC_SF_ACC) || h->type == RPC_T_S_HEADERS || h->type == RPC_T_S_STATUS;
	struct rdmx_rpc_stream *s;

	if (ep->closed)
		return;
	if (h->type == RPC_T_S_OPEN) {
		on_s_open(ep, h, body, blen);
		return;
	}
	s = rdmx__map_get(from_acc ? &ep->streams.out : &ep->streams.in, h->call_id);
	if (!s) {
		/* an id that existed: the stream ended here first (cancel, deadline
		 * crossing the peer's frames); one that never did: hostile */
		if (from_acc ? h->call_id >= ep->next_id : h->call_id > ep->streams.peer_max_id)
			rdmx__chan_fail(ep->chan, RDMX_E_PROTOCOL,
			                "rpc stream frame for an unknown stream id");
		return;
	}
	s->busy++;
	switch (h->type) {
	case RPC_T_S_HEADERS:
		on_s_headers(s, body, blen);
		break;
	case RPC_T_S_MSG:
		on_s_msg(s, body, blen);
		break;
	case RPC_T_S_END:
		on_s_end(s);
		break;
	case RPC_T_S_STATUS:
		on_s_status(s, h, body, blen);
		break;
	case RPC_T_S_RST:
		if (h->code == RDMX_RPC_DEADLINE_EXCEEDED)
			end_stream(s, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded", NULL, 0,
			           NULL);
		else
			end_stream(s, RDMX_RPC_CANCELLED, "cancelled by the peer", NULL, 0, NULL);
		break;
	case RPC_T_S_WINDOW:
		on_s_window(s, h->word);
		break;
	}
	stream_drop(s);
}

/* ---- the API ---- */

int rdmx_rpc_server_register_stream(struct rdmx_rpc_server *server, uint32_t method_id,
                                    const char *name, enum rdmx_rpc_stream_kind kind,
                                    rdmx_rpc_stream_handler handler, void *arg)
{
	struct rpc_method *m;
	int rc;

	if (!server || !handler || kind < RDMX_RPC_SERVER_STREAMING ||
	    kind > RDMX_RPC_BIDI_STREAMING)
		return RDMX_E_INVAL;
	if (rdmx__map_get(&server->methods, method_id))
		return RDMX_E_EXISTS;
	m = calloc(1, sizeof(*m));
	if (!m)
		return RDMX_E_NOMEM;
	m->id = method_id;
	m->stream_handler = handler;
	m->kind = kind;
	m->arg = arg;
	if (name && !(m->name = strdup(name))) {
		free(m);
		return RDMX_E_NOMEM;
	}
	rc = rdmx__map_put(&server->methods, method_id, m);
	if (rc) {
		free(m->name);
		free(m);
	}
	return rc;
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
	s = stream_new(ep, ep->next_id, method_id, kind, true);
	if (!s)
		return RDMX_E_NOMEM;
	s->cbs = *cbs;
	s->arg = arg;
	if (ep->chain) { /* interceptors: may annotate the headers or refuse */
		uint64_t us = opts ? opts->timeout_us : 0;
		struct rdmx_rpc_call_info info = {.role = RDMX_RPC_ROLE_CLIENT,
		                                  .method = method_id,
		                                  .request_id = s->id,
		                                  .deadline_ns =
		                                      us ? rdmx__now_ns() + us * 1000u : 0,
		                                  .stream = true,
		                                  .ep = ep};
		const char *why = NULL;
		enum rdmx_rpc_code code = rdmx__ic_start(ep->chain, &info, hd, NULL, &why, &s->ic);

		if (code == RDMX_RPC_OK && s->ic && s->ic->own.bytes > ep->streams.max_md) {
			why = "request headers over the metadata limit";
			code = RDMX_RPC_RESOURCE_EXHAUSTED;
		}
		if (code != RDMX_RPC_OK) {
			/* ends from progress, as every outcome does */
			s->rejected = code;
			s->reject_msg = why;
			ep->next_id++;
			if ((rc = rdmx__map_put(&ep->streams.out, s->id, s)) != 0 ||
			    (rc = rdmx__worker_timer_arm(ep->worker, &s->timer, rdmx__now_ns())) !=
			        0) {
				rdmx__map_del(&ep->streams.out, s->id);
				stream_free(s);
				return rc;
			}
			*out = s;
			return 0;
		}
		hd = &s->ic->own;
	}
	rc = send_md_frame(ep, RPC_T_S_OPEN, (uint8_t)kind, method_id, s->id,
	                   opts ? opts->timeout_us : 0, hd);
	if (rc == 0 && (rc = rdmx__map_put(&ep->streams.out, s->id, s)) != 0)
		send_frame(ep, RPC_T_S_RST, 0, RDMX_RPC_CANCELLED, 0, s->id, 0, NULL, 0, NULL);
	ep->next_id++;
	if (rc) {
		stream_free(s);
		return rc;
	}
	arm_deadline(s, rdmx__now_ns(), opts ? opts->timeout_us : 0);
	if (opts && opts->window)
		rdmx_rpc_stream_set_window(s, opts->window);
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
	stream_drop(s);
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
	if (s->sent >= 1 && ((s->opener && s->kind == RDMX_RPC_SERVER_STREAMING) ||
	                     (!s->opener && s->kind == RDMX_RPC_CLIENT_STREAMING)))
		return RDMX_E_BAD_STATE;
	if (s->sent >= s->send_limit) {
		s->want_writable = true;
		return RDMX_E_AGAIN;
	}
	if (!s->opener && !s->headers_out && s->ann.n &&
	    (rc = rdmx_rpc_stream_send_headers(s, NULL)) != 0)
		return rc;
	rc = send_frame(s->ep, RPC_T_S_MSG, dir_flag(s), 0, 0, s->id, 0, NULL, 0, msg);
	if (rc == 0) {
		s->sent++;
		if (s->ic && msg && msg->len && !msg->encode)
			rdmx__ic_message(s->ic, true, msg->obj, msg->len);
	}
	return rc;
}

int rdmx_rpc_stream_half_close(struct rdmx_rpc_stream *s)
{
	int rc;

	if (!s)
		return RDMX_E_INVAL;
	if (s->ended || s->local_end)
		return RDMX_E_BAD_STATE;
	rc = send_frame(s->ep, RPC_T_S_END, dir_flag(s), 0, 0, s->id, 0, NULL, 0, NULL);
	if (rc == 0) {
		s->local_end = true;
		s->want_writable = false;
	}
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
	if (s->ann.n) { /* the interceptors' first */
		if ((rc = rdmx_rpc_md_append(&s->ann, headers)) != 0)
			return rc;
		headers = &s->ann;
		if (headers->bytes > s->ep->streams.max_md)
			return RDMX_E_TOO_BIG;
	}
	rc = send_md_frame(s->ep, RPC_T_S_HEADERS, 0, 0, s->id, 0, headers);
	if (rc == 0)
		s->headers_out = true;
	return rc;
}

int rdmx_rpc_stream_finish(struct rdmx_rpc_stream *s, enum rdmx_rpc_code code, const char *message,
                           const void *details, size_t details_len,
                           const struct rdmx_rpc_md *trailers)
{
	struct rdmx_rpc_ep *ep;
	int rc = 0;

	if (!s || (unsigned)code >= RDMX_RPC_CODE_COUNT || (details_len && !details))
		return RDMX_E_INVAL;
	if (s->opener || s->ended)
		return RDMX_E_BAD_STATE;
	ep = s->ep;
	ep->busy++;
	s->busy++;
	if (details_len > RDMX_RPC_MAX_STATUS_DETAILS ||
	    (trailers && trailers->bytes > ep->streams.max_md)) {
		rc = RDMX_E_TOO_BIG;
	} else {
		if (!s->headers_out && s->ann.n)
			rdmx_rpc_stream_send_headers(s, NULL);
		rc = send_status(ep, s->id, code, message, details, details_len, trailers);
		if (rc == 0)
			end_stream(s, code, message, details, details_len, trailers);
	}
	if (rc == RDMX_E_TOO_BIG) {
		const char *why = "status details or trailers over the limit";

		send_status(ep, s->id, RDMX_RPC_RESOURCE_EXHAUSTED, why, NULL, 0, NULL);
		end_stream(s, RDMX_RPC_RESOURCE_EXHAUSTED, why, NULL, 0, NULL);
	} else if (rc) {
		end_stream(s, RDMX_RPC_UNAVAILABLE, "status not sent", NULL, 0, NULL);
	}
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
	if (s->opener)
		send_frame(ep, RPC_T_S_RST, 0, RDMX_RPC_CANCELLED, 0, s->id, 0, NULL, 0, NULL);
	else
		send_status(ep, s->id, RDMX_RPC_CANCELLED, "cancelled by the server", NULL, 0,
		            NULL);
	end_stream(s, RDMX_RPC_CANCELLED, "cancelled", NULL, 0, NULL);
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
	deliver_queue(s);
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
	maybe_grant(s);
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
