/* RPC endpoint and client side: calls out, replies in, deadlines, cancel,
 * one-way calls, drain, and the endpoint's reaction to its channel closing.
 *
 * Exactly once: a call lives in the `calls` table from the moment it is
 * sent until one outcome takes it out — reply, deadline timer, cancel, the
 * channel closing, or the endpoint going away. Whoever removes it from the
 * table runs its callback; a reply for an id no longer there (cancelled,
 * timed out) is dropped and counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan/chan_rpc.h"
#include "rpc_priv.h"

#define RPC_FREE_CACHE 1024u

static const char *const code_names[RDMX_RPC_CODE_COUNT] = {
#define CODE_NAME(name, value) [value] = #name,
    RDMX_RPC_CODE_LIST(CODE_NAME)
#undef CODE_NAME
};

const char *rdmx_rpc_code_name(enum rdmx_rpc_code code)
{
	if ((unsigned)code >= RDMX_RPC_CODE_COUNT)
		return "UNKNOWN";
	return code_names[code];
}

uint32_t rdmx_rpc_method_id(const char *full_name)
{
	uint32_t h = 2166136261u;

	if (!full_name)
		return 0;
	for (const unsigned char *p = (const unsigned char *)full_name; *p; p++) {
		h ^= *p;
		h *= 16777619u;
	}
	return h;
}

/* ---- call objects ---- */

static struct rpc_ccall *ccall_get(struct rdmx_rpc_ep *ep)
{
	struct rpc_ccall *c = ep->free_calls;

	if (c) {
		ep->free_calls = c->next;
		ep->nfree_calls--;
		memset(c, 0, sizeof(*c));
		return c;
	}
	return calloc(1, sizeof(*c));
}

static void ccall_put(struct rdmx_rpc_ep *ep, struct rpc_ccall *c)
{
	if (ep && ep->nfree_calls < RPC_FREE_CACHE && !ep->destroy_pending) {
		c->next = ep->free_calls;
		ep->free_calls = c;
		ep->nfree_calls++;
		return;
	}
	free(c);
}

/* ---- sending ---- */

struct rpc_fill {
	struct rpc_hdr h;
	const char *msg;
	const struct rdmx_rpc_payload *body;
	const uint8_t *pre; /* request metadata (call_md.c) */
	size_t prelen;
};

static int rpc_fill_fn(void *dst, size_t len, void *arg)
{
	struct rpc_fill *f = arg;
	uint8_t *p = dst;
	size_t off = RDMX_RPC_HDR_SIZE;

	(void)len;
	rdmx__rpc_hdr_encode(&f->h, p);
	if (f->h.type == RPC_T_RESPONSE && f->h.word) {
		memcpy(p + off, f->msg, f->h.word);
		off += f->h.word;
	}
	if (f->prelen) {
		memcpy(p + off, f->pre, f->prelen);
		off += f->prelen;
	}
	if (f->body && f->body->len) {
		if (f->body->encode)
			return f->body->encode(f->body->obj, p + off, f->body->len);
		memcpy(p + off, f->body->obj, f->body->len);
	}
	return 0;
}

int rdmx__rpc_send_ctl(struct rdmx_rpc_ep *ep, enum rpc_type type, uint64_t call_id)
{
	struct rpc_fill f = {.h = {.type = (uint8_t)type, .call_id = call_id}};

	if (ep->closed)
		return RDMX_E_BAD_STATE;
	return rdmx__chan_send_ex(ep->chan, RDMX_RPC_HDR_SIZE, rpc_fill_fn, &f, NULL, NULL,
	                          RDMX__SEND_FORCE, NULL);
}

/* ---- completing calls ---- */

static const struct rdmx_rpc_md no_md;

static void call_complete_x(struct rdmx_rpc_ep *ep, struct rpc_ccall *c, enum rdmx_rpc_code code,
                            const char *message, const void *data, size_t len,
                            const struct rpc_resp_view *x)
{
	struct rdmx_rpc_result res = {.code = code,
	                              .message = message,
	                              .data = data,
	                              .len = len,
	                              .headers = x ? &x->headers : &no_md,
	                              .trailers = x ? &x->trailers : &no_md,
	                              .details = x ? x->details : NULL,
	                              .details_len = x ? x->dlen : 0,
	                              .reached = !c->unsent};
	uint64_t ns = rdmx__now_ns() - c->start_ns;

	rdmx__worker_timer_disarm(ep->worker, &c->timer);
	if (c->ic) { /* interceptors (interceptor.c): an OK reply is a message */
		if (code == RDMX_RPC_OK && !c->oneway)
			rdmx__ic_message(c->ic, false, data, len);
		rdmx__ic_done(&c->ic, code, message);
	}
	if (c->cb) {
		ep->busy++;
		c->cb(&res, c->arg);
		ep->busy--;
	}
	/* counted once its callback ran: a next call the callback issues goes
	 * out first (the histogram's work is off the round trip's path) */
	rdmx__stats_done(&ep->st[RDMX_RPC_ROLE_CLIENT], code, ns);
	if (c->ms)
		rdmx__stats_done(&c->ms->st[RDMX_RPC_ROLE_CLIENT], code, ns);
	ccall_put(ep, c);
}

static void call_complete(struct rdmx_rpc_ep *ep, struct rpc_ccall *c, enum rdmx_rpc_code code,
                          const char *message, const void *data, size_t len)
{
	call_complete_x(ep, c, code, message, data, len, NULL);
}

static void fail_all_calls(struct rdmx_rpc_ep *ep, enum rdmx_rpc_code code, const char *msg)
{
	struct rpc_ccall *list = NULL, *c;
	uint32_t pos = 0;

	/* take them all out first: callbacks may start or cancel calls */
	while ((c = rdmx__map_next(&ep->calls, &pos, NULL))) {
		if (c == ep->issuing)
			continue;
		c->next = list;
		list = c;
	}
	rdmx__map_fini(&ep->calls);
	rdmx__map_init(&ep->calls);
	while ((c = list)) {
		list = c->next;
		call_complete(ep, c, code, msg, NULL, 0);
	}
}

static void oneway_unlink(struct rdmx_rpc_ep *ep, struct rpc_ccall *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		ep->oneways = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

static void oneway_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rpc_ccall *c = arg;
	struct rdmx_rpc_ep *ep = c->ep;

	(void)chan;
	oneway_unlink(ep, c);
	ep->busy++;
	call_complete(ep, c, status ? RDMX_RPC_UNAVAILABLE : RDMX_RPC_OK,
	              status ? "one-way call not delivered" : NULL, NULL, 0);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

/* A request the channel could not deliver (larger than the peer's maximum
 * learnt after it was queued, or the channel closed): its call completes
 * now unless another outcome already took it. */
static void request_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rdmx_rpc_ep *ep = rdmx__chan_get_owner(chan);
	struct rpc_ccall *c;
	char msg[96];

	if (!status || !ep)
		return;
	c = rdmx__map_del(&ep->calls, (uint64_t)(uintptr_t)arg);
	if (!c)
		return;
	/* Posted eager requests are failed by the channel's close (which runs
	 * before their completion errors), so an eager one failing here never
	 * left the send queue. A rendezvous one may have been read. */
	c->unsent = !c->rdv;
	snprintf(msg, sizeof(msg), "request not delivered: %s", rdmx_err_name(status));
	ep->busy++;
	call_complete(ep, c,
	              status == RDMX_E_TOO_BIG ? RDMX_RPC_RESOURCE_EXHAUSTED : RDMX_RPC_UNAVAILABLE,
	              msg, NULL, 0);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

static void deadline_fired(struct rdmx__timer *t)
{
	struct rpc_ccall *c = (struct rpc_ccall *)((char *)t - offsetof(struct rpc_ccall, timer));
	struct rdmx_rpc_ep *ep = c->ep;

	if (rdmx__map_del(&ep->calls, c->id) != c)
		return;
	if (c->rejected) { /* an interceptor refused it: nothing was sent */
		ep->busy++;
		call_complete(ep, c, c->rejected, c->reject_msg, NULL, 0);
		ep->busy--;
		rdmx__rpc_check_drained(ep);
		rdmx__rpc_release(ep);
		return;
	}
	rdmx__rpc_send_ctl(ep, RPC_T_CANCEL, c->id); /* the server may stop working */
	ep->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	ep->busy++;
	call_complete(ep, c, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded", NULL, 0);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

/* ---- the channel's callbacks ---- */

void rdmx__rpc_on_response(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const uint8_t *msg,
                           size_t len)
{
	struct rpc_ccall *c = rdmx__map_del(&ep->calls, h->call_id);
	char text[RDMX_RPC_MAX_STATUS_MESSAGE + 1];
	const uint8_t *body = msg + RDMX_RPC_HDR_SIZE + h->word;
	size_t blen = len - RDMX_RPC_HDR_SIZE - h->word;
	struct rpc_resp_view x;
	const char *why = NULL;
	size_t used = 0;

	if (h->flags & RPC_F_MD) {
		memset(&x, 0, sizeof(x));
		if (rdmx__resp_ext_decode(body, blen, &x, &used, &why)) {
			rdmx_rpc_md_fini(&x.headers);
			rdmx_rpc_md_fini(&x.trailers);
			if (c)
				rdmx__map_put(&ep->calls, c->id, c); /* the close fails it */
			rdmx__chan_fail(ep->chan, why ? RDMX_E_PROTOCOL : RDMX_E_NOMEM,
			                why ? why : "no memory for response metadata");
			return;
		}
		body += used;
		blen -= used;
	}
	if (!c) {
		/* cancelled or timed out before the reply: dropped */
		ep->st[RDMX_RPC_ROLE_CLIENT].late_replies++;
		if (h->flags & RPC_F_MD) {
			rdmx_rpc_md_fini(&x.headers);
			rdmx_rpc_md_fini(&x.trailers);
		}
		return;
	}
	if (h->word) {
		memcpy(text, msg + RDMX_RPC_HDR_SIZE, h->word);
		text[h->word] = '\0';
	}
	ep->st[RDMX_RPC_ROLE_CLIENT].bytes_received += blen;
	if (c->ms)
		c->ms->st[RDMX_RPC_ROLE_CLIENT].bytes_received += blen;
	if (!(h->flags & RPC_F_MD)) {
		call_complete(ep, c, (enum rdmx_rpc_code)h->code, h->word ? text : NULL,
		              blen ? body : NULL, blen);
		return;
	}
	if (x.headers.bytes > ep->streams.max_md || x.trailers.bytes > ep->streams.max_md)
		call_complete(ep, c, RDMX_RPC_RESOURCE_EXHAUSTED,
		              "response metadata over the metadata limit", NULL, 0);
	else
		call_complete_x(ep, c, (enum rdmx_rpc_code)h->code, h->word ? text : NULL,
		                blen ? body : NULL, blen, &x);
	rdmx_rpc_md_fini(&x.headers);
	rdmx_rpc_md_fini(&x.trailers);
}

static void on_msg(struct rdmx_chan *chan, const void *data, size_t len, void *arg)
{
	struct rdmx_rpc_ep *ep = arg;
	const char *why = NULL;
	struct rpc_hdr h;

	if (rdmx__rpc_hdr_decode(data, len, &h, &why)) {
		rdmx__chan_fail(chan, RDMX_E_PROTOCOL, why);
		return;
	}
	ep->busy++;
	switch (h.type) {
	case RPC_T_REQUEST:
		rdmx__rpc_on_request(ep, &h, (const uint8_t *)data + RDMX_RPC_HDR_SIZE,
		                     len - RDMX_RPC_HDR_SIZE);
		break;
	case RPC_T_RESPONSE:
		rdmx__rpc_on_response(ep, &h, data, len);
		break;
	case RPC_T_BATCH:
		rdmx__rpc_batch_on_frame(ep, &h, data, len);
		break;
	case RPC_T_CANCEL:
		rdmx__rpc_on_cancel(ep, h.call_id);
		break;
	case RPC_T_GOAWAY:
		ep->peer_goaway = true;
		/* the draining peer waits for our acks: give them promptly */
		rdmx__chan_set_eager_credit(ep->chan, true);
		break;
	default: /* the stream frames (stream.c) */
		rdmx__rpc_stream_on_frame(ep, &h, data, len);
		break;
	}
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

/* Nothing of the channel calls the endpoint any more, and the endpoint
 * touches the channel no more: the channel may be destroyed next. */
static void leave_chan(struct rdmx_rpc_ep *ep)
{
	rdmx__chan_set_owner(ep->chan, NULL);
	rdmx_chan_set_callbacks(ep->chan, NULL, NULL, NULL);
	rdmx__chan_set_idle_cb(ep->chan, NULL, NULL);
	rdmx__chan_forget_cb(ep->chan, oneway_sent);
	rdmx__chan_forget_cb(ep->chan, request_sent);
	rdmx__rpc_forget_answers(ep);
	if (ep->paused_by_us) {
		ep->paused_by_us = false;
		rdmx__chan_clear_pause(ep->chan);
	}
}

/* Last: until the held calls are detached they point into its methods. */
static void leave_server(struct rdmx_rpc_ep *ep)
{
	if (ep->server)
		atomic_fetch_sub(&ep->server->refs, 1);
	ep->server = NULL;
}

/* The part of a destroy that a close's walk over the held calls defers. */
static void leave_calls(struct rdmx_rpc_ep *ep)
{
	rdmx__rpc_detach_incoming(ep);
	leave_server(ep);
}

static void on_chan_event(struct rdmx_chan *chan, enum rdmx_chan_event ev, int status, void *arg)
{
	struct rdmx_rpc_ep *ep = arg;
	char msg[96];

	(void)chan;
	if (ev != RDMX_CHAN_EV_CLOSED || ep->closed)
		return;
	ep->closed = true;
	ep->close_status = status;
	snprintf(msg, sizeof(msg), "connection closed: %s", rdmx_err_name(status));
	rdmx__rpc_batch_drop(ep); /* those answers cannot go any more */
	ep->busy++;
	fail_all_calls(ep, RDMX_RPC_UNAVAILABLE, msg);
	rdmx__rpc_streams_fail(ep, msg);
	ep->close_walk = true;
	rdmx__rpc_cancel_incoming(ep);
	ep->close_walk = false;
	if (ep->destroy_pending) /* destroyed meanwhile: no closed callback */
		leave_calls(ep); /* what a destroy inside the walk left */
	else if (ep->closed_cb)
		ep->closed_cb(ep, status, ep->closed_arg);
	/* a draining endpoint that waited only for the peer's acknowledgements,
	 * or for answers that cannot go now, is drained now, and no later event
	 * of the channel would tell it */
	rdmx__rpc_check_drained(ep);
	ep->busy--;
	rdmx__rpc_release(ep);
}

static void on_chan_idle(struct rdmx_chan *chan, void *arg)
{
	(void)chan;
	rdmx__rpc_check_drained(arg);
}

/* ---- endpoint ---- */

int rdmx_rpc_ep_create(struct rdmx_chan *chan, struct rdmx_rpc_server *server,
                       struct rdmx_rpc_ep **epp)
{
	struct rdmx_rpc_ep *ep;
	int rc;

	if (!chan || !epp)
		return RDMX_E_INVAL;
	if (rdmx_chan_get_state(chan) == RDMX_CHAN_CLOSED)
		return RDMX_E_BAD_STATE;
	if (rdmx__chan_has_receiver(chan))
		return RDMX_E_EXISTS; /* the channel already has a receiver */
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return RDMX_E_NOMEM;
	ep->chan = chan;
	ep->worker = rdmx_chan_get_worker(chan);
	ep->server = server;
	ep->next_id = 1;
	ep->max_inflight = RDMX_RPC_DEFAULT_MAX_INFLIGHT;
	ep->max_active = RDMX_RPC_DEFAULT_MAX_INFLIGHT;
	rdmx__map_init(&ep->calls);
	rdmx__map_init(&ep->incoming);
	rdmx__map_init(&ep->mstats);
	rdmx__rpc_streams_init(ep);
	if (rdmx_chan_get_state(chan) == RDMX_CHAN_IDLE) {
		rc = rdmx_chan_start(chan);
		if (rc) {
			free(ep);
			return rc;
		}
	}
	if (server)
		atomic_fetch_add(&server->refs, 1);
	rdmx__chan_set_idle_cb(chan, on_chan_idle, ep);
	rdmx_chan_set_callbacks(chan, on_msg, on_chan_event, ep);
	rdmx__chan_set_owner(chan, ep);
	*epp = ep;
	return 0;
}

void rdmx__rpc_release(struct rdmx_rpc_ep *ep)
{
	if (!ep->destroy_pending || ep->busy)
		return;
	while (ep->free_calls) {
		struct rpc_ccall *c = ep->free_calls;

		ep->free_calls = c->next;
		free(c);
	}
	rdmx__rpc_free_scalls(ep);
	rdmx__rpc_batch_fini(ep);
	rdmx__mstats_free_all(&ep->mstats);
	rdmx__map_fini(&ep->calls);
	rdmx__map_fini(&ep->incoming);
	rdmx__rpc_streams_fini(ep);
	rdmx__ic_chain_free(&ep->chain);
	free(ep);
}

int rdmx_rpc_ep_destroy(struct rdmx_rpc_ep **epp)
{
	struct rdmx_rpc_ep *ep;

	if (!epp || !*epp)
		return 0;
	ep = *epp;
	*epp = NULL;
	if (ep->destroy_pending)
		return 0;
	ep->closed = true;
	ep->busy++;
	leave_chan(ep);
	/* inside the close's walk over the held calls (a cancel callback), the
	 * walk holds them: on_chan_event lets go of them when it ends */
	if (!ep->close_walk)
		rdmx__rpc_detach_incoming(ep);
	fail_all_calls(ep, RDMX_RPC_UNAVAILABLE, "endpoint destroyed");
	rdmx__rpc_streams_fail(ep, "endpoint destroyed");
	while (ep->oneways) {
		struct rpc_ccall *c = ep->oneways;

		oneway_unlink(ep, c);
		call_complete(ep, c, RDMX_RPC_UNAVAILABLE, "endpoint destroyed", NULL, 0);
	}
	if (!ep->close_walk)
		leave_server(ep);
	ep->destroy_pending = true;
	ep->busy--;
	rdmx__rpc_release(ep);
	return 0;
}

struct rdmx_chan *rdmx_rpc_ep_get_chan(const struct rdmx_rpc_ep *ep)
{
	return ep ? ep->chan : NULL;
}

int rdmx_rpc_ep_set_limits(struct rdmx_rpc_ep *ep, uint32_t max_inflight, uint32_t max_active)
{
	if (!ep || !max_inflight || !max_active)
		return RDMX_E_INVAL;
	ep->max_inflight = max_inflight;
	ep->max_active = max_active;
	rdmx__rpc_check_active(ep);
	return 0;
}

int rdmx_rpc_ep_set_user_data(struct rdmx_rpc_ep *ep, void *user_data)
{
	if (!ep)
		return RDMX_E_INVAL;
	ep->user_data = user_data;
	return 0;
}

void *rdmx_rpc_ep_get_user_data(const struct rdmx_rpc_ep *ep)
{
	return ep ? ep->user_data : NULL;
}

int rdmx_rpc_ep_set_closed_cb(struct rdmx_rpc_ep *ep, rdmx_rpc_closed_cb cb, void *arg)
{
	if (!ep)
		return RDMX_E_INVAL;
	ep->closed_cb = cb;
	ep->closed_arg = arg;
	return 0;
}

void rdmx__rpc_ep_close(struct rdmx_rpc_ep *ep, int status)
{
	ep->closed_cb = NULL;
	ep->closed_arg = NULL;
	rdmx__chan_fail(ep->chan, status, NULL);
}

int rdmx_rpc_ep_set_drained_cb(struct rdmx_rpc_ep *ep, rdmx_rpc_drained_cb cb, void *arg)
{
	if (!ep)
		return RDMX_E_INVAL;
	ep->drained_cb = cb;
	ep->drained_arg = arg;
	return 0;
}

uint32_t rdmx_rpc_ep_get_inflight(const struct rdmx_rpc_ep *ep)
{
	return ep ? ep->calls.len : 0;
}

uint32_t rdmx_rpc_ep_get_active(const struct rdmx_rpc_ep *ep)
{
	if (!ep)
		return 0;
	/* once closed, an answer handed to the channel can only fail */
	return ep->incoming.len + (ep->closed ? 0 : ep->resp_pending);
}

/* What it waits for is what rdmx_rpc_ep_get_active counts: once closed, no
 * answer handed to the channel, which can only fail now. */
static bool is_drained(const struct rdmx_rpc_ep *ep)
{
	if (!ep->draining)
		return false;
	if (ep->calls.len || rdmx_rpc_ep_get_active(ep) || ep->oneways ||
	    rdmx_rpc_ep_get_streams(ep))
		return false;
	return ep->closed || rdmx__chan_is_idle(ep->chan);
}

bool rdmx_rpc_ep_is_drained(const struct rdmx_rpc_ep *ep)
{
	return ep && is_drained(ep);
}

void rdmx__rpc_check_drained(struct rdmx_rpc_ep *ep)
{
	if (ep->drained_fired || ep->destroy_pending || !is_drained(ep))
		return;
	ep->drained_fired = true;
	if (ep->drained_cb) {
		ep->busy++;
		ep->drained_cb(ep, ep->drained_arg);
		ep->busy--;
	}
}

int rdmx_rpc_ep_drain(struct rdmx_rpc_ep *ep)
{
	if (!ep)
		return RDMX_E_INVAL;
	if (ep->draining)
		return 0;
	ep->draining = true;
	if (!ep->closed) {
		rdmx__chan_set_eager_credit(ep->chan, true);
		rdmx__rpc_send_ctl(ep, RPC_T_GOAWAY, 0);
	}
	rdmx__rpc_check_drained(ep);
	return 0;
}

int rdmx_rpc_ep_progress(struct rdmx_rpc_ep *ep)
{
	if (!ep)
		return RDMX_E_INVAL;
	return rdmx_chan_worker_progress(ep->worker);
}

/* ---- calls ---- */

int rdmx_rpc_call_async(struct rdmx_rpc_ep *ep, uint32_t method_id,
                        const struct rdmx_rpc_payload *req, const struct rdmx_rpc_call_opts *opts,
                        rdmx_rpc_done_cb cb, void *arg, uint64_t *call_id)
{
	return rdmx_rpc_call_async_md(ep, method_id, req, opts, NULL, cb, arg, call_id);
}

int rdmx_rpc_call_async_md(struct rdmx_rpc_ep *ep, uint32_t method_id,
                           const struct rdmx_rpc_payload *req,
                           const struct rdmx_rpc_call_opts *opts, const struct rdmx_rpc_md *headers,
                           rdmx_rpc_done_cb cb, void *arg, uint64_t *call_id)
{
	uint8_t *pre = NULL;
	size_t prelen = 0;
	struct rpc_fill f;
	struct rpc_ccall *c;
	bool oneway = opts && opts->oneway;
	size_t blen = req ? req->len : 0;
	unsigned how = 0;
	int rc;

	if (!ep || (!oneway && !cb) || (req && req->len && !req->obj))
		return RDMX_E_INVAL;
	if (ep->closed || ep->draining || ep->peer_goaway || ep->destroy_pending)
		return RDMX_E_BAD_STATE;
	if (blen > SIZE_MAX / 2 - RDMX_RPC_HDR_SIZE)
		return RDMX_E_TOO_BIG;
	if (headers && headers->bytes > ep->streams.max_md)
		return RDMX_E_TOO_BIG;
	if (!oneway && ep->calls.len >= ep->max_inflight)
		return RDMX_E_AGAIN;
	if (headers && headers->n) {
		prelen = rdmx__md_wire_size(headers);
		pre = malloc(prelen);
		if (!pre)
			return RDMX_E_NOMEM;
		rdmx__md_encode(headers, pre);
	}
	c = ccall_get(ep);
	if (!c) {
		free(pre);
		return RDMX_E_NOMEM;
	}
	c->ep = ep;
	c->id = ep->next_id++;
	c->method = method_id;
	c->cb = cb;
	c->arg = arg;
	c->oneway = oneway;
	c->timer.fn = deadline_fired;
	c->ms = rdmx__mstats_get(&ep->mstats, method_id, true);
	if (ep->chain) { /* interceptors: may annotate the headers or refuse */
		uint64_t us = opts ? opts->timeout_us : 0;
		struct rdmx_rpc_call_info info = {
		    .role = RDMX_RPC_ROLE_CLIENT,
		    .method = method_id,
		    .request_id = c->id,
		    .deadline_ns = us ? rdmx__deadline_after(rdmx__now_ns(), us) : 0,
		    .ep = ep};
		const char *why = NULL;
		enum rdmx_rpc_code code =
		    rdmx__ic_start(ep->chain, &info, headers, NULL, &why, &c->ic);

		if (code == RDMX_RPC_OK && c->ic && c->ic->own.bytes > ep->streams.max_md) {
			why = "request headers over the metadata limit";
			code = RDMX_RPC_RESOURCE_EXHAUSTED;
		}
		if (code == RDMX_RPC_OK && c->ic && c->ic->own.n) {
			free(pre);
			prelen = rdmx__md_wire_size(&c->ic->own);
			pre = malloc(prelen);
			if (pre)
				rdmx__md_encode(&c->ic->own, pre);
			else
				code = RDMX_RPC_RESOURCE_EXHAUSTED;
		}
		if (code != RDMX_RPC_OK) {
			/* completes from progress, as every outcome does */
			free(pre);
			c->rejected = code;
			c->reject_msg = why ? why : "no memory for the request headers";
			c->timer.fn = deadline_fired;
			c->start_ns = rdmx__now_ns();
			if ((rc = rdmx__map_put(&ep->calls, c->id, c)) != 0 ||
			    (rc = rdmx__worker_timer_arm(ep->worker, &c->timer, c->start_ns)) !=
			        0) {
				rdmx__map_del(&ep->calls, c->id);
				rdmx__ic_done(&c->ic, RDMX_RPC_RESOURCE_EXHAUSTED, "not started");
				ccall_put(ep, c);
				return rc;
			}
			if (call_id)
				*call_id = c->id;
			return 0;
		}
	}
	if (!oneway && (rc = rdmx__map_put(&ep->calls, c->id, c)) != 0) {
		rdmx__ic_done(&c->ic, RDMX_RPC_RESOURCE_EXHAUSTED, "not started");
		ccall_put(ep, c);
		free(pre);
		return rc;
	}
	memset(&f, 0, sizeof(f));
	f.h.type = RPC_T_REQUEST;
	f.h.flags = (uint8_t)((oneway ? RPC_F_ONEWAY : 0) | (pre ? RPC_F_MD : 0));
	f.pre = pre;
	f.prelen = prelen;
	f.h.word = method_id;
	f.h.call_id = c->id;
	f.h.timeout_us = opts ? opts->timeout_us : 0;
	f.body = req;
	c->start_ns = rdmx__now_ns();
	ep->issuing = c;
	ep->busy++; /* a close inside the send runs callbacks that may destroy ep */
	/* request_sent matters only for a request that fails */
	rc = rdmx__chan_send_ex(ep->chan, RDMX_RPC_HDR_SIZE + prelen + blen, rpc_fill_fn, &f,
	                        oneway ? (cb ? oneway_sent : NULL) : request_sent,
	                        oneway ? (void *)c : (void *)(uintptr_t)c->id,
	                        oneway ? 0 : RDMX__SEND_LIGHT, &how);
	ep->busy--;
	ep->issuing = NULL;
	free(pre);
	if (rc) {
		if (!oneway)
			rdmx__map_del(&ep->calls, c->id);
		rdmx__ic_done(&c->ic, RDMX_RPC_UNAVAILABLE, "not sent");
		ccall_put(ep, c);
		rdmx__rpc_release(ep);
		return rc;
	}
	if (c->ic)
		rdmx__ic_message(c->ic, true, req && !req->encode ? req->obj : NULL, blen);
	ep->st[RDMX_RPC_ROLE_CLIENT].calls++;
	ep->st[RDMX_RPC_ROLE_CLIENT].bytes_sent += blen;
	if (how & RDMX__SENT_QUEUED)
		ep->st[RDMX_RPC_ROLE_CLIENT].credit_stalls++;
	if (how & RDMX__SENT_RDV) {
		ep->st[RDMX_RPC_ROLE_CLIENT].rendezvous++;
		c->rdv = true;
	}
	if (c->ms) {
		struct rdmx_rpc_stats *s = &c->ms->st[RDMX_RPC_ROLE_CLIENT];

		s->calls++;
		s->bytes_sent += blen;
		if (how & RDMX__SENT_QUEUED)
			s->credit_stalls++;
		if (how & RDMX__SENT_RDV)
			s->rendezvous++;
		if (oneway)
			s->oneway++;
	}
	if (oneway) {
		ep->st[RDMX_RPC_ROLE_CLIENT].oneway++;
		if (!cb) {
			/* nothing will report it: count it done now */
			call_complete(ep, c, RDMX_RPC_OK, NULL, NULL, 0);
		} else {
			c->prev = NULL;
			c->next = ep->oneways;
			if (ep->oneways)
				ep->oneways->prev = c;
			ep->oneways = c;
		}
	} else if (opts && opts->timeout_us) {
		if (rdmx__worker_timer_arm(ep->worker, &c->timer,
		                           rdmx__deadline_after(c->start_ns, opts->timeout_us)))
			RDMX_WARN("rpc: no memory for the deadline of call %llu",
			          (unsigned long long)c->id);
	}
	if (call_id)
		*call_id = c->id;
	return 0;
}

int rdmx_rpc_cancel(struct rdmx_rpc_ep *ep, uint64_t call_id)
{
	struct rpc_ccall *c;

	if (!ep)
		return RDMX_E_INVAL;
	c = rdmx__map_del(&ep->calls, call_id);
	if (!c)
		return RDMX_E_NOT_FOUND;
	if (!ep->closed)
		rdmx__rpc_send_ctl(ep, RPC_T_CANCEL, call_id);
	ep->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	if (c->ms)
		c->ms->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	ep->busy++;
	call_complete(ep, c, RDMX_RPC_CANCELLED, "cancelled", NULL, 0);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
	return 0;
}

/* ---- the blocking call ---- */

struct sync_call {
	bool done;
	struct rdmx_rpc_reply *reply;
	int err;
};

static void sync_done(const struct rdmx_rpc_result *res, void *arg)
{
	struct sync_call *s = arg;
	struct rdmx_rpc_reply *r = s->reply;

	r->code = res->code;
	r->reached = res->reached;
	r->message = res->message ? strdup(res->message) : NULL;
	r->len = 0;
	r->data = NULL;
	if (res->len) {
		r->data = malloc(res->len);
		if (r->data) {
			memcpy(r->data, res->data, res->len);
			r->len = res->len;
		} else {
			s->err = RDMX_E_NOMEM;
		}
	}
	if (rdmx__reply_take_md(r, res))
		s->err = RDMX_E_NOMEM;
	s->done = true;
}

int rdmx_rpc_call(struct rdmx_rpc_ep *ep, uint32_t method_id, const struct rdmx_rpc_payload *req,
                  const struct rdmx_rpc_call_opts *opts, struct rdmx_rpc_reply *reply)
{
	return rdmx_rpc_call_md(ep, method_id, req, opts, NULL, reply);
}

int rdmx_rpc_call_md(struct rdmx_rpc_ep *ep, uint32_t method_id, const struct rdmx_rpc_payload *req,
                     const struct rdmx_rpc_call_opts *opts, const struct rdmx_rpc_md *headers,
                     struct rdmx_rpc_reply *reply)
{
	struct sync_call s = {.done = false, .reply = reply, .err = 0};
	struct rdmx_chan_worker *worker;
	int rc;

	if (!ep || !reply)
		return RDMX_E_INVAL;
	worker = ep->worker;
	if (rdmx__worker_depth(worker) > 0)
		return RDMX_E_BAD_STATE; /* from a callback: progress cannot nest */
	memset(reply, 0, sizeof(*reply));
	uint64_t id = 0;

	for (;;) {
		rc = rdmx_rpc_call_async_md(ep, method_id, req, opts, headers, sync_done, &s, &id);
		if (rc != RDMX_E_AGAIN)
			break;
		rc = rdmx_chan_worker_wait(worker, 100);
		if (rc < 0)
			return rc;
	}
	if (rc)
		return rc;
	while (!s.done) {
		rc = rdmx_chan_worker_wait(worker, 1000);
		if (rc < 0 && !s.done) {
			/* the engine failed under us: the call must not outlive `s` */
			if (rdmx_rpc_cancel(ep, id) == 0 || s.done)
				rdmx_rpc_reply_fini(reply);
			return rc;
		}
	}
	if (s.err) {
		rdmx_rpc_reply_fini(reply);
		return s.err;
	}
	return 0;
}

void rdmx_rpc_reply_fini(struct rdmx_rpc_reply *reply)
{
	if (!reply)
		return;
	free(reply->message);
	free(reply->data);
	rdmx__reply_md_fini(reply);
	reply->message = NULL;
	reply->data = NULL;
	reply->len = 0;
}
