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

#include "chan_internal.h"
#include "rpc_priv.h"

#define RPC_FREE_CACHE 1024u

static const char *const code_names[RDMX_RPC_CODE_COUNT] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
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

static struct rpc_ccall *ccall_get(struct rdmx_rpc_conn *rc)
{
	struct rpc_ccall *c = rc->free_calls;

	if (c) {
		rc->free_calls = c->next;
		rc->nfree_calls--;
		memset(c, 0, sizeof(*c));
		return c;
	}
	return calloc(1, sizeof(*c));
}

static void ccall_put(struct rdmx_rpc_conn *rc, struct rpc_ccall *c)
{
	if (rc && rc->nfree_calls < RPC_FREE_CACHE && !rc->destroy_pending) {
		c->next = rc->free_calls;
		rc->free_calls = c;
		rc->nfree_calls++;
		return;
	}
	free(c);
}

/* ---- sending ---- */

struct rpc_fill {
	struct rpc_hdr h;
	const char *msg;
	const struct rdmx_rpc_payload *body;
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
	if (f->body && f->body->len) {
		if (f->body->encode)
			return f->body->encode(f->body->obj, p + off, f->body->len);
		memcpy(p + off, f->body->obj, f->body->len);
	}
	return 0;
}

int rdmx__rpc_send_ctl(struct rdmx_rpc_conn *rc, enum rpc_type type, uint64_t call_id)
{
	struct rpc_fill f = {.h = {.type = (uint8_t)type, .call_id = call_id}};

	if (rc->closed)
		return RDMX_E_BAD_STATE;
	return rdmx__chan_send_ex(rc->chan, RDMX_RPC_HDR_SIZE, rpc_fill_fn, &f, NULL, NULL,
	                          RDMX__SEND_FORCE, NULL);
}

/* ---- completing calls ---- */

static void call_complete(struct rdmx_rpc_conn *rc, struct rpc_ccall *c, enum rdmx_rpc_code code,
                          const char *message, const void *data, size_t len)
{
	struct rdmx_rpc_result res = {.code = code, .message = message, .data = data, .len = len};
	uint64_t ns = rdmx__now_ns() - c->start_ns;

	rdmx__host_timer_disarm(rc->host, &c->timer);
	rdmx__stats_done(&rc->st[RDMX_RPC_ROLE_CLIENT], code, ns);
	if (c->ms)
		rdmx__stats_done(&c->ms->st[RDMX_RPC_ROLE_CLIENT], code, ns);
	if (c->cb) {
		rc->busy++;
		c->cb(&res, c->arg);
		rc->busy--;
	}
	ccall_put(rc, c);
}

static void fail_all_calls(struct rdmx_rpc_conn *rc, enum rdmx_rpc_code code, const char *msg)
{
	struct rpc_ccall *list = NULL, *c;
	uint32_t pos = 0;

	/* take them all out first: callbacks may start or cancel calls */
	while ((c = rdmx__map_next(&rc->calls, &pos, NULL))) {
		c->next = list;
		list = c;
	}
	rdmx__map_fini(&rc->calls);
	rdmx__map_init(&rc->calls);
	while ((c = list)) {
		list = c->next;
		call_complete(rc, c, code, msg, NULL, 0);
	}
}

static void oneway_unlink(struct rdmx_rpc_conn *rc, struct rpc_ccall *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		rc->oneways = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

static void oneway_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rpc_ccall *c = arg;
	struct rdmx_rpc_conn *rc = c->rc;

	(void)chan;
	oneway_unlink(rc, c);
	rc->busy++;
	call_complete(rc, c, status ? RDMX_RPC_UNAVAILABLE : RDMX_RPC_OK,
	              status ? "one-way call not delivered" : NULL, NULL, 0);
	rc->busy--;
	rdmx__rpc_check_drained(rc);
	rdmx__rpc_release(rc);
}

/* A request the channel could not deliver (larger than the peer's maximum
 * learnt after it was queued, or the channel closed): its call completes
 * now unless another outcome already took it. */
static void request_sent(struct rdmx_chan *chan, int status, void *arg)
{
	struct rdmx_rpc_conn *rc = chan->owner;
	struct rpc_ccall *c;
	char msg[96];

	if (!status || !rc)
		return;
	c = rdmx__map_del(&rc->calls, (uint64_t)(uintptr_t)arg);
	if (!c)
		return;
	snprintf(msg, sizeof(msg), "request not delivered: %s", rdmx_err_name(status));
	rc->busy++;
	call_complete(rc, c,
	              status == RDMX_E_TOO_BIG ? RDMX_RPC_RESOURCE_EXHAUSTED : RDMX_RPC_UNAVAILABLE,
	              msg, NULL, 0);
	rc->busy--;
	rdmx__rpc_check_drained(rc);
	rdmx__rpc_release(rc);
}

static void deadline_fired(struct rdmx__timer *t)
{
	struct rpc_ccall *c = (struct rpc_ccall *)((char *)t - offsetof(struct rpc_ccall, timer));
	struct rdmx_rpc_conn *rc = c->rc;

	if (rdmx__map_del(&rc->calls, c->id) != c)
		return;
	rdmx__rpc_send_ctl(rc, RPC_T_CANCEL, c->id); /* the server may stop working */
	rc->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	rc->busy++;
	call_complete(rc, c, RDMX_RPC_DEADLINE_EXCEEDED, "deadline exceeded", NULL, 0);
	rc->busy--;
	rdmx__rpc_check_drained(rc);
	rdmx__rpc_release(rc);
}

/* ---- the channel's callbacks ---- */

static void on_response(struct rdmx_rpc_conn *rc, const struct rpc_hdr *h, const uint8_t *msg,
                        size_t len)
{
	struct rpc_ccall *c = rdmx__map_del(&rc->calls, h->call_id);
	char text[RDMX_RPC_MAX_STATUS_MESSAGE + 1];
	const uint8_t *body = msg + RDMX_RPC_HDR_SIZE + h->word;
	size_t blen = len - RDMX_RPC_HDR_SIZE - h->word;

	if (!c) {
		/* cancelled or timed out before the reply: dropped */
		rc->st[RDMX_RPC_ROLE_CLIENT].late_replies++;
		return;
	}
	if (h->word) {
		memcpy(text, msg + RDMX_RPC_HDR_SIZE, h->word);
		text[h->word] = '\0';
	}
	rc->st[RDMX_RPC_ROLE_CLIENT].bytes_received += blen;
	if (c->ms)
		c->ms->st[RDMX_RPC_ROLE_CLIENT].bytes_received += blen;
	call_complete(rc, c, (enum rdmx_rpc_code)h->code, h->word ? text : NULL, blen ? body : NULL,
	              blen);
}

static void on_msg(struct rdmx_chan *chan, const void *data, size_t len, void *arg)
{
	struct rdmx_rpc_conn *rc = arg;
	const char *why = NULL;
	struct rpc_hdr h;

	if (rdmx__rpc_hdr_decode(data, len, &h, &why)) {
		rdmx__chan_fail(chan, RDMX_E_PROTOCOL, why);
		return;
	}
	rc->busy++;
	switch (h.type) {
	case RPC_T_REQUEST:
		rdmx__rpc_on_request(rc, &h, (const uint8_t *)data + RDMX_RPC_HDR_SIZE,
		                     len - RDMX_RPC_HDR_SIZE);
		break;
	case RPC_T_RESPONSE:
		on_response(rc, &h, data, len);
		break;
	case RPC_T_CANCEL:
		rdmx__rpc_on_cancel(rc, h.call_id);
		break;
	case RPC_T_GOAWAY:
		rc->peer_goaway = true;
		/* the draining peer waits for our acks: give them promptly */
		rdmx__chan_set_eager_credit(rc->chan, true);
		break;
	}
	rc->busy--;
	rdmx__rpc_check_drained(rc);
	rdmx__rpc_release(rc);
}

static void on_chan_event(struct rdmx_chan *chan, enum rdmx_chan_event ev, int status, void *arg)
{
	struct rdmx_rpc_conn *rc = arg;
	char msg[96];

	(void)chan;
	if (ev != RDMX_CHAN_EV_CLOSED || rc->closed)
		return;
	rc->closed = true;
	rc->close_status = status;
	snprintf(msg, sizeof(msg), "connection closed: %s", rdmx_err_name(status));
	rc->busy++;
	fail_all_calls(rc, RDMX_RPC_UNAVAILABLE, msg);
	rdmx__rpc_cancel_incoming(rc);
	if (rc->closed_cb)
		rc->closed_cb(rc, status, rc->closed_arg);
	rc->busy--;
	rdmx__rpc_release(rc);
}

static void on_chan_idle(struct rdmx_chan *chan, void *arg)
{
	(void)chan;
	rdmx__rpc_check_drained(arg);
}

/* ---- endpoint ---- */

int rdmx_rpc_conn_create(struct rdmx_chan *chan, struct rdmx_rpc_server *server,
                         struct rdmx_rpc_conn **rcp)
{
	struct rdmx_rpc_conn *rc;
	int rc_;

	if (!chan || !rcp)
		return RDMX_E_INVAL;
	if (chan->state == RDMX_CHAN_CLOSED)
		return RDMX_E_BAD_STATE;
	if (chan->recv_cb || chan->owner)
		return RDMX_E_EXISTS; /* the channel already has a receiver */
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return RDMX_E_NOMEM;
	rc->chan = chan;
	rc->host = chan->host;
	rc->server = server;
	rc->next_id = 1;
	rc->max_inflight = RDMX_RPC_DEFAULT_MAX_INFLIGHT;
	rc->max_active = RDMX_RPC_DEFAULT_MAX_INFLIGHT;
	rdmx__map_init(&rc->calls);
	rdmx__map_init(&rc->incoming);
	rdmx__map_init(&rc->mstats);
	if (chan->state == RDMX_CHAN_IDLE) {
		rc_ = rdmx_chan_start(chan);
		if (rc_) {
			free(rc);
			return rc_;
		}
	}
	if (server)
		server->refs++;
	rdmx__chan_set_idle_cb(chan, on_chan_idle, rc);
	rdmx_chan_set_callbacks(chan, on_msg, on_chan_event, rc);
	chan->owner = rc;
	*rcp = rc;
	return 0;
}

void rdmx__rpc_release(struct rdmx_rpc_conn *rc)
{
	if (!rc->destroy_pending || rc->busy)
		return;
	while (rc->free_calls) {
		struct rpc_ccall *c = rc->free_calls;

		rc->free_calls = c->next;
		free(c);
	}
	rdmx__rpc_free_scalls(rc);
	rdmx__mstats_free_all(&rc->mstats);
	rdmx__map_fini(&rc->calls);
	rdmx__map_fini(&rc->incoming);
	free(rc);
}

int rdmx_rpc_conn_destroy(struct rdmx_rpc_conn **rcp)
{
	struct rdmx_rpc_conn *rc;

	if (!rcp || !*rcp)
		return 0;
	rc = *rcp;
	*rcp = NULL;
	if (rc->destroy_pending)
		return 0;
	rc->closed = true;
	rc->busy++;
	/* nothing of the channel may call us any more */
	rc->chan->owner = NULL;
	rdmx_chan_set_callbacks(rc->chan, NULL, NULL, NULL);
	rdmx__chan_set_idle_cb(rc->chan, NULL, NULL);
	rdmx__chan_forget_cb(rc->chan, oneway_sent);
	rdmx__chan_forget_cb(rc->chan, request_sent);
	rdmx__rpc_detach_incoming(rc); /* forgets our response callbacks too */
	if (rc->paused_by_us) {
		rc->paused_by_us = false;
		rc->chan->paused = false;
	}
	fail_all_calls(rc, RDMX_RPC_UNAVAILABLE, "endpoint destroyed");
	while (rc->oneways) {
		struct rpc_ccall *c = rc->oneways;

		oneway_unlink(rc, c);
		call_complete(rc, c, RDMX_RPC_UNAVAILABLE, "endpoint destroyed", NULL, 0);
	}
	if (rc->server)
		rc->server->refs--;
	rc->server = NULL;
	rc->destroy_pending = true;
	rc->busy--;
	rdmx__rpc_release(rc);
	return 0;
}

struct rdmx_chan *rdmx_rpc_conn_get_chan(const struct rdmx_rpc_conn *rc)
{
	return rc ? rc->chan : NULL;
}

int rdmx_rpc_conn_set_limits(struct rdmx_rpc_conn *rc, uint32_t max_inflight, uint32_t max_active)
{
	if (!rc || !max_inflight || !max_active)
		return RDMX_E_INVAL;
	rc->max_inflight = max_inflight;
	rc->max_active = max_active;
	rdmx__rpc_check_active(rc);
	return 0;
}

int rdmx_rpc_conn_set_user_data(struct rdmx_rpc_conn *rc, void *user_data)
{
	if (!rc)
		return RDMX_E_INVAL;
	rc->user_data = user_data;
	return 0;
}

void *rdmx_rpc_conn_get_user_data(const struct rdmx_rpc_conn *rc)
{
	return rc ? rc->user_data : NULL;
}

int rdmx_rpc_conn_set_closed_cb(struct rdmx_rpc_conn *rc, rdmx_rpc_closed_cb cb, void *arg)
{
	if (!rc)
		return RDMX_E_INVAL;
	rc->closed_cb = cb;
	rc->closed_arg = arg;
	return 0;
}

int rdmx_rpc_conn_set_drained_cb(struct rdmx_rpc_conn *rc, rdmx_rpc_drained_cb cb, void *arg)
{
	if (!rc)
		return RDMX_E_INVAL;
	rc->drained_cb = cb;
	rc->drained_arg = arg;
	return 0;
}

uint32_t rdmx_rpc_conn_get_inflight(const struct rdmx_rpc_conn *rc)
{
	return rc ? rc->calls.len : 0;
}

uint32_t rdmx_rpc_conn_get_active(const struct rdmx_rpc_conn *rc)
{
	return rc ? rc->incoming.len + rc->resp_pending : 0;
}

static bool is_drained(const struct rdmx_rpc_conn *rc)
{
	if (!rc->draining)
		return false;
	if (rc->calls.len || rc->incoming.len || rc->resp_pending || rc->oneways)
		return false;
	return rc->closed || rdmx__chan_is_idle(rc->chan);
}

bool rdmx_rpc_conn_is_drained(const struct rdmx_rpc_conn *rc)
{
	return rc && is_drained(rc);
}

void rdmx__rpc_check_drained(struct rdmx_rpc_conn *rc)
{
	if (rc->drained_fired || rc->destroy_pending || !is_drained(rc))
		return;
	rc->drained_fired = true;
	if (rc->drained_cb) {
		rc->busy++;
		rc->drained_cb(rc, rc->drained_arg);
		rc->busy--;
	}
}

int rdmx_rpc_conn_drain(struct rdmx_rpc_conn *rc)
{
	if (!rc)
		return RDMX_E_INVAL;
	if (rc->draining)
		return 0;
	rc->draining = true;
	if (!rc->closed) {
		rdmx__chan_set_eager_credit(rc->chan, true);
		rdmx__rpc_send_ctl(rc, RPC_T_GOAWAY, 0);
	}
	rdmx__rpc_check_drained(rc);
	return 0;
}

int rdmx_rpc_conn_progress(struct rdmx_rpc_conn *rc)
{
	if (!rc)
		return RDMX_E_INVAL;
	return rdmx_chan_host_progress(rc->host);
}

/* ---- calls ---- */

int rdmx_rpc_call_async(struct rdmx_rpc_conn *rc, uint32_t method_id,
                        const struct rdmx_rpc_payload *req, const struct rdmx_rpc_call_opts *opts,
                        rdmx_rpc_done_cb cb, void *arg, uint64_t *call_id)
{
	struct rpc_fill f;
	struct rpc_ccall *c;
	bool oneway = opts && opts->oneway;
	size_t blen = req ? req->len : 0;
	unsigned how = 0;
	int rc_;

	if (!rc || (!oneway && !cb) || (req && req->len && !req->obj))
		return RDMX_E_INVAL;
	if (rc->closed || rc->draining || rc->peer_goaway || rc->destroy_pending)
		return RDMX_E_BAD_STATE;
	if (blen > SIZE_MAX - RDMX_RPC_HDR_SIZE)
		return RDMX_E_TOO_BIG;
	if (!oneway && rc->calls.len >= rc->max_inflight)
		return RDMX_E_AGAIN;
	c = ccall_get(rc);
	if (!c)
		return RDMX_E_NOMEM;
	c->rc = rc;
	c->id = rc->next_id++;
	c->method = method_id;
	c->cb = cb;
	c->arg = arg;
	c->oneway = oneway;
	c->timer.fn = deadline_fired;
	c->ms = rdmx__mstats_get(&rc->mstats, method_id, true);
	if (!oneway && (rc_ = rdmx__map_put(&rc->calls, c->id, c)) != 0) {
		ccall_put(rc, c);
		return rc_;
	}
	memset(&f, 0, sizeof(f));
	f.h.type = RPC_T_REQUEST;
	f.h.flags = oneway ? RPC_F_ONEWAY : 0;
	f.h.word = method_id;
	f.h.call_id = c->id;
	f.h.timeout_us = opts ? opts->timeout_us : 0;
	f.body = req;
	c->start_ns = rdmx__now_ns();
	rc_ = rdmx__chan_send_ex(rc->chan, RDMX_RPC_HDR_SIZE + blen, rpc_fill_fn, &f,
	                         oneway ? (cb ? oneway_sent : NULL) : request_sent,
	                         oneway ? (void *)c : (void *)(uintptr_t)c->id, 0, &how);
	if (rc_) {
		if (!oneway)
			rdmx__map_del(&rc->calls, c->id);
		ccall_put(rc, c);
		return rc_;
	}
	rc->st[RDMX_RPC_ROLE_CLIENT].calls++;
	rc->st[RDMX_RPC_ROLE_CLIENT].bytes_sent += blen;
	if (how & RDMX__SENT_QUEUED)
		rc->st[RDMX_RPC_ROLE_CLIENT].credit_stalls++;
	if (how & RDMX__SENT_RDV)
		rc->st[RDMX_RPC_ROLE_CLIENT].rendezvous++;
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
		rc->st[RDMX_RPC_ROLE_CLIENT].oneway++;
		if (!cb) {
			/* nothing will report it: count it done now */
			call_complete(rc, c, RDMX_RPC_OK, NULL, NULL, 0);
		} else {
			c->prev = NULL;
			c->next = rc->oneways;
			if (rc->oneways)
				rc->oneways->prev = c;
			rc->oneways = c;
		}
	} else if (opts && opts->timeout_us) {
		uint64_t us = opts->timeout_us;

		if (us > UINT64_MAX / 2000u)
			us = UINT64_MAX / 2000u;
		if (rdmx__host_timer_arm(rc->host, &c->timer, c->start_ns + us * 1000u))
			RPC_WARN("rpc: no memory for the deadline of call %llu",
			         (unsigned long long)c->id);
	}
	if (call_id)
		*call_id = c->id;
	return 0;
}

int rdmx_rpc_cancel(struct rdmx_rpc_conn *rc, uint64_t call_id)
{
	struct rpc_ccall *c;

	if (!rc)
		return RDMX_E_INVAL;
	c = rdmx__map_del(&rc->calls, call_id);
	if (!c)
		return RDMX_E_NOT_FOUND;
	if (!rc->closed)
		rdmx__rpc_send_ctl(rc, RPC_T_CANCEL, call_id);
	rc->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	if (c->ms)
		c->ms->st[RDMX_RPC_ROLE_CLIENT].cancels++;
	rc->busy++;
	call_complete(rc, c, RDMX_RPC_CANCELLED, "cancelled", NULL, 0);
	rc->busy--;
	rdmx__rpc_check_drained(rc);
	rdmx__rpc_release(rc);
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
	s->done = true;
}

int rdmx_rpc_call(struct rdmx_rpc_conn *rc, uint32_t method_id, const struct rdmx_rpc_payload *req,
                  const struct rdmx_rpc_call_opts *opts, struct rdmx_rpc_reply *reply)
{
	struct sync_call s = {.done = false, .reply = reply, .err = 0};
	struct rdmx_chan_host *host;
	int rc_;

	if (!rc || !reply)
		return RDMX_E_INVAL;
	host = rc->host;
	if (rdmx__host_depth(host) > 0)
		return RDMX_E_BAD_STATE; /* from a callback: progress cannot nest */
	memset(reply, 0, sizeof(*reply));
	uint64_t id = 0;

	for (;;) {
		rc_ = rdmx_rpc_call_async(rc, method_id, req, opts, sync_done, &s, &id);
		if (rc_ != RDMX_E_AGAIN)
			break;
		rc_ = rdmx_chan_host_wait(host, 100);
		if (rc_ < 0)
			return rc_;
	}
	if (rc_)
		return rc_;
	while (!s.done) {
		rc_ = rdmx_chan_host_wait(host, 1000);
		if (rc_ < 0 && !s.done) {
			/* the engine failed under us: the call must not outlive `s` */
			if (rdmx_rpc_cancel(rc, id) == 0 || s.done)
				rdmx_rpc_reply_fini(reply);
			return rc_;
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
	reply->message = NULL;
	reply->data = NULL;
	reply->len = 0;
}
