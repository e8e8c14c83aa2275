/* post.c: task -> work request mapping, queue accounting, the stall queue. */
#include "mock.h"

#include <arpa/inet.h>
#include <string.h>

static struct fixture F;
static struct rdmx_conn *C;
static uint8_t local_mem[8192] __attribute__((aligned(64)));
static struct rdmx_mr local_mr;
static struct rdmx_mr_remote remote = {.addr = 0x10000,
                                       .len = 4096,
                                       .rkey = 0xabcd,
                                       .access = RDMX_ACCESS_ALL,
                                       .provider = RDMX_PROVIDER_ID_VERBS};

static void setup(void)
{
	fixture_init(&F, 4);
	C = fixture_conn(&F);
	mock_mr(&local_mr, local_mem, sizeof(local_mem), 0x77);
}

static void teardown(void)
{
	fixture_fini(&F);
}

TestSuite(post, .init = setup, .fini = teardown);

static struct rdmx_task *task(enum rdmx__op op, struct rdmx_buf *local, uint64_t off, uint64_t len)
{
	static struct rdmx_task tasks[16];
	static int n;
	struct rdmx_task *t = &tasks[n++ % 16];

	memset(t, 0, sizeof(*t));
	t->ctx = &F.ctx;
	t->conn = C;
	t->op = op;
	t->state = RDMX__TASK_INFLIGHT;
	t->local = local;
	t->remote.mr = &remote;
	t->remote.offset = off;
	t->remote.len = len;
	t->len = len;
	return t;
}

Test(post, write_remote_address_wraps_and_is_not_checked)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 16};
	struct rdmx_task *t = task(RDMX__OP_WRITE, &b, UINT64_MAX - 7, 16);

	cr_assert_eq(rdmx__verbs_post_send(C, t), 0);
	cr_assert_eq(M.nsends, 1);
	struct ibv_send_wr *wr = &M.sends[0].wr;
	cr_assert_eq(wr->opcode, IBV_WR_RDMA_WRITE);
	cr_assert_eq(wr->wr_id, (uintptr_t)t);
	cr_assert(wr->send_flags & IBV_SEND_SIGNALED);
	/* 0x10000 + (2^64 - 8) wraps to 0xfff8: the NIC refuses it, not us */
	cr_assert_eq(wr->wr.rdma.remote_addr, 0xfff8u, "remote addr 0x%llx",
	             (unsigned long long)wr->wr.rdma.remote_addr);
	cr_assert_eq(wr->wr.rdma.rkey, 0xabcdu);
	cr_assert_eq(wr->num_sge, 1);
	cr_assert_eq(M.sends[0].sge[0].addr, (uintptr_t)local_mem);
	cr_assert_eq(M.sends[0].sge[0].length, 16u);
	cr_assert_eq(M.sends[0].sge[0].lkey, 0x77u);
	mock_send_wc((uintptr_t)t, M.sends[0].qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
}

Test(post, send_imm_and_write_imm_carry_imm_in_network_order)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};
	struct rdmx_task *s = task(RDMX__OP_SEND_IMM, &b, 0, 0);
	struct rdmx_task *w = task(RDMX__OP_WRITE_IMM, &b, 100, 8);

	s->imm = 0xa1b2c3d4u;
	w->imm = 0x01020304u;
	cr_assert_eq(rdmx__verbs_post_send(C, s), 0);
	cr_assert_eq(rdmx__verbs_post_send(C, w), 0);
	cr_assert_eq(M.sends[0].wr.opcode, IBV_WR_SEND_WITH_IMM);
	cr_assert_eq(M.sends[0].wr.imm_data, htonl(0xa1b2c3d4u));
	cr_assert_eq(M.sends[1].wr.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	cr_assert_eq(M.sends[1].wr.imm_data, htonl(0x01020304u));
	cr_assert_eq(M.sends[1].wr.wr.rdma.remote_addr, 0x10000u + 100u);
	mock_send_wc((uintptr_t)s, M.sends[0].qpn, IBV_WC_SUCCESS);
	mock_send_wc((uintptr_t)w, M.sends[0].qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 2);
}

Test(post, read_cuts_the_chain_to_the_read_length)
{
	struct rdmx_buf b[3] = {
	    {.mr = &local_mr, .addr = local_mem, .len = 100},
	    {.mr = &local_mr, .addr = local_mem + 200, .len = 200},
	    {.mr = &local_mr, .addr = local_mem + 500, .len = 300},
	};
	b[0].next = &b[1];
	b[1].next = &b[2];
	struct rdmx_task *t = task(RDMX__OP_READ, b, 0, 250);

	cr_assert_eq(rdmx__verbs_post_send(C, t), 0);
	struct mock_wr *m = &M.sends[0];
	cr_assert_eq(m->wr.opcode, IBV_WR_RDMA_READ);
	cr_assert_eq(m->wr.num_sge, 2, "%d sges for 250 of 600 bytes", m->wr.num_sge);
	cr_assert_eq(m->sge[0].length, 100u);
	cr_assert_eq(m->sge[1].length, 150u);
	cr_assert_eq(m->sge[1].addr, (uintptr_t)(local_mem + 200));
	mock_send_wc((uintptr_t)t, m->qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
}

Test(post, atomics_and_flush)
{
	struct rdmx_buf res = {.mr = &local_mr, .addr = local_mem + 64, .len = 8};
	struct rdmx_task *cas = task(RDMX__OP_CAS, &res, 8, 8);
	struct rdmx_task *fadd = task(RDMX__OP_FADD, &res, 16, 8);
	struct rdmx_task *fl = task(RDMX__OP_FLUSH, NULL, 10, 4000);
	struct rdmx_task *fl0 = task(RDMX__OP_FLUSH, NULL, 10, 0);

	cas->op0 = 1;
	cas->op1 = 2;
	fadd->op0 = 5;
	cr_assert_eq(rdmx__verbs_post_send(C, cas), 0);
	cr_assert_eq(rdmx__verbs_post_send(C, fadd), 0);
	cr_assert_eq(rdmx__verbs_post_send(C, fl), 0);
	cr_assert_eq(rdmx__verbs_post_send(C, fl0), 0);
	cr_assert_eq(M.sends[0].wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	cr_assert_eq(M.sends[0].wr.wr.atomic.remote_addr, 0x10008u);
	cr_assert_eq(M.sends[0].wr.wr.atomic.compare_add, 1u);
	cr_assert_eq(M.sends[0].wr.wr.atomic.swap, 2u);
	cr_assert_eq(M.sends[0].wr.wr.atomic.rkey, 0xabcdu);
	cr_assert_eq(M.sends[0].sge[0].addr, (uintptr_t)(local_mem + 64));
	cr_assert_eq(M.sends[0].sge[0].length, 8u);
	cr_assert_eq(M.sends[1].wr.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	cr_assert_eq(M.sends[1].wr.wr.atomic.compare_add, 5u);
	/* flush: a 1-byte read of the range's last byte into the scratch area */
	cr_assert_eq(M.sends[2].wr.opcode, IBV_WR_RDMA_READ);
	cr_assert_eq(M.sends[2].wr.num_sge, 1);
	cr_assert_eq(M.sends[2].sge[0].length, 1u);
	cr_assert_eq(M.sends[2].wr.wr.rdma.remote_addr, 0x10000u + 10u + 3999u);
	cr_assert_neq(M.sends[2].sge[0].addr, (uintptr_t)(local_mem + 64));
	/* an empty range reads nothing */
	cr_assert_eq(M.sends[3].wr.opcode, IBV_WR_RDMA_READ);
	cr_assert_eq(M.sends[3].wr.num_sge, 0);
	for (int i = 0; i < 4; i++)
		mock_send_wc(M.sends[i].wr.wr_id, M.sends[i].qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(M.done[i].status, 0);
}

Test(post, send_queue_full)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};
	struct rdmx_task *t[5];

	for (int i = 0; i < 4; i++) {
		t[i] = task(RDMX__OP_SEND, &b, 0, 0);
		cr_assert_eq(rdmx__verbs_post_send(C, t[i]), 0);
	}
	t[4] = task(RDMX__OP_SEND, &b, 0, 0);
	cr_assert_eq(rdmx__verbs_post_send(C, t[4]), RDMX_E_FULL);
	cr_assert_eq(M.nsends, 4);
	/* a completion frees a slot */
	mock_send_wc((uintptr_t)t[0], M.sends[0].qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(rdmx__verbs_post_send(C, t[4]), 0);
	for (int i = 1; i < 5; i++)
		mock_send_wc((uintptr_t)t[i], M.sends[0].qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 4);
}

Test(post, post_failure_is_reported_and_nothing_is_queued)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};
	struct rdmx_task *t = task(RDMX__OP_SEND, &b, 0, 0);

	M.post_send_rc = EINVAL;
	cr_assert_eq(rdmx__verbs_post_send(C, t), RDMX_E_PROVIDER);
	M.post_send_rc = ENOMEM;
	cr_assert_eq(rdmx__verbs_post_send(C, t), RDMX_E_FULL);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.ndone, 0);
	/* and the connection still posts */
	cr_assert_eq(rdmx__verbs_post_send(C, t), 0);
	mock_send_wc((uintptr_t)t, M.sends[0].qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
}

Test(post, receive_sg_list_and_srq_full)
{
	struct rdmx_buf b[2] = {
	    {.mr = &local_mr, .addr = local_mem, .len = 64},
	    {.mr = &local_mr, .addr = local_mem + 128, .len = 32},
	};
	static struct rdmx_task r[17];

	b[0].next = &b[1];
	for (int i = 0; i < 16; i++) {
		r[i].ctx = &F.ctx;
		r[i].op = RDMX__OP_RECV;
		r[i].state = RDMX__TASK_INFLIGHT;
		r[i].local = i == 0 ? b : NULL;
		cr_assert_eq(rdmx__verbs_post_recv(&F.ctx, &r[i]), 0);
	}
	r[16].ctx = &F.ctx;
	r[16].op = RDMX__OP_RECV;
	cr_assert_eq(rdmx__verbs_post_recv(&F.ctx, &r[16]), RDMX_E_FULL);
	cr_assert_eq(M.recvs[0].wr.num_sge, 2);
	cr_assert_eq(M.recvs[0].sge[1].length, 32u);
	cr_assert_eq(M.recvs[1].wr.num_sge, 0, "a receive without a buffer has no sge");
	/* stop-like cleanup: the test ends with receives posted */
	while (F.vctx->recv_head)
		rdmx__verbs_recv_unlink(F.vctx, F.vctx->recv_head);
}

/* ---- inline data (rdmx_ctx_set_max_inline) ---- */

/* A fresh context asking for max_inline bytes, on a fake device that grants
 * at most `grant` (0: all) and refuses a QP above `refuse_above` (0: never). */
static struct rdmx_conn *inline_conn(uint32_t max_inline, uint32_t grant, uint32_t refuse_above)
{
	fixture_fini(&F);
	fixture_init(&F, 4);
	mock_mr(&local_mr, local_mem, sizeof(local_mem), 0x77);
	M.qp_inline_grant = grant;
	M.qp_inline_refuse_above = refuse_above;
	F.ctx.props.max_inline = max_inline;
	return fixture_conn(&F);
}

static void complete_all(void)
{
	for (int i = 0; i < M.nsends; i++)
		mock_send_wc(M.sends[i].wr.wr_id, M.sends[i].qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), M.nsends);
}

Test(post, small_sends_and_writes_go_inline_large_ones_do_not)
{
	struct rdmx_conn *c = inline_conn(64, 0, 0);
	struct rdmx_buf small = {.mr = &local_mr, .addr = local_mem, .len = 64};
	struct rdmx_buf big = {.mr = &local_mr, .addr = local_mem, .len = 65};
	struct rdmx_task *t;

	cr_assert_eq(M.nqp_create, 1);
	cr_assert_eq(M.qp_inline_asked[0], 64u, "QP asked for %u inline bytes",
	             M.qp_inline_asked[0]);
	t = task(RDMX__OP_SEND, &small, 0, 64);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	t = task(RDMX__OP_SEND, &big, 0, 65);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	t = task(RDMX__OP_WRITE, &small, 0, 64);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	t = task(RDMX__OP_WRITE_IMM, &big, 0, 65);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	cr_assert_eq(M.nsends, 4);
	cr_assert(M.sends[0].wr.send_flags & IBV_SEND_INLINE, "a 64-byte send is not inline");
	cr_assert_not(M.sends[1].wr.send_flags & IBV_SEND_INLINE, "a 65-byte send went inline");
	cr_assert(M.sends[2].wr.send_flags & IBV_SEND_INLINE, "a 64-byte write is not inline");
	cr_assert_not(M.sends[3].wr.send_flags & IBV_SEND_INLINE, "a 65-byte write went inline");
	for (int i = 0; i < 4; i++)
		cr_assert(M.sends[i].wr.send_flags & IBV_SEND_SIGNALED);
	/* the sg list is the same either way (the NIC copies from it) */
	cr_assert_eq(M.sends[0].sge[0].addr, (uintptr_t)local_mem);
	cr_assert_eq(M.sends[0].sge[0].length, 64u);
	complete_all();
}

Test(post, reads_atomics_and_zero_length_never_inline)
{
	struct rdmx_conn *c = inline_conn(256, 0, 0);
	struct rdmx_buf small = {.mr = &local_mr, .addr = local_mem, .len = 8};
	struct rdmx_task *t;

	t = task(RDMX__OP_READ, &small, 0, 8);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	t = task(RDMX__OP_FADD, &small, 0, 8);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	t = task(RDMX__OP_WRITE_IMM, NULL, 0, 0);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	cr_assert_eq(M.nsends, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_not(M.sends[i].wr.send_flags & IBV_SEND_INLINE, "work request %d inline",
		              i);
	complete_all();
}

Test(post, inline_off_by_default)
{
	struct rdmx_buf small = {.mr = &local_mr, .addr = local_mem, .len = 4};
	struct rdmx_task *t = task(RDMX__OP_SEND, &small, 0, 4);

	cr_assert_eq(M.qp_inline_asked[0], 0u);
	cr_assert_eq(rdmx__verbs_post_send(C, t), 0);
	cr_assert_not(M.sends[0].wr.send_flags & IBV_SEND_INLINE);
	complete_all();
}

Test(post, inline_clamped_to_what_the_qp_got)
{
	struct rdmx_conn *c;
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 40};
	struct rdmx_task *t;

	/* the device grants 32 of 256: a 40-byte send goes the normal way */
	c = inline_conn(256, 32, 0);
	t = task(RDMX__OP_SEND, &b, 0, 40);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	cr_assert_not(M.sends[0].wr.send_flags & IBV_SEND_INLINE);
	complete_all();
}

Test(post, qp_refused_for_its_inline_size_is_asked_again_smaller)
{
	struct rdmx_conn *c;
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 60};
	struct rdmx_task *t;

	c = inline_conn(256, 0, 64);
	cr_assert_eq(M.nqp_create, 3, "%d QP creations", M.nqp_create);
	cr_assert_eq(M.qp_inline_asked[0], 256u);
	cr_assert_eq(M.qp_inline_asked[1], 128u);
	cr_assert_eq(M.qp_inline_asked[2], 64u);
	t = task(RDMX__OP_SEND, &b, 0, 60);
	t->conn = c;
	cr_assert_eq(rdmx__verbs_post_send(c, t), 0);
	cr_assert(M.sends[0].wr.send_flags & IBV_SEND_INLINE);
	complete_all();
}
