/* RPC server side: the handler table, incoming calls, their deadlines and
 * cancellation, and rdmx_rpc_respond.
 *
 * An incoming call object lives from its request until the application
 * answers it — even when the caller cancelled, the deadline passed, the
 * connection died or the endpoint was destroyed (then the answer is simply
 * not sent). Its cancel callback runs at most once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "chan/chan_rpc.h"
#include "rpc_priv.h"

#define SCALL_FREE_CACHE 1024u

/* ---- the handler table ---- */

int rdmx_rpc_server_create(struct rdmx_rpc_server **server)
{
	struct rdmx_rpc_server *s;

	if (!server)
		return RDMX_E_INVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return RDMX_E_NOMEM;
	rdmx__map_init(&s->methods);
	if (rdmx__rpc_builtins_add(s)) { /* health + reflection (rpc/reflection.c) */
		rdmx_rpc_server_destroy(&s);
		return RDMX_E_NOMEM;
	}
	*server = s;
	return 0;
}

int rdmx_rpc_server_destroy(struct rdmx_rpc_server **server)
{
	struct rpc_method *m;
	uint32_t pos = 0;

	if (!server || !*server)
		return 0;
	if ((*server)->refs)
		return RDMX_E_BAD_STATE; /* endpoints still use it */
	rdmx__rpc_builtins_release(*server);
	rdmx__ic_chain_free(&(*server)->chain);
	while ((m = rdmx__map_next(&(*server)->methods, &pos, NULL))) {
		rdmx__method_stats_free(m);
		free(m->name);
		free(m);
	}
	rdmx__map_fini(&(*server)->methods);
	free(*server);
	*server = NULL;
	return 0;
}

int rdmx__rpc_server_add_method(struct rdmx_rpc_server *server, const struct rpc_method *tmpl,
                                const char *name)
{
	struct rpc_method *m;
	int rc;

	if (rdmx__map_get(&server->methods, tmpl->id))
		return RDMX_E_EXISTS;
	m = calloc(1, sizeof(*m));
	if (!m)
		return RDMX_E_NOMEM;
	m->id = tmpl->id;
	m->handler = tmpl->handler;
	m->stream_handler = tmpl->stream_handler;
	m->kind = tmpl->kind;
	m->arg = tmpl->arg;
	if (name && !(m->name = strdup(name))) {
		free(m);
		return RDMX_E_NOMEM;
	}
	rc = rdmx__map_put(&server->methods, m->id, m);
	if (rc) {
		free(m->name);
		free(m);
	}
	return rc;
}

int rdmx_rpc_server_register(struct rdmx_rpc_server *server, uint32_t method_id, const char *name,
                             rdmx_rpc_handler handler, void *arg)
{
	struct rpc_method tmpl = {.id = method_id, .handler = handler, .arg = arg};

	if (!server || !handler)
		return RDMX_E_INVAL;
	return rdmx__rpc_server_add_method(server, &tmpl, name);
}

/* ---- call objects ---- */

static struct rdmx_rpc_server_call *scall_get(struct rdmx_rpc_ep *ep)
{
	struct rdmx_rpc_server_call *c = ep->free_scalls;

	if (c) {
		ep->free_scalls = c->next;
		ep->nfree_scalls--;
		memset(c, 0, sizeof(*c));
		return c;
	}
	return calloc(1, sizeof(*c));
}

static void scall_recycle(struct rdmx_rpc_server_call *c)
{
	struct rdmx_rpc_ep *ep = c->ep;

	if (ep && !ep->destroy_pending && ep->nfree_scalls < SCALL_FREE_CACHE) {
		c->next = ep->free_scalls;
		ep->free_scalls = c;
		ep->nfree_scalls++;
		return;
	}
	free(c);
}

static void scall_put(struct rdmx_rpc_server_call *c)
{
	struct rdmx_rpc_ep *ep = c->ep;

	rdmx__call_md_release(c);
	if (ep && ep->cur_call == c)
		ep->cur_call = NULL;
	if (c->walked) {
		c->answered = true; /* a cancel walk still holds it: see walk_end */
		return;
	}
	scall_recycle(c);
}

void rdmx__rpc_free_scalls(struct rdmx_rpc_ep *ep)
{
	while (ep->free_scalls) {
		struct rdmx_rpc_server_call *c = ep->free_scalls;

		ep->free_scalls = c->next;
		free(c);
	}
	ep->nfree_scalls = 0;
}

/* ---- getters ---- */

uint64_t rdmx_rpc_call_get_deadline(const struct rdmx_rpc_server_call *call)
{
	return call ? call->deadline_ns : 0;
}

bool rdmx_rpc_call_is_cancelled(const struct rdmx_rpc_server_call *call)
{
	if (!call)
		return true;
	if (!call->cancelled && call->deadline_ns && rdmx__now_ns() >= call->deadline_ns)
		return true; /* the timer just has not run yet */
	return call->cancelled;
}

bool rdmx_rpc_call_is_oneway(const struct rdmx_rpc_server_call *call)
{
	return call && call->oneway;
}

int rdmx_rpc_server_call_take_request(struct rdmx_rpc_server_call *call, void **owned, size_t *size)
{
	if (!call || !owned)
		return RDMX_E_INVAL;
	*owned = NULL;
	if (!call->ep || call->ep->cur_call != call || !call->req)
		return RDMX_E_BAD_STATE; /* not inside its handler */
	return rdmx__chan_take_rx(call->ep->chan, call->req, owned, size);
}

uint32_t rdmx_rpc_call_get_method(const struct rdmx_rpc_server_call *call)
{
	return call ? call->method : 0;
}

struct rdmx_rpc_ep *rdmx_rpc_call_get_conn(const struct rdmx_rpc_server_call *call)
{
	return call ? call->ep : NULL;
}

int rdmx_rpc_call_set_cancel_cb(struct rdmx_rpc_server_call *call,
                                void (*cb)(struct rdmx_rpc_server_call *call, void *arg), void *arg)
{
	if (!call)
		return RDMX_E_INVAL;
	call->cancel_cb = cb;
	call->cancel_arg = arg;
	if (call->cancelled && !call->cancel_ran && cb) {
		call->cancel_ran = true;
		cb(call, arg);
	}
	return 0;
}

/* ---- cancellation ---- */

static void call_cancel(struct rdmx_rpc_server_call *c)
{
	if (c->cancelled)
		return;
	c->cancelled = true;
	if (c->ep)
		rdmx__worker_timer_disarm(c->ep->worker, &c->timer);
	if (c->cancel_cb && !c->cancel_ran) {
		c->cancel_ran = true;
		c->cancel_cb(c, c->cancel_arg);
	}
}

static void server_deadline(struct rdmx__timer *t)
{
	struct rdmx_rpc_server_call *c =
	    (struct rdmx_rpc_server_call *)((char *)t -
	                                    offsetof(struct rdmx_rpc_server_call, timer));
	struct rdmx_rpc_ep *ep = c->ep;

	ep->busy++;
	call_cancel(c);
	ep->busy--;
	rdmx__rpc_release(ep);
}

void rdmx__rpc_on_cancel(struct rdmx_rpc_ep *ep, uint64_t call_id)
{
	struct rdmx_rpc_server_call *c = rdmx__map_get(&ep->incoming, call_id);

	if (!c)
		return; /* answered already, or never seen */
	ep->st[RDMX_RPC_ROLE_SERVER].cancels++;
	if (c->ms)
		c->ms->st[RDMX_RPC_ROLE_SERVER].cancels++;
	call_cancel(c);
}

/*
 * A cancel walk chains the held calls through c->next, then runs their cancel
 * callbacks; a callback may answer any call of the list, also one the walk
 * has not reached yet. Such a call must neither be recycled (that rewrites
 * c->next, or frees it, under the walk) nor see its cancel callback run after
 * its answer. So while a call is on the list (walked), scall_put only marks
 * it answered; the walk skips answered calls and recycles them at its end,
 * where no callback runs any more.
 */
static struct rdmx_rpc_server_call *take_incoming(struct rdmx_rpc_ep *ep)
{
	struct rdmx_rpc_server_call *list = NULL, *c;
	uint32_t pos = 0;

	while ((c = rdmx__map_next(&ep->incoming, &pos, NULL))) {
		c->walked = true;
		c->answered = false;
		c->next = list;
		list = c;
	}
	return list;
}

static void walk_end(struct rdmx_rpc_server_call *list)
{
	struct rdmx_rpc_server_call *c;

	while ((c = list)) {
		list = c->next;
		c->next = NULL;
		c->walked = false;
		if (c->answered)
			scall_recycle(c);
	}
}

void rdmx__rpc_cancel_incoming(struct rdmx_rpc_ep *ep)
{
	struct rdmx_rpc_server_call *list = take_incoming(ep), *c;

	/* they stay in the table: the application still answers each */
	for (c = list; c; c = c->next)
		if (!c->answered)
			call_cancel(c);
	walk_end(list);
}

static void resp_sent(struct rdmx_chan *chan, int status, void *arg);

void rdmx__rpc_forget_answers(struct rdmx_rpc_ep *ep)
{
	rdmx__chan_forget_cb(ep->chan, resp_sent);
	rdmx__rpc_batch_forget(ep);
	rdmx__rpc_batch_drop(ep);
	ep->resp_pending = 0;
}

void rdmx__rpc_detach_incoming(struct rdmx_rpc_ep *ep)
{
	struct rdmx_rpc_server_call *list = take_incoming(ep), *c;

	rdmx__map_fini(&ep->incoming);
	rdmx__map_init(&ep->incoming);
	for (c = list; c; c = c->next) {
		if (c->answered)
			continue;
		rdmx__worker_timer_disarm(ep->worker, &c->timer);
		rdmx__ic_done(&c->ic, RDMX_RPC_UNAVAILABLE, "endpoint destroyed");
		c->ep = NULL;
		c->m = NULL;
		c->ms = NULL;
		call_cancel(c);
	}
	walk_end(list);
}

/* ---- backpressure on incoming calls ---- */

void rdmx__rpc_check_active(struct rdmx_rpc_ep *ep)
{
	uint32_t active = ep->incoming.len + ep->resp_pending;

	if (ep->closed)
		return;
	if (!ep->paused_by_us && active >= ep->max_active) {
		ep->paused_by_us = true;
		rdmx_chan_pause(ep->chan);
	} else if (ep->paused_by_us && active < ep->max_active) {
		ep->paused_by_us = false;
		rdmx_chan_resume(ep->chan);
	}
}

static void resp_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rdmx_rpc_ep *ep = arg;

	(void)chan;
	(void)status;
	ep->resp_pending--;
	ep->busy++;
	rdmx__rpc_check_active(ep);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
}

/* ---- requests ---- */

static void respond_now(struct rdmx_rpc_ep *ep, const struct rpc_hdr *req, enum rdmx_rpc_code code,
                        const char *msg);

void rdmx__rpc_on_request(struct rdmx_rpc_ep *ep, const struct rpc_hdr *h, const void *body,
                          size_t len)
{
	struct rdmx_rpc_stats *tot = &ep->st[RDMX_RPC_ROLE_SERVER];
	bool oneway = h->flags & RPC_F_ONEWAY;
	struct rpc_method *m;
	struct rdmx_rpc_server_call *c;
	struct rdmx_rpc_md *req_md = NULL;
	int rc;

	if (ep->closed)
		return;
	if (h->flags & RPC_F_MD) {
		const char *why = NULL;
		size_t used = 0;

		req_md = calloc(1, sizeof(*req_md));
		if (!req_md || rdmx__md_decode(body, len, req_md, &used, &why)) {
			if (req_md)
				rdmx_rpc_md_fini(req_md);
			free(req_md);
			rdmx__chan_fail(ep->chan, why ? RDMX_E_PROTOCOL : RDMX_E_NOMEM,
			                why ? why : "no memory for request headers");
			return;
		}
		body = (const uint8_t *)body + used;
		len -= used;
	}
	tot->calls++;
	tot->bytes_received += len;
	if (oneway)
		tot->oneway++;
	if (ep->draining) {
		/* crossed our GOAWAY: refused, the caller may retry elsewhere */
		if (!oneway)
			respond_now(ep, h, RDMX_RPC_UNAVAILABLE, "server draining");
		rdmx__stats_done(tot, RDMX_RPC_UNAVAILABLE, 0);
		goto drop_md;
	}
	m = ep->server ? rdmx__map_get(&ep->server->methods, h->word) : NULL;
	c = scall_get(ep);
	if (!c) {
		if (!oneway)
			respond_now(ep, h, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory");
		rdmx__stats_done(tot, RDMX_RPC_RESOURCE_EXHAUSTED, 0);
		goto drop_md;
	}
	c->req_md = req_md; /* released with the call */
	c->ep = ep;
	c->m = m;
	c->id = h->call_id;
	c->method = h->word;
	c->oneway = oneway;
	c->req_len = len;
	c->start_ns = rdmx__now_ns();
	c->timer.fn = server_deadline;
	c->ms = rdmx__mstats_get(&ep->mstats, h->word, m != NULL);
	if (c->ms) {
		struct rdmx_rpc_stats *s = &c->ms->st[RDMX_RPC_ROLE_SERVER];

		s->calls++;
		s->bytes_received += len;
		if (oneway)
			s->oneway++;
	}
	if (m) {
		struct rdmx_rpc_stats *s = rdmx__method_stats_get(m);

		if (s) {
			s->calls++;
			s->bytes_received += len;
			if (oneway)
				s->oneway++;
			rdmx__method_stats_put(s);
		}
	}
	rc = rdmx__map_put(&ep->incoming, c->id, c);
	if (rc) {
		scall_put(c);
		if (rc == RDMX_E_EXISTS) {
			rdmx__chan_fail(ep->chan, RDMX_E_PROTOCOL,
			                "rpc request reuses a call id in use");
			return;
		}
		if (!oneway)
			respond_now(ep, h, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	if (h->timeout_us) {
		c->deadline_ns = rdmx__deadline_after(c->start_ns, h->timeout_us);
		if (rdmx__worker_timer_arm(ep->worker, &c->timer, c->deadline_ns))
			RDMX_WARN("rpc: no memory for the deadline of an incoming call");
	}
	if (req_md) { /* request headers (call_md.c) */
		if (req_md->bytes > ep->streams.max_md) {
			rdmx_rpc_respond(c, RDMX_RPC_RESOURCE_EXHAUSTED,
			                 "request headers over the metadata limit", NULL);
			return;
		}
	}
	if (ep->server && ep->server->chain) { /* interceptors (interceptor.c) */
		struct rdmx_rpc_call_info info = {.role = RDMX_RPC_ROLE_SERVER,
		                                  .method = h->word,
		                                  .method_name = m ? m->name : NULL,
		                                  .request_id = c->id,
		                                  .deadline_ns = c->deadline_ns,
		                                  .headers = rdmx_rpc_call_get_headers(c),
		                                  .ep = ep};
		struct rpc_resp_md *x = rdmx__call_resp_md(c);
		const char *why = NULL;
		enum rdmx_rpc_code code =
		    x ? rdmx__ic_start(ep->server->chain, &info, NULL, &x->headers, &why, &c->ic)
		      : RDMX_RPC_RESOURCE_EXHAUSTED;

		if (code != RDMX_RPC_OK) {
			rdmx_rpc_respond(c, code, why ? why : "out of memory", NULL);
			return;
		}
		rdmx__ic_message(c->ic, false, body, len);
	}
	if (!m || !m->handler) { /* unknown, or a stream method (stream.c) */
		char text[64];

		snprintf(text, sizeof(text), "unknown method 0x%08x", h->word);
		rdmx_rpc_respond(c, RDMX_RPC_UNIMPLEMENTED, text, NULL);
		return;
	}
	c->req = body;
	ep->cur_call = c;
	m->handler(c, body, len, m->arg);
	ep->cur_call = NULL;
	/* the handler may have answered (c is gone) or kept the call */
	rdmx__rpc_check_active(ep);
	return;
drop_md:
	if (req_md) {
		rdmx_rpc_md_fini(req_md);
		free(req_md);
	}
}

/* ---- answering ---- */

struct resp_fill {
	struct rpc_hdr h;
	const char *msg;
	const struct rdmx_rpc_payload *body;
	const struct rpc_resp_md *x; /* metadata and details (call_md.c), or NULL */
	size_t xlen;
};

static int resp_fill_fn(void *dst, size_t len, void *arg)
{
	struct resp_fill *f = arg;
	uint8_t *p = dst;
	size_t off = RDMX_RPC_HDR_SIZE + f->h.word;

	(void)len;
	rdmx__rpc_hdr_encode(&f->h, p);
	if (f->h.word)
		memcpy(p + RDMX_RPC_HDR_SIZE, f->msg, f->h.word);
	if (f->x) {
		rdmx__resp_ext_encode(f->x, p + off);
		off += f->xlen;
	}
	if (f->body && f->body->len) {
		if (f->body->encode)
			return f->body->encode(f->body->obj, p + off, f->body->len);
		memcpy(p + off, f->body->obj, f->body->len);
	}
	return 0;
}

/* Sends a response; *how tells whether it waited or went by rendezvous. */
static int send_response(struct rdmx_rpc_ep *ep, uint64_t call_id, enum rdmx_rpc_code code,
                         const char *msg, const struct rdmx_rpc_payload *body,
                         const struct rpc_resp_md *x, unsigned *how)
{
	struct resp_fill f;
	size_t mlen = msg ? strlen(msg) : 0;
	size_t blen = body ? body->len : 0;
	uint64_t max = 0;
	int rc;

	if (mlen > RDMX_RPC_MAX_STATUS_MESSAGE)
		mlen = RDMX_RPC_MAX_STATUS_MESSAGE;
	memset(&f, 0, sizeof(f));
	f.h.type = RPC_T_RESPONSE;
	f.h.code = (uint8_t)code;
	f.h.word = (uint32_t)mlen;
	f.h.call_id = call_id;
	f.msg = msg;
	f.body = body;
	if (x) {
		f.x = x;
		f.xlen = rdmx__resp_ext_size(x);
		f.h.flags = RPC_F_MD;
		mlen += f.xlen; /* sized with the message below */
	}
	rdmx_chan_get_max_msg_size(ep->chan, &max);
	if (blen > max || f.xlen > max || RDMX_RPC_HDR_SIZE + mlen + blen > max) {
		/* the answer cannot travel: tell the caller why instead */
		f.h.code = RDMX_RPC_RESOURCE_EXHAUSTED;
		f.msg = "response larger than the maximum message size";
		f.h.word = (uint32_t)strlen(f.msg);
		f.h.flags = 0;
		f.x = NULL;
		f.body = NULL;
		rdmx__rpc_batch_flush(ep);
		if (rdmx__chan_send_ex(ep->chan, RDMX_RPC_HDR_SIZE + f.h.word, resp_fill_fn, &f,
		                       resp_sent, ep, RDMX__SEND_FORCE, how) == 0)
			ep->resp_pending++; /* resp_sent counts it out */
		return RDMX_E_TOO_BIG;
	}
	if (!x) { /* small, no metadata: with the other answers of this progress */
		rc = rdmx__rpc_batch_add(ep, RDMX_RPC_HDR_SIZE + mlen + blen, resp_fill_fn, &f);
		if (rc != RDMX_E_AGAIN)
			return rc;
	}
	rdmx__rpc_batch_flush(ep); /* answers leave in order */
	rc = rdmx__chan_send_ex(ep->chan, RDMX_RPC_HDR_SIZE + mlen + blen, resp_fill_fn, &f,
	                        resp_sent, ep, RDMX__SEND_FORCE | RDMX__SEND_LIGHT, how);
	if (rc == 0 && !(*how & RDMX__SENT_LIGHT))
		ep->resp_pending++; /* resp_sent counts it out */
	return rc;
}

static void respond_now(struct rdmx_rpc_ep *ep, const struct rpc_hdr *req, enum rdmx_rpc_code code,
                        const char *msg)
{
	unsigned how = 0;

	send_response(ep, req->call_id, code, msg, NULL, NULL, &how);
}

int rdmx_rpc_respond(struct rdmx_rpc_server_call *call, enum rdmx_rpc_code code,
                     const char *message, const struct rdmx_rpc_payload *resp)
{
	struct rdmx_rpc_ep *ep;
	struct rdmx_rpc_stats *tot;
	unsigned how = 0;
	bool expired, sent = false;
	uint64_t ns, now;
	int ret = 0;

	if (!call || (unsigned)code >= RDMX_RPC_CODE_COUNT || (resp && resp->len && !resp->obj))
		return RDMX_E_INVAL;
	ep = call->ep;
	if (!ep) {
		scall_put(call); /* its endpoint is gone: nobody to answer */
		return 0;
	}
	/* a close inside the send (the engine refused the write) runs
	 * callbacks that may destroy ep, and then its server: ep is released
	 * at the end, and keeps the server in use until then */
	ep->busy++;
	ep->answering++;
	rdmx__map_del(&ep->incoming, call->id);
	rdmx__worker_timer_disarm(ep->worker, &call->timer);
	/* the deadline's clock read only when there is one: the call's time is
	 * read once its answer went (after the send, off the answer's path) */
	now = call->deadline_ns ? rdmx__now_ns() : 0;
	tot = &ep->st[RDMX_RPC_ROLE_SERVER];
	expired = call->deadline_ns && now >= call->deadline_ns;
	if (!call->cancelled && !call->oneway && !ep->closed && !expired) {
		const struct rpc_resp_md *x = call->resp_md;

		if (x && (x->headers.bytes > ep->streams.max_md ||
		          x->trailers.bytes > ep->streams.max_md)) {
			/* our own limit holds for what we send too */
			code = RDMX_RPC_RESOURCE_EXHAUSTED;
			message = "response metadata over the metadata limit";
			resp = NULL;
			x = NULL;
		}
		ret = send_response(ep, call->id, code, message, resp, x, &how);
		if (ret == 0 && call->ic && code == RDMX_RPC_OK)
			rdmx__ic_message(call->ic, true, resp && !resp->encode ? resp->obj : NULL,
			                 resp ? resp->len : 0);
		sent = true;
		if (ret == 0) {
			size_t blen = resp ? resp->len : 0;

			tot->bytes_sent += blen;
			if (call->ms)
				call->ms->st[RDMX_RPC_ROLE_SERVER].bytes_sent += blen;
		} else if (ret == RDMX_E_TOO_BIG) {
			code = RDMX_RPC_RESOURCE_EXHAUSTED;
		}
		if (how & RDMX__SENT_QUEUED) {
			tot->credit_stalls++;
			if (call->ms)
				call->ms->st[RDMX_RPC_ROLE_SERVER].credit_stalls++;
		}
		if (how & RDMX__SENT_RDV) {
			tot->rendezvous++;
			if (call->ms)
				call->ms->st[RDMX_RPC_ROLE_SERVER].rendezvous++;
		}
	} else if (expired) {
		code = RDMX_RPC_DEADLINE_EXCEEDED;
	} else if (call->cancelled) {
		code = RDMX_RPC_CANCELLED;
	}
	ns = (sent || !now ? rdmx__now_ns() : now) - call->start_ns; /* arrival to answer sent */
	if (call->ic) {
		rdmx__ic_done(&call->ic, code, message);
	}
	rdmx__stats_done(tot, code, ns);
	if (call->ms)
		rdmx__stats_done(&call->ms->st[RDMX_RPC_ROLE_SERVER], code, ns);
	if (call->m) {
		struct rdmx_rpc_stats *s = rdmx__method_stats_get(call->m);

		if (s) {
			if (ret == 0 && sent)
				s->bytes_sent += resp ? resp->len : 0;
			if (how & RDMX__SENT_QUEUED)
				s->credit_stalls++;
			if (how & RDMX__SENT_RDV)
				s->rendezvous++;
			rdmx__stats_done(s, code, ns);
			rdmx__method_stats_put(s);
		}
	}
	scall_put(call);
	ep->answering--;
	rdmx__rpc_check_active(ep);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
	return ret;
}
