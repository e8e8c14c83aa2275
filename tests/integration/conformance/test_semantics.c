/* The promises of DESIGN.md "Semantics that users rely on": shared receive
 * pool, per-connection completion order, scatter-gather, task reuse,
 * one-sided tasks without target progress. */
#include "conformance.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

static struct side A, B;

TestSuite(semantics, .timeout = 120);

/* ---- receive tasks belong to the context ---- */

Test(semantics, shared_receive_pool_names_the_connection)
{
	struct rdmx_conn *a1, *b1, *a2, *b2;
	leak_begin();
	pair_open(&A, &B, 16);
	connect_pair(&A, &B, &a1, &b1);
	connect_pair(&A, &B, &a2, &b2);
	cr_assert_neq(a1, a2);

	struct region *ra = region_new(&A, 4 * 1024, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 4 * 1024, 0, 0);
	struct rdmx_buf dst[4], src[4];
	struct tinfo tr[4] = {0}, ts[4] = {0};
	for (int i = 0; i < 4; i++) {
		dst[i] = lbuf(ra, (size_t)i * 1024, 1024);
		post_recv(&A, &dst[i], &tr[i]);
	}
	/* two messages per connection, interleaved; length names the message */
	struct rdmx_conn *via[4] = {b1, b2, b1, b2};
	struct rdmx_task *t;
	for (int i = 0; i < 4; i++) {
		size_t len = 100 + (size_t)i * 10;
		pattern_fill(rb->mem + i * 1024, len, 20u + (uint32_t)i);
		src[i] = lbuf(rb, (size_t)i * 1024, len);
		ASSERT_OK(rdmx_task_send_alloc(B.ctx, via[i], &src[i], &ts[i], &t));
		ASSERT_OK(rdmx_task_submit(t));
	}
	DRIVE_UNTIL(&A, &B, A.completions == 4 && B.completions == 4);
	bool seen[4] = {false};
	for (int r = 0; r < 4; r++) {
		ASSERT_DONE_OK(&tr[r]);
		ASSERT_DONE_OK(&ts[r]);
		int i = ((int)tr[r].len - 100) / 10;
		cr_assert(i >= 0 && i < 4 && tr[r].len == 100u + (uint32_t)i * 10u,
		          "receive %d has unexpected length %u", r, tr[r].len);
		cr_assert(!seen[i], "message %d received twice", i);
		seen[i] = true;
		struct rdmx_conn *want = (via[i] == b1) ? a1 : a2;
		cr_assert_eq(tr[r].conn, want,
		             "message %d sent on connection %d names the other one", i,
		             via[i] == b1 ? 1 : 2);
		cr_assert(pattern_check(dst[r].addr, tr[r].len, 20u + (uint32_t)i),
		          "message %d content", i);
	}
	/* ids of two connections of one context differ */
	uint32_t id1, id2;
	ASSERT_OK(rdmx_conn_get_id(a1, &id1));
	ASSERT_OK(rdmx_conn_get_id(a2, &id2));
	cr_assert_neq(id1, id2, "two connections of one context share id %u", id1);
	pair_close(&A, &B);
	leak_end();
}

/* ---- completion order = submission order on one connection ---- */

#define NORDER 64

Test(semantics, completion_order_is_submission_order)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, NORDER);
	connect_pair(&A, &B, &ca, &cb);
	bool atomics = B.caps.atomics;

	struct region *rt = region_new(&A, 1 << 20,
	                               RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_READ |
	                                   RDMX_ACCESS_REMOTE_ATOMIC | RDMX_ACCESS_LOCAL_WRITE,
	                               0);
	struct region *rr = region_new(&A, NORDER * 256, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rs = region_new(&B, 1 << 20, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_mr_remote *m = remote_of(&B, rt);
	pattern_fill(rs->mem, 1 << 20, 30);

	static struct rdmx_buf rdst[NORDER], src[NORDER];
	static struct rdmx_rbuf rdstr[NORDER];
	static struct tinfo tr[NORDER], ts[NORDER];
	static int kind[NORDER];
	int nrecv_needed = 0;
	for (int i = 0; i < NORDER; i++) {
		rdst[i] = lbuf(rr, (size_t)i * 256, 256);
		post_recv(&A, &rdst[i], &tr[i]);
	}
	for (int i = 0; i < NORDER; i++) {
		struct rdmx_task *t = NULL;
		int k = i % 7;
		if (!atomics && k == 5)
			k = 0;
		kind[i] = k;
		ts[i].tag = i;
		/* every message carries its index in its first 4 bytes */
		uint32_t idx = (uint32_t)i;
		switch (k) {
		case 0: /* write, sizes up to 256 KiB */
		{
			size_t len = (i % 3 == 0) ? 256 * 1024 : 64 + (size_t)i;
			src[i] = lbuf(rs, 65536, len);
			rdstr[i] = rbuf(m, 512 * 1024, 0);
			ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &src[i], &rdstr[i], &ts[i], &t));
			break;
		}
		case 1: /* send */
		case 2:
			memcpy(rs->mem + 4096 + i * 64, &idx, 4);
			src[i] = lbuf(rs, 4096 + (size_t)i * 64, 64);
			ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &src[i], &ts[i], &t));
			nrecv_needed++;
			break;
		case 3: /* send_imm */
			src[i] = lbuf(rs, 4096 + (size_t)i * 64, 16);
			ASSERT_OK(rdmx_task_send_imm_alloc(B.ctx, cb, &src[i], idx, &ts[i], &t));
			nrecv_needed++;
			break;
		case 4: /* read */
			src[i] = lbuf(rs, 8192 + (size_t)i * 128, 128);
			rdstr[i] = rbuf(m, 0, 128);
			ASSERT_OK(rdmx_task_read_alloc(B.ctx, cb, &rdstr[i], &src[i], &ts[i], &t));
			break;
		case 5: /* fetch-add */
			src[i] = lbuf(rs, 16384 + (size_t)i * 8, 8);
			rdstr[i] = rbuf(m, 1024, 8);
			ASSERT_OK(rdmx_task_atomic_fadd_alloc(B.ctx, cb, &rdstr[i], &src[i], 1,
			                                      &ts[i], &t));
			break;
		case 6: /* write_imm */
			src[i] = lbuf(rs, 0, 32);
			rdstr[i] = rbuf(m, 2048, 0);
			ASSERT_OK(rdmx_task_write_imm_alloc(B.ctx, cb, &src[i], &rdstr[i], idx,
			                                    &ts[i], &t));
			nrecv_needed++;
			break;
		}
		ASSERT_OK(rdmx_task_submit(t));
	}
	DRIVE_UNTIL(&A, &B, B.completions == NORDER && A.completions == nrecv_needed);
	cr_assert_eq(B.norder, NORDER);
	for (int i = 0; i < NORDER; i++) {
		ASSERT_DONE_OK(&ts[i]);
		cr_assert_eq(B.order[i], &ts[i],
		             "completion %d is task %d (kind %d), expected task %d (kind %d)", i,
		             B.order[i] ? B.order[i]->tag : -1,
		             B.order[i] ? kind[B.order[i]->tag] : -1, i, kind[i]);
	}
	/* the receiver sees the messages of the connection in order too */
	int last = -1, nrecv = 0;
	for (int r = 0; r < A.norder; r++) {
		struct tinfo *ti = A.order[r];
		cr_assert_not_null(ti);
		ASSERT_DONE_OK(ti);
		uint32_t idx;
		if (ti->opcode == RDMX_OPCODE_SEND) {
			int slot = (int)(ti - tr);
			memcpy(&idx, rdst[slot].addr, 4);
		} else {
			idx = ti->imm;
		}
		cr_assert_gt((int)idx, last, "message %u arrived after message %d", idx, last);
		last = (int)idx;
		nrecv++;
	}
	cr_assert_eq(nrecv, nrecv_needed);
	pair_close(&A, &B);
	leak_end();
}

/* ---- scatter-gather ---- */

static uint32_t sg_open(void)
{
	leak_begin();
	side_open(&A, "a", 0);
	side_open(&B, "b", 1);
	uint32_t max = A.caps.max_buf_list_len < B.caps.max_buf_list_len ? A.caps.max_buf_list_len
	                                                                 : B.caps.max_buf_list_len;
	if (max < 2)
		cr_skip_test("max buf list length %u: no scatter-gather", max);
	uint32_t l = max < 4 ? max : 4;
	struct side *sides[2] = {&A, &B};
	for (int i = 0; i < 2; i++) {
		uint32_t got = 0;
		/* the default is within the device caps */
		ASSERT_OK(rdmx_ctx_get_max_send_buf_list_len(sides[i]->ctx, &got));
		cr_assert(got >= 1 && got <= sides[i]->caps.max_buf_list_len,
		          "default max send buf list len %u (caps %u)", got,
		          sides[i]->caps.max_buf_list_len);
		ASSERT_OK(rdmx_ctx_set_max_send_buf_list_len(sides[i]->ctx, l));
		ASSERT_OK(rdmx_ctx_set_max_recv_buf_list_len(sides[i]->ctx, l));
		ASSERT_OK(rdmx_ctx_get_max_send_buf_list_len(sides[i]->ctx, &got));
		cr_assert_eq(got, l);
		ASSERT_OK(rdmx_ctx_get_max_recv_buf_list_len(sides[i]->ctx, &got));
		cr_assert_eq(got, l);
		side_conf(sides[i], 16);
		side_start(sides[i]);
	}
	return l;
}

/* Builds a chain of n pieces over r starting at off, with a gap of 7 bytes
 * between pieces; sizes[] gives each piece's length. */
static struct rdmx_buf *chain(struct rdmx_buf *b, uint32_t n, struct region *r, size_t off,
                              const size_t *sizes)
{
	for (uint32_t i = 0; i < n; i++) {
		b[i] = lbuf(r, off, sizes[i]);
		b[i].next = (i + 1 < n) ? &b[i + 1] : NULL;
		off += sizes[i] + 7;
	}
	return b;
}

static const size_t piece[8] = {100, 1, 333, 64, 17, 500, 3, 256};

static size_t total(uint32_t n)
{
	size_t t = 0;
	for (uint32_t i = 0; i < n; i++)
		t += piece[i];
	return t;
}

/* Copies a chain's bytes out, in order. */
static void gather(const struct rdmx_buf *b, uint8_t *out)
{
	for (; b; b = b->next) {
		memcpy(out, b->addr, b->len);
		out += b->len;
	}
}

Test(semantics, scatter_gather_send_and_receive)
{
	uint32_t l = sg_open();
	struct rdmx_conn *ca, *cb;
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 8192, RDMX_ACCESS_LOCAL_WRITE, 0xee);
	struct region *rb = region_new(&B, 8192, RDMX_ACCESS_LOCAL_WRITE, 0);
	pattern_fill(rb->mem, 8192, 40);
	struct rdmx_buf sch[8], rch[8], one;
	struct tinfo tr = {0}, ts = {0};
	struct rdmx_task *t;
	uint8_t want[4096], got[4096];
	size_t n = total(l);

	/* gather on send: a chain of l pieces into one receive buffer */
	chain(sch, l, rb, 10, piece);
	gather(sch, want);
	one = lbuf(ra, 0, 4096);
	post_recv(&A, &one, &tr);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, sch, &ts, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(&tr) && TI_DONE(&ts));
	ASSERT_DONE_OK(&ts);
	ASSERT_DONE_OK(&tr);
	cr_assert_eq(tr.len, (uint32_t)n, "receive length %u, chain total %zu", tr.len, n);
	cr_assert_arr_eq(ra->mem, want, n, "gathered send arrived changed");

	/* scatter on receive: one contiguous send into a chain of l pieces */
	memset(ra->mem, 0xee, 8192);
	memset(&tr, 0, sizeof(tr));
	memset(&ts, 0, sizeof(ts));
	chain(rch, l, ra, 3, piece);
	post_recv(&A, rch, &tr);
	one = lbuf(rb, 1000, n);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &one, &ts, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, TI_DONE(&tr) && TI_DONE(&ts));
	ASSERT_DONE_OK(&ts);
	ASSERT_DONE_OK(&tr);
	cr_assert_eq(tr.len, (uint32_t)n);
	gather(rch, got);
	cr_assert_arr_eq(got, rb->mem + 1000, n, "scattered receive differs");
	/* the 7-byte gaps between pieces are untouched */
	for (uint32_t i = 0; i + 1 < l; i++) {
		uint8_t *gap = (uint8_t *)rch[i].addr + rch[i].len;
		for (int g = 0; g < 7; g++)
			cr_assert_eq(gap[g], 0xee, "receive wrote into the gap after piece %u", i);
	}
	pair_close(&A, &B);
	leak_end();
}

Test(semantics, scatter_gather_write_and_read)
{
	uint32_t l = sg_open();
	struct rdmx_conn *ca, *cb;
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra =
	    region_new(&A, 8192, RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_READ, 0xee);
	struct region *rb = region_new(&B, 8192, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb2 = region_new(&B, 8192, RDMX_ACCESS_LOCAL_WRITE, 0xcc);
	pattern_fill(rb->mem, 8192, 41);
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	struct rdmx_buf ch[8], ch2[8];
	struct rdmx_rbuf rdst;
	struct tinfo tw = {0}, trd = {0};
	struct rdmx_task *t;
	uint8_t want[4096], got[4096];
	size_t n = total(l);

	/* gather on write */
	chain(ch, l, rb, 5, piece);
	gather(ch, want);
	rdst = rbuf(m, 64, 0);
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, ch, &rdst, &tw, &t));
	submit_wait(&A, &B, t, &tw);
	ASSERT_DONE_OK(&tw);
	cr_assert_arr_eq(ra->mem + 64, want, n, "gathered write placed wrong bytes");
	cr_assert_eq(ra->mem[63], 0xee);
	cr_assert_eq(ra->mem[64 + n], 0xee);

	/* scatter on read: the same remote range back into a chain of a second
	 * region (pieces in a different order of sizes) */
	size_t rev[8];
	for (uint32_t i = 0; i < l; i++)
		rev[i] = piece[l - 1 - i];
	chain(ch2, l, rb2, 1, rev);
	struct rdmx_rbuf rsrc = rbuf(m, 64, n);
	ASSERT_OK(rdmx_task_read_alloc(B.ctx, cb, &rsrc, ch2, &trd, &t));
	submit_wait(&A, &B, t, &trd);
	ASSERT_DONE_OK(&trd);
	cr_assert_eq(trd.read_len, (uint32_t)n, "read length %u, expected %zu", trd.read_len, n);
	gather(ch2, got);
	cr_assert_arr_eq(got, want, n, "scattered read differs");
	pair_close(&A, &B);
	leak_end();
}

Test(semantics, scatter_gather_chain_too_long_is_inval)
{
	uint32_t l = sg_open();
	struct rdmx_conn *ca, *cb;
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 8192, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(&B, 8192, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	struct rdmx_buf ch[9], ok[8], rch[9];
	struct rdmx_rbuf r = rbuf(m, 0, 0), rr = rbuf(m, 0, total(l + 1));
	struct rdmx_task *t = NULL;
	struct tinfo ti = {0};
	chain(ch, l + 1, rb, 0, piece);
	chain(rch, l + 1, ra, 0, piece);

	ASSERT_RC(rdmx_task_send_alloc(B.ctx, cb, ch, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_send_imm_alloc(B.ctx, cb, ch, 1, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_write_alloc(B.ctx, cb, ch, &r, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_write_imm_alloc(B.ctx, cb, ch, &r, 1, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_read_alloc(B.ctx, cb, &rr, ch, &ti, &t), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_receive_alloc(A.ctx, rch, &ti, &t), RDMX_E_INVAL);
	cr_assert_null(t, "output written on failure");

	/* a too-long chain set on an allocated task: refused by the setter or
	 * the submit, and the task never completes */
	chain(ok, l, rb, 0, piece);
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, ok, &r, &ti, &t));
	int rc = rdmx_task_set_local(t, ch);
	if (rc == 0)
		rc = rdmx_task_submit(t);
	ASSERT_RC(rc, RDMX_E_INVAL);
	drive_for(&A, &B, NULL, 50);
	cr_assert_eq(TI_DONE(&ti), 0, "a refused task completed");
	/* the connection is fine: the right chain goes through */
	ASSERT_OK(rdmx_task_set_local(t, ok));
	submit_wait(&A, &B, t, &ti);
	ASSERT_DONE_OK(&ti);
	pair_close(&A, &B);
	leak_end();
}

/* ---- task reuse ---- */

Test(semantics, task_reuse_with_setters)
{
	struct rdmx_conn *ca, *cb, *ca2, *cb2;
	leak_begin();
	pair_open(&A, &B, 1); /* one task per type: reuse, or nothing */
	connect_pair(&A, &B, &ca, &cb);
	connect_pair(&A, &B, &ca2, &cb2);
	struct region *ra = region_new(&A, 8192, RDMX_ACCESS_ALL, 0);
	struct region *ra2 = region_new(&A, 8192, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(&B, 8192, RDMX_ACCESS_LOCAL_WRITE, 0);
	pattern_fill(rb->mem, 4096, 50);
	pattern_fill(rb->mem + 4096, 4096, 51);
	struct rdmx_mr_remote *m = remote_of(&B, ra), *m2 = remote_of(&B, ra2);
	struct rdmx_task *w = NULL, *extra = NULL, *s = NULL, *r = NULL, *rd = NULL;
	struct tinfo tw = {0}, tw2 = {0}, ts = {0}, tr = {0}, trd = {0};

	/* write: new source, new target region, new connection, new user data */
	struct rdmx_buf src1 = lbuf(rb, 0, 100), src2 = lbuf(rb, 4096, 300);
	struct rdmx_rbuf d1 = rbuf(m, 0, 0), d2 = rbuf(m2, 1000, 0);
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &src1, &d1, &tw, &w));
	ASSERT_RC(rdmx_task_write_alloc(B.ctx, cb, &src1, &d1, &tw, &extra), RDMX_E_FULL);
	submit_wait(&A, &B, w, &tw);
	ASSERT_DONE_OK(&tw);
	cr_assert(pattern_check(ra->mem, 100, 50));
	ASSERT_OK(rdmx_task_set_local(w, &src2));
	ASSERT_OK(rdmx_task_set_remote(w, &d2));
	ASSERT_OK(rdmx_task_set_conn(w, cb2));
	ASSERT_OK(rdmx_task_set_user_data(w, &tw2));
	cr_assert_eq(rdmx_task_get_conn(w), cb2);
	cr_assert_eq(rdmx_task_get_local(w), &src2);
	cr_assert_eq(rdmx_task_get_user_data(w), &tw2);
	submit_wait(&A, &B, w, &tw2);
	ASSERT_DONE_OK(&tw2);
	cr_assert_eq(tw.ok, 1, "the old user data got the second completion");
	cr_assert(pattern_check(ra2->mem + 1000, 300, 51),
	          "reused write did not use the new buffers");
	cr_assert_eq(ra->mem[100], 0, "reused write went to the old target");

	/* receive + send_imm reused three times with new buffers and imm */
	struct rdmx_buf rdst[3], ssrc[3];
	uint32_t imms[3] = {7, 0xffffffffu, 0};
	for (int i = 0; i < 3; i++) {
		rdst[i] = lbuf(ra, 2048 + (size_t)i * 512, 512);
		ssrc[i] = lbuf(rb, (size_t)i * 1000, 50 + (size_t)i);
		if (i == 0) {
			ASSERT_OK(rdmx_task_receive_alloc(A.ctx, &rdst[0], &tr, &r));
			ASSERT_OK(rdmx_task_send_imm_alloc(B.ctx, cb, &ssrc[0], imms[0], &ts, &s));
		} else {
			ASSERT_OK(rdmx_task_set_local(r, &rdst[i]));
			ASSERT_OK(rdmx_task_set_local(s, &ssrc[i]));
			ASSERT_OK(rdmx_task_set_imm(s, imms[i]));
			cr_assert_eq(rdmx_task_get_imm(s), imms[i]);
		}
		ASSERT_OK(rdmx_task_submit(r));
		ASSERT_OK(rdmx_task_submit(s));
		DRIVE_UNTIL(&A, &B, TI_DONE(&tr) == i + 1 && TI_DONE(&ts) == i + 1);
		cr_assert(tr.ok == i + 1 && ts.ok == i + 1, "round %d: recv %s send %s", i,
		          rdmx_err_name(tr.status), rdmx_err_name(ts.status));
		cr_assert_eq(tr.imm, imms[i], "round %d imm 0x%x", i, tr.imm);
		cr_assert_eq(tr.len, 50u + (uint32_t)i);
		cr_assert_arr_eq(rdst[i].addr, ssrc[i].addr, ssrc[i].len, "round %d data", i);
	}

	/* read reused with a new range and destination */
	struct rdmx_buf rl1 = lbuf(rb, 6000, 64), rl2 = lbuf(rb, 7000, 32);
	struct rdmx_rbuf rr1 = rbuf(m, 0, 64), rr2 = rbuf(m2, 1000, 32);
	ASSERT_OK(rdmx_task_read_alloc(B.ctx, cb, &rr1, &rl1, &trd, &rd));
	submit_wait(&A, &B, rd, &trd);
	ASSERT_OK(rdmx_task_set_remote(rd, &rr2));
	ASSERT_OK(rdmx_task_set_local(rd, &rl2));
	submit_wait(&A, &B, rd, &trd);
	cr_assert_eq(trd.ok, 2);
	cr_assert_eq(trd.read_len, 32u);
	cr_assert_arr_eq(rb->mem + 7000, ra2->mem + 1000, 32);

	/* a setter for a field the type lacks */
	ASSERT_RC(rdmx_task_set_imm(rd, 1), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_set_cmp_swap(w, 1, 2), RDMX_E_INVAL);
	ASSERT_RC(rdmx_task_set_remote(r, &rr1), RDMX_E_INVAL);
	pair_close(&A, &B);
	leak_end();
}

/* ---- one-sided tasks do not need the target to progress ---- */

Test(semantics, one_sided_without_target_progress)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	struct region *ra, *rb;
	struct rdmx_mr_remote *m = pair_one_sided(&A, &B, 16, &ca, &cb, &ra, &rb);
	pattern_fill(rb->mem, 1024, 60);
	pattern_fill(ra->mem + 2048, 1024, 61);
	struct rdmx_buf s = lbuf(rb, 0, 1024), d = lbuf(rb, 2048, 1024), res = lbuf(rb, 4000, 8);
	struct rdmx_rbuf wr = rbuf(m, 0, 0), rd = rbuf(m, 2048, 1024), at = rbuf(m, 3072, 8);
	struct tinfo tw = {0}, tr = {0}, ta = {0};
	struct rdmx_task *t;

	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &s, &wr, &tw, &t));
	ASSERT_OK(rdmx_task_submit(t));
	ASSERT_OK(rdmx_task_read_alloc(B.ctx, cb, &rd, &d, &tr, &t));
	ASSERT_OK(rdmx_task_submit(t));
	if (B.caps.atomics) {
		ASSERT_OK(rdmx_task_atomic_fadd_alloc(B.ctx, cb, &at, &res, 5, &ta, &t));
		ASSERT_OK(rdmx_task_submit(t));
	}
	/* only the initiator progresses */
	DRIVE_UNTIL(&B, NULL, TI_DONE(&tw) && TI_DONE(&tr) && (!B.caps.atomics || TI_DONE(&ta)));
	ASSERT_DONE_OK(&tw);
	ASSERT_DONE_OK(&tr);
	cr_assert(pattern_check(ra->mem, 1024, 60));
	cr_assert(pattern_check(rb->mem + 2048, 1024, 61));
	if (B.caps.atomics) {
		uint64_t v;
		ASSERT_DONE_OK(&ta);
		memcpy(&v, ra->mem + 3072, 8);
		cr_assert_eq(v, 5u);
	}
	cr_assert_eq(A.completions, 0);
	pair_close(&A, &B);
	leak_end();
}

/* ---- notification mode: the progress engine's fd wakes a sleeping user ---- */

Test(semantics, notification_fd_wakes_on_completion)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, 16);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 4096, 0, 0);
	struct rdmx_buf d = lbuf(ra, 0, 4096), s = lbuf(rb, 0, 10);
	struct tinfo tr = {0}, ts = {0};
	struct rdmx_task *t;
	int fd = -1;
	ASSERT_OK(rdmx_pe_get_fd(A.pe, &fd));
	cr_assert_geq(fd, 0);
	post_recv(&A, &d, &tr);
	while (rdmx_pe_progress(A.pe) > 0)
		;
	ASSERT_OK(rdmx_pe_request_notification(A.pe));
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &s, &ts, &t));
	ASSERT_OK(rdmx_task_submit(t));
	/* A sleeps on its fd; only B progresses */
	uint64_t deadline = now_ms() + GUARD_MS;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 1) > 0)
			break;
		cr_assert(now_ms() < deadline, "the notification fd never became readable");
		drive_once(&B, NULL, NULL);
	}
	ASSERT_OK(rdmx_pe_clear_notification(A.pe));
	DRIVE_UNTIL(&A, &B, TI_DONE(&tr) && TI_DONE(&ts));
	ASSERT_DONE_OK(&tr);
	ASSERT_DONE_OK(&ts);
	cr_assert_eq(tr.len, 10u);

	/* rdmx_pe_wait in blocking mode returns with the completion, and 0 on a
	 * timeout with nothing to do */
	ASSERT_OK(rdmx_pe_set_poll_mode(A.pe, RDMX_POLL_BLOCK, 0));
	enum rdmx_poll_mode mode;
	uint32_t spin;
	ASSERT_OK(rdmx_pe_get_poll_mode(A.pe, &mode, &spin));
	cr_assert_eq(mode, RDMX_POLL_BLOCK);
	cr_assert_eq(rdmx_pe_wait(A.pe, 1), 0, "rdmx_pe_wait with nothing to do");
	struct tinfo tr2 = {0}, ts2 = {0};
	post_recv(&A, &d, &tr2);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &s, &ts2, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&B, NULL, TI_DONE(&ts2));
	deadline = now_ms() + GUARD_MS;
	while (!TI_DONE(&tr2)) {
		int n = rdmx_pe_wait(A.pe, 1000);
		cr_assert_geq(n, 0, "rdmx_pe_wait -> %s", rdmx_err_name(n));
		cr_assert(now_ms() < deadline, "rdmx_pe_wait never delivered the receive");
	}
	ASSERT_DONE_OK(&tr2);
	pair_close(&A, &B);
	leak_end();
}

/* ---- callbacks submit: an echo driven entirely from completion callbacks ---- */

#define ECHO_ROUNDS 1000
#define ECHO_RING 8

struct echo {
	struct rdmx_conn *conn; /* this side's connection */
	struct region *r;
	struct rdmx_buf rbuf[ECHO_RING], sbuf[ECHO_RING];
	struct tinfo rti[ECHO_RING], sti[ECHO_RING];
	struct rdmx_task *recv[ECHO_RING], *send[ECHO_RING];
	bool busy[ECHO_RING]; /* send task submitted, completion not yet run */
	int done;             /* replies seen (client) / requests answered (server) */
	int errors;           /* anything unexpected, with the first reason */
	char why[160];
	bool client;
};

static struct echo EC, ES;

static void echo_fail(struct echo *e, const char *why, uint32_t v)
{
	if (!e->errors++)
		snprintf(e->why, sizeof(e->why), "%s (%u)", why, v);
}

/* Sends imm from an idle send task of the ring (one whose completion ran). */
static void echo_send(struct echo *e, uint32_t imm)
{
	for (int i = 0; i < ECHO_RING; i++) {
		if (e->busy[i])
			continue;
		int rc = rdmx_task_set_imm(e->send[i], imm);
		if (rc == 0)
			rc = rdmx_task_submit(e->send[i]);
		if (rc)
			echo_fail(e, "submit from a callback failed", (uint32_t)-rc);
		e->busy[i] = true;
		return;
	}
	echo_fail(e, "no idle send task in the ring", imm);
}

static void echo_hook(struct side *s, struct rdmx_task *t, struct tinfo *ti, bool ok)
{
	struct echo *e = s->hook_arg;
	if (!ok) {
		echo_fail(e, "a task failed", (uint32_t)-rdmx_task_get_status(t));
		return;
	}
	if (rdmx_task_get_type(t) != RDMX_TASK_RECEIVE) {
		e->busy[ti - e->sti] = false;
		return;
	}
	uint32_t imm = ti->imm;
	if (ti->opcode != RDMX_OPCODE_SEND_WITH_IMM || ti->conn != e->conn)
		echo_fail(e, "unexpected receive", (uint32_t)ti->opcode);
	/* repost the same receive from its own callback */
	int rc = rdmx_task_submit(t);
	if (rc)
		echo_fail(e, "repost from the callback failed", (uint32_t)-rc);
	if (e->client) {
		if (imm != (uint32_t)(2 * e->done + 1))
			echo_fail(e, "reply out of sequence", imm);
		e->done++;
		if (e->done < ECHO_ROUNDS)
			echo_send(e, (uint32_t)(2 * e->done));
	} else {
		e->done++;
		echo_send(e, imm + 1);
	}
}

static void echo_setup(struct echo *e, struct side *s, struct rdmx_conn *c, bool client)
{
	memset(e, 0, sizeof(*e));
	e->conn = c;
	e->client = client;
	e->r = region_new(s, 64 * ECHO_RING * 2, RDMX_ACCESS_LOCAL_WRITE, 0);
	for (int i = 0; i < ECHO_RING; i++) {
		e->rbuf[i] = lbuf(e->r, (size_t)i * 64, 64);
		e->sbuf[i] = lbuf(e->r, (size_t)(ECHO_RING + i) * 64, 8);
		ASSERT_OK(rdmx_task_receive_alloc(s->ctx, &e->rbuf[i], &e->rti[i], &e->recv[i]));
		ASSERT_OK(rdmx_task_submit(e->recv[i]));
		ASSERT_OK(
		    rdmx_task_send_imm_alloc(s->ctx, c, &e->sbuf[i], 0, &e->sti[i], &e->send[i]));
	}
	s->hook = echo_hook;
	s->hook_arg = e;
}

Test(semantics, callbacks_repost_and_submit)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, 16);
	connect_pair(&A, &B, &ca, &cb);
	echo_setup(&EC, &A, ca, true);
	echo_setup(&ES, &B, cb, false);
	echo_send(&EC, 0);
	DRIVE_UNTIL(&A, &B, EC.done == ECHO_ROUNDS || EC.errors || ES.errors);
	cr_assert_eq(EC.errors, 0, "client: %s", EC.why);
	cr_assert_eq(ES.errors, 0, "server: %s", ES.why);
	cr_assert_eq(ES.done, ECHO_ROUNDS);
	/* every send completed: the last replies' completions may trail */
	DRIVE_UNTIL(&A, &B, A.completions + B.completions == 4 * ECHO_ROUNDS);
	A.hook = B.hook = NULL;
	pair_close(&A, &B);
	leak_end();
}

/* ---- one progress engine drives two contexts ---- */

Test(semantics, one_pe_drives_two_contexts)
{
	static struct side A2;
	struct rdmx_conn *a1, *b1, *a2, *b2;
	leak_begin();
	trio_open(&A, &A2, &B, 8);
	side_start(&A);
	side_start(&A2);
	side_start(&B);
	connect_pair(&A, &B, &a1, &b1);
	connect_pair(&A2, &B, &a2, &b2);
	struct region *r1 = region_new(&A, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *r2 = region_new(&A2, 4096, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, 4096, 0, 0);
	pattern_fill(rb->mem, 4096, 150);
	struct rdmx_buf d1 = lbuf(r1, 0, 4096), d2 = lbuf(r2, 0, 4096);
	struct rdmx_buf s1 = lbuf(rb, 0, 11), s2 = lbuf(rb, 100, 22);
	struct tinfo t1 = {0}, t2 = {0}, u1 = {0}, u2 = {0};
	struct rdmx_task *t;
	post_recv(&A, &d1, &t1);
	post_recv(&A2, &d2, &t2);
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, b1, &s1, &u1, &t));
	ASSERT_OK(rdmx_task_submit(t));
	ASSERT_OK(rdmx_task_send_alloc(B.ctx, b2, &s2, &u2, &t));
	ASSERT_OK(rdmx_task_submit(t));
	/* progress A's engine only (A2 shares it) */
	DRIVE_UNTIL(&A, &B, TI_DONE(&t1) && TI_DONE(&t2));
	ASSERT_DONE_OK(&t1);
	ASSERT_DONE_OK(&t2);
	cr_assert_eq(A.completions, 1, "context 1 callbacks got %d completions", A.completions);
	cr_assert_eq(A2.completions, 1, "context 2 callbacks got %d completions", A2.completions);
	cr_assert_eq(t1.conn, a1);
	cr_assert_eq(t2.conn, a2);
	cr_assert_eq(t1.len, 11u);
	cr_assert_eq(t2.len, 22u);
	cr_assert_arr_eq(r2->mem, rb->mem + 100, 22);
	ASSERT_OK(rdmx_ctx_stop(B.ctx));
	side_close(&A2);
	side_close(&A);
	side_close(&B);
	leak_end();
}

/* ---- callbacks may free their task and disconnect ---- */

static int free_rc = 99, disc_rc = 99;

static void free_and_disconnect(struct side *s, struct rdmx_task *t, struct tinfo *ti, bool ok)
{
	(void)s;
	(void)ti;
	if (!ok || rdmx_task_get_type(t) != RDMX_TASK_WRITE)
		return;
	struct rdmx_conn *c = rdmx_task_get_conn(t);
	free_rc = rdmx_task_free(t);
	disc_rc = rdmx_conn_disconnect(c);
}

Test(semantics, callback_frees_its_task_and_disconnects)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, 4);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, 4096, RDMX_ACCESS_ALL, 0);
	struct region *rb = region_new(&B, 4096, 0, 0);
	struct rdmx_mr_remote *m = remote_of(&B, ra);
	struct rdmx_buf s = lbuf(rb, 0, 64);
	struct rdmx_rbuf r = rbuf(m, 0, 0);
	struct tinfo ti = {0};
	struct rdmx_task *t, *again[4];
	B.hook = free_and_disconnect;
	ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &s, &r, &ti, &t));
	ASSERT_OK(rdmx_task_submit(t));
	DRIVE_UNTIL(&A, &B, B.disconnects == 1 && A.disconnects == 1);
	ASSERT_DONE_OK(&ti);
	ASSERT_OK(free_rc);
	ASSERT_OK(disc_rc);
	/* the freed task went back to the pool: the 4 of the pool can be allocated */
	connect_pair(&A, &B, &ca, &cb);
	B.hook = NULL;
	for (int i = 0; i < 4; i++)
		ASSERT_OK(rdmx_task_write_alloc(B.ctx, cb, &s, &r, NULL, &again[i]));
	ASSERT_RC(rdmx_task_write_alloc(B.ctx, cb, &s, &r, NULL, &t), RDMX_E_FULL);
	pair_close(&A, &B);
	leak_end();
}

/* ---- completions pending: what a poll delivers after this callback ---- */

#define NPEND 8

struct pend_rec {
	int polls;               /* progress calls made */
	int poll_of[NPEND];      /* the progress call that delivered completion i */
	uint32_t pending[NPEND]; /* rdmx_ctx_get_completions_pending in its callback */
	int n;
};
static struct pend_rec PR;

static void record_pending(struct side *s, struct rdmx_task *task, struct tinfo *ti, bool ok)
{
	(void)task;
	(void)ti;
	(void)ok;
	if (PR.n >= NPEND)
		return;
	PR.pending[PR.n] = UINT32_MAX;
	ASSERT_OK(rdmx_ctx_get_completions_pending(s->ctx, &PR.pending[PR.n]));
	PR.poll_of[PR.n++] = PR.polls;
}

/* B's 8 sends complete (the peer acknowledged them: they are on A's side)
 * before A polls; A's polls then deliver them, each callback seeing at most
 * the number its poll delivers after it (a lower bound: 0 at a poll's last
 * one), and at least one seeing more coming. Outside a callback: 0. */
Test(semantics, completions_pending_counts_what_the_poll_delivers_next)
{
	struct rdmx_conn *ca, *cb;
	leak_begin();
	pair_open(&A, &B, 16);
	connect_pair(&A, &B, &ca, &cb);
	struct region *ra = region_new(&A, NPEND * 64, RDMX_ACCESS_LOCAL_WRITE, 0);
	struct region *rb = region_new(&B, NPEND * 64, 0, 7);
	struct rdmx_buf dst[NPEND], src[NPEND];
	struct tinfo tr[NPEND] = {0}, ts[NPEND] = {0};
	struct rdmx_task *t;
	uint32_t outside = UINT32_MAX;

	for (int i = 0; i < NPEND; i++) {
		dst[i] = lbuf(ra, (size_t)i * 64, 64);
		post_recv(&A, &dst[i], &tr[i]);
	}
	int a0 = A.completions;
	for (int i = 0; i < NPEND; i++) {
		src[i] = lbuf(rb, (size_t)i * 64, 64);
		ASSERT_OK(rdmx_task_send_alloc(B.ctx, cb, &src[i], &ts[i], &t));
		ASSERT_OK(rdmx_task_submit(t));
	}
	DRIVE_UNTIL(&B, NULL, B.completions == NPEND);
	memset(&PR, 0, sizeof(PR));
	A.hook = record_pending;
	uint64_t until = now_ms() + GUARD_MS;
	while (A.completions - a0 < NPEND && now_ms() < until) {
		rdmx_pe_progress(A.pe);
		PR.polls++;
	}
	A.hook = NULL;
	cr_assert_eq(A.completions - a0, NPEND, "%d of %d receives", A.completions - a0, NPEND);
	bool saw_more = false;
	for (int i = 0; i < NPEND; i++) {
		uint32_t after = 0;

		ASSERT_DONE_OK(&tr[i]);
		for (int j = i + 1; j < NPEND && PR.poll_of[j] == PR.poll_of[i]; j++)
			after++;
		cr_assert_leq(PR.pending[i], after,
		              "completion %d: %u pending, its poll delivered %u after it", i,
		              PR.pending[i], after);
		saw_more = saw_more || PR.pending[i] > 0;
	}
	cr_assert(saw_more, "every receive came in a poll of its own");
	ASSERT_OK(rdmx_ctx_get_completions_pending(A.ctx, &outside));
	cr_assert_eq(outside, 0);
	ASSERT_RC(rdmx_ctx_get_completions_pending(NULL, &outside), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_get_completions_pending(A.ctx, NULL), RDMX_E_INVAL);
	pair_close(&A, &B);
	leak_end();
}
