/* verbs completions: the send and recv CQs, then the rdma_cm events, then
 * the connection phase (final events of drained connections).
 *
 * Send completions of a QP come in posting order, errors included (after an
 * error the QP flushes the rest with IBV_WC_WR_FLUSH_ERR): every failure
 * moves the connection to error, later ones complete CONN_ABORTED. A
 * connection's DISCONNECTED (or FAILURE) is reported only once its send
 * queue is empty and its stalled tasks completed, so every task of it has
 * completed before the final event, exactly once. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "verbs.h"

int rdmx__verbs_wc_status(enum ibv_wc_status st, bool stopping)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_WR_FLUSH_ERR:
		return stopping ? RDMX_E_CANCELED : RDMX_E_CONN_ABORTED;
	case IBV_WC_REM_ACCESS_ERR:
		return RDMX_E_REMOTE_ACCESS;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return RDMX_E_RNR;
	case IBV_WC_LOC_LEN_ERR:
		return RDMX_E_LOCAL_LENGTH;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
		return RDMX_E_REMOTE_OP;
	case IBV_WC_RETRY_EXC_ERR: /* no answer from the peer: it is gone */
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return RDMX_E_CONN_ABORTED;
	case IBV_WC_LOC_PROT_ERR: /* local key or access: a bad local buffer */
	case IBV_WC_LOC_ACCESS_ERR:
		return RDMX_E_INVAL;
	case IBV_WC_BAD_RESP_ERR:
		return RDMX_E_PROTOCOL;
	default:
		return RDMX_E_PROVIDER;
	}
}

/* The status a completion gives its task: CANCELED at a stop whatever the
 * task did (ctx.h), a success without the map. */
static inline int task_status(const struct verbs_ctx *vctx, const struct ibv_wc *wc)
{
	if (vctx->stopping)
		return RDMX_E_CANCELED;
	return wc->status == IBV_WC_SUCCESS ? 0 : rdmx__verbs_wc_status(wc->status, false);
}

/* Marks a connection failed by a completion error (once). */
static void conn_failed(struct verbs_conn *vc, const struct ibv_wc *wc)
{
	struct verbs_ctx *vctx = vc->vctx;

	if (vctx->stopping || vc->in_error)
		return;
	vc->in_error = true;
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		RDMX_DBG(
		    "verbs: qpn 0x%x completion error %s (vendor 0x%x): connection %u to error",
		    vc->qpn, ibv_wc_status_str(wc->status), wc->vendor_err, vc->conn->id);
	if (!vc->closing)
		rdmx__conn_set_error(vc->conn);
	/* RC gives up on a peer that stopped answering: that is peer death,
	 * the connection ends (DISCONNECTED once drained) */
	if (wc->status == IBV_WC_RETRY_EXC_ERR)
		rdmx__verbs_conn_close(vc);
	vctx->pending = true;
}

/* The QP refused a work request: the connection fails as on an RC error. */
static void conn_broken(struct verbs_conn *vc, int *status)
{
	*status = RDMX_E_CONN_ABORTED;
	if (vc->in_error)
		return;
	vc->in_error = true;
	rdmx__verbs_qp_to_err(vc);
	if (!vc->closing)
		rdmx__conn_set_error(vc->conn);
	vc->vctx->pending = true;
}

static void infl_unlink(struct verbs_conn *vc, struct rdmx_task *t)
{
	struct rdmx_task **pp = &vc->infl_head, *prev = NULL;

	while (*pp && *pp != t) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp) {
		RDMX_ERR("verbs: completion for a task qpn 0x%x does not hold", vc->qpn);
		return;
	}
	if (prev)
		RDMX_ERR("verbs: qpn 0x%x completed out of order", vc->qpn);
	*pp = t->next;
	if (vc->infl_tail == t)
		vc->infl_tail = prev;
	t->next = NULL;
}

/* A liveness probe came back (conn.c): nobody's task. */
static void probe_wc(struct verbs_ctx *vctx, const struct ibv_wc *wc)
{
	struct verbs_conn *vc = (struct verbs_conn *)(uintptr_t)(wc->wr_id & ~(uint64_t)1);

	vc->probing = false;
	vc->posted--;
	vctx->nprobing--;
	if (vc->handshake) /* not established yet: no error, maybe a retry */
		rdmx__verbs_conn_hello_done(vc, wc->status == IBV_WC_SUCCESS);
	else if (wc->status != IBV_WC_SUCCESS)
		conn_failed(vc, wc);
	if (vc->posted == 0 && (vc->closing || vc->in_error || vc->fail_pending))
		vctx->pending = true;
}

static int send_wc(struct verbs_ctx *vctx, const struct ibv_wc *wc)
{
	struct rdmx_task *task = (struct rdmx_task *)(uintptr_t)wc->wr_id;
	struct verbs_conn *vc;
	int status;

	if (wc->wr_id & 1u) {
		probe_wc(vctx, wc);
		return 0;
	}
	if ((wc->wr_id & 3u) == VERBS_WRID_BIND) { /* a grant's window (post.c) */
		rdmx__verbs_bind_wc(vctx, wc);
		return 0;
	}
	/* the task's own connection when the completion is of its QP (the
	 * common case: no table lookup), else the QP number's */
	vc = task->conn ? task->conn->prov : NULL;
	if (!vc || !vc->qp || vc->qpn != wc->qp_num)
		vc = rdmx__verbs_conn_by_qpn(vctx, wc->qp_num);
	status = task_status(vctx, wc);

	if (!vc && task->conn)
		vc = task->conn->prov;
	if (!vc) {
		RDMX_ERR("verbs: send completion for unknown qpn 0x%x dropped", wc->qp_num);
		return 0;
	}
	vc->posted--;
	infl_unlink(vc, task);
	if (task->op == RDMX__OP_ATOMIC_WRITE) {
		uint64_t found = vc->scratch[task->prov_u64[0]];

		if (wc->status == IBV_WC_SUCCESS && !vctx->stopping && found != task->prov_u64[1]) {
			/* the word held another value: swap again from it */
			if (vc->closing || vc->in_error)
				status = RDMX_E_CONN_ABORTED;
			else if (rdmx__verbs_post_cas_retry(vc, task, found) == 0)
				return 0;
			else
				conn_broken(vc, &status);
		}
		vc->stalled = false;
	}
	vctx->scq_used--;
	if (wc->status != IBV_WC_SUCCESS)
		conn_failed(vc, wc);
	if (vc->posted == 0 && (vc->closing || vc->in_error || vc->fail_pending))
		vctx->pending = true;
	rdmx__task_complete(task, status);
	if (vc->stall_head && !vctx->stopping)
		rdmx__verbs_unstall(vc);
	return 1;
}

static int recv_wc(struct verbs_ctx *vctx, const struct ibv_wc *wc)
{
	struct rdmx_task *task = (struct rdmx_task *)(uintptr_t)wc->wr_id;
	struct verbs_conn *vc = rdmx__verbs_conn_by_qpn(vctx, wc->qp_num);
	int status = task_status(vctx, wc);

	rdmx__verbs_recv_unlink(vctx, task);
	if (!vc || vc->final) {
		/* a message of a connection already reported gone: nobody may
		 * see it; the receive goes back to the SRQ */
		if (!vctx->stopping && rdmx__verbs_repost_recv(vctx, task) == 0) {
			RDMX_DBG("verbs: dropped a message of closed qpn 0x%x", wc->qp_num);
			return 0;
		}
		task->res_conn = NULL;
		rdmx__task_complete(task, vctx->stopping ? RDMX_E_CANCELED : RDMX_E_CONN_ABORTED);
		return 1;
	}
	if (!vctx->stopping &&
	    (wc->status == IBV_WC_REM_ACCESS_ERR || wc->status == IBV_WC_REM_INV_REQ_ERR ||
	     wc->status == IBV_WC_REM_OP_ERR)) {
		/* the responder refused the peer's request (say a write_imm
		 * with a bad key; rxe takes the receive before it checks the
		 * key): the requester gets the error, the connection is dead
		 * here too, and the receive stays the context's */
		conn_failed(vc, wc);
		if (rdmx__verbs_repost_recv(vctx, task) == 0)
			return 0;
	}
	/* A send longer than the receive: the IB spec says LOC_LEN_ERR here
	 * (and REM_INV_REQ_ERR at the sender); rxe of the 6.1 kernel reports
	 * LOC_QP_OP_ERR (its copy into the receive's sg list fails, a
	 * "malformed WQE"; REM_OP_ERR at the sender). The engine has checked
	 * the receive's buffers, so on a receive that error is the length. */
	if (wc->status == IBV_WC_LOC_QP_OP_ERR && !vctx->stopping)
		status = RDMX_E_LOCAL_LENGTH;
	task->res_conn = vc->conn;
	if (status == 0) {
		if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			task->res_opcode = RDMX_OPCODE_WRITE_WITH_IMM;
		else if (wc->wc_flags & IBV_WC_WITH_IMM)
			task->res_opcode = RDMX_OPCODE_SEND_WITH_IMM;
		else
			task->res_opcode = RDMX_OPCODE_SEND;
		task->res_len = wc->byte_len;
		task->res_imm = (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0;
	} else if (wc->status != IBV_WC_SUCCESS) {
		/* e.g. a message longer than the receive: the responder QP is
		 * in error now (the sender sees REMOTE_OP) */
		conn_failed(vc, wc);
	}
	rdmx__task_complete(task, status);
	return 1;
}

/* Polls each CQ once (at most `room` entries each, VERBS_POLL_BATCH at a
 * time); returns callbacks run, and in *full whether a CQ gave a whole
 * batch (it may hold more: poll again). A CQ that gave less was empty when
 * polled, so no second, empty ibv_poll_cq follows a short batch. Unless
 * `all`, a CQ with nothing outstanding is not polled: every send queue
 * entry (task, window bind, probe) is counted in scq_used or nprobing and
 * every posted receive in srq_used until its completion is taken, so such
 * a CQ is empty (a write_lat or read_lat loop then polls one CQ, as
 * perftest does). */
static int poll_cqs(struct verbs_ctx *vctx, unsigned room, bool all, bool *full)
{
	struct ibv_wc wcs[VERBS_POLL_BATCH];
	int n = 0, got = 0;
	unsigned max = room < VERBS_POLL_BATCH ? room : VERBS_POLL_BATCH;

	if (max == 0)
		max = 1;
	*full = false;
	if (all || vctx->scq_used || vctx->nprobing)
		got = ibv_poll_cq(vctx->scq, (int)max, wcs);
	if (got < 0)
		RDMX_ERR("verbs: ibv_poll_cq(send) failed: %d", got);
	for (int i = 0; i < got; i++) {
		vctx->ctx->cb_more = (uint32_t)(got - 1 - i); /* of this CQ's batch */
		n += send_wc(vctx, &wcs[i]);
	}
	*full = got == (int)max;
	got = 0;
	if (all || vctx->srq_used)
		got = ibv_poll_cq(vctx->rcq, (int)max, wcs);
	if (got < 0)
		RDMX_ERR("verbs: ibv_poll_cq(recv) failed: %d", got);
	for (int i = 0; i < got; i++) {
		vctx->ctx->cb_more = (uint32_t)(got - 1 - i);
		n += recv_wc(vctx, &wcs[i]);
	}
	vctx->ctx->cb_more = 0;
	*full = *full || got == (int)max;
	return n;
}

/* Completes a connection's stalled tasks once its send queue is empty. The
 * list is detached first: callbacks that submit again queue behind. */
static int fail_stalled(struct verbs_conn *vc, int status)
{
	struct verbs_ctx *vctx = vc->vctx;
	struct rdmx_task *list = vc->stall_head;
	int n = 0;

	vc->stall_head = vc->stall_tail = NULL;
	vc->nstall = 0;
	while (list) {
		struct rdmx_task *t = list;

		list = t->next;
		t->next = NULL;
		vctx->scq_used--;
		rdmx__task_complete(t, status);
		n++;
	}
	return n;
}

static int conn_phase(struct verbs_ctx *vctx)
{
	int n = 0;

	if (!vctx->pending)
		return 0;
	vctx->pending = false;
	/* callbacks may add connections at the head (not visited now: they
	 * set pending again) but never free one before ctx_poll returns */
	for (struct verbs_conn *v = vctx->conns; v; v = v->next) {
		bool ending;

		if (v->final)
			continue;
		if (v->est_pending && !v->closing) {
			v->est_pending = false;
			v->established = true;
			rdmx__conn_event(v->conn, RDMX__CONN_EV_ESTABLISHED);
			n++;
			rdmx__verbs_unstall(v); /* tasks held by the handshake */
		}
		ending = v->closing || v->fail_pending;
		if ((ending || v->in_error) && v->posted == 0 && v->stall_head)
			n += fail_stalled(v, RDMX_E_CONN_ABORTED);
		if (ending && v->posted == 0 && !v->stall_head) {
			bool failure = v->fail_pending && !v->established;

			v->final = true;
			rdmx__conn_event(v->conn, failure ? RDMX__CONN_EV_FAILURE
			                                  : RDMX__CONN_EV_DISCONNECTED);
			n++;
		} else if (ending || v->est_pending || (v->in_error && v->stall_head)) {
			vctx->pending = true;
		}
	}
	return n;
}

/* What ctx_arm polled comes first (it is older than the CQs' rest). */
static int take_stash(struct verbs_ctx *vctx)
{
	unsigned ns = vctx->nsstash, nr = vctx->nrstash;
	struct ibv_wc sw[VERBS_POLL_BATCH], rw[VERBS_POLL_BATCH];
	int n = 0;

	if (!ns && !nr)
		return 0;
	memcpy(sw, vctx->sstash, ns * sizeof(sw[0]));
	memcpy(rw, vctx->rstash, nr * sizeof(rw[0]));
	vctx->nsstash = vctx->nrstash = 0;
	for (unsigned i = 0; i < ns; i++) {
		vctx->ctx->cb_more = ns - 1 - i + nr;
		n += send_wc(vctx, &sw[i]);
	}
	for (unsigned i = 0; i < nr; i++) {
		vctx->ctx->cb_more = nr - 1 - i;
		n += recv_wc(vctx, &rw[i]);
	}
	vctx->ctx->cb_more = 0;
	return n;
}

/* After a read of the cm channel (verbs.h): soon again after an event,
 * half as often after nothing, down to VERBS_CM_POLL_MAX. */
static void cm_backoff(struct verbs_ctx *vctx, bool got)
{
	unsigned every = vctx->cm_every;

	vctx->cm_every =
	    got ? VERBS_CM_POLL_EVERY : (every < VERBS_CM_POLL_MAX ? every * 2 : VERBS_CM_POLL_MAX);
}

int rdmx__verbs_ctx_poll(struct rdmx_ctx *ctx, unsigned budget)
{
	struct verbs_ctx *vctx = verbs_ctx_of(ctx);
	bool full = true;
	int n = 0;

	if (!vctx)
		return 0;
	if (vctx->nsstash || vctx->nrstash)
		n += take_stash(vctx);
	if (vctx->nprobed && !vctx->stopping)
		rdmx__verbs_conn_probe(vctx);
	while ((unsigned)n < budget && full)
		n += poll_cqs(vctx, budget - (unsigned)n, false, &full);
	/* connection requests a listen group's listener dealt to us (lgroup.c) */
	if (atomic_load_explicit(&vctx->dealt_due, memory_order_acquire) && (unsigned)n < budget)
		n += rdmx__verbs_lgroup_take(vctx);
	/* the cm channel costs a syscall: not on every busy poll (verbs.h) */
	if (vctx->cm && (unsigned)n < budget &&
	    (vctx->cm_due || ++vctx->cm_skip >= vctx->cm_every)) {
		int got = rdmx__verbs_cm_poll(vctx, budget - (unsigned)n);

		vctx->cm_skip = 0;
		vctx->cm_due = got > 0; /* events come in bursts: look again */
		cm_backoff(vctx, got > 0);
		n += got;
	}
	n += conn_phase(vctx);
	if (n)
		vctx->idle = 0;
	else if (vctx->soft_big && vctx->scq_used && ++vctx->idle >= VERBS_SOFT_NAP_EVERY)
		rdmx__verbs_ctx_nap(vctx, VERBS_SOFT_NAP_MS);
	return n;
}

void rdmx__verbs_drain(struct verbs_ctx *vctx, unsigned timeout_ms)
{
	uint64_t deadline = rdmx__verbs_now_ms() + timeout_ms;
	unsigned seen;
	bool full;

	take_stash(vctx);
	for (;;) {
		bool busy = false;

		seen = (unsigned)poll_cqs(vctx, VERBS_POLL_BATCH, true, &full);
		for (struct verbs_conn *v = vctx->conns; v; v = v->next) {
			if (v->posted == 0 && v->stall_head)
				fail_stalled(v, RDMX_E_CANCELED);
			busy = busy || v->posted;
		}
		if (!busy)
			break;
		if (rdmx__verbs_now_ms() > deadline) {
			RDMX_ERR("verbs: work requests still posted %u ms after the QPs went "
			         "to error: completing them as canceled",
			         timeout_ms);
			break;
		}
		if (!seen && !full)
			usleep(200);
	}
	/* what the CQs never returned (only after the deadline) */
	for (struct verbs_conn *v = vctx->conns; v; v = v->next) {
		while (v->infl_head) {
			struct rdmx_task *t = v->infl_head;

			v->infl_head = t->next;
			t->next = NULL;
			v->posted--;
			vctx->scq_used--;
			rdmx__task_complete(t, RDMX_E_CANCELED);
		}
		v->infl_tail = NULL;
		v->stalled = false;
		if (v->probing) {
			v->probing = false;
			v->posted--;
			vctx->nprobing--;
		}
		if (v->stall_head)
			fail_stalled(v, RDMX_E_CANCELED);
	}
}
