/* Channel send path: eager ring writes, the send queue, credits, control
 * sends (hello, credit updates) and their completions.
 *
 * Fast path (READY, queue empty, a credit and a free staging slot): the
 * payload is produced straight into the staging slot — or, from registered
 * memory, chained after the header — and one write-with-immediate goes out.
 * Nothing is allocated but the pooled task. Everything else waits in the
 * bounded send queue, in order, and the pump retries it on every credit
 * and completion. */
#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

#define STAGE_MAX_BYTES (64u << 20) /* staging mirror of the peer ring, at most */

static inline uint32_t chan_credits(const struct rdmx_chan *chan)
{
	uint32_t out = chan->tx_seq - chan->tx_acked;

	return out >= chan->tx_window ? 0 : chan->tx_window - out;
}

uint32_t rdmx_chan_get_credits(const struct rdmx_chan *chan)
{
	if (!chan || chan->state != RDMX_CHAN_READY)
		return 0;
	return chan_credits(chan);
}

static inline struct tx_slot *next_tx(const struct rdmx_chan *chan)
{
	return &chan->tx[chan->tx_slot];
}

static inline bool slot_free(const struct rdmx_chan *chan)
{
	return chan_credits(chan) > 0 && !next_tx(chan)->busy;
}

static inline uint32_t eager_eff(const struct rdmx_chan *chan)
{
	uint32_t cap = chan->peer_size - RDMX_CHAN_HDR_SIZE;

	return chan->eager < cap ? chan->eager : cap;
}

size_t rdmx__chan_get_eager_max(const struct rdmx_chan *chan)
{
	if (chan->state != RDMX_CHAN_READY)
		return 0;
	return eager_eff(chan);
}

static inline uint64_t send_limit(const struct rdmx_chan *chan)
{
	if (chan->peer_max_msg && chan->peer_max_msg < chan->max_msg)
		return chan->peer_max_msg;
	return chan->max_msg;
}

/* How many messages a writer into a ring of this geometry keeps in flight
 * at most: its staging mirror holds at most STAGE_MAX_BYTES of slots. */
static uint32_t stage_window(uint32_t slot_count, uint32_t slot_size)
{
	if ((uint64_t)slot_count * slot_size > STAGE_MAX_BYTES)
		return STAGE_MAX_BYTES / slot_size;
	return slot_count;
}

/* Freed slots are told once half of what the writer can have in flight is
 * consumed (half of our ring, or of its window when that is smaller: else a
 * one-way writer would wait on its full window for a threshold it can never
 * reach), or at once when asked. */
static inline bool credit_owed(const struct rdmx_chan *chan)
{
	uint32_t diff = chan->rx_consumed - chan->rx_reported;

	if (!diff)
		return false;
	return chan->credit_pending || chan->rx_need_ack || chan->eager_credit ||
	       diff >= (stage_window(chan->slot_count, chan->slot_size) + 1) / 2;
}

/* ---- control sends ---- */

static struct ctl_entry *ctl_get(struct rdmx_chan *chan)
{
	for (uint32_t i = 0; i < CHAN_CTL_ENTRIES; i++)
		if (!chan->ctl[i].busy)
			return &chan->ctl[i];
	return NULL;
}

/* 0, RDMX_E_FULL (retry after a completion), or an error that closes. */
static int ctl_send(struct rdmx_chan *chan, const void *msg, size_t len)
{
	struct ctl_entry *ce = ctl_get(chan);
	struct rdmx_task *task = NULL;
	int rc;

	if (!ce)
		return RDMX_E_FULL;
	memcpy(ce->buf.addr, msg, len);
	ce->buf.len = len;
	rc = rdmx_task_send_alloc(chan->worker->ctx, chan->conn, &ce->buf, ce, &task);
	rc = rdmx__chan_submit(chan, rc, task);
	if (rc)
		return rc;
	ce->busy = true;
	chan->inflight++;
	return 0;
}

void rdmx__chan_try_hello(struct rdmx_chan *chan)
{
	uint8_t msg[RDMX__CTL_HELLO_LEN];
	struct rdmx__hello h;
	int rc;

	if (!chan->hello_pending)
		return;
	h.slot_count = chan->slot_count;
	h.slot_size = chan->slot_size;
	h.max_msg = chan->max_msg;
	/* the provider holds at most RDMX__MSG_BACKLOG_MAX for us: a ring this
	 * size never has more in flight */
	h.flags = chan->worker->light && chan->slot_count <= RDMX__MSG_BACKLOG_MAX
	              ? RDMX__HELLO_F_MSG
	              : 0;
	/* the grant's bind (verbs) goes on the send queue before the hello */
	rc = rdmx__chan_grant_desc(chan, chan->ring_mr, 0, RDMX_ACCESS_REMOTE_WRITE,
	                           &chan->ring_grant, h.desc);
	if (rc) {
		if (rc == RDMX_E_FULL)
			rdmx__worker_add_starved(chan->worker, chan);
		else if (rc != RDMX_E_BAD_STATE) /* not connected yet: later */
			rdmx__chan_fail(chan, rc, NULL);
		return;
	}
	rdmx__ctl_hello_encode(&h, msg);
	rc = ctl_send(chan, msg, sizeof(msg));
	memset(msg, 0, sizeof(msg)); /* the descriptor is a secret */
	if (rc == 0)
		chan->hello_pending = false;
	else if (rc != RDMX_E_FULL && rc != RDMX_E_BAD_STATE) /* BAD_STATE: not connected yet */
		rdmx__chan_fail(chan, rc, NULL);
}

/* Sends a credit update carrying rx_consumed; on success the peer knows
 * every credit (nothing owed). 0, RDMX_E_FULL, or an error. */
static int credit_update_send(struct rdmx_chan *chan)
{
	uint8_t msg[RDMX__CTL_CREDIT_LEN];
	uint32_t credit = chan->rx_consumed;
	int rc;

	rdmx__ctl_credit_encode(credit, msg);
	rc = ctl_send(chan, msg, sizeof(msg));
	if (rc == 0) {
		chan->rx_reported = credit;
		chan->rx_need_ack = false;
		chan->credit_pending = false;
	}
	return rc;
}

static void chan_send_credit(struct rdmx_chan *chan)
{
	int rc = credit_update_send(chan);

	if (rc == 0) {
		chan->stats.credit_updates_sent++;
	} else if (rc == RDMX_E_FULL) {
		chan->credit_pending = true;
	} else {
		rdmx__chan_fail(chan, rc, NULL);
	}
}

/* ---- ring writes ---- */

/* Whether tx slot ts may go as a light message (engine/msg.h): both sides
 * take them, it is small, and no one waits for its completion. A light
 * message waits for no answer, so the transport timeout never sees a frozen
 * or vanished peer behind it: only the liveness probes (keepalive_ms), which
 * are requests, do. Without them every write stays a request. */
static bool light_write(const struct rdmx_chan *chan, const struct tx_slot *ts, bool wait)
{
	return chan->peer_light && !wait && chan->worker->attr.keepalive_ms &&
	       ts->hdr.len + (ts->hdr.next ? ts->hdr.next->len : 0) <= RDMX__MSG_MAX;
}

/* Posts the write of tx slot `ts` (header encoded, chain set) as message
 * tx_seq: a light message where it can (the slot is free again at once), a
 * write task otherwise (wait: its sender waits for its completion). 0,
 * RDMX_E_FULL, or an error. */
static int post_write(struct rdmx_chan *chan, struct tx_slot *ts, uint32_t credit, bool wait)
{
	uint32_t imm = rdmx__imm_make(chan->peer_slot, chan->tx_seq);
	struct rdmx_task *task = NULL;
	int rc;

	ts->dst.offset = (uint64_t)chan->peer_slot * chan->peer_size;
	if (!light_write(chan, ts, wait) ||
	    rdmx__conn_post_msg(chan->conn, &ts->hdr, &ts->dst, imm)) {
		rc = rdmx_task_write_imm_alloc(chan->worker->ctx, chan->conn, &ts->hdr, &ts->dst,
		                               imm, ts, &task);
		rc = rdmx__chan_submit(chan, rc, task);
		if (rc)
			return rc;
		ts->busy = true;
		chan->inflight++;
	}
	chan->tx_seq++;
	chan->tx_slot = rdmx__slot_next(chan->tx_slot, chan->tx_window);
	chan->peer_slot = rdmx__slot_next(chan->peer_slot, chan->peer_count);
	chan->rx_reported = credit;
	if (credit == chan->rx_consumed) {
		chan->rx_need_ack = false;
		chan->credit_pending = false;
	}
	chan->stats.msgs_sent++;
	return 0;
}

static void encode_hdr(struct rdmx_chan *chan, struct tx_slot *ts, uint8_t flags, uint64_t len)
{
	struct rdmx__slot_hdr h = {
	    .flags = flags,
	    .len = (uint32_t)len,
	    .seq = chan->tx_seq,
	    .credit = chan->rx_consumed,
	};

	rdmx__slot_hdr_encode(&h, ts->hdr.addr);
}

/* The caller's fill of the next staging slot: its error is the send's
 * answer (a positive one is RDMX_E_INVAL); nothing went anywhere. */
static int eager_fill(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg)
{
	int rc = fill((uint8_t *)next_tx(chan)->hdr.addr + RDMX_CHAN_HDR_SIZE, len, fill_arg);

	return rc > 0 ? RDMX_E_INVAL : rc;
}

/* Posts the eager write of ts with its sent callback cb. light (not NULL:
 * RDMX__SEND_LIGHT): cb may be skipped, for a light message, which is done
 * once posted; *light gets RDMX__SENT_LIGHT then. */
static int post_eager(struct rdmx_chan *chan, struct tx_slot *ts, uint32_t len,
                      rdmx_chan_sent_cb cb, void *arg, unsigned *light)
{
	int rc = post_write(chan, ts, chan->rx_consumed, cb && !light);

	if (rc)
		return rc;
	ts->len = len;
	chan->stats.bytes_sent += len;
	if (!ts->busy) {
		if (cb)
			*light |= RDMX__SENT_LIGHT;
		return 0;
	}
	ts->cb = cb;
	ts->arg = arg;
	return 0;
}

/* Eager from the bytes eager_fill put into the staging slot. */
static int write_eager_staged(struct rdmx_chan *chan, size_t len, rdmx_chan_sent_cb cb, void *arg,
                              unsigned *light)
{
	struct tx_slot *ts = next_tx(chan);

	encode_hdr(chan, ts, 0, len);
	ts->hdr.len = RDMX_CHAN_HDR_SIZE + len;
	ts->hdr.next = NULL;
	return post_eager(chan, ts, (uint32_t)len, cb, arg, light);
}

/* Eager from the caller's registered memory, chained after the header. */
static int write_eager_zc(struct rdmx_chan *chan, const struct rdmx_buf *ubuf, rdmx_chan_sent_cb cb,
                          void *arg, unsigned *light)
{
	struct tx_slot *ts = next_tx(chan);

	encode_hdr(chan, ts, 0, ubuf->len);
	if (chan->worker->max_sge >= 2 && ubuf->len) {
		ts->user = *ubuf;
		ts->user.next = NULL;
		ts->hdr.len = RDMX_CHAN_HDR_SIZE;
		ts->hdr.next = &ts->user;
	} else {
		memcpy((uint8_t *)ts->hdr.addr + RDMX_CHAN_HDR_SIZE, ubuf->addr, ubuf->len);
		ts->hdr.len = RDMX_CHAN_HDR_SIZE + ubuf->len;
		ts->hdr.next = NULL;
	}
	return post_eager(chan, ts, (uint32_t)ubuf->len, cb, arg, light);
}

/* The rendezvous descriptor of m (source already registered). */
static int write_rdv(struct rdmx_chan *chan, struct chan_msg *m)
{
	struct tx_slot *ts = next_tx(chan);
	uint32_t seq = chan->tx_seq;
	int rc;

	encode_hdr(chan, ts, RDMX__SLOT_F_RDV, m->len);
	rc = rdmx__chan_grant_desc(chan, m->rdv_mr, m->len, RDMX_ACCESS_REMOTE_READ, &m->rdv_grant,
	                           (uint8_t *)ts->hdr.addr + RDMX_CHAN_HDR_SIZE);
	if (rc) {
		/* RDMX_E_FULL: no send-queue slot for the grant's bind (verbs):
		 * pumped again when one of the channel's tasks comes back */
		if (rc == RDMX_E_FULL)
			rdmx__worker_add_starved(chan->worker, chan);
		return rc;
	}
	ts->hdr.len = RDMX_CHAN_HDR_SIZE + RDMX__RDV_PAYLOAD;
	ts->hdr.next = NULL;
	rc = post_write(chan, ts, chan->rx_consumed, false);
	if (rc)
		return rc;
	ts->cb = NULL;
	ts->len = RDMX__RDV_PAYLOAD;
	m->seq = seq;
	m->next = NULL;
	if (chan->rdv_tail)
		chan->rdv_tail->next = m;
	else
		chan->rdv_head = m;
	chan->rdv_tail = m;
	chan->rdv_tx++;
	chan->stats.rendezvous_sent++;
	chan->stats.bytes_sent += m->len;
	return 0;
}

static int copy_fill(void *dst, size_t len, void *arg)
{
	memcpy(dst, arg, len);
	return 0;
}

/* ---- the queue ---- */

static void q_push(struct rdmx_chan *chan, struct chan_msg *m)
{
	m->next = NULL;
	if (chan->q_tail)
		chan->q_tail->next = m;
	else
		chan->q_head = m;
	chan->q_tail = m;
	chan->q_len++;
	if (chan->q_len > chan->stats.queued_max)
		chan->stats.queued_max = chan->q_len;
}

/* Unlinks the head; `next` was read before the head was handed on (a
 * rendezvous message is relinked onto the ack list). */
static void q_pop(struct rdmx_chan *chan, struct chan_msg *next)
{
	chan->q_head = next;
	if (!next)
		chan->q_tail = NULL;
	chan->q_len--;
}

static void msg_free(struct rdmx_chan *chan, struct chan_msg *m)
{
	chan->held_bytes -= m->held;
	rdmx__chan_msg_release(chan, m);
	free(m);
}

/* 0: eager written (m may be freed); 1: rendezvous posted (m is on the rdv
 * list); RDMX_E_AGAIN / RDMX_E_FULL: wait; other: m fails. */
static int try_msg(struct rdmx_chan *chan, struct chan_msg *m)
{
	int rc;

	if (!slot_free(chan))
		return RDMX_E_AGAIN;
	if (m->len > send_limit(chan))
		return RDMX_E_TOO_BIG;
	if (m->len > eager_eff(chan)) {
		if (chan->rdv_tx >= CHAN_RDV_MAX_TX)
			return RDMX_E_AGAIN;
		if (!m->rdv_mr) {
			rc = rdmx__rdv_tx_prepare(chan, m);
			if (rc)
				return rc;
		}
		rc = write_rdv(chan, m);
		return rc ? rc : 1;
	}
	if (m->kind == MSG_ZC)
		return write_eager_zc(chan, &m->ubuf, m->cb, m->arg, NULL);
	eager_fill(chan, m->len, copy_fill, m->data); /* a copy: cannot fail */
	return write_eager_staged(chan, m->len, m->cb, m->arg, NULL);
}

static void run_idle(struct rdmx_chan *chan)
{
	if (chan->idle_cb && chan->state == RDMX_CHAN_READY && rdmx__chan_is_idle(chan)) {
		chan->cb_depth++;
		chan->idle_cb(chan, chan->idle_arg);
		chan->cb_depth--;
	}
}

void rdmx__chan_pump(struct rdmx_chan *chan)
{
	struct chan_msg *m;
	int rc;

	if (chan->state == RDMX_CHAN_CLOSED || chan->state == RDMX_CHAN_IDLE)
		return;
	if (chan->hello_pending)
		rdmx__chan_try_hello(chan);
	if (chan->state != RDMX_CHAN_READY)
		return;
	while ((m = chan->q_head)) {
		struct chan_msg *next = m->next;

		rc = try_msg(chan, m);
		if (rc == RDMX_E_AGAIN || rc == RDMX_E_FULL)
			break;
		q_pop(chan, next);
		if (rc == 0) {
			m->cb = NULL; /* moved into the tx slot */
			msg_free(chan, m);
		} else if (rc < 0) {
			/* this message cannot go (too big for the peer, no
			 * registration): fail it alone, or the channel when
			 * the engine refused the write */
			if (m->rdv_mr)
				rdmx__rdv_tx_finish(chan, m, rc);
			else {
				rdmx_chan_sent_cb cb = m->cb;
				void *arg = m->arg;

				msg_free(chan, m);
				if (cb) {
					chan->cb_depth++;
					cb(chan, rc, arg);
					chan->cb_depth--;
				}
			}
			if (rc != RDMX_E_TOO_BIG && rc != RDMX_E_NOMEM) {
				rdmx__chan_fail(chan, rc, NULL);
				return;
			}
		}
		if (chan->state != RDMX_CHAN_READY)
			return;
	}
	if (credit_owed(chan))
		chan_send_credit(chan);
	run_idle(chan);
}

/* ---- sending ---- */

static struct chan_msg *msg_new(enum chan_msg_kind kind, uint64_t len, rdmx_chan_sent_cb cb,
                                void *arg)
{
	struct chan_msg *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->kind = kind;
	m->len = len;
	m->cb = cb;
	m->arg = arg;
	return m;
}

/* A message for the queue or the rendezvous: a heap copy (from fill, or
 * from the staging slot a failed fast path already filled) or the caller's
 * buffer. */
static int msg_make(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                    const struct rdmx_buf *ubuf, const void *staged, rdmx_chan_sent_cb cb,
                    void *arg, struct chan_msg **out)
{
	struct chan_msg *m = msg_new(ubuf ? MSG_ZC : MSG_COPY, len, cb, arg);
	int rc;

	if (!m)
		return RDMX_E_NOMEM;
	if (ubuf) {
		m->ubuf = *ubuf;
		m->ubuf.next = NULL;
		m->data = ubuf->addr;
	} else {
		/* a rendezvous source: filled straight into a registered buffer
		 * of the worker's cache (no heap copy, no registration per
		 * message) */
		if (chan->state == RDMX_CHAN_READY && len > eager_eff(chan)) {
			rc = rdmx__regcache_get(&chan->worker->regc, chan, REGC_TX, len, &m->ent);
			if (rc) {
				free(m);
				return rc;
			}
			m->data = m->ent->buf;
		} else {
			m->data = malloc(len ? len : 1);
		}
		if (!m->data) {
			free(m);
			return RDMX_E_NOMEM;
		}
		if (staged)
			memcpy(m->data, staged, len);
		else if ((rc = fill(m->data, len, fill_arg)) != 0) {
			rdmx__chan_msg_release(chan, m);
			free(m);
			return rc > 0 ? RDMX_E_INVAL : rc;
		}
		m->held = len;
		chan->held_bytes += len;
	}
	*out = m;
	return 0;
}

static int chan_send(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                     const struct rdmx_buf *ubuf, rdmx_chan_sent_cb cb, void *arg, unsigned flags,
                     unsigned *how)
{
	const void *staged = NULL;
	struct chan_msg *m;
	bool ready;
	int rc;

	*how = 0;
	if (chan->state == RDMX_CHAN_IDLE || chan->state == RDMX_CHAN_CLOSED)
		return RDMX_E_BAD_STATE;
	if (len > send_limit(chan))
		return RDMX_E_TOO_BIG;
	ready = chan->state == RDMX_CHAN_READY;
	if (ready && !chan->q_head && slot_free(chan)) {
		if (len <= eager_eff(chan)) {
			/* the fill's own error fails this send alone */
			if (!ubuf && (rc = eager_fill(chan, len, fill, fill_arg)) != 0)
				return rc;
			unsigned *light = flags & RDMX__SEND_LIGHT ? how : NULL;

			rc = ubuf ? write_eager_zc(chan, ubuf, cb, arg, light)
			          : write_eager_staged(chan, len, cb, arg, light);
			if (rc == 0)
				return 0;
			if (rc != RDMX_E_FULL) {
				if (rc != RDMX_E_INVAL && rc != RDMX_E_NOMEM)
					rdmx__chan_fail(chan, rc, NULL);
				return rc;
			}
			if (!ubuf)
				staged = (uint8_t *)next_tx(chan)->hdr.addr + RDMX_CHAN_HDR_SIZE;
		} else if (chan->rdv_tx < CHAN_RDV_MAX_TX) {
			rc = msg_make(chan, len, fill, fill_arg, ubuf, NULL, cb, arg, &m);
			if (rc)
				return rc;
			rc = rdmx__rdv_tx_prepare(chan, m);
			if (rc) {
				msg_free(chan, m);
				return rc;
			}
			*how |= RDMX__SENT_RDV;
			rc = write_rdv(chan, m);
			if (rc == 0)
				return 0;
			if (rc != RDMX_E_FULL) {
				m->cb = NULL;
				rdmx__rdv_tx_finish(chan, m, rc);
				rdmx__chan_fail(chan, rc, NULL);
				return rc;
			}
			/* the engine is full: the prepared message waits in the queue */
			q_push(chan, m);
			*how |= RDMX__SENT_QUEUED;
			chan->stats.credit_stalls++;
			return 0;
		}
	}
	/* queue it, within the bounds unless forced */
	if (!(flags & RDMX__SEND_FORCE)) {
		uint64_t add = ubuf ? 0 : len;

		if (chan->q_len >= chan->queue_len ||
		    (add && chan->held_bytes && chan->held_bytes + add > chan->queue_bytes)) {
			chan->stats.again++;
			return RDMX_E_AGAIN;
		}
	}
	rc = msg_make(chan, len, fill, fill_arg, ubuf, staged, cb, arg, &m);
	if (rc)
		return rc;
	q_push(chan, m);
	*how |= RDMX__SENT_QUEUED;
	if (ready) {
		chan->stats.credit_stalls++;
		if (len > eager_eff(chan))
			*how |= RDMX__SENT_RDV;
	}
	return 0;
}

int rdmx__chan_send_ex(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                       rdmx_chan_sent_cb cb, void *arg, unsigned flags, unsigned *how)
{
	unsigned dummy;

	if (!chan || !fill)
		return RDMX_E_INVAL;
	return chan_send(chan, len, fill, fill_arg, NULL, cb, arg, flags, how ? how : &dummy);
}

int rdmx_chan_send(struct rdmx_chan *chan, const void *data, size_t len, rdmx_chan_sent_cb cb,
                   void *arg)
{
	unsigned how;

	if (!chan || (!data && len))
		return RDMX_E_INVAL;
	return chan_send(chan, len, copy_fill, (void *)data, NULL, cb, arg, 0, &how);
}

int rdmx_chan_send_fill(struct rdmx_chan *chan, size_t len, rdmx_chan_fill_fn fill, void *fill_arg,
                        rdmx_chan_sent_cb cb, void *arg)
{
	unsigned how;

	if (!chan || !fill)
		return RDMX_E_INVAL;
	return chan_send(chan, len, fill, fill_arg, NULL, cb, arg, 0, &how);
}

int rdmx_chan_send_buf(struct rdmx_chan *chan, const struct rdmx_buf *buf, rdmx_chan_sent_cb cb,
                       void *arg)
{
	void *base = NULL;
	size_t size = 0;
	unsigned how;

	if (!chan || !buf || !cb || buf->next || !buf->mr || (!buf->addr && buf->len))
		return RDMX_E_INVAL;
	/* the buffer must lie inside its region, on our device */
	if (rdmx_mr_get_ptr(buf->mr, &base) || rdmx_mr_get_size(buf->mr, &size))
		return RDMX_E_INVAL;
	if ((uintptr_t)buf->addr < (uintptr_t)base ||
	    buf->len > size - ((uintptr_t)buf->addr - (uintptr_t)base) ||
	    (uintptr_t)buf->addr - (uintptr_t)base > size)
		return RDMX_E_INVAL;
	return chan_send(chan, buf->len, NULL, NULL, buf, cb, arg, 0, &how);
}

void rdmx__chan_forget_cb(struct rdmx_chan *chan, rdmx_chan_sent_cb cb)
{
	for (struct chan_msg *m = chan->q_head; m; m = m->next)
		if (m->cb == cb)
			m->cb = NULL;
	for (struct chan_msg *m = chan->rdv_head; m; m = m->next)
		if (m->cb == cb)
			m->cb = NULL;
	for (uint32_t i = 0; chan->tx && i < chan->tx_window; i++)
		if (chan->tx[i].cb == cb)
			chan->tx[i].cb = NULL;
}

/* ---- the peer's hello and credits ---- */

static void keepalive_fired(struct rdmx__timer *t)
{
	struct rdmx_chan *chan =
	    (struct rdmx_chan *)((char *)t - offsetof(struct rdmx_chan, ka_timer));
	uint32_t ms = chan->worker->attr.keepalive_ms;

	if (chan->state != RDMX_CHAN_READY || !ms)
		return;
	if (chan->rx_events == chan->ka_seen && !chan->hello_pending) {
		/* nothing heard for a whole period: a probe the transport must
		 * deliver or fail (a credit update is always valid) */
		int rc = credit_update_send(chan);

		if (rc != 0 && rc != RDMX_E_FULL) {
			rdmx__chan_fail(chan, rc, NULL);
			rdmx__chan_maybe_free(chan);
			return;
		}
	}
	chan->ka_seen = chan->rx_events;
	rdmx__worker_timer_arm(chan->worker, &chan->ka_timer,
	                       rdmx__now_ns() + (uint64_t)ms * 1000000u);
}

void rdmx__chan_keepalive_start(struct rdmx_chan *chan)
{
	uint32_t ms = chan->worker->attr.keepalive_ms;

	chan->ka_timer.fn = keepalive_fired;
	if (ms)
		rdmx__worker_timer_arm(chan->worker, &chan->ka_timer,
		                       rdmx__now_ns() + (uint64_t)ms * 1000000u);
}

void rdmx__chan_apply_hello(struct rdmx_chan *chan, const struct rdmx__hello *h)
{
	struct rdmx_mr_remote *remote = NULL;
	unsigned access = 0;
	size_t rsize = 0;
	uint32_t win;
	size_t stage_len;

	if (rdmx_mr_remote_from_descriptor(h->desc, RDMX_MR_DESCRIPTOR_SIZE, &remote)) {
		rdmx__chan_fail(chan, RDMX_E_PROTOCOL, "hello with a malformed ring descriptor");
		return;
	}
	rdmx_mr_remote_get_size(remote, &rsize);
	rdmx_mr_remote_get_access(remote, &access);
	if ((uint64_t)rsize < (uint64_t)h->slot_count * h->slot_size ||
	    !(access & RDMX_ACCESS_REMOTE_WRITE)) {
		rdmx_mr_remote_delete(&remote);
		rdmx__chan_fail(chan, RDMX_E_PROTOCOL,
		                "hello ring descriptor smaller than its slots or not writable");
		return;
	}
	win = stage_window(h->slot_count, h->slot_size);
	stage_len = (size_t)win * h->slot_size;
	if (posix_memalign((void **)&chan->stage, 4096, stage_len)) {
		chan->stage = NULL;
		rdmx_mr_remote_delete(&remote);
		rdmx__chan_fail(chan, RDMX_E_NOMEM, NULL);
		return;
	}
	chan->tx = calloc(win, sizeof(*chan->tx));
	if (!chan->tx ||
	    rdmx_mr_reg(chan->worker->dev, chan->stage, stage_len, 0, &chan->stage_mr)) {
		rdmx_mr_remote_delete(&remote);
		rdmx__chan_fail(chan, RDMX_E_NOMEM, NULL);
		return;
	}
	chan->peer_ring = remote;
	chan->peer_count = h->slot_count;
	chan->peer_size = h->slot_size;
	chan->peer_max_msg = h->max_msg;
	chan->peer_light = (h->flags & RDMX__HELLO_F_MSG) && chan->worker->light;
	chan->tx_window = win;
	for (uint32_t i = 0; i < win; i++) {
		struct tx_slot *ts = &chan->tx[i];

		ts->chan = chan;
		ts->hdr.mr = chan->stage_mr;
		ts->hdr.addr = chan->stage + (size_t)i * h->slot_size;
		ts->dst.mr = remote;
		ts->dst.len = 0;
	}
	chan->state = RDMX_CHAN_READY;
	rdmx__chan_keepalive_start(chan);
	if (chan->event_cb) {
		chan->cb_depth++;
		chan->event_cb(chan, RDMX_CHAN_EV_READY, 0, chan->arg);
		chan->cb_depth--;
	}
	rdmx__chan_pump(chan);
}

void rdmx__chan_on_credit(struct rdmx_chan *chan, uint32_t credit)
{
	if (rdmx__chan_take_credit(chan, credit))
		rdmx__chan_pump(chan);
}

bool rdmx__chan_take_credit(struct rdmx_chan *chan, uint32_t credit)
{
	if (credit == chan->tx_acked)
		return false;
	chan->tx_acked = credit;
	/* rendezvous sources whose messages the peer consumed: read and done */
	while (chan->rdv_head && (int32_t)(credit - chan->rdv_head->seq) > 0) {
		struct chan_msg *m = chan->rdv_head;

		chan->rdv_head = m->next;
		if (!chan->rdv_head)
			chan->rdv_tail = NULL;
		chan->rdv_tx--;
		rdmx__rdv_tx_finish(chan, m, 0);
		if (chan->state == RDMX_CHAN_CLOSED)
			return false;
	}
	return true;
}

/* ---- completions ---- */

void rdmx__chan_write_ok(struct rdmx_task *task, void *ud, void *cud)
{
	struct tx_slot *ts = ud;
	struct rdmx_chan *chan = ts->chan;
	rdmx_chan_sent_cb cb = ts->cb;

	(void)cud;
	rdmx_task_free(task);
	chan->inflight--;
	ts->busy = false;
	ts->cb = NULL;
	if (cb) {
		chan->cb_depth++;
		cb(chan, 0, ts->arg);
		chan->cb_depth--;
	}
	rdmx__chan_pump(chan);
	rdmx__chan_maybe_free(chan);
}

/* The channel closes before the write's own callback runs (the owner's
 * close event comes first: rpc/ tells a request that never left the queue
 * by that order), and the callback is read from the slot after the close,
 * whose event may have made its owner forget it (rdmx__chan_forget_cb). */
void rdmx__chan_write_err(struct rdmx_task *task, void *ud, void *cud)
{
	struct tx_slot *ts = ud;
	struct rdmx_chan *chan = ts->chan;
	int st = rdmx_task_get_status(task);
	rdmx_chan_sent_cb cb;

	(void)cud;
	rdmx_task_free(task);
	chan->inflight--;
	ts->busy = false;
	if (st != RDMX_E_CONN_ABORTED && st != RDMX_E_CANCELED && chan->state != RDMX_CHAN_CLOSED)
		RDMX_ERR("chan: conn %u: ring write failed: %s", rdmx__chan_conn_id(chan),
		         rdmx_err_name(st));
	rdmx__chan_fail(chan, st, NULL);
	cb = ts->cb;
	ts->cb = NULL;
	if (cb) {
		chan->cb_depth++;
		cb(chan, st, ts->arg);
		chan->cb_depth--;
	}
	rdmx__chan_maybe_free(chan);
}

void rdmx__chan_send_ok(struct rdmx_task *task, void *ud, void *cud)
{
	struct ctl_entry *ce = ud;
	struct rdmx_chan *chan = ce->chan;

	(void)cud;
	rdmx_task_free(task);
	chan->inflight--;
	ce->busy = false;
	rdmx__chan_pump(chan);
	rdmx__chan_maybe_free(chan);
}

void rdmx__chan_send_err(struct rdmx_task *task, void *ud, void *cud)
{
	struct ctl_entry *ce = ud;
	struct rdmx_chan *chan = ce->chan;
	int st = rdmx_task_get_status(task);

	(void)cud;
	rdmx_task_free(task);
	chan->inflight--;
	ce->busy = false;
	rdmx__chan_fail(chan, st, NULL);
	rdmx__chan_maybe_free(chan);
}
