/* Rendezvous: messages larger than the eager threshold.
 *
 * Sender: the source is our copy — filled straight into a buffer of the
 * worker's registration cache (regcache.c), registered REMOTE_READ once
 * and reused by later messages — or the caller's registered memory, which
 * is registered again with REMOTE_READ only for this message. Either way
 * the registration is granted to the channel's connection alone (mr.h) and
 * the grant's descriptor goes into a ring slot. The grant lives until the
 * peer's credit count passes the message (it has read and delivered it);
 * then it is revoked, the cached buffer goes back to the cache (the
 * caller's memory is deregistered) and the send completes.
 *
 * Receiver: the descriptor is checked (size, access, provider) before
 * anything is allocated, then ONE RDMA read brings the bytes into a
 * registered buffer of the cache; delivery (in order) and the ack follow,
 * and the buffer goes back to the cache for the next message — unless the
 * receive callback kept it (rdmx__chan_take_rx): then it leaves the cache,
 * deregistered, and belongs to the caller. */
#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

int rdmx__rdv_tx_prepare(struct rdmx_chan *chan, struct chan_msg *m)
{
	int rc;

	if (!m->len || !m->data)
		return RDMX_E_INVAL;
	if (m->ent) {
		m->rdv_mr = m->ent->mr; /* borrowed from the cache */
		return 0;
	}
	rc = rdmx__chan_reg_remote(chan, m->data, m->len, RDMX_ACCESS_REMOTE_READ, &m->rdv_mr);
	if (rc) {
		RDMX_ERR("chan: conn %u: rendezvous source of %llu bytes: registration failed: %s",
		         rdmx__chan_conn_id(chan), (unsigned long long)m->len, rdmx_err_name(rc));
		return rc;
	}
	return 0;
}

void rdmx__chan_msg_release(struct rdmx_chan *chan, struct chan_msg *m)
{
	rdmx_mr_grant_revoke(&m->rdv_grant);
	if (m->ent) {
		m->rdv_mr = NULL;
		rdmx__regcache_put(&chan->worker->regc, m->ent);
		m->ent = NULL;
	} else {
		if (m->rdv_mr)
			rdmx_mr_dereg(&m->rdv_mr);
		if (m->kind == MSG_COPY)
			free(m->data);
	}
	m->data = NULL;
}

void rdmx__rdv_tx_finish(struct rdmx_chan *chan, struct chan_msg *m, int status)
{
	rdmx_chan_sent_cb cb = m->cb;
	void *arg = m->arg;

	chan->held_bytes -= m->held;
	rdmx__chan_msg_release(chan, m);
	free(m);
	if (cb) {
		chan->cb_depth++;
		cb(chan, status, arg);
		chan->cb_depth--;
	}
}

int rdmx__rdv_rx_new(struct rdmx_chan *chan, const void *desc, uint64_t len, struct rdv_rx **out,
                     const char **why)
{
	struct rdmx_mr_remote *remote = NULL;
	uint8_t copy[RDMX_MR_DESCRIPTOR_SIZE];
	unsigned access = 0;
	size_t size = 0;
	struct rdv_rx *r;

	memcpy(copy, desc, sizeof(copy)); /* one snapshot of peer-writable memory */
	if (rdmx_mr_remote_from_descriptor(copy, sizeof(copy), &remote)) {
		*why = "malformed rendezvous descriptor";
		return RDMX_E_PROTOCOL;
	}
	rdmx_mr_remote_get_size(remote, &size);
	rdmx_mr_remote_get_access(remote, &access);
	if ((uint64_t)size < len) {
		rdmx_mr_remote_delete(&remote);
		*why = "rendezvous descriptor shorter than the message";
		return RDMX_E_PROTOCOL;
	}
	if (!(access & RDMX_ACCESS_REMOTE_READ)) {
		rdmx_mr_remote_delete(&remote);
		*why = "rendezvous source not readable";
		return RDMX_E_PROTOCOL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		rdmx_mr_remote_delete(&remote);
		*why = "out of memory for a rendezvous";
		return RDMX_E_PROTOCOL;
	}
	r->chan = chan;
	r->regc = &chan->worker->regc;
	r->remote = remote;
	r->len = len;
	/* one read, unless the device cannot move that much in one operation */
	r->chunk = chan->worker->dev_max_msg && chan->worker->dev_max_msg < len
	               ? chan->worker->dev_max_msg
	               : len;
	r->nchunks = (uint32_t)((len + r->chunk - 1) / r->chunk);
	r->state = RDV_NEW;
	*out = r;
	return 0;
}

int rdmx__chan_take_rx(struct rdmx_chan *chan, const void *data, void **owned, size_t *size)
{
	struct rdv_rx *r = chan ? chan->rx_cur : NULL;
	const uint8_t *p = data;
	size_t bytes;

	if (!owned)
		return RDMX_E_INVAL;
	*owned = NULL;
	if (!r || !r->ent || !p || p < (const uint8_t *)r->buf ||
	    p > (const uint8_t *)r->buf + r->len)
		return RDMX_E_BAD_STATE; /* an eager message, or not in its callback */
	bytes = r->ent->size;
	*owned = rdmx__regcache_detach(r->regc, r->ent);
	if (!*owned)
		return RDMX_E_BAD_STATE; /* held elsewhere too (logged): copy it */
	if (size)
		*size = bytes;
	r->ent = NULL;
	r->buf = NULL;
	r->mr = NULL;
	return 0;
}

static void rdv_rx_release(struct rdv_rx *r)
{
	rdmx__regcache_put(r->regc, r->ent);
	free(r->lbs);
	rdmx_mr_remote_delete(&r->remote);
	free(r);
}

void rdmx__rdv_rx_free(struct rdv_rx *r)
{
	if (!r)
		return;
	if (r->reads) {
		/* read tasks still own the buffer: the last completion frees it */
		r->orphan = true;
		return;
	}
	rdv_rx_release(r);
}

/* The destination buffer: a registered one of the cache, for the reads to
 * land in. */
static int rdv_buffer(struct rdmx_chan *chan, struct rdv_rx *r)
{
	int rc;

	r->lbs = calloc(r->nchunks, sizeof(*r->lbs));
	if (!r->lbs)
		return RDMX_E_NOMEM;
	rc = rdmx__regcache_get(r->regc, chan, REGC_RX, r->len, &r->ent);
	if (rc) {
		free(r->lbs);
		r->lbs = NULL;
		return rc;
	}
	r->buf = r->ent->buf;
	r->mr = r->ent->mr;
	for (uint32_t i = 0; i < r->nchunks; i++) {
		uint64_t off = (uint64_t)i * r->chunk;

		r->lbs[i].mr = r->mr;
		r->lbs[i].addr = (uint8_t *)r->buf + off;
		r->lbs[i].len = r->len - off < r->chunk ? r->len - off : r->chunk;
	}
	return 0;
}

/* Issues chunk reads of r (a few in flight). 0, RDMX_E_FULL (no task:
 * retried after a completion), or an error. */
static int rdv_read(struct rdmx_chan *chan, struct rdv_rx *r)
{
	int rc;

	if (!r->buf) {
		rc = rdv_buffer(chan, r);
		if (rc)
			return rc;
	}
	while (r->next_chunk < r->nchunks && r->reads < CHAN_RDV_CHUNK_READS) {
		struct rdmx_buf *lb = &r->lbs[r->next_chunk];
		struct rdmx_rbuf rb = {
		    .mr = r->remote, .offset = (uint64_t)r->next_chunk * r->chunk, .len = lb->len};
		struct rdmx_task *task = NULL;

		rc = rdmx_task_read_alloc(chan->worker->ctx, chan->conn, &rb, lb, r, &task);
		rc = rdmx__chan_submit(chan, rc, task);
		if (rc)
			return rc;
		if (r->state == RDV_NEW) {
			r->state = RDV_READING;
			chan->rdv_reads++;
			chan->rdv_read_bytes += r->len;
		}
		r->next_chunk++;
		r->reads++;
		chan->inflight++;
	}
	return 0;
}

void rdmx__rdv_rx_start(struct rdmx_chan *chan)
{
	uint32_t seq = chan->rx_consumed, slot = chan->consumed_slot;

	/* in order, a few messages at a time; the head of the line always may */
	for (; seq != chan->rx_seq && chan->state == RDMX_CHAN_READY;
	     seq++, slot = rdmx__slot_next(slot, chan->slot_count)) {
		struct rdv_rx *r = chan->rx[slot].rdv;
		int rc;

		if (!r || r->state == RDV_DONE || r->next_chunk == r->nchunks)
			continue;
		if (r->state == RDV_NEW && seq != chan->rx_consumed &&
		    (chan->rdv_reads >= CHAN_RDV_MAX_READS ||
		     chan->rdv_read_bytes + r->len > 2 * chan->max_msg))
			break;
		rc = rdv_read(chan, r);
		if (rc == RDMX_E_FULL || rc == RDMX_E_BAD_STATE)
			break;
		if (rc) {
			RDMX_ERR("chan: conn %u: rendezvous read of %llu bytes: %s",
			         rdmx__chan_conn_id(chan), (unsigned long long)r->len,
			         rdmx_err_name(rc));
			rdmx__chan_fail(chan, rc, NULL);
			return;
		}
	}
}

/* One chunk read completed; returns the channel to continue with, or NULL
 * when the message was orphaned (its channel let go of it). */
static struct rdmx_chan *read_done(struct rdmx_task *task, struct rdv_rx *r, int status)
{
	struct rdmx_chan *chan = r->chan;
	uint64_t n = rdmx_task_get_local(task) ? rdmx_task_get_local(task)->len : 0;

	rdmx_task_free(task);
	r->reads--;
	if (status && !r->err)
		r->err = status;
	if (!status)
		r->done += n;
	if (r->orphan) {
		if (!r->reads)
			rdv_rx_release(r);
		return NULL;
	}
	chan->inflight--;
	if (r->done == r->len || (r->err && !r->reads)) {
		r->state = RDV_DONE;
		chan->rdv_reads--;
		chan->rdv_read_bytes -= r->len;
	}
	return chan;
}

void rdmx__chan_read_ok(struct rdmx_task *task, void *ud, void *cud)
{
	struct rdmx_chan *chan = read_done(task, ud, 0);

	(void)cud;
	if (!chan)
		return;
	if (chan->state == RDMX_CHAN_READY) {
		rdmx__rdv_rx_start(chan);
		rdmx__chan_deliver(chan);
	}
	rdmx__chan_maybe_free(chan);
}

void rdmx__chan_read_err(struct rdmx_task *task, void *ud, void *cud)
{
	struct rdv_rx *r = ud;
	int st = rdmx_task_get_status(task);
	uint64_t len = r->len;
	struct rdmx_chan *chan = read_done(task, r, st);

	(void)cud;
	if (!chan)
		return;
	if (chan->state != RDMX_CHAN_CLOSED && st != RDMX_E_CONN_ABORTED && st != RDMX_E_CANCELED)
		RDMX_ERR("chan: conn %u: rendezvous read of %llu bytes failed: %s",
		         rdmx__chan_conn_id(chan), (unsigned long long)len, rdmx_err_name(st));
	rdmx__chan_fail(chan, st, NULL);
	rdmx__chan_maybe_free(chan);
}
