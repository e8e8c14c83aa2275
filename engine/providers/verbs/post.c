/* verbs work requests: one per task, wr_id = the task.
 *
 *   receive        ibv_post_srq_recv, the chain as the sg list
 *   send(_imm)     IBV_WR_SEND(_WITH_IMM), imm in network order on the wire
 *   write(_imm)    IBV_WR_RDMA_WRITE(_WITH_IMM)
 *   read           IBV_WR_RDMA_READ, the chain cut to the read length
 *   cas / fadd     IBV_WR_ATOMIC_CMP_AND_SWP / _FETCH_AND_ADD
 *   atomic_write   emulated: a compare-and-swap loop (below)
 *   flush          emulated: a 1-byte RDMA read (below)
 * The remote address is the region's address plus the offset, computed with
 * unsigned wrap and never checked here: an out-of-range offset reaches the
 * target NIC and fails there with a remote access error, as every other
 * remote violation does.
 *
 * atomic_write: rdma-core 44 cannot tell whether a device implements
 * IBV_WR_ATOMIC_WRITE (and rxe of the 6.1 kernel does not), so the 8-byte
 * write is a compare-and-swap loop: CAS(guess, value) returns the word it
 * found; while that differs from the guess the loop retries with the found
 * value as the new guess. The first guess is 0. The successful CAS changes
 * the word from its current value to `value` in one atomic step, which is
 * the guarantee task.h promises; it needs the same REMOTE_ATOMIC access a
 * native atomic write needs (an 8-byte RDMA write would need REMOTE_WRITE
 * instead, and its single-copy atomicity is not promised by verbs). While
 * the loop runs, later tasks of the connection wait in a stall queue, so
 * that both the completion order and the order in which the target sees
 * the operations stay the submission order.
 *
 * flush: RC executes an RDMA read at the responder after every earlier
 * write of the same QP, so the completion of a 1-byte read of the range's
 * last byte proves those writes placed in the target memory (visible; not
 * durable on persistent memory, which would need a native flush). Like a
 * native flush it needs REMOTE_READ on the target region and checks the
 * range's end; a zero-length range reads nothing and checks nothing.
 *
 * Scratch: per connection, 8 bytes per send queue slot (registered, local
 * write). Work request n uses slot n % sq_size: at most sq_size requests
 * are posted and they complete in order, so no two posted ones share one. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

/* ---- receives ---- */

static unsigned chain_sges(const struct rdmx_buf *b, uint64_t limit, struct ibv_sge *sge)
{
	unsigned n = 0;

	/* the common chain: one buffer, taken whole */
	if (b && !b->next && b->len && b->len <= limit && b->len <= UINT32_MAX) {
		sge->addr = (uintptr_t)b->addr;
		sge->length = (uint32_t)b->len;
		sge->lkey = b->mr->lkey;
		return 1;
	}

	for (; b && limit && n < VERBS_MAX_SGE; b = b->next) {
		uint64_t l = b->len < limit ? b->len : limit;

		if (l == 0)
			continue;
		if (l > UINT32_MAX)
			l = UINT32_MAX;
		sge[n].addr = (uintptr_t)b->addr;
		sge[n].length = (uint32_t)l;
		sge[n].lkey = b->mr->lkey;
		n++;
		limit -= l;
	}
	return n;
}

static void recv_link(struct verbs_ctx *vctx, struct rdmx_task *t)
{
	t->prov_ptr = NULL;
	t->next = vctx->recv_head;
	if (vctx->recv_head)
		vctx->recv_head->prov_ptr = t;
	vctx->recv_head = t;
	vctx->srq_used++;
}

void rdmx__verbs_recv_unlink(struct verbs_ctx *vctx, struct rdmx_task *t)
{
	struct rdmx_task *prev = t->prov_ptr, *next = t->next;

	if (prev)
		prev->next = next;
	else
		vctx->recv_head = next;
	if (next)
		next->prov_ptr = prev;
	t->next = NULL;
	t->prov_ptr = NULL;
	vctx->srq_used--;
}

int rdmx__verbs_repost_recv(struct verbs_ctx *vctx, struct rdmx_task *task)
{
	struct ibv_sge sge[VERBS_MAX_SGE];
	struct ibv_recv_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)task;
	wr.sg_list = sge;
	wr.num_sge = (int)chain_sges(task->local, UINT64_MAX, sge);
	rc = ibv_post_srq_recv(vctx->srq, &wr, &bad);
	if (rc) {
		if (rc == ENOMEM)
			return RDMX_E_FULL;
		RDMX_ERR("verbs: ibv_post_srq_recv(%d sge) failed: %s", wr.num_sge, strerror(rc));
		return RDMX_E_PROVIDER;
	}
	recv_link(vctx, task);
	return 0;
}

int rdmx__verbs_post_recv(struct rdmx_ctx *ctx, struct rdmx_task *task)
{
	struct verbs_ctx *vctx = verbs_ctx_of(ctx);

	if (!vctx)
		return RDMX_E_BAD_STATE;
	if (vctx->srq_used >= vctx->srq_cap)
		return RDMX_E_FULL;
	return rdmx__verbs_repost_recv(vctx, task);
}

/* ---- send side ---- */

static void infl_append(struct verbs_conn *vc, struct rdmx_task *t)
{
	t->next = NULL;
	if (vc->infl_tail)
		vc->infl_tail->next = t;
	else
		vc->infl_head = t;
	vc->infl_tail = t;
}

static void stall_append(struct verbs_conn *vc, struct rdmx_task *t)
{
	t->next = NULL;
	if (vc->stall_tail)
		vc->stall_tail->next = t;
	else
		vc->stall_head = t;
	vc->stall_tail = t;
	vc->nstall++;
}

static struct rdmx_task *stall_pop(struct verbs_conn *vc)
{
	struct rdmx_task *t = vc->stall_head;

	vc->stall_head = t->next;
	if (!vc->stall_head)
		vc->stall_tail = NULL;
	vc->nstall--;
	t->next = NULL;
	return t;
}

static const char *op_name(enum rdmx__op op)
{
	static const char *const names[] = {"receive",      "send",      "send_imm", "read",
	                                    "write",        "write_imm", "cas",      "fadd",
	                                    "atomic_write", "flush"};

	return (unsigned)op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

int rdmx__verbs_post_now(struct verbs_conn *vc, struct rdmx_task *task)
{
	struct ibv_sge sge[VERBS_MAX_SGE];
	struct ibv_send_wr wr, *bad = NULL;
	const struct rdmx_mr_remote *rm = task->remote.mr;
	uint64_t raddr = rm ? rm->addr + task->remote.offset : 0; /* wraps: see above */
	uint32_t rkey = rm ? rm->rkey : 0;
	uint32_t slot_idx = (uint32_t)(vc->seq & (vc->sq_size - 1));
	uint64_t *slot = &vc->scratch[slot_idx];
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)task;
	wr.sg_list = sge;
	wr.send_flags = IBV_SEND_SIGNALED;
	switch (task->op) {
	case RDMX__OP_SEND:
	case RDMX__OP_SEND_IMM:
		wr.opcode = task->op == RDMX__OP_SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(task->imm);
		wr.num_sge = (int)chain_sges(task->local, UINT64_MAX, sge);
		break;
	case RDMX__OP_WRITE:
	case RDMX__OP_WRITE_IMM:
		wr.opcode =
		    task->op == RDMX__OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(task->imm);
		wr.num_sge = (int)chain_sges(task->local, UINT64_MAX, sge);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		break;
	case RDMX__OP_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.num_sge = (int)chain_sges(task->local, task->len, sge);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		break;
	case RDMX__OP_CAS:
	case RDMX__OP_FADD:
		wr.opcode = task->op == RDMX__OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP
		                                     : IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.num_sge = (int)chain_sges(task->local, 8, sge);
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = task->op0;
		wr.wr.atomic.swap = task->op1;
		break;
	case RDMX__OP_ATOMIC_WRITE:
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		sge[0].addr = (uintptr_t)slot;
		sge[0].length = 8;
		sge[0].lkey = vc->scratch_mr->lkey;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = task->prov_u64[1]; /* the guess */
		wr.wr.atomic.swap = task->op0;
		break;
	case RDMX__OP_FLUSH:
		wr.opcode = IBV_WR_RDMA_READ;
		sge[0].addr = (uintptr_t)slot;
		sge[0].length = 1;
		sge[0].lkey = vc->scratch_mr->lkey;
		wr.num_sge = task->len ? 1 : 0;
		wr.wr.rdma.remote_addr = task->len ? raddr + (task->len - 1) : raddr;
		wr.wr.rdma.rkey = rkey;
		break;
	default:
		return RDMX_E_INVAL;
	}
	/* sends and writes that fit go inline: the NIC takes the bytes from
	 * the work request (the buffers were still checked by the engine) */
	if (task->len && task->len <= vc->max_inline &&
	    (wr.opcode == IBV_WR_SEND || wr.opcode == IBV_WR_SEND_WITH_IMM ||
	     wr.opcode == IBV_WR_RDMA_WRITE || wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM))
		wr.send_flags |= IBV_SEND_INLINE;
	rc = ibv_post_send(vc->qp, &wr, &bad);
	if (rc) {
		RDMX_ERR("verbs: ibv_post_send(%s) qpn 0x%x failed: %s", op_name(task->op), vc->qpn,
		         strerror(rc));
		return rc == ENOMEM ? RDMX_E_FULL : RDMX_E_PROVIDER;
	}
	task->prov_u64[0] = slot_idx;
	vc->vctx->soft_big = vc->vctx->soft && task->len >= VERBS_SOFT_NAP_LEN; /* verbs.h */
	vc->seq++;
	vc->posted++;
	infl_append(vc, task);
	if (task->op == RDMX__OP_ATOMIC_WRITE)
		vc->stalled = true;
	return 0;
}

int rdmx__verbs_post_cas_retry(struct verbs_conn *vc, struct rdmx_task *task, uint64_t guess)
{
	task->prov_u64[1] = guess;
	return rdmx__verbs_post_now(vc, task);
}

int rdmx__verbs_post_send(struct rdmx_conn *conn, struct rdmx_task *task)
{
	struct verbs_conn *vc = conn->prov;
	struct verbs_ctx *vctx;
	int rc;

	if (!vc || !vc->qp)
		return RDMX_E_BAD_STATE;
	vctx = vc->vctx;
	if (vc->posted + vc->nstall >= vc->sq_size || vctx->scq_used >= vctx->scq_cap)
		return RDMX_E_FULL;
	task->prov_u64[1] = 0; /* atomic_write: first guess */
	if (vc->stalled || vc->stall_head || vc->closing || vc->in_error ||
	    (vc->exported && !vc->established)) {
		/* behind an atomic write or the export handshake (conn.c), or
		 * ending: the connection phase of ctx_poll completes those with
		 * CONN_ABORTED after the posted ones */
		stall_append(vc, task);
		vctx->scq_used++;
		if (vc->closing || vc->in_error) {
			vctx->pending = true;
			rdmx__verbs_ctx_kick(vctx);
		}
		return 0;
	}
	rc = rdmx__verbs_post_now(vc, task);
	if (rc)
		return rc;
	vctx->scq_used++;
	return 0;
}

void rdmx__verbs_unstall(struct verbs_conn *vc)
{
	while (vc->stall_head && !vc->stalled && !vc->closing && !vc->in_error &&
	       (vc->established || !vc->exported)) {
		struct rdmx_task *t = stall_pop(vc);

		t->prov_u64[1] = 0;
		if (rdmx__verbs_post_now(vc, t) == 0)
			continue;
		/* the QP refuses work: end the connection as an RC error does;
		 * the task goes back to the head, completed in order later */
		t->next = vc->stall_head;
		vc->stall_head = t;
		if (!vc->stall_tail)
			vc->stall_tail = t;
		vc->nstall++;
		vc->in_error = true;
		rdmx__verbs_qp_to_err(vc);
		rdmx__conn_set_error(vc->conn);
		vc->vctx->pending = true;
		rdmx__verbs_ctx_kick(vc->vctx);
	}
}

/* ---- memory windows (connection-bound grants, mr.h) ----
 *
 * A grant is a type-2 window: ibv_alloc_mw on the device's PD, then an
 * IBV_WR_BIND_MW work request on the connection's QP that binds it to the
 * granted range of the region (registered with IBV_ACCESS_MW_BIND, mr.c)
 * with the granted access and a new key (ibv_inc_rkey: the window's index
 * with the next key byte). A type-2 window answers only requests that
 * arrive on the QP it was bound through, which is the connection binding.
 * The bind is signaled and counted like a task (send queue slot, send CQ
 * entry), so the connection's end waits for its completion; it is not in
 * the task list (wr_id = window | VERBS_WRID_BIND). Revoke deallocates the
 * window at once (ibv_dealloc_mw invalidates the key synchronously, and the
 * region can be deregistered right after); a bind still in the send queue
 * then fails, and with it the connection (mr.h says so), so the window's
 * bookkeeping stays until that completion or the connection's destruction.
 *
 * A grant of part of a region binds to an MR of its own over exactly the
 * granted range (local access + MW_BIND only, the pages registered twice):
 * rxe of the 6.1 kernel checks a window's requests against the range of the
 * MR it is bound to, not against the window's, so a window over part of the
 * region's MR would let the peer reach the whole region. */

static int mw_access(unsigned access)
{
	int f = 0;

	if (access & RDMX_ACCESS_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (access & RDMX_ACCESS_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (access & RDMX_ACCESS_REMOTE_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

bool rdmx__verbs_dev_has_mw(const struct verbs_dev *vdev)
{
	const struct ibv_device_attr *a = &vdev->attr.orig_attr;

	return a->max_mw > 0 && (a->device_cap_flags &
	                         (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B));
}

static void mw_unlink(struct verbs_mw *w)
{
	if (!w->vc)
		return;
	for (struct verbs_mw **pp = &w->vc->mws; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	w->next = NULL;
	w->vc = NULL;
}

static void mw_dealloc(struct verbs_mw *w)
{
	if (w->mw && ibv_dealloc_mw(w->mw))
		RDMX_ERR("verbs: ibv_dealloc_mw failed: %s", strerror(errno));
	w->mw = NULL;
	if (w->sub && ibv_dereg_mr(w->sub))
		RDMX_ERR("verbs: ibv_dereg_mr(granted range) failed: %s", strerror(errno));
	w->sub = NULL;
}

/* The MR a grant's window binds to: the region's, or for part of it one
 * over exactly that part. */
static int bind_target(struct rdmx_mr_grant *g, struct verbs_mw *w, struct ibv_mr **out)
{
	struct verbs_dev *vd = g->mr->dev->prov;
	int flags = IBV_ACCESS_MW_BIND;

	if (g->offset == 0 && g->len == g->mr->len) {
		*out = g->mr->prov;
		return 0;
	}
	/* a window granting write or atomics needs LOCAL_WRITE on the MR */
	if (g->access & (RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_ATOMIC))
		flags |= IBV_ACCESS_LOCAL_WRITE;
	w->sub = ibv_reg_mr(vd->pd, (uint8_t *)g->mr->addr + g->offset, (size_t)g->len, flags);
	if (!w->sub) {
		int e = errno;

		RDMX_ERR("verbs: ibv_reg_mr(%s, granted range of %" PRIu64 " bytes) failed: %s",
		         vd->name, g->len, strerror(e));
		return e == ENOMEM ? RDMX_E_NOMEM : RDMX_E_PROVIDER;
	}
	*out = w->sub;
	return 0;
}

int rdmx__verbs_mr_grant(struct rdmx_mr_grant *g)
{
	struct verbs_dev *vd = g->mr->dev->prov;
	struct verbs_conn *vc = g->conn->prov;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_mr *target = NULL;
	struct verbs_mw *w;
	uint32_t rkey;
	int rc;

	if (!rdmx__verbs_dev_has_mw(vd) || !g->mr->prov)
		return RDMX_E_NOT_SUPPORTED;
	if (!vc || !vc->qp || vc->closing || vc->in_error || vc->final ||
	    (vc->exported && !vc->established))
		return RDMX_E_BAD_STATE;
	if (vc->posted + vc->nstall >= vc->sq_size || vc->vctx->scq_used >= vc->vctx->scq_cap)
		return RDMX_E_FULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return RDMX_E_NOMEM;
	rc = bind_target(g, w, &target);
	if (rc) {
		free(w);
		return rc;
	}
	w->mw = ibv_alloc_mw(vd->pd, IBV_MW_TYPE_2);
	if (!w->mw) {
		int e = errno;

		RDMX_ERR("verbs: ibv_alloc_mw(%s, type 2) failed: %s", vd->name, strerror(e));
		mw_dealloc(w);
		free(w);
		return e == ENOMEM ? RDMX_E_NOMEM : RDMX_E_PROVIDER;
	}
	rkey = ibv_inc_rkey(w->mw->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)w | VERBS_WRID_BIND;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = w->mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = target;
	wr.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)g->mr->addr + g->offset;
	wr.bind_mw.bind_info.length = g->len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned)mw_access(g->access);
	rc = ibv_post_send(vc->qp, &wr, &bad);
	if (rc) {
		RDMX_ERR("verbs: ibv_post_send(bind_mw, %" PRIu64 " bytes) qpn 0x%x failed: %s",
		         g->len, vc->qpn, strerror(rc));
		mw_dealloc(w);
		free(w);
		return rc == ENOMEM ? RDMX_E_FULL : RDMX_E_PROVIDER;
	}
	w->vc = vc;
	w->bind_inflight = true;
	w->next = vc->mws;
	vc->mws = w;
	vc->posted++;
	vc->vctx->scq_used++;
	g->rkey = rkey;
	g->prov = w;
	return 0;
}

void rdmx__verbs_mr_revoke(struct rdmx_mr_grant *g)
{
	struct verbs_mw *w = g->prov;

	if (!w)
		return;
	g->prov = NULL;
	mw_dealloc(w);
	if (w->bind_inflight) {
		w->orphan = true; /* its completion frees it */
		return;
	}
	mw_unlink(w);
	free(w);
}

void rdmx__verbs_bind_wc(struct verbs_ctx *vctx, const struct ibv_wc *wc)
{
	struct verbs_mw *w = (struct verbs_mw *)(uintptr_t)(wc->wr_id & ~(uint64_t)3);
	struct verbs_conn *vc = w->vc;

	w->bind_inflight = false;
	vctx->scq_used--;
	if (vc) {
		vc->posted--;
		if (wc->status != IBV_WC_SUCCESS && !vctx->stopping && !vc->in_error) {
			/* as a failed task does: the connection goes to error and
			 * its later tasks flush; the grant stays until revoked */
			if (w->orphan)
				RDMX_WARN("verbs: a grant revoked before its bind completed: "
				          "connection %u (qpn 0x%x) to error",
				          vc->conn->id, vc->qpn);
			else if (wc->status != IBV_WC_WR_FLUSH_ERR)
				RDMX_ERR("verbs: window bind on qpn 0x%x failed: %s: connection %u "
				         "to error",
				         vc->qpn, ibv_wc_status_str(wc->status), vc->conn->id);
			vc->in_error = true;
			if (!vc->closing)
				rdmx__conn_set_error(vc->conn);
			vctx->pending = true;
		}
		if (vc->posted == 0 && (vc->closing || vc->in_error || vc->fail_pending))
			vctx->pending = true;
	}
	if (w->orphan) {
		mw_unlink(w);
		free(w);
	}
}

void rdmx__verbs_conn_drop_windows(struct verbs_conn *vc)
{
	while (vc->mws) {
		struct verbs_mw *w = vc->mws;

		vc->mws = w->next;
		w->next = NULL;
		w->vc = NULL;
		if (w->bind_inflight) {
			/* its QP is gone: no completion will come */
			w->bind_inflight = false;
			vc->vctx->scq_used--;
		}
		if (w->orphan)
			free(w);
	}
}
