/* RPC streams, the receiving side (rdmx/rpc_stream.h): frames from the
 * peer (open, headers, messages, half-close, status, cancel, window), their
 * checks against the stream's state — a violation closes the connection —,
 * credits back to the writer and delivery to a reader that may pause. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan/chan_rpc.h"
#include "stream_priv.h"

void rdmx__stream_grant(struct rdmx_rpc_stream *s)
{
	uint64_t target = s->consumed + s->window;
	uint64_t half = s->window / 2 ? s->window / 2 : 1;
	uint64_t target_b = s->consumed_bytes + s->window_bytes;
	uint64_t half_b = s->window_bytes / 2 ? s->window_bytes / 2 : 1;
	uint64_t more = target > s->granted ? target - s->granted : 0;
	uint64_t more_b = target_b > s->granted_bytes ? target_b - s->granted_bytes : 0;

	if (more_b > UINT32_MAX)
		more_b = UINT32_MAX;

	/* one frame for both, once half a window of either is due */
	if (s->ended || s->peer_end || (more < half && more_b < half_b))
		return;
	if (rdmx__stream_send(s, RPC_T_S_WINDOW, 0, (uint32_t)more, more_b, NULL, 0, NULL) == 0) {
		s->granted += more;
		s->granted_bytes += more_b;
	}
}

/* Delivers what waits while the reader reads; then a held half-close or
 * status. */
void rdmx__stream_deliver(struct rdmx_rpc_stream *s)
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
		s->queued_bytes -= rdmx__stream_cost(q->len);
		s->consumed++;
		s->consumed_bytes += rdmx__stream_cost(q->len);
		rdmx__ic_message(s->ic, false, q->data, q->len);
		s->cbs.on_msg(s, q->data, q->len, s->arg);
		free(q);
	}
	s->delivering = false;
	if (!s->ended && !s->qhead) {
		rdmx__stream_grant(s);
		if (s->half_close_pending) {
			s->half_close_pending = false;
			if (s->cbs.on_half_close)
				s->cbs.on_half_close(s, s->arg);
		}
		if (!s->ended && s->status_pending)
			rdmx__stream_end_held(s);
	} else if (!s->ended) {
		rdmx__stream_grant(s);
	}
	rdmx__stream_drop(s);
}

static void on_s_msg(struct rdmx_rpc_stream *s, const uint8_t *data, size_t len)
{
	if (s->peer_end) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream message after its end");
		return;
	}
	if (s->received >= s->granted || s->received_bytes >= s->granted_bytes) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
		                "rpc stream message beyond its window");
		return;
	}
	s->received++;
	s->received_bytes += rdmx__stream_cost(len);
	rdmx__stream_count(s, SST_RX, RDMX_RPC_OK, len);
	if (s->cbs.on_msg && !s->paused && !s->qhead && !s->delivering) {
		s->busy++;
		s->delivering = true;
		s->consumed++;
		s->consumed_bytes += rdmx__stream_cost(len);
		rdmx__ic_message(s->ic, false, data, len);
		s->cbs.on_msg(s, data, len, s->arg);
		s->delivering = false;
		if (!s->in_batch)
			rdmx__stream_grant(s);
		rdmx__stream_drop(s);
		return;
	}
	struct qmsg *q = malloc(sizeof(*q) + len);

	if (!q) {
		RDMX_ERR("rpc: no memory for a message of stream %llu (%zu bytes)",
		         (unsigned long long)s->id, len);
		rdmx__stream_abort(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory",
		                   "out of memory");
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
	s->queued_bytes += rdmx__stream_cost(len);
}

/* A batch (word n >= 2): n messages, each u32 length + bytes, checked
 * whole before the first is delivered; credits go back after the last. */
static void on_s_msgs(struct rdmx_rpc_stream *s, uint32_t n, const uint8_t *body, size_t len)
{
	uint64_t at = s->received_bytes; /* byte credit used before each message */
	bool over_bytes = false;
	size_t off = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t l;

		if (len - off < 4 || (l = rdmx__ld32(body + off)) > len - off - 4) {
			rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream batch truncated");
			return;
		}
		/* as the writer: a message starts while any byte credit is left */
		if (at >= s->granted_bytes)
			over_bytes = true;
		at += rdmx__stream_cost(l);
		off += 4 + (size_t)l;
	}
	if (off != len) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
		                "rpc stream batch with trailing bytes");
		return;
	}
	if ((s->received + n > s->granted || over_bytes) && !s->peer_end) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
		                "rpc stream message beyond its window");
		return;
	}
	uint64_t consumed = s->consumed;

	s->in_batch = true;
	off = 0;
	for (uint32_t i = 0; i < n && !s->ended && !s->ep->closed; i++) {
		uint32_t l = rdmx__ld32(body + off);

		on_s_msg(s, body + off + 4, l);
		off += 4 + (size_t)l;
	}
	s->in_batch = false;
	/* credits only for what the reader took: a paused one grants nothing */
	if (!s->ended && !s->ep->closed && s->consumed != consumed)
		rdmx__stream_grant(s);
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
		rdmx__stream_drop(s);
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
			rdmx__stream_end(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0,
			                 NULL);
		return;
	}
	if (off + 4 + dlen + used != len) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL,
		                "rpc stream status with trailing bytes");
		return;
	}
	s->peer_end = true;
	if (s->st_trailers.bytes > s->ep->streams.max_md) {
		rdmx__stream_end(s, RDMX_RPC_RESOURCE_EXHAUSTED,
		                 "response trailers over the metadata limit", NULL, 0, NULL);
		return;
	}
	s->st_code = (enum rdmx_rpc_code)h->code;
	s->st_msg = malloc(h->word + 1u);
	s->st_details = dlen ? malloc(dlen) : NULL;
	if (!s->st_msg || (dlen && !s->st_details)) {
		rdmx__stream_end(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0, NULL);
		return;
	}
	memcpy(s->st_msg, body, h->word);
	s->st_msg[h->word] = '\0';
	if (dlen)
		memcpy(s->st_details, body + off + 4, dlen);
	s->st_details_len = dlen;
	s->status_pending = true;
	if (!s->qhead)
		rdmx__stream_end_held(s);
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
			rdmx__stream_end(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0,
			                 NULL);
		return;
	}
	if (s->headers.bytes > s->ep->streams.max_md) {
		rdmx__stream_abort(s, RDMX_RPC_RESOURCE_EXHAUSTED, NULL,
		                   "response headers over the metadata limit");
		return;
	}
	if (s->cbs.on_headers) {
		s->busy++;
		s->cbs.on_headers(s, &s->headers, s->arg);
		rdmx__stream_drop(s);
	}
}

static void on_s_window(struct rdmx_rpc_stream *s, uint32_t more, uint64_t more_bytes)
{
	uint64_t limit_b = s->send_limit_bytes + more_bytes;

	/* the bytes may lag what was sent: a message may run past the window */
	if (s->send_limit + more - s->sent > (uint64_t)UINT32_MAX ||
	    (limit_b > s->sent_bytes && limit_b - s->sent_bytes > (uint64_t)UINT32_MAX)) {
		rdmx__chan_fail(s->ep->chan, RDMX_E_PROTOCOL, "rpc stream window beyond 2^32");
		return;
	}
	s->send_limit += more;
	s->send_limit_bytes += more_bytes;
	if (s->want_writable && !s->local_end) {
		s->want_writable = false;
		if (s->cbs.on_writable) {
			s->busy++;
			s->cbs.on_writable(s, s->arg);
			rdmx__stream_drop(s);
		}
	}
}

/* ---- accepting ---- */

static void on_s_open(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *body,
                      size_t len)
{
	struct rpc_method *m;
	struct rdmx_rpc_stream *s;
	const char *why = NULL;
	enum rdmx_rpc_code code;
	char text[64];
	size_t used = 0;
	uint64_t now = rdmx__now_ns();

	if (h->call_id <= ep->streams.peer_max_id) {
		rdmx__chan_fail(ep->chan, RDMX_E_PROTOCOL, "rpc stream open reuses a stream id");
		return;
	}
	ep->streams.peer_max_id = h->call_id;
	s = rdmx__stream_new(ep, h->call_id, h->word, (enum rdmx_rpc_stream_kind)h->flags, false);
	if (!s) {
		rdmx__stream_refuse(ep, h->call_id, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	if (rdmx__md_decode(body, len, &s->headers, &used, &why) || used != len) {
		rdmx__stream_free(s);
		if (why || used != len)
			rdmx__chan_fail(ep->chan, RDMX_E_PROTOCOL,
			                why ? why : "rpc stream headers with trailing bytes");
		else
			rdmx__stream_refuse(ep, h->call_id, RDMX_RPC_RESOURCE_EXHAUSTED,
			                    "out of memory");
		return;
	}
	m = ep->server ? rdmx__map_get(&ep->server->methods, h->word) : NULL;
	s->ms = rdmx__mstats_get(&ep->mstats, h->word, m != NULL);
	s->m = m;
	if (ep->draining) {
		code = RDMX_RPC_UNAVAILABLE;
		why = "server draining";
	} else if (!m || !m->stream_handler || m->kind != s->kind) {
		snprintf(text, sizeof(text), "unknown stream method 0x%08x", h->word);
		code = RDMX_RPC_UNIMPLEMENTED;
		why = text;
	} else if (s->headers.bytes > ep->streams.max_md) {
		code = RDMX_RPC_RESOURCE_EXHAUSTED;
		why = "request headers over the metadata limit";
	} else if (ep->streams.in.len >= ep->max_active) {
		code = RDMX_RPC_RESOURCE_EXHAUSTED;
		why = "too many streams";
	} else if (rdmx__map_put(&ep->streams.in, s->id, s) == 0) {
		rdmx__stream_count(s, SST_OPEN, RDMX_RPC_OK, 0);
		rdmx__stream_arm_deadline(s, now, h->timeout_us);
		if (ep->server->chain) {
			struct rdmx_rpc_call_info info = {.role = RDMX_RPC_ROLE_SERVER,
			                                  .method = s->method,
			                                  .method_name = m->name,
			                                  .request_id = s->id,
			                                  .deadline_ns = s->deadline_ns,
			                                  .stream = true,
			                                  .headers = &s->headers,
			                                  .ep = ep};

			code =
			    rdmx__ic_start(ep->server->chain, &info, NULL, &s->ann, &why, &s->ic);
			if (code != RDMX_RPC_OK) {
				rdmx__stream_abort(s, code, why, why);
				return;
			}
		}
		s->busy++;
		m->stream_handler(s, m->arg);
		rdmx__stream_drop(s);
		return;
	} else {
		code = RDMX_RPC_RESOURCE_EXHAUSTED;
		why = "out of memory";
	}
	/* refused: counted as opened and ended with its status, before the
	 * refusal goes: a close inside its send (the engine refused the write)
	 * runs a closed callback that may destroy the server, whose method the
	 * counters read */
	rdmx__stream_count(s, SST_OPEN, RDMX_RPC_OK, 0);
	rdmx__stream_count(s, SST_END, code, 0);
	rdmx__stream_refuse(ep, h->call_id, code, why);
	rdmx__stream_free(s);
}

/* A frame for a stream that ended here (cancel, deadline or status
 * crossing the peer's frames): dropped and counted; a window update is
 * routine (credits crossing the end), any other frame is logged once per stream
 * (the last ids logged are remembered) and at most RPC_LATE_LOG_PER_S
 * lines a second per endpoint. */
#define RPC_LATE_LOG_PER_S 10u
static void late_frame(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, bool ours)
{
	struct rpc_streams *ss = &ep->streams;
	uint64_t key = h->call_id << 1 | (ours ? 1u : 0u);
	uint64_t now = rdmx__now_ns();
	const unsigned nids = sizeof(ss->late_ids) / sizeof(ss->late_ids[0]);

	ep->st[ours ? RDMX_RPC_ROLE_CLIENT : RDMX_RPC_ROLE_SERVER].stream_late_frames++;
	if (h->type == RPC_T_S_WINDOW)
		return; /* credits crossing the end: routine, counted only */
	for (unsigned i = 0; i < nids; i++)
		if (ss->late_ids[i] == key + 1u)
			return;
	ss->late_ids[ss->late_pos] = key + 1u;
	ss->late_pos = (ss->late_pos + 1u) % nids;
	if (now - ss->late_win_ns >= 1000000000ull) {
		ss->late_win_ns = now;
		ss->late_lines = 0;
	}
	if (ss->late_lines >= RPC_LATE_LOG_PER_S) {
		ss->late_quiet++;
		return;
	}
	ss->late_lines++;
	RDMX_WARN("rpc: stream frame (type %u) for stream %llu (%s), which already ended here: "
	          "dropped (%u other streams' late frames not logged)",
	          (unsigned)h->type, (unsigned long long)h->call_id,
	          ours ? "opened here" : "opened by the peer", ss->late_quiet);
	ss->late_quiet = 0;
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
		else
			late_frame(ep, h, from_acc);
		return;
	}
	s->busy++;
	switch (h->type) {
	case RPC_T_S_HEADERS:
		on_s_headers(s, body, blen);
		break;
	case RPC_T_S_MSG:
		if (h->word)
			on_s_msgs(s, h->word, body, blen);
		else
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
			rdmx__stream_end(s, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded", NULL,
			                 0, NULL);
		else
			rdmx__stream_end(s, RDMX_RPC_CANCELLED, "cancelled by the peer", NULL, 0,
			                 NULL);
		break;
	case RPC_T_S_WINDOW:
		on_s_window(s, h->word, h->timeout_us);
		break;
	}
	rdmx__stream_drop(s);
}

/* ---- the API ---- */
