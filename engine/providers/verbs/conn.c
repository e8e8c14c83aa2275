/* verbs connections: one RC QP each on the context's CQs and SRQ, the
 * qp-number map that names the connection of a receive, the export/connect
 * flow (INIT -> RTR -> RTS from the peer's details) and the close.
 *
 * Exported details (VERBS_DETAILS_SIZE bytes, little-endian):
 *   0 u16 magic "VD"  2 u8 version  3 u8 provider id (RDMX_PROVIDER_ID_VERBS)
 *   4 u32 qp number   8 u32 first packet sequence number (random, 24 bits)
 *  12 u16 lid        14 u8 ibv_mtu  15 u8 flags (bit 0: GRH required,
 *                                    bit 1/2: the QP takes remote writes/reads)
 *  16 gid[16]
 * They name a QP, no key: remote access still needs a region descriptor.
 *
 * Liveness: an export/connect connection has no connection manager to tell
 * one side that the other disconnected, stopped or died. RC tells it only to
 * a side that sends: work to a QP that is gone or in error is never
 * acknowledged and fails with IBV_WC_RETRY_EXC_ERR. So every VERBS_PROBE_MS
 * an idle connection (nothing posted) sends a zero-length RDMA write (or
 * read, per the permissions the peer's details announce), which needs no
 * key and touches no memory; its failure ends the connection like any
 * other peer death (DISCONNECTED once drained). Busy connections need no
 * probe: their own work fails the same way.
 *
 * Handshake: a QP not yet in RTR drops packets without a word, so work sent
 * before the peer called rdmx_ctx_connect would fail after the retry window
 * (about 7.5 s, verbs.h) and kill the connection. So conn_connect sends a probe at once and
 * ESTABLISHED waits for its acknowledgement; tasks submitted meanwhile wait
 * in the stall queue. A probe nobody answered leaves the QP in error: it is
 * reset and reconnected with the same packet sequence numbers (the peer
 * never saw them) and probes again, until the context's connection request
 * timeout; then the connection fails (FAILURE, held tasks CONN_ABORTED). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "verbs.h"

#define DETAILS_FLAG_GRH 0x1u
#define DETAILS_FLAG_WRITE 0x2u
#define DETAILS_FLAG_READ 0x4u

enum ibv_mtu rdmx__verbs_mtu_enum(uint32_t bytes)
{
	if (bytes >= 4096)
		return IBV_MTU_4096;
	if (bytes >= 2048)
		return IBV_MTU_2048;
	if (bytes >= 1024)
		return IBV_MTU_1024;
	if (bytes >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

int rdmx__verbs_random_psn(uint32_t *psn)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
		RDMX_ERR("verbs: getrandom for a packet sequence number failed: %s",
		         strerror(errno));
		return RDMX_E_PROVIDER;
	}
	*psn = v & 0xffffffu;
	return 0;
}

/* ---- qp number map ---- */

static void map_add(struct verbs_ctx *vctx, struct verbs_conn *vc)
{
	struct verbs_conn **b = &vctx->qpn_tab[vc->qpn & vctx->qpn_mask];

	vc->hnext = *b;
	*b = vc;
}

static void map_del(struct verbs_ctx *vctx, struct verbs_conn *vc)
{
	for (struct verbs_conn **pp = &vctx->qpn_tab[vc->qpn & vctx->qpn_mask]; *pp;
	     pp = &(*pp)->hnext) {
		if (*pp == vc) {
			*pp = vc->hnext;
			break;
		}
	}
	vc->hnext = NULL;
}

struct verbs_conn *rdmx__verbs_conn_by_qpn(const struct verbs_ctx *vctx, uint32_t qpn)
{
	for (struct verbs_conn *v = vctx->qpn_tab[qpn & vctx->qpn_mask]; v; v = v->hnext)
		if (v->qp && v->qpn == qpn)
			return v;
	return NULL;
}

/* ---- life cycle ---- */

struct verbs_conn *rdmx__verbs_conn_new(struct verbs_ctx *vctx, struct rdmx_conn *conn)
{
	struct verbs_conn *vc = calloc(1, sizeof(*vc));

	if (!vc)
		return NULL;
	vc->conn = conn;
	vc->vctx = vctx;
	vc->sq_size = conn->ctx->props.send_queue_size;
	vc->next = vctx->conns;
	vctx->conns = vc;
	conn->prov = vc;
	return vc;
}

int rdmx__verbs_conn_create_qp(struct verbs_conn *vc)
{
	struct verbs_ctx *vctx = vc->vctx;
	const struct rdmx_ctx_props *p = &vctx->ctx->props;
	struct ibv_qp_init_attr a;
	size_t bytes = (size_t)vc->sq_size * sizeof(uint64_t);

	if (posix_memalign((void **)&vc->scratch, 64, bytes))
		return RDMX_E_NOMEM;
	memset(vc->scratch, 0, bytes);
	vc->scratch_mr = ibv_reg_mr(vctx->vdev->pd, vc->scratch, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!vc->scratch_mr) {
		RDMX_ERR("verbs: ibv_reg_mr(scratch, %zu bytes) failed: %s", bytes,
		         strerror(errno));
		goto free_scratch;
	}
	memset(&a, 0, sizeof(a));
	a.qp_context = vc;
	a.send_cq = vctx->scq;
	a.recv_cq = vctx->rcq;
	a.srq = vctx->srq;
	a.cap.max_send_wr = vc->sq_size + 1; /* + a liveness probe */
	a.cap.max_send_sge = p->max_send_buf_list_len ? p->max_send_buf_list_len : 1;
	a.cap.max_inline_data = p->max_inline;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	vc->qp = ibv_create_qp(vctx->vdev->pd, &a);
	/* a device that cannot give the inline size asked for may refuse the
	 * QP rather than grant less: ask again for half, down to none */
	while (!vc->qp && a.cap.max_inline_data) {
		a.cap.max_inline_data /= 2;
		a.cap.max_send_wr = vc->sq_size + 1;
		a.cap.max_send_sge = p->max_send_buf_list_len ? p->max_send_buf_list_len : 1;
		vc->qp = ibv_create_qp(vctx->vdev->pd, &a);
	}
	if (!vc->qp) {
		RDMX_ERR("verbs: ibv_create_qp(%s, %u wr, %u sge) failed: %s", vctx->vdev->name,
		         vc->sq_size, a.cap.max_send_sge, strerror(errno));
		goto dereg_scratch;
	}
	vc->qpn = vc->qp->qp_num;
	/* ibv_create_qp wrote back what the QP got; never more than asked */
	vc->max_inline =
	    a.cap.max_inline_data < p->max_inline ? a.cap.max_inline_data : p->max_inline;
	if (vc->max_inline < p->max_inline)
		RDMX_DBG("verbs: qpn 0x%x got %u inline bytes of %u asked", vc->qpn, vc->max_inline,
		         p->max_inline);
	map_add(vctx, vc);
	return 0;

dereg_scratch:
	ibv_dereg_mr(vc->scratch_mr);
	vc->scratch_mr = NULL;
free_scratch:
	free(vc->scratch);
	vc->scratch = NULL;
	return RDMX_E_PROVIDER;
}

int rdmx__verbs_qp_to_init(struct verbs_conn *vc, uint8_t port)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = vc->vctx->qp_access;
	if (ibv_modify_qp(vc->qp, &a,
	                  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		RDMX_ERR("verbs: ibv_modify_qp(INIT) qpn 0x%x failed: %s", vc->qpn,
		         strerror(errno));
		return RDMX_E_PROVIDER;
	}
	return 0;
}

void rdmx__verbs_qp_to_err(struct verbs_conn *vc)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(vc->qp, &a, IBV_QP_STATE))
		RDMX_ERR("verbs: ibv_modify_qp(ERR) qpn 0x%x failed: %s", vc->qpn, strerror(errno));
}

void rdmx__verbs_conn_destroy(struct verbs_conn *vc)
{
	struct verbs_ctx *vctx = vc->vctx;

	for (struct verbs_conn **pp = &vctx->conns; *pp; pp = &(*pp)->next) {
		if (*pp == vc) {
			*pp = vc->next;
			break;
		}
	}
	if (vc->exported && vc->connected && --vctx->nprobed == 0 && !vctx->stopping)
		rdmx__verbs_ctx_probe_timer(vctx, false);
	rdmx__verbs_conn_drop_windows(vc);
	if (vc->qp) {
		map_del(vctx, vc);
		if (vc->posted || vc->infl_head || vc->stall_head)
			RDMX_ERR("verbs: destroying qpn 0x%x with %u work requests posted", vc->qpn,
			         vc->posted);
		if (ibv_destroy_qp(vc->qp))
			RDMX_ERR("verbs: ibv_destroy_qp(qpn 0x%x) failed: %s", vc->qpn,
			         strerror(errno));
	}
	if (vc->scratch_mr && ibv_dereg_mr(vc->scratch_mr))
		RDMX_ERR("verbs: ibv_dereg_mr(scratch) failed: %s", strerror(errno));
	free(vc->scratch);
	/* every event of the id was acked as soon as it was read (cm.c), so
	 * rdma_destroy_id does not wait */
	if (vc->id && rdma_destroy_id(vc->id))
		RDMX_ERR("verbs: rdma_destroy_id(qpn 0x%x) failed: %s", vc->qpn, strerror(errno));
	free(vc);
}

void rdmx__verbs_conn_close(struct verbs_conn *vc)
{
	if (vc->closing || vc->final)
		return;
	vc->closing = true;
	if (vc->qp)
		rdmx__verbs_qp_to_err(vc);
	vc->vctx->pending = true;
	rdmx__verbs_ctx_kick(vc->vctx);
}

void rdmx__verbs_conn_release(struct rdmx_conn *conn)
{
	struct verbs_conn *vc = conn->prov;

	if (!vc)
		return;
	conn->prov = NULL;
	rdmx__verbs_conn_destroy(vc);
}

int rdmx__verbs_conn_disconnect(struct rdmx_conn *conn)
{
	struct verbs_conn *vc = conn->prov;

	if (!vc)
		return RDMX_E_BAD_STATE;
	if (vc->closing || vc->final)
		return 0;
	/* cm: a DREQ tells the peer (its DISCONNECTED event); we do not wait
	 * for the DREP: once our own work requests are flushed the connection
	 * is done, and destroying the id later is fine in any cm state */
	if (vc->id && (vc->established || vc->accepted) && rdma_disconnect(vc->id))
		RDMX_DBG("verbs: rdma_disconnect(qpn 0x%x) failed: %s", vc->qpn, strerror(errno));
	/* (a cm connect still resolving ends the same way: later cm events of
	 * a closing connection are ignored, cm.c) */
	rdmx__verbs_conn_close(vc);
	return 0;
}

/* A zero-length RDMA write (or read) the peer's QP acknowledges; wr_id is
 * the connection's address | 1 (task pointers are aligned). */
static int post_probe(struct verbs_conn *vc)
{
	struct verbs_ctx *vctx = vc->vctx;
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	if (vctx->nprobing >= vctx->probe_cap)
		return RDMX_E_FULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)vc | 1u;
	wr.opcode = vc->probe_op;
	wr.send_flags = IBV_SEND_SIGNALED;
	rc = ibv_post_send(vc->qp, &wr, &bad);
	if (rc) {
		RDMX_DBG("verbs: probe on qpn 0x%x not posted: %s", vc->qpn, strerror(rc));
		return RDMX_E_PROVIDER;
	}
	vc->probing = true;
	vc->posted++;
	vctx->nprobing++;
	return 0;
}

/* ---- export / connect ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool needs_grh(const struct verbs_ctx *vctx)
{
	return vctx->vdev->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET || vctx->ctx->props.grh;
}

int rdmx__verbs_conn_export(struct rdmx_conn *conn, void *details, size_t *len)
{
	struct verbs_ctx *vctx = verbs_ctx_of(conn->ctx);
	struct verbs_dev *vd = vctx->vdev;
	uint32_t gid_index = vctx->gid_index;
	union ibv_gid gid;
	struct verbs_conn *vc;
	uint8_t *d = details;
	int rc;

	if (ibv_query_gid(vd->ibv, vd->port, (int)gid_index, &gid)) {
		RDMX_ERR("verbs: ibv_query_gid(%s port %u index %u) failed: %s", vd->name, vd->port,
		         gid_index, strerror(errno));
		return RDMX_E_INVAL;
	}
	vc = rdmx__verbs_conn_new(vctx, conn);
	if (!vc)
		return RDMX_E_NOMEM;
	vc->exported = true;
	rc = rdmx__verbs_random_psn(&vc->psn);
	if (rc)
		goto destroy;
	rc = rdmx__verbs_conn_create_qp(vc);
	if (rc)
		goto destroy;
	rc = rdmx__verbs_qp_to_init(vc, vd->port);
	if (rc)
		goto destroy;
	memset(d, 0, VERBS_DETAILS_SIZE);
	put16(d, VERBS_DETAILS_MAGIC);
	d[2] = VERBS_DETAILS_VERSION;
	d[3] = RDMX_PROVIDER_ID_VERBS;
	put32(d + 4, vc->qpn);
	put32(d + 8, vc->psn);
	put16(d + 12, vd->port_attr.lid);
	d[14] = (uint8_t)vctx->mtu;
	d[15] = needs_grh(vctx) ? DETAILS_FLAG_GRH : 0;
	if (vctx->qp_access & IBV_ACCESS_REMOTE_WRITE)
		d[15] |= DETAILS_FLAG_WRITE;
	if (vctx->qp_access & IBV_ACCESS_REMOTE_READ)
		d[15] |= DETAILS_FLAG_READ;
	memcpy(d + 16, gid.raw, 16);
	*len = VERBS_DETAILS_SIZE;
	return 0;

destroy:
	conn->prov = NULL;
	rdmx__verbs_conn_destroy(vc);
	return rc;
}

static int parse_details(const void *details, size_t len, struct verbs_peer *pd)
{
	const uint8_t *d = details;

	if (len != VERBS_DETAILS_SIZE || get16(d) != VERBS_DETAILS_MAGIC ||
	    d[2] != VERBS_DETAILS_VERSION || d[3] != RDMX_PROVIDER_ID_VERBS)
		return RDMX_E_INVAL;
	pd->qpn = get32(d + 4);
	pd->psn = get32(d + 8);
	pd->lid = get16(d + 12);
	if (d[14] < IBV_MTU_256 || d[14] > IBV_MTU_4096 || pd->qpn > 0xffffffu ||
	    pd->psn > 0xffffffu)
		return RDMX_E_INVAL;
	pd->mtu = (enum ibv_mtu)d[14];
	pd->grh = d[15] & DETAILS_FLAG_GRH;
	pd->writable = d[15] & DETAILS_FLAG_WRITE;
	pd->readable = d[15] & DETAILS_FLAG_READ;
	memcpy(pd->gid, d + 16, 16);
	return 0;
}

static int to_rtr(struct verbs_conn *vc, const struct verbs_peer *peer)
{
	struct verbs_ctx *vctx = vc->vctx;
	const struct rdmx_ctx_props *p = &vctx->ctx->props;
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = peer->mtu < vctx->mtu ? peer->mtu : vctx->mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = vctx->rd_atomic;
	a.min_rnr_timer = VERBS_MIN_RNR_TIMER;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.sl = p->sl;
	a.ah_attr.port_num = vctx->vdev->port;
	if (needs_grh(vctx) || peer->grh) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)vctx->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(vc->qp, &a,
	                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		RDMX_ERR("verbs: ibv_modify_qp(RTR) qpn 0x%x -> peer qpn 0x%x failed: %s", vc->qpn,
		         peer->qpn, strerror(errno));
		return RDMX_E_PROVIDER;
	}
	return 0;
}

static int to_rts(struct verbs_conn *vc)
{
	struct verbs_ctx *vctx = vc->vctx;
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = VERBS_QP_TIMEOUT;
	a.retry_cnt = VERBS_QP_RETRY_CNT;
	a.rnr_retry = vctx->ctx->props.rnr_retry_count;
	a.sq_psn = vc->psn;
	a.max_rd_atomic = vctx->rd_atomic;
	if (ibv_modify_qp(vc->qp, &a,
	                  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	                      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		RDMX_ERR("verbs: ibv_modify_qp(RTS) qpn 0x%x failed: %s", vc->qpn, strerror(errno));
		return RDMX_E_PROVIDER;
	}
	return 0;
}

int rdmx__verbs_conn_connect(struct rdmx_conn *conn, const void *details, size_t len)
{
	struct verbs_conn *vc = conn->prov;
	struct verbs_peer peer;
	int rc;

	if (!vc || !vc->exported || vc->connected || vc->closing)
		return RDMX_E_BAD_STATE;
	rc = parse_details(details, len, &peer);
	if (rc) {
		RDMX_DBG("verbs: malformed connection details (%zu bytes)", len);
		return rc;
	}
	rc = to_rtr(vc, &peer);
	if (rc)
		return rc;
	rc = to_rts(vc);
	if (rc)
		return rc;
	vc->peer = peer;
	vc->connected = true;
	vc->can_probe = peer.writable || peer.readable;
	vc->probe_op = peer.writable ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	vc->probe_at_ms = rdmx__verbs_now_ms() + VERBS_PROBE_MS;
	if (vc->vctx->nprobed++ == 0)
		rdmx__verbs_ctx_probe_timer(vc->vctx, true);
	/* the engine lets tasks in now: they wait for the handshake */
	if (vc->can_probe) {
		vc->hs_deadline_ms =
		    rdmx__verbs_now_ms() + vc->vctx->ctx->props.conn_request_timeout_ms;
		if (post_probe(vc) == 0) {
			vc->handshake = true;
			return 0;
		}
	}
	/* a peer that takes neither writes nor reads cannot be probed */
	vc->est_pending = true;
	vc->vctx->pending = true;
	rdmx__verbs_ctx_kick(vc->vctx);
	return 0;
}

/* Back to RTS from error after an unanswered handshake (see the top). */
static int restart_qp(struct verbs_conn *vc)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(vc->qp, &a, IBV_QP_STATE)) {
		RDMX_ERR("verbs: ibv_modify_qp(RESET) qpn 0x%x failed: %s", vc->qpn,
		         strerror(errno));
		return RDMX_E_PROVIDER;
	}
	rc = rdmx__verbs_qp_to_init(vc, vc->vctx->vdev->port);
	if (!rc)
		rc = to_rtr(vc, &vc->peer);
	if (!rc)
		rc = to_rts(vc);
	return rc;
}

void rdmx__verbs_conn_hello_done(struct verbs_conn *vc, bool ok)
{
	struct verbs_ctx *vctx = vc->vctx;

	vc->handshake = false;
	if (vc->closing || vc->final)
		return; /* the connection phase ends it */
	if (ok) {
		vc->est_pending = true;
		vctx->pending = true;
		return;
	}
	if (rdmx__verbs_now_ms() < vc->hs_deadline_ms && restart_qp(vc) == 0 &&
	    post_probe(vc) == 0) {
		RDMX_DBG("verbs: qpn 0x%x: peer qpn 0x%x not ready yet, probing again", vc->qpn,
		         vc->peer.qpn);
		vc->handshake = true;
		return;
	}
	RDMX_WARN("verbs: connection %u: the peer's qpn 0x%x did not answer within %u ms",
	          vc->conn->id, vc->peer.qpn, vctx->ctx->props.conn_request_timeout_ms);
	rdmx__verbs_qp_to_err(vc);
	vc->fail_pending = true;
	vctx->pending = true;
}

/* ---- liveness probe ---- */

void rdmx__verbs_conn_probe(struct verbs_ctx *vctx)
{
	/* every poll looks: the coarse clock (a probe a tick late is fine) */
	uint64_t now = rdmx__verbs_now_coarse_ms();

	if (now < vctx->next_probe_ms)
		return;
	vctx->next_probe_ms = now + VERBS_PROBE_MS / 4;
	for (struct verbs_conn *v = vctx->conns; v; v = v->next) {
		if (!v->connected || !v->can_probe || v->probing || !v->established || v->closing ||
		    v->in_error || v->final || v->posted || v->stall_head || now < v->probe_at_ms)
			continue;
		v->probe_at_ms = now + VERBS_PROBE_MS;
		post_probe(v);
	}
}
