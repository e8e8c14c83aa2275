/* RPC endpoint: create, destroy, drain, the dispatch of the channel's
 * messages and the endpoint's reaction to its channel closing (every call
 * of ours fails then: what it means for a call is call.c's); and the names
 * of status codes and methods (rdmx_rpc_code_name, rdmx_rpc_method_id). */
#include <stdio.h>
#include <stdlib.h>

#include "chan/chan_rpc.h"
#include "rpc_priv.h"

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

/* ---- failing every call ---- */

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
		rdmx__rpc_call_complete(ep, c, code, msg, NULL, 0);
	}
}

/* One-way calls whose send has not come back: they end now (the caller
 * forgot the channel's word on them). A callback may destroy the
 * endpoint, which ends the rest: the head is read again each time. */
static void fail_oneways(struct rdmx_rpc_ep *ep, const char *msg)
{
	struct rpc_ccall *c;

	while ((c = ep->oneways)) {
		rdmx__rpc_oneway_unlink(ep, c);
		rdmx__rpc_call_complete(ep, c, RDMX_RPC_UNAVAILABLE, msg, NULL, 0);
	}
}

/* ---- the channel's callbacks ---- */

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
	rdmx__chan_forget_cb(ep->chan, rdmx__rpc_oneway_sent);
	rdmx__chan_forget_cb(ep->chan, rdmx__rpc_request_sent);
	rdmx__rpc_forget_answers(ep);
	if (ep->paused_by_us) {
		ep->paused_by_us = false;
		rdmx__chan_clear_pause(ep->chan);
	}
}

/* Last: until the held calls are detached they point into its methods; an
 * answer on the stack (ep->answering) still reads them: the endpoint's last
 * release leaves the server then. */
static void leave_server(struct rdmx_rpc_ep *ep)
{
	if (ep->answering)
		return;
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

	if (ev != RDMX_CHAN_EV_CLOSED || ep->closed)
		return;
	ep->closed = true;
	ep->closing = true;
	ep->close_status = status;
	snprintf(msg, sizeof(msg), "connection closed: %s", rdmx_err_name(status));
	rdmx__rpc_batch_drop(ep); /* those answers cannot go any more */
	/* a one-way send's completion may still come, failed or not: its call
	 * ends with the close, as the calls waiting for a reply do */
	rdmx__chan_forget_cb(chan, rdmx__rpc_oneway_sent);
	ep->busy++;
	fail_all_calls(ep, RDMX_RPC_UNAVAILABLE, msg);
	fail_oneways(ep, msg);
	rdmx__rpc_streams_fail(ep, msg);
	ep->close_walk = true;
	rdmx__rpc_cancel_incoming(ep);
	ep->close_walk = false;
	if (ep->destroy_pending) /* destroyed meanwhile: no closed callback */
		leave_calls(ep); /* what a destroy inside the walk left */
	else if (ep->closed_cb)
		ep->closed_cb(ep, status, ep->closed_arg);
	ep->closing = false;
	/* the drain may have ended inside the close (a cancel callback answered
	 * the last held call), or waited only for the peer's acknowledgements or
	 * for answers that cannot go now: its callback comes after the closed
	 * one, and no later event of the channel would tell it */
	rdmx__rpc_check_drained(ep);
	ep->busy--;
	rdmx__rpc_release(ep);
}

/* The drained callback may destroy the endpoint: released here then. */
static void on_chan_idle(struct rdmx_chan *chan, void *arg)
{
	struct rdmx_rpc_ep *ep = arg;

	(void)chan;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
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
	leave_server(ep); /* what a destroy inside an answer left */
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
	fail_oneways(ep, "endpoint destroyed");
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

/* Nothing of ours outstanding (what rdmx_rpc_ep_get_active counts: once
 * closed, no answer handed to the channel, which can only fail now) and,
 * while open, every message acknowledged, the GOAWAY among them. A channel
 * that closed and has not told us yet (it fails its queue first) is
 * neither open nor closed here: not drained before its close event. */
static bool drained_now(const struct rdmx_rpc_ep *ep)
{
	if (!ep->draining)
		return false;
	if (ep->calls.len || rdmx_rpc_ep_get_active(ep) || ep->oneways ||
	    rdmx_rpc_ep_get_streams(ep))
		return false;
	if (ep->closed)
		return true;
	return rdmx_chan_get_state(ep->chan) != RDMX_CHAN_CLOSED && rdmx__chan_is_idle(ep->chan);
}

/* Once the callback ran it stays drained, whatever the channel does next. */
bool rdmx_rpc_ep_is_drained(const struct rdmx_rpc_ep *ep)
{
	return ep && (ep->drained_fired || drained_now(ep));
}

/* A close under way runs the closed callback first (on_chan_event), then
 * this. */
void rdmx__rpc_check_drained(struct rdmx_rpc_ep *ep)
{
	if (ep->drained_fired || ep->destroy_pending || ep->closing || !drained_now(ep))
		return;
	ep->drained_fired = true;
	if (ep->drained_cb) {
		ep->busy++;
		ep->drained_cb(ep, ep->drained_arg);
		ep->busy--;
	}
}

/* The GOAWAY is handed to the channel before the endpoint counts as
 * draining: the channel's idle callback, which the eager credits may run,
 * then finds it unacknowledged. */
int rdmx_rpc_ep_drain(struct rdmx_rpc_ep *ep)
{
	int rc;

	if (!ep)
		return RDMX_E_INVAL;
	if (ep->draining)
		return 0;
	/* a close inside the send (the engine refused the write) runs
	 * callbacks that may destroy ep, as may the drained callback below:
	 * released at the end */
	ep->busy++;
	if (!ep->closed) {
		/* not handed over for want of memory: the caller may try again;
		 * a channel not open (not started, or closing: its event comes)
		 * has no peer to tell */
		rc = rdmx__rpc_send_ctl(ep, RPC_T_GOAWAY, 0);
		if (rc == RDMX_E_NOMEM && !ep->closed) {
			ep->busy--;
			return rc;
		}
	}
	ep->draining = true;
	if (!ep->closed)
		rdmx__chan_set_eager_credit(ep->chan, true);
	ep->busy--;
	rdmx__rpc_check_drained(ep);
	rdmx__rpc_release(ep);
	return 0;
}

int rdmx_rpc_ep_progress(struct rdmx_rpc_ep *ep)
{
	if (!ep)
		return RDMX_E_INVAL;
	return rdmx_chan_worker_progress(ep->worker);
}
