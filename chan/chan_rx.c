/* Channel receive path: ring writes and control messages from the peer,
 * validation of everything the peer says, and in-order delivery.
 *
 * A message stays in its slot until the callback returned; the slot is then
 * freed and counted in rx_consumed, the cumulative credit the next header or
 * credit update carries back. Delivery stops at a rendezvous whose read has
 * not finished, so the order is kept. The callback of a rendezvous
 * message may keep its buffer (rdmx__chan_take_rx, bulk.c). */
#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

static void fail_fmt(struct rdmx_chan *chan, const char *what, uint64_t got, uint64_t want)
{
	RDMX_ERR("chan: conn %u: %s (got %llu, expected %llu)", rdmx__chan_conn_id(chan), what,
	         (unsigned long long)got, (unsigned long long)want);
	rdmx__chan_fail(chan, RDMX_E_PROTOCOL, what);
}

void rdmx__chan_on_write(struct rdmx_chan *chan, uint32_t imm, uint32_t len)
{
	struct rdmx__slot_expect exp;
	struct rdmx__slot_hdr h;
	const char *why = NULL;
	uint32_t slot, want_slot;
	struct rx_slot *rs;
	uint8_t *p;

	chan->rx_events++;
	if (chan->state != RDMX_CHAN_READY) {
		if (chan->state != RDMX_CHAN_CLOSED)
			rdmx__chan_fail(chan, RDMX_E_PROTOCOL, "ring write before the hello");
		goto out;
	}
	slot = rdmx__imm_slot(imm);
	want_slot = chan->rx_slot;
	if (slot != want_slot) {
		fail_fmt(chan, "ring write into the wrong slot", slot, want_slot);
		goto out;
	}
	if (rdmx__imm_seq16(imm) != (chan->rx_seq & 0xffffu)) {
		fail_fmt(chan, "ring write with a bad sequence number", rdmx__imm_seq16(imm),
		         chan->rx_seq & 0xffffu);
		goto out;
	}
	if (chan->rx_seq - chan->rx_consumed >= chan->slot_count) {
		fail_fmt(chan, "ring write beyond the credits granted",
		         chan->rx_seq - chan->rx_consumed + 1, chan->slot_count);
		goto out;
	}
	p = chan->ring + (size_t)slot * chan->slot_size;
	exp.seq = chan->rx_seq;
	exp.slot_payload = chan->slot_size - RDMX_CHAN_HDR_SIZE;
	exp.max_msg = chan->max_msg;
	exp.written = len;
	if (rdmx__slot_hdr_decode(p, &exp, &h, &why)) {
		RDMX_ERR("chan: conn %u: slot %u: written %u bytes, header len %u",
		         rdmx__chan_conn_id(chan), slot, len, rdmx__ld32(p + 4));
		rdmx__chan_fail(chan, RDMX_E_PROTOCOL, why);
		goto out;
	}
	if (!rdmx__credit_valid(h.credit, chan->tx_acked, chan->tx_seq)) {
		fail_fmt(chan, "credit beyond the messages sent", h.credit - chan->tx_acked,
		         chan->tx_seq - chan->tx_acked);
		goto out;
	}
	rs = &chan->rx[slot];
	rs->len = h.len;
	rs->rdv = NULL;
	if (h.flags & RDMX__SLOT_F_RDV) {
		if (rdmx__rdv_rx_new(chan, p + RDMX_CHAN_HDR_SIZE, h.len, &rs->rdv, &why)) {
			rdmx__chan_fail(chan, RDMX_E_PROTOCOL, why);
			goto out;
		}
		chan->stats.rendezvous_received++;
	}
	chan->rx_seq++;
	chan->rx_slot = rdmx__slot_next(chan->rx_slot, chan->slot_count);
	/* what the credits let go is sent when the delivery below ends (it
	 * pumps; a nested one leaves it to the outer one): a message given in
	 * its callback queues behind it, the order is kept */
	rdmx__chan_take_credit(chan, h.credit);
	if (chan->state != RDMX_CHAN_READY)
		goto out;
	if (rs->rdv || chan->rdv_reads)
		rdmx__rdv_rx_start(chan);
	rdmx__chan_deliver(chan);
out:
	rdmx__chan_maybe_free(chan);
}

void rdmx__chan_on_ctl(struct rdmx_chan *chan, const void *buf, uint32_t len)
{
	struct rdmx__ctl ctl;
	const char *why = NULL;

	chan->rx_events++;
	if (chan->state == RDMX_CHAN_CLOSED)
		goto out;
	if (rdmx__ctl_decode(buf, len, &ctl, &why)) {
		rdmx__chan_fail(chan, RDMX_E_PROTOCOL, why);
		goto out;
	}
	switch (ctl.type) {
	case RDMX__CTL_HELLO:
		if (chan->state == RDMX_CHAN_IDLE && !chan->has_early_hello) {
			memcpy(chan->early_hello, buf, RDMX__CTL_HELLO_LEN);
			chan->has_early_hello = true;
		} else if (chan->state == RDMX_CHAN_STARTING) {
			rdmx__chan_apply_hello(chan, &ctl.hello);
		} else {
			rdmx__chan_fail(chan, RDMX_E_PROTOCOL, "second hello");
		}
		break;
	case RDMX__CTL_CREDIT:
		if (chan->state != RDMX_CHAN_READY) {
			rdmx__chan_fail(chan, RDMX_E_PROTOCOL, "credit update before the hello");
			break;
		}
		if (!rdmx__credit_valid(ctl.credit, chan->tx_acked, chan->tx_seq)) {
			fail_fmt(chan, "credit beyond the messages sent",
			         ctl.credit - chan->tx_acked, chan->tx_seq - chan->tx_acked);
			break;
		}
		chan->stats.credit_updates_received++;
		rdmx__chan_on_credit(chan, ctl.credit);
		break;
	}
out:
	rdmx__chan_maybe_free(chan);
}

void rdmx__chan_deliver(struct rdmx_chan *chan)
{
	if (chan->delivering)
		return;
	chan->delivering = true;
	while (chan->state == RDMX_CHAN_READY && !chan->paused && chan->recv_cb &&
	       chan->rx_consumed != chan->rx_seq) {
		uint32_t slot = chan->consumed_slot;
		struct rx_slot *rs = &chan->rx[slot];
		struct rdv_rx *rdv = rs->rdv;
		const void *data;

		if (rdv) {
			if (rdv->state != RDV_DONE)
				break;
			data = rdv->buf;
		} else {
			data = chan->ring + (size_t)slot * chan->slot_size + RDMX_CHAN_HDR_SIZE;
		}
		chan->stats.msgs_received++;
		chan->stats.bytes_received += rs->len;
		chan->cb_depth++;
		chan->rx_cur = rdv;
		chan->recv_cb(chan, data, rs->len, chan->arg);
		chan->rx_cur = NULL;
		chan->cb_depth--;
		if (rdv) {
			rs->rdv = NULL;
			rdmx__rdv_rx_free(rdv);
			chan->rx_need_ack = true; /* the sender waits to release its source */
		}
		chan->rx_consumed++;
		chan->consumed_slot = rdmx__slot_next(slot, chan->slot_count);
	}
	chan->delivering = false;
	if (chan->state != RDMX_CHAN_READY)
		return;
	if (chan->rx_consumed != chan->rx_seq)
		rdmx__rdv_rx_start(chan);
	rdmx__chan_pump(chan);
}

int rdmx_chan_pause(struct rdmx_chan *chan)
{
	if (!chan)
		return RDMX_E_INVAL;
	chan->paused = true;
	return 0;
}

int rdmx_chan_resume(struct rdmx_chan *chan)
{
	if (!chan)
		return RDMX_E_INVAL;
	chan->paused = false;
	if (chan->state == RDMX_CHAN_READY && chan->rx_consumed != chan->rx_seq) {
		struct rdmx_chan_worker *worker = chan->worker;

		rdmx__worker_enter(worker);
		rdmx__chan_deliver(chan);
		rdmx__chan_maybe_free(chan); /* a callback may have destroyed it */
		rdmx__worker_leave(worker);
	}
	return 0;
}
