/* Mocks for the verbs provider's unit tests (see mock.h). */
#include "mock.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mock M;
struct ibv_qp_attr mock_rtr, mock_rts;
int mock_rtr_mask, mock_rts_mask;

static struct ibv_context fake_ibv;
static struct ibv_cq fake_scq, fake_rcq;
static struct ibv_srq fake_srq;
static struct ibv_pd fake_pd;
static uint32_t next_qpn = 0x100;

/* ---- the fake device's data path ---- */

static int mock_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	if (M.post_send_rc) {
		int rc = M.post_send_rc;

		M.post_send_rc = 0;
		*bad = wr;
		return rc;
	}
	for (; wr; wr = wr->next) {
		struct mock_wr *m;

		cr_assert_lt(M.nsends, MOCK_MAX_WR, "too many work requests for the mock");
		m = &M.sends[M.nsends++];
		m->wr = *wr;
		m->qpn = qp->qp_num;
		cr_assert_leq(wr->num_sge, (int)VERBS_MAX_SGE);
		if (wr->num_sge > 0)
			memcpy(m->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(m->sge[0]));
		m->wr.sg_list = m->sge;
		m->wr.next = NULL;
	}
	return 0;
}

static struct ibv_mw *mock_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw;

	cr_assert_eq(type, IBV_MW_TYPE_2, "only type-2 windows are asked for");
	if (M.mw_alloc_fail) {
		M.mw_alloc_fail = false;
		errno = ENOMEM;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	cr_assert_not_null(mw);
	mw->context = pd->context;
	mw->pd = pd;
	mw->type = type;
	mw->rkey = 0x4200u | (uint32_t)(M.mw_allocs & 0xff) << 16; /* index, key byte 0 */
	M.mw_allocs++;
	M.mw_live++;
	return mw;
}

static int mock_dealloc_mw(struct ibv_mw *mw)
{
	M.mw_deallocs++;
	M.mw_live--;
	free(mw);
	return 0;
}

static int mock_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)srq;
	(void)bad;
	for (; wr; wr = wr->next) {
		struct mock_recv *m;

		cr_assert_lt(M.nrecvs, MOCK_MAX_WR);
		m = &M.recvs[M.nrecvs++];
		m->wr = *wr;
		if (wr->num_sge > 0)
			memcpy(m->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(m->sge[0]));
		m->wr.sg_list = m->sge;
		m->wr.next = NULL;
	}
	return 0;
}

static int mock_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct ibv_wc *q = cq == &fake_scq ? M.scq_wc : M.rcq_wc;
	int *nq = cq == &fake_scq ? &M.nscq : &M.nrcq;
	int got = n < *nq ? n : *nq;

	if (cq == &fake_scq)
		M.scq_polls++;
	else
		M.rcq_polls++;
	memcpy(wc, q, (size_t)got * sizeof(*wc));
	memmove(q, q + got, (size_t)(*nq - got) * sizeof(*wc));
	*nq -= got;
	return got;
}

void mock_send_wc(uint64_t wr_id, uint32_t qpn, enum ibv_wc_status st)
{
	struct ibv_wc *w;

	cr_assert_lt(M.nscq, MOCK_MAX_WR);
	w = &M.scq_wc[M.nscq++];
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->qp_num = qpn;
	w->status = st;
}

void mock_recv_wc(uint64_t wr_id, uint32_t qpn, enum ibv_wc_status st, enum ibv_wc_opcode op,
                  unsigned flags, uint32_t byte_len, uint32_t imm_net)
{
	struct ibv_wc *w;

	cr_assert_lt(M.nrcq, MOCK_MAX_WR);
	w = &M.rcq_wc[M.nrcq++];
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->qp_num = qpn;
	w->status = st;
	w->opcode = op;
	w->wc_flags = flags;
	w->byte_len = byte_len;
	w->imm_data = imm_net;
}

/* ---- exported libibverbs / librdmacm functions, redefined ---- */

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	(void)private_data;
	(void)private_data_len;
	cr_assert_lt(M.nrejected, MOCK_MAX_EV);
	M.rejected[M.nrejected++] = id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	cr_assert_lt(M.ndestroyed, MOCK_MAX_EV);
	M.destroyed[M.ndestroyed++] = id;
	return 0;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	(void)channel;
	(void)event;
	M.cm_reads++;
	errno = EAGAIN;
	return -1;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp;

	if (M.nqp_create < 8)
		M.qp_inline_asked[M.nqp_create] = attr->cap.max_inline_data;
	M.nqp_create++;
	if (M.qp_inline_refuse_above && attr->cap.max_inline_data > M.qp_inline_refuse_above) {
		errno = EINVAL;
		return NULL;
	}
	if (M.qp_inline_grant && attr->cap.max_inline_data > M.qp_inline_grant)
		attr->cap.max_inline_data = M.qp_inline_grant;
	qp = calloc(1, sizeof(*qp));
	cr_assert_not_null(qp);
	qp->context = &fake_ibv;
	qp->pd = pd;
	qp->qp_context = attr->qp_context;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qp_num = next_qpn++;
	qp->qp_type = attr->qp_type;
	cr_assert(attr->sq_sig_all, "every work request must be signaled");
	cr_assert_not_null(attr->srq, "the QP must use the context's SRQ");
	return qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	free(qp);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	if (attr->qp_state == IBV_QPS_ERR)
		M.qp_state_err++;
	if (attr->qp_state == IBV_QPS_RTR) {
		mock_rtr = *attr;
		mock_rtr_mask = mask;
	}
	if (attr->qp_state == IBV_QPS_RTS) {
		mock_rts = *attr;
		mock_rts_mask = mask;
	}
	return 0;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	cr_assert_not_null(mr);
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = 0x5c0000u | (uint32_t)access;
	mr->rkey = mr->lkey;
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
	(void)iova;
	return (ibv_reg_mr)(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	(void)ctx;
	(void)port;
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	gid->raw[12] = 198;
	gid->raw[13] = 18;
	gid->raw[15] = (uint8_t)(index + 1);
	return 0;
}

/* ---- allocation failures (the test links with -Wl,--wrap=calloc: the
 * calls of the objects linked into it come here, the libraries' do not) ---- */

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

void *__wrap_calloc(size_t n, size_t size)
{
	if (M.calloc_fails > 0) {
		M.calloc_fails--;
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* ---- engine services ---- */

void rdmx__task_complete(struct rdmx_task *task, int status)
{
	struct mock_done *d;

	cr_assert_lt(M.ndone, MOCK_MAX_WR);
	d = &M.done[M.ndone++];
	d->task = task;
	d->status = status;
	d->opcode = task->res_opcode;
	d->len = task->res_len;
	d->imm = task->res_imm;
	d->conn = task->res_conn;
	cr_assert_eq(task->state, RDMX__TASK_INFLIGHT, "task completed twice");
	task->state = RDMX__TASK_IDLE;
	task->status = status;
	task->next = NULL;
}

void rdmx__conn_event(struct rdmx_conn *conn, enum rdmx__conn_event ev)
{
	cr_assert_lt(M.nevents, MOCK_MAX_EV);
	M.events[M.nevents].conn = conn;
	M.events[M.nevents].ev = ev;
	M.nevents++;
	if (ev == RDMX__CONN_EV_ESTABLISHED)
		conn->state = RDMX_CONN_ESTABLISHED;
	if (ev == RDMX__CONN_EV_DISCONNECTED || ev == RDMX__CONN_EV_FAILURE)
		conn->state = RDMX_CONN_DISCONNECTED;
}

void rdmx__conn_set_error(struct rdmx_conn *conn)
{
	M.set_error_calls++;
	conn->state = RDMX_CONN_ERROR;
}

struct rdmx_conn *rdmx__conn_new(struct rdmx_ctx *ctx, enum rdmx_conn_state state)
{
	struct rdmx_conn *conn = M.conn_new;

	M.conn_new = NULL;
	if (conn) {
		conn->ctx = ctx;
		conn->state = state;
	}
	return conn;
}

/* The engine's reject of a connection with no provider part left (the
 * real one would call the provider's conn_reject and conn_release, both
 * no-ops then) */
int rdmx_conn_reject(struct rdmx_conn *conn)
{
	cr_assert_lt(M.nconn_rejects, MOCK_MAX_EV);
	M.conn_rejected[M.nconn_rejects++] = conn;
	conn->state = RDMX_CONN_DISCONNECTED;
	return 0;
}

void rdmx__log(enum rdmx_log_level level, const char *file, int line, const char *func,
               const char *fmt, ...)
{
	va_list ap;

	(void)file;
	(void)line;
	(void)func;
	if (level > RDMX_LOG_WARNING)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "[log] ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* ---- the provider's ctx.c / device.c helpers ---- */

void rdmx__verbs_ctx_kick(struct verbs_ctx *vctx)
{
	(void)vctx;
	M.kicks++;
}

void rdmx__verbs_ctx_probe_timer(struct verbs_ctx *vctx, bool on)
{
	(void)vctx;
	(void)on;
}

void rdmx__verbs_ctx_nap(struct verbs_ctx *vctx, int ms)
{
	(void)ms;
	vctx->idle = 0;
	M.naps++;
}

/* A context a test gave a channel has one; the others cannot get one. */
int rdmx__verbs_ctx_cm_channel(struct verbs_ctx *vctx)
{
	return vctx->cm ? 0 : RDMX_E_PROVIDER;
}

int rdmx__verbs_dev_local_addr(const struct verbs_dev *vdev, uint32_t gid_index, int family,
                               struct sockaddr_storage *ss)
{
	(void)vdev;
	(void)gid_index;
	(void)family;
	(void)ss;
	return RDMX_E_NOT_FOUND;
}

unsigned rdmx__verbs_dev_local_addrs(const struct verbs_dev *vdev, struct sockaddr_storage *ss,
                                     unsigned max)
{
	(void)vdev;
	(void)ss;
	(void)max;
	return 0;
}

uint32_t rdmx__verbs_dev_gid_index(const struct verbs_dev *vdev, uint32_t want)
{
	(void)vdev;
	return want;
}

/* ---- fixture ---- */

void mock_reset(void)
{
	memset(&M, 0, sizeof(M));
	memset(&fake_ibv, 0, sizeof(fake_ibv));
	fake_ibv.ops.post_send = mock_post_send;
	fake_ibv.ops.post_srq_recv = mock_post_srq_recv;
	fake_ibv.ops.poll_cq = mock_poll_cq;
	fake_ibv.ops.alloc_mw = mock_alloc_mw;
	fake_ibv.ops.dealloc_mw = mock_dealloc_mw;
	fake_scq.context = fake_rcq.context = fake_srq.context = &fake_ibv;
	fake_pd.context = &fake_ibv;
	next_qpn = 0x100;
}

void mock_mr(struct rdmx_mr *mr, void *addr, size_t len, uint32_t key)
{
	memset(mr, 0, sizeof(*mr));
	mr->addr = addr;
	mr->len = len;
	mr->lkey = key;
	mr->rkey = key;
	mr->access = RDMX_ACCESS_ALL;
}

void fixture_init(struct fixture *f, uint32_t sq_size)
{
	struct verbs_ctx *vc;

	mock_reset();
	memset(f, 0, sizeof(*f));
	f->vdev.ibv = &fake_ibv;
	f->vdev.pd = &fake_pd;
	f->vdev.port = 1;
	f->vdev.port_attr.link_layer = IBV_LINK_LAYER_ETHERNET;
	f->vdev.port_attr.active_mtu = IBV_MTU_1024;
	snprintf(f->vdev.name, sizeof(f->vdev.name), "mock0");
	f->dev.prov = &f->vdev;
	f->ctx.dev = &f->dev;
	f->ctx.state = RDMX_CTX_RUNNING;
	f->ctx.props.send_queue_size = sq_size;
	f->ctx.props.recv_queue_size = 16;
	f->ctx.props.max_send_buf_list_len = 4;
	f->ctx.props.max_recv_buf_list_len = 4;
	f->ctx.props.permissions =
	    RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_ATOMIC;
	f->ctx.props.mtu = 4096;
	f->ctx.props.rnr_retry_count = 3;
	f->ctx.props.conn_request_timeout_ms = 5000;
	f->ctx.props.max_connections = 4;
	vc = calloc(1, sizeof(*vc));
	cr_assert_not_null(vc);
	vc->ctx = &f->ctx;
	vc->vdev = &f->vdev;
	vc->scq = &fake_scq;
	vc->rcq = &fake_rcq;
	vc->srq = &fake_srq;
	vc->epfd = vc->evfd = vc->tfd = -1;
	rdmx__verbs_cm_expect(vc); /* as ctx.c */
	vc->scq_cap = sq_size * 4;
	vc->probe_cap = 4;
	vc->srq_cap = 16;
	vc->mtu = IBV_MTU_1024;
	vc->qp_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	vc->rd_atomic = 16;
	vc->qpn_mask = 63;
	vc->qpn_tab = calloc(64, sizeof(*vc->qpn_tab));
	cr_assert_not_null(vc->qpn_tab);
	f->ctx.prov = vc;
	f->vctx = vc;
}

struct rdmx_conn *fixture_conn(struct fixture *f)
{
	struct rdmx_conn *c = calloc(1, sizeof(*c));
	struct verbs_conn *vc;

	cr_assert_not_null(c);
	c->ctx = &f->ctx;
	c->state = RDMX_CONN_ESTABLISHED;
	c->can_post = true;
	vc = rdmx__verbs_conn_new(f->vctx, c);
	cr_assert_not_null(vc);
	cr_assert_eq(rdmx__verbs_conn_create_qp(vc), 0);
	vc->exported = vc->connected = vc->established = true;
	return c;
}

void fixture_conn_free(struct fixture *f, struct rdmx_conn *c)
{
	(void)f;
	rdmx__verbs_conn_release(c);
	cr_assert_null(c->prov);
	free(c);
}

void fixture_fini(struct fixture *f)
{
	struct verbs_ctx *vc = f->vctx;

	while (vc->conns) {
		struct rdmx_conn *c = vc->conns->conn;

		fixture_conn_free(f, c);
	}
	free(vc->qpn_tab);
	free(vc);
	f->ctx.prov = NULL;
}
