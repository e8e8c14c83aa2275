/* Message channel: settings, delivery, sizes, zero copy, order under load,
 * a stalled consumer, backpressure, close. */
#include "rpcfix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

__attribute__((unused)) static void dump(const char *tag, struct rdmx_chan *c)
{
	fprintf(
	    stderr,
	    "%s: state %d tx_seq %u tx_acked %u win %u q_len %u rdv_tx %u rx_seq %u "
	    "rx_consumed %u rx_reported %u need_ack %d credit_pending %d rdv_reads %u inflight %u "
	    "paused %d starved %d\n",
	    tag, c->state, c->tx_seq, c->tx_acked, c->tx_window, c->q_len, c->rdv_tx, c->rx_seq,
	    c->rx_consumed, c->rx_reported, c->rx_need_ack, c->credit_pending, c->rdv_reads,
	    c->inflight, c->paused, c->starved);
}

/* A received message: [u32 seq][u32 len][pattern(seed = seq)] (or shorter). */
struct sink {
	uint32_t n;   /* messages delivered */
	uint32_t bad; /* out of order, wrong length or corrupt */
	uint64_t bytes;
	int ready, closed, close_status;
	size_t last_len;
	uint8_t last[64];
};

static void sink_recv(struct rdmx_chan *chan, const void *data, size_t len, void *arg)
{
	struct sink *s = arg;
	uint32_t seq, want;

	(void)chan;
	s->bytes += len;
	s->last_len = len;
	memcpy(s->last, data, len < sizeof(s->last) ? len : sizeof(s->last));
	if (len >= 8) {
		memcpy(&seq, data, 4);
		memcpy(&want, (const uint8_t *)data + 4, 4);
		if (seq != s->n || want != len ||
		    !pattern_check((const uint8_t *)data + 8, len - 8, seq))
			s->bad++;
	}
	s->n++;
}

static void sink_event(struct rdmx_chan *chan, enum rdmx_chan_event ev, int status, void *arg)
{
	struct sink *s = arg;

	(void)chan;
	if (ev == RDMX_CHAN_EV_READY)
		s->ready++;
	else {
		s->closed++;
		s->close_status = status;
	}
}

static void *make_msg(uint32_t seq, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);
	uint32_t l32 = (uint32_t)len;

	cr_assert_not_null(p);
	if (len >= 8) {
		memcpy(p, &seq, 4);
		memcpy(p + 4, &l32, 4);
		pattern_fill(p + 8, len - 8, seq);
	} else {
		memset(p, 0x5a, len);
	}
	return p;
}

static int copy_fill_for_test(void *dst, size_t len, void *arg)
{
	memcpy(dst, arg, len);
	return 0;
}

static int send_msg(struct rdmx_chan *c, uint32_t seq, size_t len, rdmx_chan_sent_cb cb, void *arg)
{
	void *p = make_msg(seq, len);
	int rc = rdmx_chan_send(c, p, len, cb, arg);

	free(p);
	return rc;
}

struct sent_log {
	int ok, err, last_status;
};

static void sent_cb(struct rdmx_chan *chan, int status, void *arg)
{
	struct sent_log *l = arg;

	(void)chan;
	if (status == 0)
		l->ok++;
	else
		l->err++;
	l->last_status = status;
}

Test(chan, basic_both_ways)
{
	struct node a, b;
	struct sink sa = {0}, sb = {0};
	struct chan_conf ca = {.recv_cb = sink_recv, .event_cb = sink_event, .arg = &sa};
	struct chan_conf cb = {.recv_cb = sink_recv, .event_cb = sink_event, .arg = &sb};
	struct rdmx_chan *x, *y;
	struct sent_log sl = {0};

	leak_begin();
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	cr_assert_eq(sa.ready, 1);
	cr_assert_eq(sb.ready, 1);
	ASSERT_OK(send_msg(x, 0, 100, sent_cb, &sl));
	ASSERT_OK(send_msg(y, 0, 200, NULL, NULL));
	ASSERT_OK(rdmx_chan_send(x, "", 0, NULL, NULL)); /* empty message */
	DRIVE_UNTIL(&a, &b, sb.n == 2 && sa.n == 1 && sl.ok == 1);
	cr_assert_eq(sb.bad, 0);
	cr_assert_eq(sa.bad, 0);
	cr_assert_eq(sb.last_len, 0);
	cr_assert_eq(sl.err, 0);
	struct rdmx_chan_stats st;
	ASSERT_OK(rdmx_chan_get_stats(x, &st));
	cr_assert_eq(st.msgs_sent, 2);
	cr_assert_eq(st.bytes_sent, 100);
	ASSERT_OK(rdmx_chan_get_stats(y, &st));
	cr_assert_eq(st.msgs_received, 2);
	ASSERT_OK(rdmx_chan_destroy(&x));
	cr_assert_null(x);
	DRIVE_UNTIL(&a, &b, sb.closed == 1);
	cr_assert(conn_lost_status(sb.close_status), "closed with %s",
	          rdmx_err_name(sb.close_status));
	cr_assert_eq(rdmx_chan_get_state(y), RDMX_CHAN_CLOSED);
	ASSERT_RC(rdmx_chan_send(y, "x", 1, NULL, NULL), RDMX_E_BAD_STATE);
	ASSERT_OK(rdmx_chan_destroy(&y));
	ASSERT_OK(rdmx_chan_destroy(&y)); /* NULL: no-op */
	node_close(&a);
	node_close(&b);
	leak_end();
}

/* Small eager writes go as light messages where the provider has them (the
 * tcp device): a send with RDMX__SEND_LIGHT is done at once and its callback
 * never runs; without the flag the callback runs at the write's completion;
 * a message too big for a light one is a write task, as on verbs. */
Test(chan, light_messages_where_the_provider_has_them)
{
	struct node a, b;
	struct sink sa = {0}, sb = {0};
	struct chan_conf ca = {.recv_cb = sink_recv, .event_cb = sink_event, .arg = &sa};
	struct chan_conf cb = {.recv_cb = sink_recv, .event_cb = sink_event, .arg = &sb};
	struct rdmx_chan *x, *y;
	struct sent_log light = {0}, plain = {0}, large = {0};
	void *p;
	unsigned how = 0;

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	cr_assert_eq(x->peer_light, a.tcp && b.tcp, "light messages %s on this device",
	             x->peer_light ? "used" : "not used");
	/* a light message waits behind requests not yet answered (the hello) */
	ASSERT_OK(send_msg(x, 0, 100, NULL, NULL));
	DRIVE_UNTIL(&a, &b, sb.n == 1 && x->inflight == 0);
	p = make_msg(1, 100);
	ASSERT_OK(rdmx__chan_send_ex(x, 100, copy_fill_for_test, p, sent_cb, &light,
	                             RDMX__SEND_LIGHT, &how));
	cr_assert_eq(!!(how & RDMX__SENT_LIGHT), x->peer_light);
	free(p);
	p = make_msg(2, 100);
	ASSERT_OK(rdmx_chan_send(x, p, 100, sent_cb, &plain));
	free(p);
	p = make_msg(3, RDMX__MSG_MAX + 64);
	ASSERT_OK(rdmx_chan_send(x, p, RDMX__MSG_MAX + 64, sent_cb, &large));
	DRIVE_UNTIL(&a, &b, sb.n == 4 && plain.ok == 1 && large.ok == 1);
	cr_assert_eq(sb.bad, 0);
	cr_assert_eq(light.ok, x->peer_light ? 0 : 1, "the light send's callback ran %d times",
	             light.ok);
	free(p);
	ASSERT_OK(rdmx_chan_destroy(&x));
	DRIVE_UNTIL(&a, &b, sb.closed == 1);
	ASSERT_OK(rdmx_chan_destroy(&y));
	node_close(&a);
	node_close(&b);
}

Test(chan, settings_and_limits)
{
	struct node a, b;
	struct rdmx_conn *x, *y;
	struct rdmx_chan *p, *q;
	uint32_t v32;
	uint64_t v64;

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	conn_pair(&a, &b, &x, &y);
	ASSERT_OK(rdmx_chan_create(a.worker, x, &p));
	ASSERT_RC(rdmx_chan_create(a.worker, x, &q), RDMX_E_EXISTS);
	ASSERT_OK(rdmx_chan_create(b.worker, y, &q));
	/* defaults */
	ASSERT_OK(rdmx_chan_get_slot_count(p, &v32));
	cr_assert_eq(v32, RDMX_CHAN_DEFAULT_SLOT_COUNT);
	ASSERT_OK(rdmx_chan_get_slot_size(p, &v32));
	cr_assert_eq(v32, RDMX_CHAN_DEFAULT_SLOT_SIZE);
	ASSERT_OK(rdmx_chan_get_max_msg_size(p, &v64));
	cr_assert_eq(v64, RDMX_CHAN_DEFAULT_MAX_MSG_SIZE);
	ASSERT_OK(rdmx_chan_get_eager_threshold(p, &v32));
	cr_assert_eq(v32, RDMX_CHAN_DEFAULT_SLOT_SIZE - RDMX_CHAN_HDR_SIZE);
	/* ranges */
	ASSERT_RC(rdmx_chan_set_slot_count(p, 1), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_set_slot_count(p, 65537), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_set_slot_size(p, 100), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_set_slot_size(p, 32), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_set_max_msg_size(p, 0), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_set_max_msg_size(p, (1ull << 30) + 1), RDMX_E_INVAL);
	ASSERT_OK(rdmx_chan_set_slot_count(p, 16));
	ASSERT_OK(rdmx_chan_set_slot_size(p, 1024));
	ASSERT_OK(rdmx_chan_set_max_msg_size(p, 1 << 20));
	ASSERT_OK(rdmx_chan_set_slot_count(q, 32));
	ASSERT_OK(rdmx_chan_set_slot_size(q, 512));
	ASSERT_OK(rdmx_chan_set_max_msg_size(q, 4096));
	ASSERT_RC(rdmx_chan_send(p, "x", 1, NULL, NULL), RDMX_E_BAD_STATE); /* IDLE */
	ASSERT_OK(rdmx_chan_start(p));
	ASSERT_RC(rdmx_chan_start(p), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_chan_set_slot_count(p, 8), RDMX_E_BAD_STATE);
	ASSERT_RC(rdmx_chan_set_max_msg_size(p, 8), RDMX_E_BAD_STATE);
	ASSERT_OK(rdmx_chan_start(q));
	DRIVE_UNTIL(&a, &b,
	            rdmx_chan_get_state(p) == RDMX_CHAN_READY &&
	                rdmx_chan_get_state(q) == RDMX_CHAN_READY);
	/* effective values once both hellos are in */
	ASSERT_OK(rdmx_chan_get_max_msg_size(p, &v64));
	cr_assert_eq(v64, 4096, "p's send limit is the peer's 4096, got %llu",
	             (unsigned long long)v64);
	ASSERT_OK(rdmx_chan_get_max_msg_size(q, &v64));
	cr_assert_eq(v64, 4096);
	ASSERT_OK(rdmx_chan_get_eager_threshold(p, &v32));
	cr_assert_eq(v32, 512 - RDMX_CHAN_HDR_SIZE, "capped by the peer's slot payload");
	ASSERT_OK(rdmx_chan_set_eager_threshold(p, 100));
	ASSERT_OK(rdmx_chan_get_eager_threshold(p, &v32));
	cr_assert_eq(v32, 100);
	cr_assert_eq(rdmx_chan_get_credits(p), 32);
	cr_assert_eq(rdmx_chan_get_credits(q), 16);
	void *big = calloc(1, 4097);
	ASSERT_RC(rdmx_chan_send(p, big, 4097, NULL, NULL), RDMX_E_TOO_BIG);
	free(big);
	ASSERT_RC(rdmx_chan_send(NULL, "x", 1, NULL, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_chan_send_buf(p, NULL, sent_cb, NULL), RDMX_E_INVAL);
	chan_pair_close(&p, &q, &a, &b);
}

/* Every size class: around the slot payload and the raw slot size, then 1 B
 * to 64 MiB by powers of two, in one ordered stream. */
Test(chan, sizes_eager_and_rendezvous, .timeout = 900)
{
	struct node a, b;
	struct sink sb = {0};
	const uint32_t slot = 4096, payload = slot - RDMX_CHAN_HDR_SIZE;
	struct chan_conf ca = {.slot_count = 16, .slot_size = slot, .max_msg = 64u << 20};
	struct chan_conf cb = {.slot_count = 16,
	                       .slot_size = slot,
	                       .max_msg = 64u << 20,
	                       .recv_cb = sink_recv,
	                       .arg = &sb};
	struct rdmx_chan *x, *y;
	size_t sizes[64];
	int n = 0;

	sizes[n++] = payload - 1;
	sizes[n++] = payload;
	sizes[n++] = payload + 1;
	sizes[n++] = slot - 1;
	sizes[n++] = slot;
	sizes[n++] = slot + 1;
	for (size_t s = 8; s <= (64u << 20); s *= 2)
		sizes[n++] = s;
	sizes[n++] = 1; /* below the 8-byte tag: length only */
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	for (int i = 0; i < n; i++) {
		uint32_t before = sb.n;
		struct sent_log sl = {0};

		uint64_t t0 = now_ms();

		/* failure guard scaled for emulated Soft-RoCE (under 1 MiB/s) */
		uint64_t guard = t0 + GUARD_MS + 4000u * (sizes[i] >> 20);

		ASSERT_OK(send_msg(x, (uint32_t)i, sizes[i], sent_cb, &sl));
		while (!(sb.n == before + 1 && sl.ok + sl.err == 1)) {
			cr_assert(now_ms() < guard, "message %d of %zu bytes not delivered", i,
			          sizes[i]);
			drive_once(&a, &b);
		}
		if (sizes[i] >= (1u << 20))
			fprintf(stderr, "sizes: %zu bytes in %llu ms\n", sizes[i],
			        (unsigned long long)(now_ms() - t0));
		cr_assert_eq(sl.err, 0, "send of %zu bytes failed: %s", sizes[i],
		             rdmx_err_name(sl.last_status));
		cr_assert_eq(sb.bad, 0, "message %d of %zu bytes corrupt or out of order", i,
		             sizes[i]);
		cr_assert_eq(sb.last_len, sizes[i]);
		sb.n = (uint32_t)i + 1;
	}
	struct rdmx_chan_stats st;
	ASSERT_OK(rdmx_chan_get_stats(x, &st));
	cr_assert(st.rendezvous_sent >= 18, "rendezvous sent %llu",
	          (unsigned long long)st.rendezvous_sent);
	ASSERT_OK(rdmx_chan_get_stats(y, &st));
	cr_assert_eq(st.rendezvous_received, st.rendezvous_received);
	chan_pair_close(&x, &y, &a, &b);
}

/* Pipelined mix of eager and rendezvous messages: order and exactly once. */
Test(chan, ordered_mix_pipelined, .timeout = 600)
{
	struct node a, b;
	struct sink sb = {0};
	struct chan_conf ca = {.slot_count = 32, .slot_size = 1024};
	struct chan_conf cb = {
	    .slot_count = 32, .slot_size = 1024, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	const uint32_t total = 5000;
	uint32_t sent = 0;
	struct sent_log sl = {0};

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	srand(7);
	uint64_t guard = now_ms() + GUARD_MS;
	while (sb.n < total) {
		cr_assert(now_ms() < guard, "stuck at %u of %u", sb.n, total);
		while (sent < total) {
			size_t len = 8 + (size_t)(rand() % 3000);
			int rc = send_msg(x, sent, len, sent_cb, &sl);

			if (rc == RDMX_E_AGAIN)
				break;
			ASSERT_OK(rc);
			sent++;
		}
		drive_once(&a, &b);
	}
	DRIVE_UNTIL(&a, &b, sl.ok == (int)total);
	cr_assert_eq(sb.bad, 0);
	cr_assert_eq(sb.n, total);
	cr_assert_eq(sl.err, 0);
	chan_pair_close(&x, &y, &a, &b);
}

/* Zero copy from registered memory, eager and rendezvous. */
Test(chan, zero_copy_send_buf)
{
	struct node a, b;
	struct sink sb = {0};
	struct chan_conf ca = {.slot_count = 8, .slot_size = 2048};
	struct chan_conf cb = {
	    .slot_count = 8, .slot_size = 2048, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	const size_t len = 1 << 20;
	uint8_t *mem = aligned_alloc(4096, len);
	struct rdmx_mr *mr;
	struct sent_log sl = {0};

	cr_assert_not_null(mem);
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	ASSERT_OK(rdmx_mr_reg(a.dev, mem, len, 0, &mr));
	/* eager: 1000 bytes, the header chained before the caller's buffer */
	void *m0 = make_msg(0, 1000);
	memcpy(mem, m0, 1000);
	free(m0);
	struct rdmx_buf b0 = {.mr = mr, .addr = mem, .len = 1000};
	ASSERT_OK(rdmx_chan_send_buf(x, &b0, sent_cb, &sl));
	DRIVE_UNTIL(&a, &b, sb.n == 1 && sl.ok == 1);
	/* rendezvous: 512 KiB from an offset inside the region */
	void *m1 = make_msg(1, 512 << 10);
	memcpy(mem + 4096, m1, 512 << 10);
	free(m1);
	struct rdmx_buf b1 = {.mr = mr, .addr = mem + 4096, .len = 512 << 10};
	ASSERT_OK(rdmx_chan_send_buf(x, &b1, sent_cb, &sl));
	DRIVE_UNTIL(&a, &b, sb.n == 2 && sl.ok == 2);
	cr_assert_eq(sb.bad, 0);
	/* outside the region */
	struct rdmx_buf bad = {.mr = mr, .addr = mem + len - 10, .len = 20};
	ASSERT_RC(rdmx_chan_send_buf(x, &bad, sent_cb, &sl), RDMX_E_INVAL);
	struct rdmx_buf chain = {.mr = mr, .addr = mem, .len = 10, .next = &b0};
	ASSERT_RC(rdmx_chan_send_buf(x, &chain, sent_cb, &sl), RDMX_E_INVAL);
	ASSERT_OK(rdmx_chan_destroy(&x));
	ASSERT_OK(rdmx_chan_destroy(&y));
	ASSERT_OK(rdmx_ctx_stop(a.ctx));
	ASSERT_OK(rdmx_mr_dereg(&mr)); /* no task of the stopped context uses it */
	node_close(&a);
	node_close(&b);
	free(mem);
}

/* A consumer that stops: its sender stalls once the ring is full, the send
 * queue is bounded (RDMX_E_AGAIN beyond it), and everything is delivered
 * exactly once, in order, after it resumes. */
Test(chan, stalled_consumer_bounded)
{
	struct node a, b;
	struct sink sb = {0};
	const uint32_t slots = 16, qlen = 40;
	struct chan_conf ca = {.slot_count = slots, .slot_size = 1024, .queue_len = qlen};
	struct chan_conf cb = {
	    .slot_count = slots, .slot_size = 1024, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	struct sent_log sl = {0};
	uint32_t accepted = 0;
	int rc;

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	ASSERT_OK(rdmx_chan_pause(y));
	/* fill: the ring takes `slots`, the queue `qlen`, then AGAIN */
	for (;;) {
		rc = send_msg(x, accepted, 100 + accepted % 800, sent_cb, &sl);
		if (rc == RDMX_E_AGAIN)
			break;
		ASSERT_OK(rc);
		accepted++;
		cr_assert(accepted <= slots + qlen, "accepted %u > ring %u + queue %u", accepted,
		          slots, qlen);
		drive_for(&a, &b, 1);
	}
	drive_for(&a, &b, 300); /* observation window: nothing may move */
	cr_assert_eq(sb.n, 0, "a paused consumer got %u messages", sb.n);
	cr_assert_eq(rdmx_chan_get_credits(x), 0);
	cr_assert_eq(rdmx_chan_get_queued(x), accepted - slots);
	cr_assert_eq(accepted, slots + qlen);
	struct rdmx_chan_stats st;
	ASSERT_OK(rdmx_chan_get_stats(x, &st));
	cr_assert(st.credit_stalls >= qlen);
	cr_assert(st.again >= 1);
	cr_assert_eq(st.queued_max, qlen);
	ASSERT_RC(send_msg(x, 999, 10, NULL, NULL), RDMX_E_AGAIN);
	/* resume: everything arrives once, in order */
	ASSERT_OK(rdmx_chan_resume(y));
	DRIVE_UNTIL(&a, &b, sb.n == accepted && sl.ok == (int)accepted);
	cr_assert_eq(sb.bad, 0);
	drive_for(&a, &b, 50);
	cr_assert_eq(sb.n, accepted, "delivered twice?");
	/* and the stream goes on */
	ASSERT_OK(send_msg(x, accepted, 64, NULL, NULL));
	DRIVE_UNTIL(&a, &b, sb.n == accepted + 1);
	cr_assert_eq(sb.bad, 0);
	chan_pair_close(&x, &y, &a, &b);
}

/* The 32-bit sequence number wraps: a ring of a count that is no power of
 * two (3) keeps one slot per message in flight across it. Slots counted
 * from the sequence number put message 2^32 - 1 and message 0 into one
 * slot: with the consumer paused the second overwrote the first. */
Test(chan, sequence_wrap_keeps_slots_apart)
{
	struct node a, b;
	struct sink sb = {0};
	const uint32_t slots = 3, start = UINT32_MAX - 1u, total = 20;
	struct chan_conf ca = {.slot_count = slots, .slot_size = 256};
	struct chan_conf cb = {
	    .slot_count = slots, .slot_size = 256, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	struct sent_log sl = {0};

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	cr_assert(x->tx_seq == 0 && y->rx_seq == 0, "the channel moved before the test");
	/* as if 2^32 - 2 messages had gone x -> y and been consumed */
	x->tx_seq = x->tx_acked = start;
	y->rx_seq = y->rx_consumed = y->rx_reported = start;
	ASSERT_OK(rdmx_chan_pause(y));
	for (uint32_t i = 0; i < slots; i++)
		ASSERT_OK(send_msg(x, i, 64 + i, sent_cb, &sl));
	DRIVE_UNTIL(&a, &b, rdmx_chan_get_credits(x) == 0 && sl.ok == (int)slots);
	ASSERT_OK(rdmx_chan_resume(y));
	DRIVE_UNTIL(&a, &b, sb.n == slots);
	cr_assert_eq(sb.bad, 0, "%u of the messages across the wrap came wrong", sb.bad);
	for (uint32_t i = slots; i < total; i++) {
		ASSERT_OK(send_msg(x, i, 64 + i, sent_cb, &sl));
		DRIVE_UNTIL(&a, &b, sb.n == i + 1);
	}
	cr_assert_eq(sb.bad, 0);
	cr_assert_eq(y->rx_seq, start + total); /* wrapped */
	chan_pair_close(&x, &y, &a, &b);
}

/* A fill that refuses: its error is the send's answer, nothing is sent, and
 * the channel goes on; whatever code it uses (once, RDMX_E_FULL queued the
 * half-filled slot and answered 0; other codes closed the channel). */
static int refuse_fill(void *dst, size_t len, void *arg)
{
	memset(dst, 'X', len / 2);
	return *(const int *)arg;
}

Test(chan, fill_error_fails_that_send_alone)
{
	static const int codes[] = {RDMX_E_FULL, RDMX_E_TOO_BIG, RDMX_E_PROTOCOL, 7};
	struct node a, b;
	struct sink sb = {0};
	struct chan_conf ca = {.slot_count = 4, .slot_size = 256};
	struct chan_conf cb = {.slot_count = 4, .slot_size = 256, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	struct sent_log sl = {0};

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		int rc = rdmx_chan_send_fill(x, 40, refuse_fill, (void *)&codes[i], sent_cb, &sl);

		cr_assert_eq(rc, codes[i] > 0 ? RDMX_E_INVAL : codes[i],
		             "fill %d: send answered %d", codes[i], rc);
		cr_assert_eq(x->state, RDMX_CHAN_READY, "fill %d closed the channel", codes[i]);
		cr_assert_eq(rdmx_chan_get_queued(x), 0, "fill %d: something was queued", codes[i]);
	}
	drive_for(&a, &b, 20);
	cr_assert_eq(sb.n, 0, "a refused message arrived");
	cr_assert_eq(sl.ok + sl.err, 0, "a refused send's callback ran");
	ASSERT_OK(send_msg(x, 0, 40, sent_cb, &sl));
	DRIVE_UNTIL(&a, &b, sb.n == 1 && sl.ok == 1);
	cr_assert_eq(sb.bad, 0);
	chan_pair_close(&x, &y, &a, &b);
}

/* A ring of large slots whose writer keeps fewer in flight than half the
 * ring (130 slots of 1 MiB: the writer stages 64): one-way traffic with no
 * liveness probes must still get its credits back (the receiver waited for
 * 65 consumed before telling, the writer stopped at 64: stalled for good). */
Test(chan, one_way_credits_within_the_writers_window, .timeout = 120)
{
	struct node a, b;
	struct rdmx_chan_worker_attr attr;
	struct sink sb = {0};
	const uint32_t total = 200;
	struct chan_conf ca = {.slot_count = 4, .slot_size = 256};
	struct chan_conf cb = {
	    .slot_count = 130, .slot_size = 1u << 20, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	uint32_t sent = 0;

	rdmx_chan_worker_attr_init(&attr);
	attr.keepalive_ms = 0;
	node_open(&a, "a", 0, &attr);
	node_open(&b, "b", 1, &attr);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	cr_assert_eq(x->tx_window, 64);
	while (sb.n < total) {
		while (sent < total && rdmx_chan_get_credits(x) > 0)
			ASSERT_OK(send_msg(x, sent++, 64, NULL, NULL));
		DRIVE_UNTIL(&a, &b,
		            sb.n == sent && (sent == total || rdmx_chan_get_credits(x) > 0));
	}
	cr_assert_eq(sb.bad, 0);
	chan_pair_close(&x, &y, &a, &b);
}

/* Two channels of one receiving worker whose pool holds one rendezvous
 * read: the second channel's read waits for the first one's task, and runs
 * when it comes back (a channel starved of a read was given its sends back,
 * never its read: its message hung until another one arrived). */
Test(chan, rendezvous_read_waits_for_the_pool)
{
	struct node a, b;
	struct rdmx_chan_worker_attr attr;
	struct sink s1 = {0}, s2 = {0};
	struct chan_conf ca = {.slot_count = 8, .slot_size = 1024};
	struct chan_conf c1 = {
	    .slot_count = 8, .slot_size = 1024, .recv_cb = sink_recv, .arg = &s1};
	struct chan_conf c2 = {
	    .slot_count = 8, .slot_size = 1024, .recv_cb = sink_recv, .arg = &s2};
	struct rdmx_chan *x1, *y1, *x2, *y2;
	struct sent_log sl = {0};

	rdmx_chan_worker_attr_init(&attr);
	attr.read_tasks = 1;
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, &attr);
	chan_pair(&a, &b, &ca, &c1, &x1, &y1, true);
	chan_pair(&a, &b, &ca, &c2, &x2, &y2, true);
	ASSERT_OK(send_msg(x1, 0, 256u << 10, sent_cb, &sl));
	ASSERT_OK(send_msg(x2, 0, 256u << 10, sent_cb, &sl));
	DRIVE_UNTIL(&a, &b, s1.n == 1 && s2.n == 1 && sl.ok == 2);
	cr_assert_eq(s1.bad + s2.bad, 0);
	ASSERT_OK(rdmx_chan_destroy(&x1));
	ASSERT_OK(rdmx_chan_destroy(&y1));
	chan_pair_close(&x2, &y2, &a, &b);
}

/* Everything by rendezvous (eager threshold 0), with the consumer slower. */
Test(chan, eager_threshold_zero)
{
	struct node a, b;
	struct sink sb = {0};
	struct chan_conf ca = {.slot_count = 4, .slot_size = 256};
	struct chan_conf cb = {.slot_count = 4, .slot_size = 256, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	struct sent_log sl = {0};

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	ASSERT_OK(rdmx_chan_set_eager_threshold(x, 0));
	for (uint32_t i = 0; i < 50; i++)
		ASSERT_OK(send_msg(x, i, 8 + i * 37, sent_cb, &sl));
	DRIVE_UNTIL(&a, &b, sb.n == 50 && sl.ok == 50);
	cr_assert_eq(sb.bad, 0);
	struct rdmx_chan_stats st;
	ASSERT_OK(rdmx_chan_get_stats(x, &st));
	cr_assert_eq(st.rendezvous_sent, 50);
	ASSERT_OK(rdmx_chan_get_stats(y, &st));
	cr_assert_eq(st.rendezvous_received, 50);
	chan_pair_close(&x, &y, &a, &b);
}

/* Closing with sends queued: each completes once with an error. */
Test(chan, close_fails_queued_once)
{
	struct node a, b;
	struct chan_conf ca = {.slot_count = 4, .slot_size = 256, .queue_len = 100};
	struct chan_conf cb = {.slot_count = 4, .slot_size = 256};
	struct rdmx_chan *x, *y;
	struct sent_log sl = {0};

	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, NULL);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	ASSERT_OK(rdmx_chan_pause(y));
	for (uint32_t i = 0; i < 20; i++)
		ASSERT_OK(send_msg(x, i, 100, sent_cb, &sl));
	ASSERT_OK(send_msg(x, 20, 5000, sent_cb, &sl)); /* a rendezvous in the queue too */
	DRIVE_UNTIL(&a, &b, sl.ok == 4);
	ASSERT_OK(rdmx_chan_destroy(&y)); /* the peer goes away */
	DRIVE_UNTIL(&a, &b, sl.ok + sl.err == 21);
	drive_for(&a, &b, 50);
	cr_assert_eq(sl.ok + sl.err, 21, "a send completed twice");
	cr_assert_eq(sl.ok, 4);
	cr_assert_eq(rdmx_chan_get_state(x), RDMX_CHAN_CLOSED);
	ASSERT_OK(rdmx_chan_destroy(&x));
	node_close(&a);
	node_close(&b);
}

static uint64_t probes(struct rdmx_chan *c)
{
	struct rdmx_chan_stats st;

	ASSERT_OK(rdmx_chan_get_stats(c, &st));
	return st.credit_updates_received;
}

/* Liveness probes on an idle channel: they flow, nothing breaks. */
Test(chan, keepalive_probes_idle_channel)
{
	struct node a, b;
	struct rdmx_chan_worker_attr attr;
	struct sink sa = {0}, sb = {0};
	struct chan_conf ca = {.recv_cb = sink_recv, .arg = &sa};
	struct chan_conf cb = {.recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;

	rdmx_chan_worker_attr_init(&attr);
	cr_assert_eq(attr.keepalive_ms, 1000);
	attr.keepalive_ms = 20;
	node_open(&a, "a", 0, &attr);
	node_open(&b, "b", 1, &attr);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	DRIVE_UNTIL(&a, &b, probes(x) + probes(y) >= 4);
	cr_assert_eq(rdmx_chan_get_state(x), RDMX_CHAN_READY);
	cr_assert_eq(rdmx_chan_get_state(y), RDMX_CHAN_READY);
	ASSERT_OK(send_msg(x, 0, 50, NULL, NULL));
	DRIVE_UNTIL(&a, &b, sb.n == 1);
	cr_assert_eq(sb.bad, 0);
	chan_pair_close(&x, &y, &a, &b);
}

/* A rendezvous above the largest single read (Soft-RoCE: 8 MiB) is read in
 * chunks: forced here with a small rdv_read_max, sizes around the chunk. */
Test(chan, rendezvous_in_chunks)
{
	struct node a, b;
	struct rdmx_chan_worker_attr attr;
	struct sink sb = {0};
	struct chan_conf ca = {.slot_count = 8, .slot_size = 1024};
	struct chan_conf cb = {
	    .slot_count = 8, .slot_size = 1024, .recv_cb = sink_recv, .arg = &sb};
	struct rdmx_chan *x, *y;
	struct sent_log sl = {0};
	const size_t sizes[] = {65535, 65536, 65537, 1 << 20, (1 << 20) + 12345};
	const int n = (int)(sizeof(sizes) / sizeof(sizes[0]));

	rdmx_chan_worker_attr_init(&attr);
	cr_assert_eq(attr.rdv_read_max, 0);
	attr.rdv_read_max = 65536;
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 1, &attr);
	chan_pair(&a, &b, &ca, &cb, &x, &y, true);
	for (int i = 0; i < n; i++)
		ASSERT_OK(send_msg(x, (uint32_t)i, sizes[i], sent_cb, &sl));
	DRIVE_UNTIL(&a, &b, sb.n == (uint32_t)n && sl.ok == n);
	cr_assert_eq(sb.bad, 0);
	cr_assert_eq(sl.err, 0);
	chan_pair_close(&x, &y, &a, &b);
}
