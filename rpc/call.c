/* RPC client calls: calls out (asynchronous, one-way, blocking), replies
 * in, call completion, deadlines, cancel. The endpoint itself (life cycle,
 * message dispatch, drain) is rpc.c's.
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

void rdmx__rpc_call_complete(struct rdmx_rpc_ep *ep, struct rpc_ccall *c, enum rdmx_rpc_code code,
                             const char *message, const void *data, size_t len)
{
	call_complete_x(ep, c, code, message, data, len, NULL);
}

void rdmx__rpc_oneway_unlink(struct rdmx_rpc_ep *ep, struct rpc_ccall *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		ep->oneways = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

void rdmx__rpc_oneway_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rpc_ccall *c = arg;
	struct rdmx_rpc_ep *ep = c->ep;

	(void)chan;
	rdmx__rpc_oneway_unlink(ep, c);
	/* a failure comes only from the send queue (as rdmx__rpc_request_sent
	 * says): a posted write's or rendezvous descriptor's is forgotten by
	 * the close, which ends the call first (rpc.c on_chan_event). One the
	 * send called rendezvous counts as read, to be safe. */
	c->unsent = status && !c->rdv;
	ep->busy++;
	rdmx__rpc_call_complete(ep, c, status ? RDMX_RPC_UNAVAILABLE : RDMX_RPC_OK,
	                        status ? "one-way call not delivered" : NULL, NULL, 0);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

/* A request the channel could not deliver (larger than the peer's maximum
 * learnt after it was queued, or the channel closed): its call completes
 * now unless another outcome already took it. */
void rdmx__rpc_request_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rdmx_rpc_ep *ep = rdmx__chan_get_owner(chan);
	struct rpc_ccall *c;
	char msg[96];

	if (!status || !ep)
		return;
	c = rdmx__map_del(&ep->calls, (uint64_t)(uintptr_t)arg);
	if (!c)
		return;
	/* Posted requests, eager or rendezvous, are failed by the channel's
	 * close (which runs before their completion errors), so one failing
	 * here never left the send queue. One the send called rendezvous
	 * counts as read, to be safe. */
	c->unsent = !c->rdv;
	snprintf(msg, sizeof(msg), "request not delivered: %s", rdmx_err_name(status));
	ep->busy++;
	rdmx__rpc_call_complete(
	    ep, c, status == RDMX_E_TOO_BIG ? RDMX_RPC_RESOURCE_EXHAUSTED : RDMX_RPC_UNAVAILABLE,
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
		rdmx__rpc_call_complete(ep, c, c->rejected, c->reject_msg, NULL, 0);
		ep->busy--;
		rdmx__rpc_check_drained(ep);
		rdmx__rpc_release(ep);
		return;
	}
	/* a close inside the send (the engine refused the write) runs
	 * callbacks that may destroy ep: released at the end */
	ep->busy++;
	rdmx__rpc_send_ctl(ep, RPC_T_CANCEL, c->id); /* the server may stop working */
	ep->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	rdmx__rpc_call_complete(ep, c, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded", NULL, 0);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

/* ---- responses ---- */

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
		rdmx__rpc_call_complete(ep, c, (enum rdmx_rpc_code)h->code, h->word ? text : NULL,
		                        blen ? body : NULL, blen);
		return;
	}
	if (x.headers.bytes > ep->streams.max_md || x.trailers.bytes > ep->streams.max_md)
		rdmx__rpc_call_complete(ep, c, RDMX_RPC_RESOURCE_EXHAUSTED,
		                        "response metadata over the metadata limit", NULL, 0);
	else
		call_complete_x(ep, c, (enum rdmx_rpc_code)h->code, h->word ? text : NULL,
		                blen ? body : NULL, blen, &x);
	rdmx_rpc_md_fini(&x.headers);
	rdmx_rpc_md_fini(&x.trailers);
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
		const char *why = NULL;
		enum rdmx_rpc_code code =
		    rdmx__ic_client_start(ep, method_id, c->id, opts ? opts->timeout_us : 0, false,
		                          headers, &why, &c->ic);

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
	/* rdmx__rpc_request_sent matters only for a request that fails */
	rc = rdmx__chan_send_ex(
	    ep->chan, RDMX_RPC_HDR_SIZE + prelen + blen, rpc_fill_fn, &f,
	    oneway ? (cb ? rdmx__rpc_oneway_sent : NULL) : rdmx__rpc_request_sent,
	    oneway ? (void *)c : (void *)(uintptr_t)c->id, oneway ? 0 : RDMX__SEND_LIGHT, &how);
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
			rdmx__rpc_call_complete(ep, c, RDMX_RPC_OK, NULL, NULL, 0);
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
	/* a close inside the send (the engine refused the write) runs
	 * callbacks that may destroy ep: released at the end */
	ep->busy++;
	if (!ep->closed)
		rdmx__rpc_send_ctl(ep, RPC_T_CANCEL, call_id);
	ep->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	if (c->ms)
		c->ms->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	rdmx__rpc_call_complete(ep, c, RDMX_RPC_CANCELLED, "cancelled", NULL, 0);
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
