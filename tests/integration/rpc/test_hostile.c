/* A hostile peer: a raw engine context that speaks the channel protocol
 * badly — malformed hellos and headers, bad slot numbers and sequence
 * numbers, lengths that lie, rendezvous descriptors that do not fit,
 * credits it never earned, writes beyond its credits, garbage RPC headers.
 * Each time the victim closes that one connection with RDMX_E_PROTOCOL and
 * an error log line, and its other connection keeps working. */
#include "rpcfix.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* little-endian helpers for building wire bytes by hand */
static void st16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static void st32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define EVIL_RECVS 8
#define EVIL_MEM (2u << 20)

struct evil {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	uint8_t *mem;
	struct rdmx_mr *mr;
	uint8_t *ring;
	struct rdmx_mr *ring_mr;
	uint8_t *ro; /* a region peers may only read */
	struct rdmx_mr *ro_mr;
	struct rdmx_mr_remote *vring;
	uint32_t vslots, vsize;
	struct rdmx_buf rbuf[EVIL_RECVS];
	int recvs, send_ok, send_err, write_ok, write_err, disconnected;
	bool got_hello;
	uint32_t seq; /* next message sequence number we write */
	size_t src_off;
};

static void ev_recv_ok(struct rdmx_task *t, void *ud, void *cud)
{
	struct evil *e = cud;
	const uint8_t *b = ((struct rdmx_buf *)ud)->addr;

	e->recvs++;
	if (rdmx_task_receive_get_opcode(t) == RDMX_OPCODE_SEND && b[3] == 1 &&
	    rdmx_task_receive_get_len(t) == 64 && !e->got_hello) {
		e->vslots = ld32(b + 4);
		e->vsize = ld32(b + 8);
		ASSERT_OK(
		    rdmx_mr_remote_from_descriptor(b + 24, RDMX_MR_DESCRIPTOR_SIZE, &e->vring));
		e->got_hello = true;
	}
	rdmx_task_submit(t);
}
static void ev_recv_err(struct rdmx_task *t, void *ud, void *cud)
{
	(void)t;
	(void)ud;
	(void)cud;
}
static void ev_send_ok(struct rdmx_task *t, void *ud, void *cud)
{
	(void)ud;
	((struct evil *)cud)->send_ok++;
	rdmx_task_free(t);
}
static void ev_send_err(struct rdmx_task *t, void *ud, void *cud)
{
	(void)ud;
	((struct evil *)cud)->send_err++;
	rdmx_task_free(t);
}
static void ev_write_ok(struct rdmx_task *t, void *ud, void *cud)
{
	(void)ud;
	((struct evil *)cud)->write_ok++;
	rdmx_task_free(t);
}
static void ev_write_err(struct rdmx_task *t, void *ud, void *cud)
{
	(void)ud;
	((struct evil *)cud)->write_err++;
	rdmx_task_free(t);
}
static void ev_disc(struct rdmx_conn *c, void *ud, void *cud)
{
	(void)c;
	(void)ud;
	((struct evil *)cud)->disconnected++;
}

static void evil_open(struct evil *e)
{
	const char *dev = env_device(1);
	const char *addr = getenv("RDMX_TEST_PEER_ADDR");
	struct rdmx_task *t;

	memset(e, 0, sizeof(*e));
	if (strcmp(dev, "tcp") == 0 && addr && *addr)
		ASSERT_OK(rdmx_dev_open_by_addr(addr, &e->dev));
	else
		ASSERT_OK(rdmx_dev_open(dev, &e->dev));
	ASSERT_OK(rdmx_pe_create(&e->pe));
	ASSERT_OK(rdmx_ctx_create(e->dev, e->pe, &e->ctx));
	ASSERT_OK(rdmx_ctx_set_user_data(e->ctx, e));
	ASSERT_OK(
	    rdmx_ctx_set_task_conf(e->ctx, RDMX_TASK_RECEIVE, ev_recv_ok, ev_recv_err, EVIL_RECVS));
	ASSERT_OK(rdmx_ctx_set_task_conf(e->ctx, RDMX_TASK_SEND, ev_send_ok, ev_send_err, 64));
	ASSERT_OK(rdmx_ctx_set_task_conf(e->ctx, RDMX_TASK_SEND_IMM, ev_send_ok, ev_send_err, 4));
	ASSERT_OK(
	    rdmx_ctx_set_task_conf(e->ctx, RDMX_TASK_WRITE_IMM, ev_write_ok, ev_write_err, 256));
	ASSERT_OK(rdmx_ctx_set_conn_callbacks(e->ctx, NULL, NULL, ev_disc, ev_disc));
	ASSERT_OK(rdmx_ctx_start(e->ctx));
	e->mem = aligned_alloc(4096, EVIL_MEM);
	e->ring = aligned_alloc(4096, 16 * 1024);
	e->ro = aligned_alloc(4096, 4096);
	cr_assert(e->mem && e->ring && e->ro);
	memset(e->mem, 0, EVIL_MEM);
	ASSERT_OK(rdmx_mr_reg(e->dev, e->mem, EVIL_MEM, RDMX_ACCESS_LOCAL_WRITE, &e->mr));
	ASSERT_OK(rdmx_mr_reg(e->dev, e->ring, 16 * 1024, RDMX_ACCESS_REMOTE_WRITE, &e->ring_mr));
	ASSERT_OK(rdmx_mr_reg(e->dev, e->ro, 4096, RDMX_ACCESS_REMOTE_READ, &e->ro_mr));
	for (int i = 0; i < EVIL_RECVS; i++) {
		e->rbuf[i].mr = e->mr;
		e->rbuf[i].addr = e->mem + i * 128;
		e->rbuf[i].len = 128;
		ASSERT_OK(rdmx_task_receive_alloc(e->ctx, &e->rbuf[i], &e->rbuf[i], &t));
		ASSERT_OK(rdmx_task_submit(t));
	}
	e->src_off = 64 * 1024;
}

static void evil_close(struct evil *e)
{
	ASSERT_OK(rdmx_ctx_stop(e->ctx));
	rdmx_mr_remote_delete(&e->vring);
	ASSERT_OK(rdmx_mr_dereg(&e->mr));
	ASSERT_OK(rdmx_mr_dereg(&e->ring_mr));
	ASSERT_OK(rdmx_mr_dereg(&e->ro_mr));
	ASSERT_OK(rdmx_ctx_destroy(&e->ctx));
	ASSERT_OK(rdmx_pe_destroy(&e->pe));
	ASSERT_OK(rdmx_dev_close(&e->dev));
	free(e->mem);
	free(e->ring);
	free(e->ro);
}

/* A source slice of our memory holding `len` bytes. */
static struct rdmx_buf *evil_src(struct evil *e, const void *bytes, size_t len)
{
	static struct rdmx_buf bufs[512];
	static int nb;
	struct rdmx_buf *b = &bufs[nb++ % 512];

	if (e->src_off + len > EVIL_MEM)
		e->src_off = 64 * 1024;
	memcpy(e->mem + e->src_off, bytes, len);
	b->mr = e->mr;
	b->addr = e->mem + e->src_off;
	b->len = len;
	b->next = NULL;
	e->src_off += (len + 63) & ~(size_t)63;
	return b;
}

static void evil_send(struct evil *e, const void *bytes, size_t len)
{
	struct rdmx_task *t;

	ASSERT_OK(rdmx_task_send_alloc(e->ctx, e->conn, evil_src(e, bytes, len), NULL, &t));
	ASSERT_OK(rdmx_task_submit(t));
}

static void evil_write(struct evil *e, uint32_t slot, uint32_t imm, const void *bytes, size_t len)
{
	struct rdmx_task *t;
	struct rdmx_rbuf dst = {.mr = e->vring, .offset = (uint64_t)slot * e->vsize, .len = 0};

	ASSERT_OK(rdmx_task_write_imm_alloc(e->ctx, e->conn, evil_src(e, bytes, len), &dst, imm,
	                                    NULL, &t));
	ASSERT_OK(rdmx_task_submit(t));
}

static void hello_bytes(struct evil *e, uint8_t *h, uint32_t slots, uint32_t size, uint64_t max,
                        struct rdmx_mr *ring)
{
	memset(h, 0, 64);
	st16(h, 0x4352);
	h[2] = 1;
	h[3] = 1;
	st32(h + 4, slots);
	st32(h + 8, size);
	st64(h + 16, max);
	ASSERT_OK(rdmx_mr_get_descriptor(ring ? ring : e->ring_mr, h + 24));
}

static void valid_hello(struct evil *e)
{
	uint8_t h[64];

	hello_bytes(e, h, 16, 1024, 1 << 20, NULL);
	evil_send(e, h, 64);
}

/* slot header + payload; seq/credit as given */
static size_t slot_msg(uint8_t *m, uint8_t flags, uint32_t len, uint32_t seq, uint32_t credit,
                       const void *payload, size_t plen)
{
	st16(m, 0x4352);
	m[2] = 1;
	m[3] = flags;
	st32(m + 4, len);
	st32(m + 8, seq);
	st32(m + 12, credit);
	if (plen)
		memcpy(m + 16, payload, plen);
	return 16 + plen;
}

/* A well-formed eager message from the evil side. */
static void good_msg(struct evil *e, const void *payload, size_t plen)
{
	uint8_t m[1024];
	size_t n = slot_msg(m, 0, (uint32_t)plen, e->seq, 0, payload, plen);
	uint32_t slot = e->seq % e->vslots;

	evil_write(e, slot, slot | (e->seq << 16), m, n);
	e->seq++;
}

/* ---- the scene: victim node v with an evil connection and a good one ---- */

struct watch {
	int closed, status, got;
	int ready;
};
static void w_event(struct rdmx_chan *c, enum rdmx_chan_event ev, int status, void *arg)
{
	struct watch *w = arg;

	(void)c;
	if (ev == RDMX_CHAN_EV_CLOSED) {
		w->closed++;
		w->status = status;
	} else {
		w->ready++;
	}
}
static void w_recv(struct rdmx_chan *c, const void *d, size_t len, void *arg)
{
	(void)c;
	(void)d;
	(void)len;
	((struct watch *)arg)->got++;
}

struct scene {
	struct node v, g;
	struct evil e;
	struct rdmx_chan *vc;      /* the victim's channel to the evil peer */
	struct rdmx_chan *vg, *gv; /* victim <-> good */
	struct watch wv, wvg, wgv;
};

static void drive3(struct scene *s)
{
	drive_once(&s->v, &s->g);
	rdmx_pe_progress(s->e.pe);
}

#define DRIVE3_UNTIL(s, cond) TEST_DRIVE_UNTIL(cond, drive3(s))

static void scene_open(struct scene *s)
{
	const void *dv, *de;
	size_t lv, le;
	struct rdmx_conn *cv;
	struct chan_conf conf = {.recv_cb = w_recv, .event_cb = w_event};

	memset(s, 0, sizeof(*s));
	log_capture_begin();
	node_open(&s->v, "victim", 0, NULL);
	node_open(&s->g, "good", 1, NULL);
	evil_open(&s->e);
	conf.arg = &s->wvg;
	struct chan_conf conf2 = conf;
	conf2.arg = &s->wgv;
	chan_pair(&s->v, &s->g, &conf, &conf2, &s->vg, &s->gv, true);
	ASSERT_OK(rdmx_ctx_export(s->v.ctx, &dv, &lv, &cv));
	ASSERT_OK(rdmx_ctx_export(s->e.ctx, &de, &le, &s->e.conn));
	ASSERT_OK(rdmx_ctx_connect(s->v.ctx, de, le, cv));
	ASSERT_OK(rdmx_ctx_connect(s->e.ctx, dv, lv, s->e.conn));
	ASSERT_OK(rdmx_chan_create(s->v.worker, cv, &s->vc));
	ASSERT_OK(rdmx_chan_set_slot_count(s->vc, 8));
	ASSERT_OK(rdmx_chan_set_slot_size(s->vc, 256));
	ASSERT_OK(rdmx_chan_set_max_msg_size(s->vc, 1 << 20));
	ASSERT_OK(rdmx_chan_set_callbacks(s->vc, w_recv, w_event, &s->wv));
	ASSERT_OK(rdmx_chan_start(s->vc));
	DRIVE3_UNTIL(s, s->e.got_hello);
	cr_assert_eq(s->e.vslots, 8);
	cr_assert_eq(s->e.vsize, 256);
}

/* The victim closed the evil connection with a protocol error and logged
 * it; the good connection still carries messages both ways. */
static void scene_expect_closed(struct scene *s, const char *needle)
{
	DRIVE3_UNTIL(s, s->wv.closed == 1 && s->e.disconnected == 1);
	cr_assert_eq(s->wv.status, RDMX_E_PROTOCOL, "closed with %s", rdmx_err_name(s->wv.status));
	cr_assert_eq(rdmx_chan_get_state(s->vc), RDMX_CHAN_CLOSED);
	cr_assert(log_capture_count("protocol violation") >= 1, "no clear error log line");
	if (needle)
		cr_assert(log_capture_count(needle) >= 1, "log line does not say '%s'", needle);
	int g0 = s->wgv.got, v0 = s->wvg.got;
	ASSERT_OK(rdmx_chan_send(s->vg, "still here", 10, NULL, NULL));
	ASSERT_OK(rdmx_chan_send(s->gv, "me too", 6, NULL, NULL));
	DRIVE3_UNTIL(s, s->wgv.got == g0 + 1 && s->wvg.got == v0 + 1);
	cr_assert_eq(s->wvg.closed + s->wgv.closed, 0);
}

static void scene_close(struct scene *s)
{
	ASSERT_OK(rdmx_chan_destroy(&s->vc));
	ASSERT_OK(rdmx_chan_destroy(&s->vg));
	ASSERT_OK(rdmx_chan_destroy(&s->gv));
	evil_close(&s->e);
	node_close(&s->v);
	node_close(&s->g);
	log_capture_end();
}

/* A scene whose victim channel is READY after a valid hello of the evil
 * peer. */
static void scene_open_ready(struct scene *s)
{
	scene_open(s);
	valid_hello(&s->e);
	DRIVE3_UNTIL(s, rdmx_chan_get_state(s->vc) == RDMX_CHAN_READY);
}

/* The evil peer writes m (n bytes) into the victim's slot 0; the victim must
 * close saying `needle` (scene_expect_closed); the scene is closed. */
static void slot_attack(struct scene *s, const uint8_t *m, size_t n, const char *needle)
{
	evil_write(&s->e, 0, 0, m, n);
	scene_expect_closed(s, needle);
	scene_close(s);
}

/* ---- the attacks ---- */

/* evil sends the first `len` bytes of a hello of that geometry (ring NULL:
 * its own; max message 1 MiB): the victim closes, its log naming `why`;
 * then the scene is closed. */
static void hello_refused(struct scene *s, uint32_t slots, uint32_t size, struct rdmx_mr *ring,
                          size_t len, const char *why)
{
	uint8_t h[64];

	hello_bytes(&s->e, h, slots, size, 1 << 20, ring);
	evil_send(&s->e, h, len);
	scene_expect_closed(s, why);
	scene_close(s);
}

Test(hostile, hello_bad_magic)
{
	struct scene s;
	uint8_t h[64];

	scene_open(&s);
	hello_bytes(&s.e, h, 16, 1024, 1 << 20, NULL);
	h[0] ^= 0xff;
	evil_send(&s.e, h, 64);
	scene_expect_closed(&s, "magic");
	scene_close(&s);
}

Test(hostile, hello_geometry_out_of_range)
{
	struct scene s;

	scene_open(&s);
	hello_refused(&s, 0, 1024, NULL, 64, "slot count");
}

Test(hostile, hello_ring_not_writable)
{
	struct scene s;

	scene_open(&s);
	/* read-only, 4096 bytes */
	hello_refused(&s, 2, 2048, s.e.ro_mr, 64, "not writable");
}

Test(hostile, hello_ring_smaller_than_slots)
{
	struct scene s;

	scene_open(&s);
	/* claims 1 MiB, region is 16 KiB */
	hello_refused(&s, 1024, 1024, NULL, 64, "smaller than its slots");
}

Test(hostile, hello_truncated_and_second_hello)
{
	struct scene s;

	scene_open_ready(&s);
	hello_refused(&s, 16, 1024, NULL, 64, "second hello");
}

Test(hostile, control_bad_length)
{
	struct scene s;

	scene_open(&s);
	/* a cut hello */
	hello_refused(&s, 16, 1024, NULL, 40, "wrong length");
}

Test(hostile, ring_write_before_hello)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open(&s);
	n = slot_msg(m, 0, 4, 0, 0, "abcd", 4);
	slot_attack(&s, m, n, "before the hello");
}

Test(hostile, bad_slot_number)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open_ready(&s);
	good_msg(&s.e, "ok", 2); /* slot 0, delivered */
	DRIVE3_UNTIL(&s, s.wv.got == 1);
	n = slot_msg(m, 0, 4, 1, 0, "abcd", 4);
	evil_write(&s.e, 5, 5 | (1u << 16), m, n); /* expected slot 1 */
	scene_expect_closed(&s, "wrong slot");
	cr_assert_eq(s.wv.got, 1);
	scene_close(&s);
}

Test(hostile, slot_beyond_ring_in_immediate)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open_ready(&s);
	n = slot_msg(m, 0, 4, 0, 0, "abcd", 4);
	evil_write(&s.e, 0, 0xffffu, m, n); /* the immediate names slot 65535 of 8 */
	scene_expect_closed(&s, "wrong slot");
	scene_close(&s);
}

Test(hostile, bad_sequence_number)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open_ready(&s);
	n = slot_msg(m, 0, 4, 7, 0, "abcd", 4); /* header says seq 7 */
	slot_attack(&s, m, n, "sequence");
}

Test(hostile, header_bad_magic_and_flags)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open_ready(&s);
	n = slot_msg(m, 0x80, 4, 0, 0, "abcd", 4);
	slot_attack(&s, m, n, "flags");
}

Test(hostile, length_larger_than_slot)
{
	struct scene s;
	uint8_t m[300];
	size_t n;

	scene_open_ready(&s);
	memset(m, 0, sizeof(m));
	n = slot_msg(m, 0, 100000, 0, 0, NULL, 0); /* claims 100000 in a 256-byte slot */
	evil_write(&s.e, 0, 0, m, n + 200);
	scene_expect_closed(&s, "slot payload");
	scene_close(&s);
}

Test(hostile, length_does_not_match_write)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open_ready(&s);
	n = slot_msg(m, 0, 40, 0, 0, "abcd", 4); /* says 40, wrote 4 */
	slot_attack(&s, m, n, "written length");
}

Test(hostile, rendezvous_descriptor_wrong_length)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open_ready(&s);
	n = slot_msg(m, 1, 5000, 0, 0, "0123456789abcdefghij", 20);
	slot_attack(&s, m, n, "rendezvous descriptor of the wrong length");
}

Test(hostile, rendezvous_longer_than_source)
{
	struct scene s;
	uint8_t m[64], desc[RDMX_MR_DESCRIPTOR_SIZE];
	size_t n;

	scene_open_ready(&s);
	ASSERT_OK(rdmx_mr_get_descriptor(s.e.ro_mr, desc)); /* 4096 bytes, readable */
	n = slot_msg(m, 1, 500000, 0, 0, desc, sizeof(desc));
	slot_attack(&s, m, n, "shorter than the message");
}

Test(hostile, rendezvous_source_not_readable)
{
	struct scene s;
	uint8_t m[64], desc[RDMX_MR_DESCRIPTOR_SIZE];
	size_t n;

	scene_open_ready(&s);
	ASSERT_OK(rdmx_mr_get_descriptor(s.e.ring_mr, desc)); /* write-only region */
	n = slot_msg(m, 1, 1000, 0, 0, desc, sizeof(desc));
	slot_attack(&s, m, n, "not readable");
}

Test(hostile, rendezvous_above_max_message)
{
	struct scene s;
	uint8_t m[64], desc[RDMX_MR_DESCRIPTOR_SIZE];
	size_t n;

	scene_open_ready(&s);
	ASSERT_OK(rdmx_mr_get_descriptor(s.e.ro_mr, desc));
	n = slot_msg(m, 1, (1u << 20) + 1, 0, 0, desc, sizeof(desc)); /* victim max is 1 MiB */
	slot_attack(&s, m, n, "maximum message size");
}

Test(hostile, credit_never_earned)
{
	struct scene s;
	uint8_t m[64];
	size_t n;

	scene_open_ready(&s);
	n = slot_msg(m, 0, 4, 0, 1000, "abcd", 4); /* credits for 1000 messages we never got */
	slot_attack(&s, m, n, "credit beyond");
}

Test(hostile, credit_update_never_earned)
{
	struct scene s;
	uint8_t c[16] = {0};

	scene_open_ready(&s);
	st16(c, 0x4352);
	c[2] = 1;
	c[3] = 2;
	st32(c + 4, 55);
	evil_send(&s.e, c, 16);
	scene_expect_closed(&s, "credit beyond");
	scene_close(&s);
}

Test(hostile, writes_beyond_credits)
{
	struct scene s;

	scene_open_ready(&s);
	ASSERT_OK(rdmx_chan_pause(s.vc)); /* no credits come back */
	for (int i = 0; i < 8; i++)       /* a ring of 8: full */
		good_msg(&s.e, "xx", 2);
	DRIVE3_UNTIL(&s, s.e.write_ok == 8);
	for (int i = 0; i < 20; i++)
		drive3(&s);      /* let the victim see all eight */
	good_msg(&s.e, "xx", 2); /* a ninth, over the first */
	DRIVE3_UNTIL(&s, s.wv.closed == 1);
	/* seen either as the overrun itself or, when the victim had not yet
	 * looked at slot 0, as its header rewritten out of sequence */
	cr_assert(log_capture_count("beyond the credits") + log_capture_count("sequence") >= 1);
	scene_expect_closed(&s, NULL);
	cr_assert_eq(s.wv.got, 0);
	scene_close(&s);
}

Test(hostile, send_with_immediate)
{
	struct scene s;
	struct rdmx_task *t = NULL;

	scene_open(&s);
	ASSERT_OK(
	    rdmx_task_send_imm_alloc(s.e.ctx, s.e.conn, evil_src(&s.e, "hi", 2), 7, NULL, &t));
	ASSERT_OK(rdmx_task_submit(t));
	scene_expect_closed(&s, "send with immediate");
	scene_close(&s);
}

Test(hostile, control_unknown_type)
{
	struct scene s;

	scene_open(&s);
	uint8_t c[16] = {0};
	st16(c, 0x4352);
	c[2] = 1;
	c[3] = 9; /* unknown control type */
	evil_send(&s.e, c, 16);
	scene_expect_closed(&s, "unknown control");
	scene_close(&s);
}

/* RPC level: a well-formed channel message carrying RPC bytes that lie
 * (m, n) closes the connection with a log line saying `needle`; the
 * endpoint then refuses new calls. */
static void rpc_msg_attack(const uint8_t *m, size_t n, const char *needle)
{
	struct scene s;
	struct rdmx_rpc_ep *ep;
	struct rdmx_rpc_server *srv;
	struct echo_state st = {0};

	scene_open(&s);
	srv = echo_server(&st);
	ASSERT_OK(rdmx_chan_set_callbacks(s.vc, NULL, NULL, NULL));
	ASSERT_OK(rdmx_rpc_ep_create(s.vc, srv, &ep));
	valid_hello(&s.e);
	DRIVE3_UNTIL(&s, rdmx_chan_get_state(s.vc) == RDMX_CHAN_READY);
	good_msg(&s.e, m, n);
	DRIVE3_UNTIL(&s, rdmx_chan_get_state(s.vc) == RDMX_CHAN_CLOSED && s.e.disconnected);
	cr_assert(log_capture_count(needle) >= 1, "log line does not say '%s'", needle);
	ASSERT_RC(rdmx_rpc_call_async(ep, 1, NULL, NULL, NULL, NULL, NULL), RDMX_E_INVAL);
	ASSERT_OK(rdmx_rpc_ep_destroy(&ep));
	ASSERT_OK(rdmx_rpc_server_destroy(&srv));
	s.wv.closed = 1;
	s.wv.status = RDMX_E_PROTOCOL;
	scene_expect_closed(&s, NULL);
	scene_close(&s);
}

Test(hostile, rpc_garbage_header)
{
	uint8_t junk[40];

	memset(junk, 0xee, sizeof(junk));
	rpc_msg_attack(junk, sizeof(junk), "rpc");
}

/* A batch of answers (rpc/batch.c) that lies: checked whole before any
 * entry is delivered, the connection closes. */
/* batch header (type 12, N = 2) and two 24-byte entries */
static size_t batch_msg(uint8_t *m, uint8_t second_type, uint32_t second_len)
{
	memset(m, 0, 24 + 2 * 28);
	m[0] = 12;
	st32(m + 4, 2);
	st64(m + 8, 2);
	st32(m + 24, 24);
	m[28] = 2; /* a response to call 5 */
	st64(m + 28 + 8, 5);
	st32(m + 52, second_len);
	m[56] = second_type;
	st32(m + 56 + 4, 7);
	st64(m + 56 + 8, 6);
	return 24 + 2 * 28;
}

Test(hostile, rpc_batch_entry_not_a_response)
{
	uint8_t m[80];
	size_t n = batch_msg(m, 1, 24); /* a request inside a batch of answers */

	rpc_msg_attack(m, n, "not a response");
}

Test(hostile, rpc_batch_entry_longer_than_batch)
{
	uint8_t m[80];
	size_t n = batch_msg(m, 2, 25);

	rpc_msg_attack(m, n, "longer than the batch");
}

/* Random garbage into every slot: never a crash, the connection closes. */
Test(hostile, random_garbage_writes)
{
	struct scene s;
	uint8_t m[256];

	scene_open_ready(&s);
	srand(42);
	for (size_t i = 0; i < sizeof(m); i++)
		m[i] = (uint8_t)rand();
	m[0] = 0x52;
	m[1] = 0x43;
	m[2] = 1;
	evil_write(&s.e, 0, 0, m, 16 + (size_t)(rand() % 240));
	scene_expect_closed(&s, NULL);
	scene_close(&s);
}
