/* Unit tests of the verbs provider (librpma style): post.c, poll.c, conn.c
 * and cm.c compiled into the test against mocks.
 *
 * - ibv_post_send / ibv_post_srq_recv / ibv_poll_cq are inline calls through
 *   qp/srq/cq->context->ops: a fake ibv_context points them at the mocks,
 *   which record the work requests and hand back scripted completions.
 * - Exported libibverbs functions the code calls (ibv_create_qp,
 *   ibv_modify_qp, ibv_reg_mr, ...) are defined again in mock.c: the
 *   executable's definitions win over the shared library's.
 * - The engine services (rdmx__task_complete, rdmx__conn_event, ...) and the
 *   provider's ctx.c / device.c helpers are recording stubs.
 * No device, no kernel support needed. */
#ifndef RDMX_TEST_VERBS_MOCK_H
#define RDMX_TEST_VERBS_MOCK_H

#include <criterion/criterion.h>

#include "providers/verbs/verbs.h"

#define MOCK_MAX_WR 64
#define MOCK_MAX_EV 64

/* A recorded send work request (sg list copied). */
struct mock_wr {
	struct ibv_send_wr wr;
	struct ibv_sge sge[VERBS_MAX_SGE];
	uint32_t qpn;
};

struct mock_recv {
	struct ibv_recv_wr wr;
	struct ibv_sge sge[VERBS_MAX_SGE];
};

struct mock_done {
	struct rdmx_task *task;
	int status;
	/* receive results at completion time */
	enum rdmx_opcode opcode;
	uint32_t len, imm;
	struct rdmx_conn *conn;
};

struct mock_ev {
	struct rdmx_conn *conn;
	enum rdmx__conn_event ev;
};

struct mock {
	/* posted */
	struct mock_wr sends[MOCK_MAX_WR];
	int nsends;
	struct mock_recv recvs[MOCK_MAX_WR];
	int nrecvs;
	int post_send_rc; /* returned by the next post_send (then reset) */
	/* scripted completions, per CQ */
	struct ibv_wc scq_wc[MOCK_MAX_WR], rcq_wc[MOCK_MAX_WR];
	int nscq, nrcq;
	/* engine calls */
	struct mock_done done[MOCK_MAX_WR];
	int ndone;
	struct mock_ev events[MOCK_MAX_EV];
	int nevents;
	int set_error_calls;
	int kicks;
	int qp_state_err; /* ibv_modify_qp(ERR) calls */
	/* ibv_create_qp: the inline size asked for by each call, and what the
	 * fake device does with it: refuse a QP above qp_inline_refuse_above (0:
	 * never), grant at most qp_inline_grant (0: what was asked) */
	uint32_t qp_inline_asked[8];
	int nqp_create;
	uint32_t qp_inline_refuse_above;
	uint32_t qp_inline_grant;
	/* memory windows (ibv_alloc_mw / ibv_dealloc_mw through the fake
	 * context's ops): live ones, and the calls */
	int mw_allocs, mw_deallocs, mw_live;
	bool mw_alloc_fail; /* the next ibv_alloc_mw fails with ENOMEM */
	/* ibv_poll_cq calls per CQ; rdma_get_cm_event calls (each answers
	 * EAGAIN: no event) */
	int scq_polls, rcq_polls;
	int cm_reads;
	int naps; /* rdmx__verbs_ctx_nap calls (ctx.c is not compiled here) */
	/* rdma_reject / rdma_destroy_id: the ids, in call order */
	struct rdma_cm_id *rejected[MOCK_MAX_EV], *destroyed[MOCK_MAX_EV];
	int nrejected, ndestroyed;
	/* the engine's connections: what the next rdmx__conn_new hands out
	 * (NULL: the context is at its max_connections), the connections given
	 * to rdmx_conn_reject */
	struct rdmx_conn *conn_new;
	struct rdmx_conn *conn_rejected[MOCK_MAX_EV];
	int nconn_rejects;
	/* the next this many calloc calls of the code under test fail with
	 * ENOMEM (the test is linked with --wrap=calloc) */
	int calloc_fails;
};

extern struct mock M;
/* The last RTR / RTS attributes given to ibv_modify_qp. */
extern struct ibv_qp_attr mock_rtr, mock_rts;
extern int mock_rtr_mask, mock_rts_mask;

/* A started context (fake CQs/SRQ on the fake device) and its engine ctx. */
struct fixture {
	struct rdmx_dev dev;
	struct verbs_dev vdev;
	struct rdmx_ctx ctx;
	struct verbs_ctx *vctx;
};

void mock_reset(void);
void fixture_init(struct fixture *f, uint32_t sq_size);
void fixture_fini(struct fixture *f);
/* A connected export-flow connection with a QP (qpn given by the mock). */
struct rdmx_conn *fixture_conn(struct fixture *f);
void fixture_conn_free(struct fixture *f, struct rdmx_conn *c);

/* Queues a completion on the send / recv CQ. */
void mock_send_wc(uint64_t wr_id, uint32_t qpn, enum ibv_wc_status st);
void mock_recv_wc(uint64_t wr_id, uint32_t qpn, enum ibv_wc_status st, enum ibv_wc_opcode op,
                  unsigned flags, uint32_t byte_len, uint32_t imm_net);

/* A registered region as the engine would have it (lkey/rkey set). */
void mock_mr(struct rdmx_mr *mr, void *addr, size_t len, uint32_t key);

#endif
