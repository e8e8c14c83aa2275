/* poll.c (with post.c and conn.c): completions, the emulated atomic write,
 * errors and flushes, receives, connection ends, export/connect attributes. */
#include "mock.h"

#include <arpa/inet.h>
#include <string.h>

static struct fixture F;
static struct rdmx_conn *C;
static uint8_t local_mem[VERBS_SOFT_NAP_LEN] __attribute__((aligned(64)));
static struct rdmx_mr local_mr;
static struct rdmx_mr_remote remote = {.addr = 0x20000,
                                       .len = 4096,
                                       .rkey = 0x1234,
                                       .access = RDMX_ACCESS_ALL,
                                       .provider = RDMX_PROVIDER_ID_VERBS};
static struct rdmx_task T[16];

static void setup(void)
{
	fixture_init(&F, 8);
	C = fixture_conn(&F);
	mock_mr(&local_mr, local_mem, sizeof(local_mem), 0x99);
	memset(T, 0, sizeof(T));
}

static void teardown(void)
{
	fixture_fini(&F);
}

TestSuite(poll, .init = setup, .fini = teardown);

static struct rdmx_task *task(int i, enum rdmx__op op, struct rdmx_buf *local, uint64_t off)
{
	struct rdmx_task *t = &T[i];

	t->ctx = &F.ctx;
	t->conn = C;
	t->op = op;
	t->state = RDMX__TASK_INFLIGHT;
	t->local = local;
	t->remote.mr = &remote;
	t->remote.offset = off;
	t->remote.len = 8;
	t->len = 8;
	return t;
}

static uint32_t qpn(void)
{
	return ((struct verbs_conn *)C->prov)->qpn;
}

Test(poll, atomic_write_is_a_cas_loop_and_later_tasks_wait)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};
	struct rdmx_task *aw = task(0, RDMX__OP_ATOMIC_WRITE, NULL, 24);
	struct rdmx_task *w = task(1, RDMX__OP_WRITE, &b, 64);

	aw->op0 = 0x8877665544332211ull;
	cr_assert_eq(rdmx__verbs_post_send(C, aw), 0);
	cr_assert_eq(rdmx__verbs_post_send(C, w), 0);
	cr_assert_eq(M.nsends, 1, "the write went out while the atomic write was pending");
	struct mock_wr *cas = &M.sends[0];
	cr_assert_eq(cas->wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	cr_assert_eq(cas->wr.wr.atomic.compare_add, 0u, "first guess");
	cr_assert_eq(cas->wr.wr.atomic.swap, 0x8877665544332211ull);
	cr_assert_eq(cas->wr.wr.atomic.remote_addr, 0x20000u + 24u);

	/* the word held 0x1111...: the CAS missed, the NIC wrote the old value */
	uint64_t found = 0x1111111111111111ull;
	memcpy((void *)(uintptr_t)cas->sge[0].addr, &found, 8);
	mock_send_wc(cas->wr.wr_id, qpn(), IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0, "a missed CAS completed the task");
	cr_assert_eq(M.nsends, 2);
	struct mock_wr *cas2 = &M.sends[1];
	cr_assert_eq(cas2->wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	cr_assert_eq(cas2->wr.wr.atomic.compare_add, found, "retry guesses the value found");
	cr_assert_eq(cas2->wr.wr_id, (uintptr_t)aw);

	/* the second CAS hits: the task completes, then the write goes out */
	memcpy((void *)(uintptr_t)cas2->sge[0].addr, &found, 8);
	mock_send_wc(cas2->wr.wr_id, qpn(), IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[0].task, aw);
	cr_assert_eq(M.done[0].status, 0);
	cr_assert_eq(M.nsends, 3, "the stalled write was not posted");
	cr_assert_eq(M.sends[2].wr.opcode, IBV_WR_RDMA_WRITE);
	mock_send_wc(M.sends[2].wr.wr_id, qpn(), IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[1].task, w);
}

Test(poll, error_fails_the_task_flushes_the_rest_and_sets_error_once)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};

	for (int i = 0; i < 3; i++)
		cr_assert_eq(rdmx__verbs_post_send(C, task(i, RDMX__OP_WRITE, &b, 0)), 0);
	mock_send_wc((uintptr_t)&T[0], qpn(), IBV_WC_REM_ACCESS_ERR);
	mock_send_wc((uintptr_t)&T[1], qpn(), IBV_WC_WR_FLUSH_ERR);
	mock_send_wc((uintptr_t)&T[2], qpn(), IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 3);
	cr_assert_eq(M.done[0].status, RDMX_E_REMOTE_ACCESS);
	cr_assert_eq(M.done[1].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(M.done[2].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(M.set_error_calls, 1);
	cr_assert_eq(C->state, RDMX_CONN_ERROR);
	cr_assert_eq(M.nevents, 0, "an access error ended the connection");
	/* later submits the provider sees are completed CONN_ABORTED, in order */
	cr_assert_eq(rdmx__verbs_post_send(C, task(3, RDMX__OP_WRITE, &b, 0)), 0);
	cr_assert_eq(M.nsends, 3, "posted on a connection in error");
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[3].task, &T[3]);
	cr_assert_eq(M.done[3].status, RDMX_E_CONN_ABORTED);
}

Test(poll, rnr_and_remote_op_status)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};

	cr_assert_eq(rdmx__verbs_post_send(C, task(0, RDMX__OP_SEND, &b, 0)), 0);
	mock_send_wc((uintptr_t)&T[0], qpn(), IBV_WC_RNR_RETRY_EXC_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[0].status, RDMX_E_RNR);
	cr_assert_eq(rdmx__verbs_wc_status(IBV_WC_REM_INV_REQ_ERR, false), RDMX_E_REMOTE_OP);
	cr_assert_eq(rdmx__verbs_wc_status(IBV_WC_REM_OP_ERR, false), RDMX_E_REMOTE_OP);
	cr_assert_eq(rdmx__verbs_wc_status(IBV_WC_LOC_LEN_ERR, false), RDMX_E_LOCAL_LENGTH);
	cr_assert_eq(rdmx__verbs_wc_status(IBV_WC_RETRY_EXC_ERR, false), RDMX_E_CONN_ABORTED);
	cr_assert_eq(rdmx__verbs_wc_status(IBV_WC_WR_FLUSH_ERR, true), RDMX_E_CANCELED);
	cr_assert_eq(rdmx__verbs_wc_status(IBV_WC_SUCCESS, false), 0);
}

Test(poll, retry_exceeded_is_peer_death_disconnected_once_drained)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};

	for (int i = 0; i < 2; i++)
		cr_assert_eq(rdmx__verbs_post_send(C, task(i, RDMX__OP_WRITE, &b, 0)), 0);
	mock_send_wc((uintptr_t)&T[0], qpn(), IBV_WC_RETRY_EXC_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[0].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(M.nevents, 0, "DISCONNECTED before the last task completed");
	cr_assert_geq(M.qp_state_err, 1, "the QP was not moved to error");
	mock_send_wc((uintptr_t)&T[1], qpn(), IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 2);
	cr_assert_eq(M.done[1].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(M.nevents, 1);
	cr_assert_eq(M.events[0].ev, RDMX__CONN_EV_DISCONNECTED);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.nevents, 1, "DISCONNECTED reported twice");
}

Test(poll, local_disconnect_waits_for_flushes)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};

	cr_assert_eq(rdmx__verbs_post_send(C, task(0, RDMX__OP_SEND, &b, 0)), 0);
	cr_assert_eq(rdmx__verbs_conn_disconnect(C), 0);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.nevents, 0);
	mock_send_wc((uintptr_t)&T[0], qpn(), IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 2);
	cr_assert_eq(M.done[0].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(M.events[0].ev, RDMX__CONN_EV_DISCONNECTED);
	cr_assert_eq(M.set_error_calls, 0, "a local disconnect is no error");
}

Test(poll, receives_name_opcode_length_imm_and_connection)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 1024};
	static struct rdmx_task r[4];

	for (int i = 0; i < 4; i++) {
		r[i].ctx = &F.ctx;
		r[i].op = RDMX__OP_RECV;
		r[i].state = RDMX__TASK_INFLIGHT;
		r[i].local = &b;
		cr_assert_eq(rdmx__verbs_post_recv(&F.ctx, &r[i]), 0);
	}
	mock_recv_wc((uintptr_t)&r[0], qpn(), IBV_WC_SUCCESS, IBV_WC_RECV, 0, 1000, 0);
	mock_recv_wc((uintptr_t)&r[1], qpn(), IBV_WC_SUCCESS, IBV_WC_RECV, IBV_WC_WITH_IMM, 7,
	             htonl(0xa1b2c3d4u));
	mock_recv_wc((uintptr_t)&r[2], qpn(), IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
	             IBV_WC_WITH_IMM, 1500, htonl(0x01020304u));
	/* a message of an unknown QP goes nowhere: the receive is posted again */
	mock_recv_wc((uintptr_t)&r[3], 0xdead, IBV_WC_SUCCESS, IBV_WC_RECV, 0, 5, 0);
	int before = M.nrecvs;
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 3);
	cr_assert_eq(M.done[0].opcode, RDMX_OPCODE_SEND);
	cr_assert_eq(M.done[0].len, 1000u);
	cr_assert_eq(M.done[0].conn, C);
	cr_assert_eq(M.done[1].opcode, RDMX_OPCODE_SEND_WITH_IMM);
	cr_assert_eq(M.done[1].imm, 0xa1b2c3d4u, "imm 0x%x", M.done[1].imm);
	cr_assert_eq(M.done[2].opcode, RDMX_OPCODE_WRITE_WITH_IMM);
	cr_assert_eq(M.done[2].imm, 0x01020304u);
	cr_assert_eq(M.done[2].len, 1500u);
	cr_assert_eq(M.nrecvs, before + 1, "the stray receive was not posted again");
	cr_assert_eq(M.recvs[M.nrecvs - 1].wr.wr_id, (uintptr_t)&r[3]);
	/* a write_imm the responder refused: the receive stays posted */
	mock_recv_wc((uintptr_t)&r[3], qpn(), IBV_WC_REM_ACCESS_ERR, IBV_WC_RECV_RDMA_WITH_IMM, 0,
	             0, 0);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.nrecvs, before + 2);
	cr_assert_eq(C->state, RDMX_CONN_ERROR, "the responder's QP is in error");
	/* a send longer than the receive, as rxe reports it */
	mock_recv_wc((uintptr_t)&r[3], qpn(), IBV_WC_LOC_QP_OP_ERR, IBV_WC_RECV, 0, 0, 0);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[3].task, &r[3]);
	cr_assert_eq(M.done[3].status, RDMX_E_LOCAL_LENGTH);
	while (F.vctx->recv_head)
		rdmx__verbs_recv_unlink(F.vctx, F.vctx->recv_head);
}

Test(poll, export_connect_moves_the_qp_with_the_peer_details)
{
	struct rdmx_conn *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	uint8_t da[RDMX_CONN_DETAILS_MAX], db[RDMX_CONN_DETAILS_MAX];
	size_t la = 0, lb = 0;

	a->ctx = b->ctx = &F.ctx;
	a->state = b->state = RDMX_CONN_CONNECTING;
	cr_assert_eq(rdmx__verbs_conn_export(a, da, &la), 0);
	cr_assert_eq(rdmx__verbs_conn_export(b, db, &lb), 0);
	cr_assert_eq(la, VERBS_DETAILS_SIZE);
	cr_assert_eq(da[3], RDMX_PROVIDER_ID_VERBS);
	struct verbs_conn *vb = b->prov, *va = a->prov;
	cr_assert_leq(va->psn, 0xffffffu);
	/* malformed details */
	uint8_t bad[VERBS_DETAILS_SIZE];
	memcpy(bad, db, sizeof(bad));
	bad[3] = RDMX_PROVIDER_ID_TCP;
	cr_assert_eq(rdmx__verbs_conn_connect(a, bad, sizeof(bad)), RDMX_E_INVAL);
	cr_assert_eq(rdmx__verbs_conn_connect(a, db, lb - 1), RDMX_E_INVAL);
	/* a peer with a smaller MTU */
	memcpy(bad, db, sizeof(bad));
	bad[14] = IBV_MTU_512;
	cr_assert_eq(rdmx__verbs_conn_connect(a, bad, sizeof(bad)), 0);
	cr_assert_eq(mock_rtr.dest_qp_num, vb->qpn);
	cr_assert_eq(mock_rtr.rq_psn, vb->psn);
	cr_assert_eq(mock_rtr.path_mtu, IBV_MTU_512);
	cr_assert_eq(mock_rtr.ah_attr.is_global, 1, "RoCE needs the GRH");
	cr_assert_arr_eq(mock_rtr.ah_attr.grh.dgid.raw, db + 16, 16);
	cr_assert_eq(mock_rtr.min_rnr_timer, VERBS_MIN_RNR_TIMER);
	cr_assert_eq(mock_rts.sq_psn, va->psn);
	cr_assert_eq(mock_rts.rnr_retry, 3, "rnr retry from the context's property");
	cr_assert_eq(mock_rts.retry_cnt, VERBS_QP_RETRY_CNT);
	cr_assert_lt(mock_rts.retry_cnt, 7, "rxe retries forever on 7");
	/* connected twice */
	cr_assert_eq(rdmx__verbs_conn_connect(a, db, lb), RDMX_E_BAD_STATE);
	/* ESTABLISHED waits for the handshake: a zero-length probe */
	cr_assert_eq(M.nsends, 1);
	cr_assert_eq(M.sends[0].wr.wr_id, (uintptr_t)va | 1u);
	cr_assert_eq(M.sends[0].wr.opcode, IBV_WR_RDMA_WRITE);
	cr_assert_eq(M.sends[0].wr.num_sge, 0);
	struct rdmx_buf lb8 = {.mr = &local_mr, .addr = local_mem, .len = 8};
	struct rdmx_task *t = task(0, RDMX__OP_SEND, &lb8, 0);
	t->conn = a;
	cr_assert_eq(rdmx__verbs_post_send(a, t), 0);
	cr_assert_eq(M.nsends, 1, "a task went out before the handshake");
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.nevents, 0);
	/* the peer's QP was not ready: the QP restarts and probes again */
	int rtr_psn_before = (int)mock_rtr.rq_psn;
	memset(&mock_rtr, 0, sizeof(mock_rtr));
	mock_send_wc(M.sends[0].wr.wr_id, va->qpn, IBV_WC_RETRY_EXC_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.nevents, 0);
	cr_assert_eq(M.set_error_calls, 0, "an unanswered handshake is no connection error");
	cr_assert_eq(M.nsends, 2);
	cr_assert_eq((int)mock_rtr.rq_psn, rtr_psn_before, "the restart changed the peer psn");
	cr_assert_eq(mock_rts.sq_psn, va->psn);
	/* answered: ESTABLISHED, then the held task goes out */
	mock_send_wc(M.sends[1].wr.wr_id, va->qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.events[0].conn, a);
	cr_assert_eq(M.events[0].ev, RDMX__CONN_EV_ESTABLISHED);
	cr_assert_eq(M.nsends, 3);
	cr_assert_eq(M.sends[2].wr.wr_id, (uintptr_t)t);
	mock_send_wc((uintptr_t)t, va->qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[0].status, 0);
	fixture_conn_free(&F, a);
	fixture_conn_free(&F, b);
}

Test(poll, probe_completions_are_nobodys_task)
{
	struct verbs_conn *vc = C->prov;

	/* a probe that came back fine, then one that found the peer gone */
	vc->probing = true;
	vc->posted = 1;
	F.vctx->nprobing = 1;
	mock_send_wc((uintptr_t)vc | 1u, vc->qpn, IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.ndone, 0);
	cr_assert_eq(vc->posted, 0u);
	vc->probing = true;
	vc->posted = 1;
	F.vctx->nprobing = 1;
	mock_send_wc((uintptr_t)vc | 1u, vc->qpn, IBV_WC_RETRY_EXC_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.ndone, 0);
	cr_assert_eq(M.events[0].ev, RDMX__CONN_EV_DISCONNECTED);
}

Test(poll, completions_ctx_arm_stashed_come_first)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};

	for (int i = 0; i < 2; i++)
		cr_assert_eq(rdmx__verbs_post_send(C, task(i, RDMX__OP_WRITE, &b, 0)), 0);
	/* ctx_arm took the first completion off the CQ while checking for a race */
	memset(&F.vctx->sstash[0], 0, sizeof(F.vctx->sstash[0]));
	F.vctx->sstash[0].wr_id = (uintptr_t)&T[0];
	F.vctx->sstash[0].qp_num = qpn();
	F.vctx->nsstash = 1;
	mock_send_wc((uintptr_t)&T[1], qpn(), IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 2);
	cr_assert_eq(M.done[0].task, &T[0]);
	cr_assert_eq(M.done[1].task, &T[1]);
	cr_assert_eq(F.vctx->nsstash, 0u);
}

Test(poll, export_handshake_gives_up_after_the_request_timeout)
{
	struct rdmx_conn *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	uint8_t da[RDMX_CONN_DETAILS_MAX], db[RDMX_CONN_DETAILS_MAX];
	size_t la = 0, lb = 0;
	struct rdmx_buf lb8 = {.mr = &local_mr, .addr = local_mem, .len = 8};

	a->ctx = b->ctx = &F.ctx;
	cr_assert_eq(rdmx__verbs_conn_export(a, da, &la), 0);
	cr_assert_eq(rdmx__verbs_conn_export(b, db, &lb), 0);
	cr_assert_eq(rdmx__verbs_conn_connect(a, db, lb), 0);
	struct verbs_conn *va = a->prov;
	struct rdmx_task *t = task(0, RDMX__OP_WRITE, &lb8, 0);
	t->conn = a;
	cr_assert_eq(rdmx__verbs_post_send(a, t), 0);
	va->hs_deadline_ms = 0; /* the connection request timeout has passed */
	mock_send_wc(M.sends[0].wr.wr_id, va->qpn, IBV_WC_RETRY_EXC_ERR);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 2);
	cr_assert_eq(M.done[0].task, t);
	cr_assert_eq(M.done[0].status, RDMX_E_CONN_ABORTED);
	cr_assert_eq(M.nevents, 1);
	cr_assert_eq(M.events[0].ev, RDMX__CONN_EV_FAILURE, "event %d", (int)M.events[0].ev);
	cr_assert_eq(M.nsends, 1, "probed again after the deadline");
	fixture_conn_free(&F, a);
	fixture_conn_free(&F, b);
}

Test(poll, a_cq_is_polled_once_per_short_batch_and_not_when_nothing_is_outstanding)
{
	struct rdmx_buf b = {.mr = &local_mr, .addr = local_mem, .len = 8};

	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.scq_polls, 0, "a send CQ with nothing outstanding polled %d times",
	             M.scq_polls);
	cr_assert_eq(M.rcq_polls, 0, "a recv CQ with no receive posted polled %d times",
	             M.rcq_polls);
	cr_assert_eq(rdmx__verbs_post_send(C, task(0, RDMX__OP_WRITE, &b, 0)), 0);
	cr_assert_eq(rdmx__verbs_post_send(C, task(1, RDMX__OP_WRITE, &b, 0)), 0);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.scq_polls, 1, "writes in flight: the send CQ polled %d times", M.scq_polls);
	cr_assert_eq(M.rcq_polls, 0);
	mock_send_wc((uintptr_t)&T[0], qpn(), IBV_WC_SUCCESS);
	mock_send_wc((uintptr_t)&T[1], qpn(), IBV_WC_SUCCESS);
	M.scq_polls = M.rcq_polls = 0;
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 2);
	cr_assert_eq(M.scq_polls, 1, "a second, empty poll after a short batch");
	cr_assert_eq(M.done[0].task, &T[0]);
	cr_assert_eq(M.done[1].task, &T[1]);
	/* a budget smaller than what waits: the rest comes at the next poll */
	cr_assert_eq(rdmx__verbs_post_send(C, task(2, RDMX__OP_WRITE, &b, 0)), 0);
	cr_assert_eq(rdmx__verbs_post_send(C, task(3, RDMX__OP_WRITE, &b, 0)), 0);
	mock_send_wc((uintptr_t)&T[2], qpn(), IBV_WC_SUCCESS);
	mock_send_wc((uintptr_t)&T[3], qpn(), IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 1), 1);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[3].task, &T[3]);
	/* a posted receive: the recv CQ is polled, once */
	struct rdmx_task *r = task(4, RDMX__OP_RECV, &b, 0);
	cr_assert_eq(rdmx__verbs_post_recv(&F.ctx, r), 0);
	M.scq_polls = M.rcq_polls = 0;
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.rcq_polls, 1, "a posted receive: the recv CQ polled %d times", M.rcq_polls);
	cr_assert_eq(M.scq_polls, 0);
	mock_recv_wc((uintptr_t)r, qpn(), IBV_WC_SUCCESS, IBV_WC_RECV, 0, 8, 0);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
	cr_assert_eq(M.done[4].task, r);
}

Test(poll, the_cm_channel_is_read_once_in_64_busy_polls_and_after_a_wakeup)
{
	struct rdma_event_channel ch = {.fd = -1};

	F.vctx->cm = &ch;
	for (unsigned i = 1; i < VERBS_CM_POLL_EVERY; i++)
		cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.cm_reads, 0, "the cm channel was read on a busy poll");
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 0);
	cr_assert_eq(M.cm_reads, 1, "poll %u did not read the cm channel", VERBS_CM_POLL_EVERY);
	/* a wake-up (ctx_disarm sets cm_due): the next poll reads it */
	F.vctx->cm_due = true;
	rdmx__verbs_ctx_poll(&F.ctx, 16);
	cr_assert_eq(M.cm_reads, 2, "the poll after a wake-up did not read the cm channel");
	rdmx__verbs_ctx_poll(&F.ctx, 16);
	cr_assert_eq(M.cm_reads, 2, "an empty read did not end the wake-up's reading");
	F.vctx->cm = NULL;
}

/* Empty polls: the number of naps they took. */
static int naps_in(unsigned polls)
{
	int before = M.naps;

	for (unsigned i = 0; i < polls; i++)
		rdmx__verbs_ctx_poll(&F.ctx, 16);
	return M.naps - before;
}

/* Completes write i (posted by write_posted). */
static void complete_write(unsigned i)
{
	mock_send_wc((uintptr_t)&T[i], qpn(), IBV_WC_SUCCESS);
	cr_assert_eq(rdmx__verbs_ctx_poll(&F.ctx, 16), 1);
}

/* One write of `len` bytes posted; completed unless `keep`. */
static void write_posted(unsigned i, uint64_t len, bool keep)
{
	static struct rdmx_buf b[4];

	b[i] = (struct rdmx_buf){.mr = &local_mr, .addr = local_mem, .len = len};
	task(i, RDMX__OP_WRITE, &b[i], 0)->len = len;
	cr_assert_eq(rdmx__verbs_post_send(C, &T[i]), 0);
	if (!keep)
		complete_write(i);
}

Test(poll, a_software_device_moving_large_messages_naps_when_idle)
{
	/* a hardware device: never, whatever the size */
	write_posted(0, VERBS_SOFT_NAP_LEN, true);
	cr_assert_eq(naps_in(4 * VERBS_SOFT_NAP_EVERY), 0, "a hardware device's poller napped");
	complete_write(0);
	/* a software device after a small operation: the spin is kept */
	F.vctx->soft = true;
	write_posted(1, 64, true);
	cr_assert_eq(naps_in(4 * VERBS_SOFT_NAP_EVERY), 0, "napped after a 64-byte write");
	complete_write(1);
	/* after a large one, with nothing outstanding: nothing to wait for */
	write_posted(2, VERBS_SOFT_NAP_LEN, false);
	cr_assert_eq(naps_in(4 * VERBS_SOFT_NAP_EVERY), 0, "napped with nothing outstanding");
	/* a large one outstanding: once per VERBS_SOFT_NAP_EVERY empty polls
	 * in a row, the count started again by a completion */
	write_posted(3, VERBS_SOFT_NAP_LEN, true);
	cr_assert_eq(naps_in(VERBS_SOFT_NAP_EVERY - 1), 0, "napped before %u empty polls",
	             VERBS_SOFT_NAP_EVERY);
	cr_assert_eq(naps_in(1), 1, "no nap after %u empty polls", VERBS_SOFT_NAP_EVERY);
	cr_assert_eq(naps_in(2 * VERBS_SOFT_NAP_EVERY), 2, "not once per %u empty polls",
	             VERBS_SOFT_NAP_EVERY);
	naps_in(VERBS_SOFT_NAP_EVERY - 1);
	complete_write(3);
	write_posted(0, VERBS_SOFT_NAP_LEN, true);
	cr_assert_eq(naps_in(VERBS_SOFT_NAP_EVERY - 1), 0,
	             "a completion did not restart the count");
	complete_write(0);
}

/* Busy polls until the next read of the cm channel; 0 past `limit`. */
static unsigned polls_to_cm_read(unsigned limit)
{
	int reads = M.cm_reads;

	for (unsigned i = 1; i <= limit; i++) {
		rdmx__verbs_ctx_poll(&F.ctx, 16);
		if (M.cm_reads != reads)
			return i;
	}
	return 0;
}

Test(poll, empty_cm_reads_back_off_to_the_cap_and_an_expected_event_resets_it)
{
	struct rdma_event_channel ch = {.fd = -1};
	unsigned every = VERBS_CM_POLL_EVERY;

	F.vctx->cm = &ch;
	cr_assert_eq(polls_to_cm_read(2 * VERBS_CM_POLL_MAX), VERBS_CM_POLL_EVERY);
	while (every < VERBS_CM_POLL_MAX) {
		every *= 2;
		cr_assert_eq(polls_to_cm_read(2 * VERBS_CM_POLL_MAX), every,
		             "after an empty read the next came not in %u polls", every);
	}
	cr_assert_eq(polls_to_cm_read(2 * VERBS_CM_POLL_MAX), VERBS_CM_POLL_MAX,
	             "the back-off went past VERBS_CM_POLL_MAX");
	/* a resolve or an accept awaits an event: read soon, not in 4096 polls */
	rdmx__verbs_cm_expect(F.vctx);
	cr_assert_eq(polls_to_cm_read(2 * VERBS_CM_POLL_MAX), VERBS_CM_POLL_EVERY);
	F.vctx->cm = NULL;
}
