/* Channel life cycle: create, settings, start (ring registration and the
 * hello), close and release. The send path lives in chan_tx.c, the receive
 * path in chan_rx.c, rendezvous in bulk.c.
 *
 * A channel is freed only when nobody can reach it any more: the user
 * destroyed it, the engine is done with its connection (disconnected or
 * failure callback, or the context stopped) and none of its tasks is in
 * flight — so no completion can land on freed memory. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

uint32_t rdmx__chan_conn_id(const struct rdmx_chan *chan)
{
	uint32_t id = UINT32_MAX;

	if (chan->conn)
		rdmx_conn_get_id(chan->conn, &id);
	return id;
}

static bool ctx_running(const struct rdmx_chan_worker *worker)
{
	enum rdmx_ctx_state st = RDMX_CTX_IDLE;

	rdmx_ctx_get_state(worker->ctx, &st);
	return st == RDMX_CTX_RUNNING && !worker->stopped;
}

int rdmx_chan_create(struct rdmx_chan_worker *worker, struct rdmx_conn *conn,
                     struct rdmx_chan **chan)
{
	struct rdmx_ctx *cctx = NULL;
	struct rdmx_chan *c;
	int rc;

	if (!worker || !conn || !chan)
		return RDMX_E_INVAL;
	if (rdmx_conn_get_ctx(conn, &cctx) || cctx != worker->ctx)
		return RDMX_E_INVAL;
	if (!ctx_running(worker))
		return RDMX_E_BAD_STATE;
	if (rdmx__map_get(&worker->chans, (uint64_t)(uintptr_t)conn))
		return RDMX_E_EXISTS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RDMX_E_NOMEM;
	c->worker = worker;
	c->conn = conn;
	c->state = RDMX_CHAN_IDLE;
	c->user_ref = true;
	c->slot_count = RDMX_CHAN_DEFAULT_SLOT_COUNT;
	c->slot_size = RDMX_CHAN_DEFAULT_SLOT_SIZE;
	c->max_msg = RDMX_CHAN_DEFAULT_MAX_MSG_SIZE;
	c->eager = UINT32_MAX; /* the peer's slot payload */
	c->queue_len = RDMX_CHAN_DEFAULT_SEND_QUEUE_LEN;
	c->queue_bytes = CHAN_DEFAULT_QUEUE_BYTES;
	rc = rdmx__worker_chan_add(worker, c);
	if (rc) {
		free(c);
		return rc;
	}
	*chan = c;
	return 0;
}

/* ---- settings ---- */

#define IDLE_SETTER(chan)                                                                          \
	do {                                                                                       \
		if (!(chan))                                                                       \
			return RDMX_E_INVAL;                                                       \
		if ((chan)->state != RDMX_CHAN_IDLE)                                               \
			return RDMX_E_BAD_STATE;                                                   \
	} while (0)

int rdmx_chan_set_slot_count(struct rdmx_chan *chan, uint32_t count)
{
	IDLE_SETTER(chan);
	if (!rdmx__slot_count_valid(count))
		return RDMX_E_INVAL;
	chan->slot_count = count;
	return 0;
}

int rdmx_chan_set_slot_size(struct rdmx_chan *chan, uint32_t size)
{
	IDLE_SETTER(chan);
	if (!rdmx__slot_size_valid(size))
		return RDMX_E_INVAL;
	chan->slot_size = size;
	return 0;
}

int rdmx_chan_set_max_msg_size(struct rdmx_chan *chan, uint64_t size)
{
	IDLE_SETTER(chan);
	if (!rdmx__max_msg_valid(size))
		return RDMX_E_INVAL;
	chan->max_msg = size;
	return 0;
}

int rdmx_chan_set_send_queue_len(struct rdmx_chan *chan, uint32_t len)
{
	IDLE_SETTER(chan);
	if (len > (1u << 20))
		return RDMX_E_INVAL;
	chan->queue_len = len;
	return 0;
}

int rdmx_chan_set_eager_threshold(struct rdmx_chan *chan, uint32_t bytes)
{
	if (!chan)
		return RDMX_E_INVAL;
	chan->eager = bytes;
	return 0;
}

int rdmx_chan_set_callbacks(struct rdmx_chan *chan, rdmx_chan_recv_cb recv_cb,
                            rdmx_chan_event_cb event_cb, void *arg)
{
	if (!chan)
		return RDMX_E_INVAL;
	chan->recv_cb = recv_cb;
	chan->event_cb = event_cb;
	chan->arg = arg;
	/* messages that waited for a receiver */
	if (recv_cb && chan->state == RDMX_CHAN_READY && chan->rx_consumed != chan->rx_seq &&
	    !chan->delivering) {
		rdmx__chan_deliver(chan);
		rdmx__chan_maybe_free(chan);
	}
	return 0;
}

void rdmx__chan_set_eager_credit(struct rdmx_chan *chan, bool on)
{
	chan->eager_credit = on;
	if (on)
		rdmx__chan_pump(chan);
}

void rdmx__chan_set_idle_cb(struct rdmx_chan *chan, void (*cb)(struct rdmx_chan *, void *),
                            void *arg)
{
	chan->idle_cb = cb;
	chan->idle_arg = arg;
}

bool rdmx__chan_is_idle(const struct rdmx_chan *chan)
{
	return !chan->q_head && chan->tx_seq == chan->tx_acked && !chan->hello_pending;
}

/* ---- getters ---- */

enum rdmx_chan_state rdmx_chan_get_state(const struct rdmx_chan *chan)
{
	return chan ? chan->state : RDMX_CHAN_CLOSED;
}

struct rdmx_conn *rdmx_chan_get_conn(const struct rdmx_chan *chan)
{
	return chan ? chan->conn : NULL;
}

struct rdmx_chan_worker *rdmx_chan_get_worker(const struct rdmx_chan *chan)
{
	return chan ? chan->worker : NULL;
}

void *rdmx_chan_get_arg(const struct rdmx_chan *chan)
{
	return chan ? chan->arg : NULL;
}

int rdmx_chan_get_slot_count(const struct rdmx_chan *chan, uint32_t *count)
{
	if (!chan || !count)
		return RDMX_E_INVAL;
	*count = chan->slot_count;
	return 0;
}

int rdmx_chan_get_slot_size(const struct rdmx_chan *chan, uint32_t *size)
{
	if (!chan || !size)
		return RDMX_E_INVAL;
	*size = chan->slot_size;
	return 0;
}

int rdmx_chan_get_max_msg_size(const struct rdmx_chan *chan, uint64_t *size)
{
	uint64_t v;

	if (!chan || !size)
		return RDMX_E_INVAL;
	v = chan->max_msg;
	if (chan->peer_max_msg && chan->peer_max_msg < v)
		v = chan->peer_max_msg;
	*size = v;
	return 0;
}

int rdmx_chan_get_eager_threshold(const struct rdmx_chan *chan, uint32_t *bytes)
{
	uint32_t v, cap;

	if (!chan || !bytes)
		return RDMX_E_INVAL;
	cap = (chan->peer_size ? chan->peer_size : chan->slot_size) - RDMX_CHAN_HDR_SIZE;
	v = chan->eager < cap ? chan->eager : cap;
	*bytes = v;
	return 0;
}

int rdmx_chan_get_send_queue_len(const struct rdmx_chan *chan, uint32_t *len)
{
	if (!chan || !len)
		return RDMX_E_INVAL;
	*len = chan->queue_len;
	return 0;
}

uint32_t rdmx_chan_get_queued(const struct rdmx_chan *chan)
{
	return chan ? chan->q_len : 0;
}

int rdmx_chan_get_stats(const struct rdmx_chan *chan, struct rdmx_chan_stats *stats)
{
	if (!chan || !stats)
		return RDMX_E_INVAL;
	*stats = chan->stats;
	return 0;
}

/* ---- start ---- */

static void *page_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

int rdmx_chan_start(struct rdmx_chan *chan)
{
	struct rdmx_chan_worker *worker;
	size_t ring_len;
	void *early;
	int rc;

	if (!chan)
		return RDMX_E_INVAL;
	worker = chan->worker;
	if (chan->state != RDMX_CHAN_IDLE || !chan->conn || !ctx_running(worker))
		return RDMX_E_BAD_STATE;
	ring_len = (size_t)chan->slot_count * chan->slot_size;
	chan->ring = page_alloc(ring_len);
	chan->rx = calloc(chan->slot_count, sizeof(*chan->rx));
	chan->ctl_mem = page_alloc(CHAN_CTL_ENTRIES * RDMX__CTL_MAX_LEN);
	if (!chan->ring || !chan->rx || !chan->ctl_mem) {
		rc = RDMX_E_NOMEM;
		goto free_mem;
	}
	/* least privilege: the peer may only write into the ring, and only
	 * through this channel's connection (a grant, mr.h) */
	rc = rdmx__chan_reg_remote(chan, chan->ring, ring_len, RDMX_ACCESS_REMOTE_WRITE,
	                           &chan->ring_mr);
	if (rc)
		goto free_mem;
	rc = rdmx_mr_reg(worker->dev, chan->ctl_mem, CHAN_CTL_ENTRIES * RDMX__CTL_MAX_LEN, 0,
	                 &chan->ctl_mr);
	if (rc)
		goto dereg_ring;
	for (uint32_t i = 0; i < CHAN_CTL_ENTRIES; i++) {
		chan->ctl[i].chan = chan;
		chan->ctl[i].buf.mr = chan->ctl_mr;
		chan->ctl[i].buf.addr = chan->ctl_mem + (size_t)i * RDMX__CTL_MAX_LEN;
	}
	rc = rdmx__worker_post_recvs(worker);
	if (rc)
		goto dereg_ctl;
	chan->state = RDMX_CHAN_STARTING;
	chan->hello_pending = true;
	rdmx__chan_try_hello(chan);
	if (chan->state == RDMX_CHAN_CLOSED)
		return chan->close_status;
	early = rdmx__worker_take_early(worker, chan->conn);
	if (early) {
		rdmx__chan_on_ctl(chan, early, RDMX__CTL_HELLO_LEN);
		free(early);
	} else if (chan->has_early_hello) {
		chan->has_early_hello = false;
		rdmx__chan_on_ctl(chan, chan->early_hello, RDMX__CTL_HELLO_LEN);
	}
	return 0;

dereg_ctl:
	rdmx_mr_dereg(&chan->ctl_mr);
dereg_ring:
	rdmx_mr_dereg(&chan->ring_mr);
free_mem:
	free(chan->ctl_mem);
	free(chan->rx);
	free(chan->ring);
	chan->ctl_mem = NULL;
	chan->rx = NULL;
	chan->ring = NULL;
	return rc;
}

/* ---- memory the peer reaches: connection-bound grants ---- */

bool rdmx__chan_uses_grants(const struct rdmx_chan *chan)
{
	const char *name = rdmx_dev_name(chan->worker->dev);

	/* Soft-RoCE (rxe of the 6.1 kernel) keeps a reference on a QP that
	 * served requests through type-2 windows: destroying that QP then
	 * stalls about 50 s in the kernel (a rxe_pool WARNING in dmesg), once
	 * per channel. Channels on rxe get device-wide descriptors, as on a
	 * device without windows; rdmx_mr_grant itself stays available. */
	return !(strcmp(rdmx_dev_provider(chan->worker->dev), "verbs") == 0 && name &&
	         strncmp(name, "rxe", 3) == 0);
}

int rdmx__chan_reg_remote(struct rdmx_chan *chan, void *addr, size_t len, unsigned access,
                          struct rdmx_mr **mr)
{
	static atomic_bool warned;
	int rc = RDMX_E_NOT_SUPPORTED;

	if (rdmx__chan_uses_grants(chan))
		rc = rdmx_mr_reg(chan->worker->dev, addr, len, access | RDMX_ACCESS_GRANT_ONLY, mr);
	if (rc != RDMX_E_NOT_SUPPORTED)
		return rc;
	if (!atomic_exchange(&warned, true))
		RDMX_WARN(
		    "chan: device %s: no connection-bound grants for channels (%s): rings and "
		    "rendezvous buffers get device-wide descriptors (any connection of the "
		    "device may use them)",
		    rdmx_dev_name(chan->worker->dev),
		    rdmx__chan_uses_grants(chan) ? "no type-2 memory windows"
		                                 : "Soft-RoCE: docs/SECURITY.md");
	return rdmx_mr_reg(chan->worker->dev, addr, len, access, mr);
}

int rdmx__chan_grant_desc(struct rdmx_chan *chan, struct rdmx_mr *mr, size_t len, unsigned access,
                          struct rdmx_mr_grant **grant, void *desc)
{
	int rc;

	if (!rdmx__chan_uses_grants(chan))
		return rdmx_mr_get_descriptor(mr, desc);
	if (!*grant) {
		if (!len)
			rdmx_mr_get_size(mr, &len);
		rc = rdmx_mr_grant(mr, chan->conn, 0, len, access, grant);
		if (rc == RDMX_E_NOT_SUPPORTED)
			return rdmx_mr_get_descriptor(mr, desc); /* BAD_STATE if grant-only */
		if (rc)
			return rc;
	}
	return rdmx_mr_grant_get_descriptor(*grant, desc);
}

/* ---- close and release ---- */

static void chan_fail_queue(struct rdmx_chan *chan, int status)
{
	while (chan->q_head) {
		struct chan_msg *m = chan->q_head;

		chan->q_head = m->next;
		if (!chan->q_head)
			chan->q_tail = NULL;
		chan->q_len--;
		if (m->rdv_mr)
			rdmx__rdv_tx_finish(chan, m, status);
		else {
			chan->held_bytes -= m->held;
			rdmx__chan_msg_release(chan, m);
			if (m->cb)
				m->cb(chan, status, m->arg);
			free(m);
		}
	}
}

/* Rendezvous descriptors already posted: the peer may have read them, so
 * they fail after the owner's close event, as posted eager writes do
 * (rdmx__chan_write_err): rpc/ tells a request that never left the queue
 * by that order. */
static void chan_fail_posted_rdv(struct rdmx_chan *chan, int status)
{
	while (chan->rdv_head) {
		struct chan_msg *m = chan->rdv_head;

		chan->rdv_head = m->next;
		if (!chan->rdv_head)
			chan->rdv_tail = NULL;
		chan->rdv_tx--;
		rdmx__rdv_tx_finish(chan, m, status);
	}
}

void rdmx__chan_fail(struct rdmx_chan *chan, int status, const char *why)
{
	bool was_open;

	if (chan->state == RDMX_CHAN_CLOSED)
		return;
	if (why)
		RDMX_ERR("chan: conn %u: protocol violation: %s; closing the connection",
		         rdmx__chan_conn_id(chan), why);
	else if (status != RDMX_E_CANCELED && status != RDMX_E_DISCONNECTED)
		RDMX_DBG("chan: conn %u: closing: %s", rdmx__chan_conn_id(chan),
		         rdmx_err_name(status));
	was_open = chan->state != RDMX_CHAN_IDLE || chan->user_ref;
	chan->state = RDMX_CHAN_CLOSED;
	chan->close_status = status;
	rdmx__worker_timer_disarm(chan->worker, &chan->ka_timer);
	chan->hello_pending = false;
	chan->credit_pending = false;
	chan->cb_depth++;
	chan_fail_queue(chan, status);
	if (chan->conn && !chan->disconnecting && ctx_running(chan->worker)) {
		int rc = rdmx_conn_disconnect(chan->conn);

		if (rc)
			RDMX_DBG("chan: conn %u: disconnect: %s", rdmx__chan_conn_id(chan),
			         rdmx_err_name(rc));
		chan->disconnecting = true;
	}
	if (was_open && chan->user_ref && chan->event_cb)
		chan->event_cb(chan, RDMX_CHAN_EV_CLOSED, status, chan->arg);
	chan_fail_posted_rdv(chan, status);
	chan->cb_depth--;
}

void rdmx__chan_conn_gone(struct rdmx_chan *chan, int status)
{
	chan->disconnecting = true;
	rdmx__chan_fail(chan, status, NULL);
	rdmx__worker_chan_remove(chan->worker, chan);
	chan->conn = NULL;
	rdmx__chan_maybe_free(chan);
}

void rdmx__chan_free(struct rdmx_chan *chan)
{
	struct rdmx_chan_worker *worker = chan->worker;

	rdmx__worker_chan_unlink(worker, chan);
	rdmx__worker_timer_disarm(worker, &chan->ka_timer);
	chan->state = RDMX_CHAN_CLOSED;
	/* nothing runs callbacks any more: release what is left */
	while (chan->q_head) {
		struct chan_msg *m = chan->q_head;

		chan->q_head = m->next;
		rdmx__chan_msg_release(chan, m);
		free(m);
	}
	while (chan->rdv_head) {
		struct chan_msg *m = chan->rdv_head;

		chan->rdv_head = m->next;
		rdmx__chan_msg_release(chan, m);
		free(m);
	}
	if (chan->rx) {
		for (uint32_t i = 0; i < chan->slot_count; i++)
			if (chan->rx[i].rdv)
				rdmx__rdv_rx_free(chan->rx[i].rdv);
	}
	rdmx_mr_dereg(&chan->stage_mr);
	rdmx_mr_grant_revoke(&chan->ring_grant);
	rdmx_mr_dereg(&chan->ring_mr);
	rdmx_mr_dereg(&chan->ctl_mr);
	rdmx_mr_remote_delete(&chan->peer_ring);
	free(chan->stage);
	free(chan->ring);
	free(chan->ctl_mem);
	free(chan->rx);
	free(chan->tx);
	free(chan);
}

void rdmx__chan_maybe_free(struct rdmx_chan *chan)
{
	if (chan->user_ref || chan->conn || chan->inflight || chan->cb_depth || chan->delivering)
		return;
	rdmx__chan_free(chan);
}

void rdmx__chan_task_done(struct rdmx_chan *chan)
{
	chan->inflight--;
}

int rdmx_chan_destroy(struct rdmx_chan **chan)
{
	struct rdmx_chan *c;

	if (!chan || !*chan)
		return 0;
	c = *chan;
	if (c->owner)
		return RDMX_E_BAD_STATE; /* destroy its RPC endpoint first */
	*chan = NULL;
	c->recv_cb = NULL;
	c->event_cb = NULL;
	c->idle_cb = NULL;
	c->user_ref = false;
	if (c->conn && !ctx_running(c->worker)) {
		/* the context stopped: the engine already let go of the connection */
		rdmx__worker_chan_remove(c->worker, c);
		c->conn = NULL;
		c->disconnecting = true;
		c->inflight = 0;
	}
	rdmx__chan_fail(c, RDMX_E_CANCELED, NULL);
	rdmx__chan_maybe_free(c);
	return 0;
}

/* ---- the owner's view (chan/chan_rpc.h) ---- */

void *rdmx__chan_get_owner(const struct rdmx_chan *chan)
{
	return chan->owner;
}

void rdmx__chan_set_owner(struct rdmx_chan *chan, void *owner)
{
	chan->owner = owner;
}

bool rdmx__chan_has_receiver(const struct rdmx_chan *chan)
{
	return chan->recv_cb || chan->owner;
}

void rdmx__chan_clear_pause(struct rdmx_chan *chan)
{
	chan->paused = false;
}
