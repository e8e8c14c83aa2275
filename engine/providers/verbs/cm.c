/* verbs rdma_cm flow: listen, connect to an address, accept, reject, and the
 * cm events that drive them (from ctx_poll, non-blocking).
 *
 * The QP is created by hand on the context's PD/CQs/SRQ (no rdma_create_qp)
 * and moved through INIT/RTR/RTS here with rdma_init_qp_attr's values plus
 * our own rnr_retry, path MTU cap and RNR timer: with a cm-managed QP the
 * rnr retry count would be the one the peer asked for (IB CM carries it in
 * the REQ/REP), not this context's property. So the active side gets
 * RDMA_CM_EVENT_CONNECT_RESPONSE and answers with rdma_establish; the
 * passive side reaches RTS before rdma_accept, as librdmacm itself does.
 *
 * Every event is copied and acked at once (rdma_destroy_id waits for the
 * acks of its events, and the engine releases a connection later).
 *
 * Private data: on RoCE/IB the REQ carries 56 bytes and the REP 196, and the
 * receiver always sees the full, zero-padded size. The sent bytes are
 * framed as [length][bytes] so the peer gets the exact length back; a
 * 56-byte REQ payload has no room for the length byte and goes raw: the
 * receiver takes 56 raw bytes unless the first byte is a length <= 55 with
 * an all-zero tail (a raw 56-byte payload of that very shape comes out
 * shortened: the one ambiguity of the framing). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

#define CM_REQ_PD_ROOM 56u
#define CM_REP_PD_ROOM 196u
#define CM_LISTEN_BACKLOG 128

/* ---- private data framing ---- */

size_t rdmx__verbs_pd_encode(const void *pd, size_t len, size_t room, uint8_t *out)
{
	if (len > RDMX_PRIVATE_DATA_MAX)
		len = RDMX_PRIVATE_DATA_MAX;
	if (len + 1 <= room) {
		out[0] = (uint8_t)len;
		if (len)
			memcpy(out + 1, pd, len);
		return len + 1;
	}
	memcpy(out, pd, len);
	return len;
}

size_t rdmx__verbs_pd_decode(const uint8_t *in, size_t len, uint8_t *out)
{
	size_t n;

	if (!in || len == 0)
		return 0;
	n = in[0];
	if (n <= RDMX_PRIVATE_DATA_MAX && n + 1 <= len) {
		bool zero_tail = true;

		for (size_t i = n + 1; i < len && zero_tail; i++)
			zero_tail = in[i] == 0;
		if (zero_tail) {
			memcpy(out, in + 1, n);
			return n;
		}
	}
	n = len < RDMX_PRIVATE_DATA_MAX ? len : RDMX_PRIVATE_DATA_MAX;
	memcpy(out, in, n);
	return n;
}

/* ---- helpers ---- */

static uint8_t min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void fill_addr(struct rdmx_addr *a, const struct sockaddr *sa)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

		a->type = RDMX_ADDR_IPV4;
		inet_ntop(AF_INET, &in4->sin_addr, a->text, sizeof(a->text));
		a->port = ntohs(in4->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		a->type = RDMX_ADDR_IPV6;
		inet_ntop(AF_INET6, &in6->sin6_addr, a->text, sizeof(a->text));
		a->port = ntohs(in6->sin6_port);
	}
	a->ss_len = sa_len(sa);
	memcpy(&a->ss, sa, a->ss_len);
}

static bool on_our_device(const struct verbs_ctx *vctx, const struct rdma_cm_id *id)
{
	return id->verbs && strcmp(ibv_get_device_name(id->verbs->device), vctx->vdev->name) == 0;
}

/* Ends a connection attempt that has not been established. */
static void attempt_failed(struct verbs_conn *vc, const char *what, int status)
{
	if (vc->final || vc->closing)
		return;
	RDMX_DBG("verbs: connection %u: %s (status %d)", vc->conn->id, what, status);
	vc->fail_pending = true;
	if (vc->qp)
		rdmx__verbs_qp_to_err(vc);
	vc->vctx->pending = true;
}

/* INIT (rdma_cm's port and pkey, our access), from a fresh QP. */
static int cm_qp_init(struct verbs_conn *vc)
{
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(vc->id, &a, &mask)) {
		RDMX_ERR("verbs: rdma_init_qp_attr(INIT) qpn 0x%x failed: %s", vc->qpn,
		         strerror(errno));
		return RDMX_E_PROVIDER;
	}
	a.qp_access_flags = vc->vctx->qp_access;
	if (ibv_modify_qp(vc->qp, &a, mask | IBV_QP_ACCESS_FLAGS)) {
		RDMX_ERR("verbs: ibv_modify_qp(INIT) qpn 0x%x failed: %s", vc->qpn,
		         strerror(errno));
		return RDMX_E_PROVIDER;
	}
	return 0;
}

/* RTR then RTS with rdma_cm's path, psns and negotiated depths (resp_res /
 * init_depth override them when non-zero) and our rnr retry and MTU cap. */
static int cm_qp_rtr_rts(struct verbs_conn *vc, uint8_t resp_res, uint8_t init_depth)
{
	struct verbs_ctx *vctx = vc->vctx;
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(vc->id, &a, &mask)) {
		RDMX_ERR("verbs: rdma_init_qp_attr(RTR) qpn 0x%x failed: %s", vc->qpn,
		         strerror(errno));
		return RDMX_E_PROVIDER;
	}
	if (a.path_mtu > vctx->mtu)
		a.path_mtu = vctx->mtu;
	if (resp_res)
		a.max_dest_rd_atomic = resp_res;
	a.min_rnr_timer = VERBS_MIN_RNR_TIMER;
	if (ibv_modify_qp(vc->qp, &a,
	                  mask | IBV_QP_PATH_MTU | IBV_QP_MAX_DEST_RD_ATOMIC |
	                      IBV_QP_MIN_RNR_TIMER)) {
		RDMX_ERR("verbs: ibv_modify_qp(RTR) qpn 0x%x -> peer qpn 0x%x failed: %s", vc->qpn,
		         a.dest_qp_num, strerror(errno));
		return RDMX_E_PROVIDER;
	}
	memset(&a, 0, sizeof(a));
	mask = 0;
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(vc->id, &a, &mask)) {
		RDMX_ERR("verbs: rdma_init_qp_attr(RTS) qpn 0x%x failed: %s", vc->qpn,
		         strerror(errno));
		return RDMX_E_PROVIDER;
	}
	a.rnr_retry = vctx->ctx->props.rnr_retry_count;
	a.retry_cnt = VERBS_QP_RETRY_CNT; /* whatever the peer's REQ asked (verbs.h) */
	if (a.timeout < VERBS_QP_TIMEOUT)
		a.timeout = VERBS_QP_TIMEOUT;
	if (init_depth)
		a.max_rd_atomic = init_depth;
	if (ibv_modify_qp(vc->qp, &a,
	                  mask | IBV_QP_RNR_RETRY | IBV_QP_RETRY_CNT | IBV_QP_TIMEOUT |
	                      IBV_QP_MAX_QP_RD_ATOMIC)) {
		RDMX_ERR("verbs: ibv_modify_qp(RTS) qpn 0x%x failed: %s", vc->qpn, strerror(errno));
		return RDMX_E_PROVIDER;
	}
	return 0;
}

/* ---- listen ---- */

static void close_listeners(struct verbs_ctx *vctx)
{
	for (unsigned i = 0; i < vctx->nlisten; i++)
		if (rdma_destroy_id(vctx->listen[i]))
			RDMX_ERR("verbs: rdma_destroy_id(listener) failed: %s", strerror(errno));
	vctx->nlisten = 0;
}

int rdmx__verbs_listen(struct rdmx_ctx *ctx, uint16_t port)
{
	struct verbs_ctx *vctx = verbs_ctx_of(ctx);
	struct sockaddr_storage addrs[VERBS_MAX_LISTEN];
	unsigned n;
	int rc;

	if (!vctx)
		return RDMX_E_BAD_STATE;
	rc = rdmx__verbs_ctx_cm_channel(vctx);
	if (rc)
		return rc;
	n = rdmx__verbs_dev_local_addrs(vctx->vdev, addrs, VERBS_MAX_LISTEN);
	if (n == 0) {
		RDMX_ERR("verbs: %s has no IP address in its GID table: nothing to listen on",
		         vctx->vdev->name);
		return RDMX_E_NO_DEVICE;
	}
	for (unsigned i = 0; i < n; i++) {
		struct sockaddr *sa = (struct sockaddr *)&addrs[i];
		struct rdma_cm_id *id;
		char text[64] = "?";

		if (sa->sa_family == AF_INET) {
			((struct sockaddr_in *)sa)->sin_port = htons(port);
			inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, text,
			          sizeof(text));
		} else {
			((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, text,
			          sizeof(text));
		}
		if (rdma_create_id(vctx->cm, &id, NULL, RDMA_PS_TCP)) {
			RDMX_ERR("verbs: rdma_create_id(listen) failed: %s", strerror(errno));
			rc = RDMX_E_PROVIDER;
			goto close;
		}
		if (rdma_bind_addr(id, sa) || rdma_listen(id, CM_LISTEN_BACKLOG)) {
			int e = errno;

			/* a port in use is an ordinary answer (callers try another) */
			if (e == EADDRINUSE) {
				RDMX_DBG("verbs: listen on %s port %u: address in use", text, port);
				rc = RDMX_E_EXISTS;
			} else {
				RDMX_ERR("verbs: rdma_bind_addr/rdma_listen(%s port %u) failed: %s",
				         text, port, strerror(e));
				rc = RDMX_E_PROVIDER;
			}
			rdma_destroy_id(id);
			goto close;
		}
		vctx->listen[vctx->nlisten++] = id;
	}
	return 0;

close:
	close_listeners(vctx);
	return rc;
}

void rdmx__verbs_stop_listen(struct rdmx_ctx *ctx)
{
	struct verbs_ctx *vctx = verbs_ctx_of(ctx);

	if (vctx)
		close_listeners(vctx);
}

/* ---- active side ---- */

int rdmx__verbs_connect_to_addr(struct rdmx_conn *conn, const struct rdmx_addr *addr,
                                const void *pd, size_t pd_len)
{
	struct verbs_ctx *vctx = verbs_ctx_of(conn->ctx);
	struct sockaddr_storage src;
	struct verbs_conn *vc;
	int family = addr->ss.ss_family;
	bool have_src;
	int rc;

	if (!vctx)
		return RDMX_E_BAD_STATE;
	if (family != AF_INET && family != AF_INET6)
		return RDMX_E_NOT_SUPPORTED;
	rc = rdmx__verbs_ctx_cm_channel(vctx);
	if (rc)
		return rc;
	vc = rdmx__verbs_conn_new(vctx, conn);
	if (!vc)
		return RDMX_E_NOMEM;
	vc->cm_pd_len = (uint8_t)rdmx__verbs_pd_encode(pd, pd_len, CM_REQ_PD_ROOM, vc->cm_pd);
	if (rdma_create_id(vctx->cm, &vc->id, vc, RDMA_PS_TCP)) {
		RDMX_ERR("verbs: rdma_create_id failed: %s", strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto destroy;
	}
	/* bind to this device's own address: without a source, the route to a
	 * local destination may resolve to another device */
	have_src = rdmx__verbs_dev_local_addr(vctx->vdev, vctx->gid_index, family, &src) == 0;
	if (rdma_resolve_addr(vc->id, have_src ? (struct sockaddr *)&src : NULL,
	                      (struct sockaddr *)&addr->ss,
	                      (int)conn->ctx->props.conn_request_timeout_ms)) {
		RDMX_ERR("verbs: rdma_resolve_addr(%s port %u) failed: %s", addr->text, addr->port,
		         strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto destroy;
	}
	rdmx__verbs_cm_expect(vctx);
	return 0;

destroy:
	conn->prov = NULL;
	rdmx__verbs_conn_destroy(vc);
	return rc;
}

static void on_addr_resolved(struct verbs_conn *vc)
{
	struct verbs_ctx *vctx = vc->vctx;

	if (!on_our_device(vctx, vc->id)) {
		RDMX_ERR("verbs: the route to the peer of connection %u goes through %s, not %s",
		         vc->conn->id,
		         vc->id->verbs ? ibv_get_device_name(vc->id->verbs->device) : "?",
		         vctx->vdev->name);
		attempt_failed(vc, "route on another device", 0);
		return;
	}
	if (rdma_resolve_route(vc->id, (int)vctx->ctx->props.conn_request_timeout_ms)) {
		RDMX_ERR("verbs: rdma_resolve_route failed: %s", strerror(errno));
		attempt_failed(vc, "rdma_resolve_route", errno);
	}
}

static void on_route_resolved(struct verbs_conn *vc)
{
	struct verbs_ctx *vctx = vc->vctx;
	struct rdma_conn_param param;

	if (rdmx__verbs_conn_create_qp(vc) || cm_qp_init(vc)) {
		attempt_failed(vc, "QP setup", 0);
		return;
	}
	memset(&param, 0, sizeof(param));
	param.private_data = vc->cm_pd;
	param.private_data_len = vc->cm_pd_len;
	param.responder_resources = vctx->rd_atomic;
	param.initiator_depth = vctx->rd_atomic;
	param.retry_count = VERBS_QP_RETRY_CNT;
	param.rnr_retry_count = vctx->ctx->props.rnr_retry_count;
	param.qp_num = vc->qpn;
	param.srq = 1;
	if (rdma_connect(vc->id, &param)) {
		RDMX_ERR("verbs: rdma_connect(qpn 0x%x) failed: %s", vc->qpn, strerror(errno));
		attempt_failed(vc, "rdma_connect", errno);
	}
}

static int on_connect_response(struct verbs_conn *vc, const struct verbs_cm_ev *e)
{
	struct rdmx_conn *conn = vc->conn;

	if (!vc->qp || cm_qp_rtr_rts(vc, 0, 0)) {
		if (rdma_reject(vc->id, NULL, 0))
			RDMX_DBG("verbs: rdma_reject after a failed RTR/RTS: %s", strerror(errno));
		attempt_failed(vc, "RTR/RTS after the connect response", 0);
		return 0;
	}
	if (rdma_establish(vc->id)) {
		RDMX_ERR("verbs: rdma_establish(qpn 0x%x) failed: %s", vc->qpn, strerror(errno));
		attempt_failed(vc, "rdma_establish", errno);
		return 0;
	}
	conn->private_data_len = rdmx__verbs_pd_decode(e->pd, e->pd_len, conn->private_data);
	vc->established = true;
	rdmx__conn_event(conn, RDMX__CONN_EV_ESTABLISHED);
	return 1;
}

/* ---- passive side ---- */

void rdmx__verbs_cm_refuse(struct rdma_cm_id *id)
{
	if (rdma_reject(id, NULL, 0))
		RDMX_DBG("verbs: rdma_reject failed: %s", strerror(errno));
	if (rdma_destroy_id(id))
		RDMX_ERR("verbs: rdma_destroy_id(rejected request) failed: %s", strerror(errno));
}

int rdmx__verbs_cm_request(struct verbs_ctx *vctx, const struct verbs_cm_ev *e)
{
	struct rdma_cm_id *id = e->id;
	struct rdmx_conn *conn;
	struct verbs_conn *vc;

	if (!on_our_device(vctx, id)) {
		RDMX_ERR("verbs: connection request on %s reached a listener of %s: rejected",
		         id->verbs ? ibv_get_device_name(id->verbs->device) : "?",
		         vctx->vdev->name);
		goto reject;
	}
	conn = rdmx__conn_new(vctx->ctx, RDMX_CONN_REQUESTED);
	if (!conn) {
		if (vctx->ctx->num_conns >= vctx->ctx->props.max_connections)
			RDMX_WARN("verbs: connection request rejected: the context is at its %u "
			          "connections",
			          vctx->ctx->props.max_connections);
		else
			RDMX_ERR("verbs: no memory for a connection request: rejected");
		goto reject;
	}
	vc = rdmx__verbs_conn_new(vctx, conn);
	if (!vc) {
		RDMX_ERR("verbs: no memory for a connection request: rejected");
		goto release_conn;
	}
	vc->id = id;
	id->context = vc;
	conn->private_data_len = rdmx__verbs_pd_decode(e->pd, e->pd_len, conn->private_data);
	fill_addr(&conn->peer_addr, rdma_get_peer_addr(id));
	conn->has_peer_addr = true;
	/* our responder resources serve the peer's initiator depth and back */
	vc->resp_res = min_u8(e->init_depth, vctx->rd_atomic);
	vc->init_depth = min_u8(e->resp_res, vctx->rd_atomic);
	rdmx__conn_event(conn, RDMX__CONN_EV_REQUEST);
	return 1;

release_conn:
	/* the engine's object: with no provider part (conn->prov is NULL) the
	 * reject only retires it, and it is freed once ctx_poll returned */
	rdmx_conn_reject(conn);
reject:
	rdmx__verbs_cm_refuse(id);
	return 0;
}

int rdmx__verbs_conn_accept(struct rdmx_conn *conn, const void *pd, size_t pd_len)
{
	struct verbs_conn *vc = conn->prov;
	struct rdma_conn_param param;
	uint8_t enc[RDMX_PRIVATE_DATA_MAX + 1];
	int rc;

	if (!vc || !vc->id || vc->accepted || vc->final || vc->closing)
		return RDMX_E_BAD_STATE;
	if (!vc->qp) {
		rc = rdmx__verbs_conn_create_qp(vc);
		if (rc)
			return rc;
	}
	rc = cm_qp_init(vc);
	if (!rc)
		rc = cm_qp_rtr_rts(vc, vc->resp_res, vc->init_depth);
	if (rc)
		return rc;
	memset(&param, 0, sizeof(param));
	param.private_data = enc;
	param.private_data_len = (uint8_t)rdmx__verbs_pd_encode(pd, pd_len, CM_REP_PD_ROOM, enc);
	param.responder_resources = vc->resp_res;
	param.initiator_depth = vc->init_depth;
	param.retry_count = VERBS_QP_RETRY_CNT;
	param.rnr_retry_count = vc->vctx->ctx->props.rnr_retry_count;
	param.qp_num = vc->qpn;
	param.srq = 1;
	if (rdma_accept(vc->id, &param)) {
		RDMX_ERR("verbs: rdma_accept(qpn 0x%x) failed: %s", vc->qpn, strerror(errno));
		rdmx__verbs_qp_to_err(vc);
		return RDMX_E_PROVIDER;
	}
	vc->accepted = true;
	rdmx__verbs_cm_expect(vc->vctx); /* ESTABLISHED */
	return 0;
}

int rdmx__verbs_conn_reject(struct rdmx_conn *conn)
{
	struct verbs_conn *vc = conn->prov;

	if (!vc || !vc->id)
		return 0;
	if (rdma_reject(vc->id, NULL, 0)) {
		RDMX_ERR("verbs: rdma_reject failed: %s", strerror(errno));
		return RDMX_E_PROVIDER;
	}
	vc->final = true; /* the engine retires the connection now */
	return 0;
}

/* ---- events ---- */

static int on_established(struct verbs_conn *vc)
{
	if (!vc->accepted || vc->established)
		return 0;
	vc->established = true;
	rdmx__conn_event(vc->conn, RDMX__CONN_EV_ESTABLISHED);
	return 1;
}

static void on_disconnected(struct verbs_conn *vc)
{
	if (!vc->established) {
		attempt_failed(vc, "disconnected before established", 0);
		return;
	}
	if (vc->closing)
		return;
	/* the peer's DREQ: answer it (DREP) and flush our queue */
	if (rdma_disconnect(vc->id))
		RDMX_DBG("verbs: rdma_disconnect(qpn 0x%x) on a peer disconnect: %s", vc->qpn,
		         strerror(errno));
	rdmx__verbs_conn_close(vc);
}

static int handle(struct verbs_ctx *vctx, const struct verbs_cm_ev *e)
{
	struct verbs_conn *vc;

	if (e->type == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rdmx__verbs_lgroup_deal(vctx, e) ? 0 : rdmx__verbs_cm_request(vctx, e);
	vc = e->id->context;
	if (!vc) { /* a listener's own event */
		RDMX_DBG("verbs: listener event %s (status %d)", rdma_event_str(e->type),
		         e->status);
		return 0;
	}
	if (vc->final || (vc->closing && e->type != RDMA_CM_EVENT_DISCONNECTED))
		return 0;
	switch (e->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		on_addr_resolved(vc);
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		on_route_resolved(vc);
		return 0;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return on_connect_response(vc, e);
	case RDMA_CM_EVENT_ESTABLISHED:
		return on_established(vc);
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (vc->established)
			on_disconnected(vc);
		else
			attempt_failed(vc, rdma_event_str(e->type), e->status);
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		on_disconnected(vc);
		return 0;
	default: /* TIMEWAIT_EXIT, ADDR_CHANGE, ... */
		return 0;
	}
}

int rdmx__verbs_cm_poll(struct verbs_ctx *vctx, unsigned budget)
{
	int n = 0;

	while ((unsigned)n < budget) {
		struct rdma_cm_event *ev;
		struct verbs_cm_ev e;

		if (rdma_get_cm_event(vctx->cm, &ev)) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				RDMX_ERR("verbs: rdma_get_cm_event failed: %s", strerror(errno));
			break;
		}
		memset(&e, 0, sizeof(e));
		e.type = ev->event;
		e.status = ev->status;
		e.id = ev->id;
		if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
			e.pd_len = ev->param.conn.private_data_len;
			if (e.pd_len > sizeof(e.pd))
				e.pd_len = sizeof(e.pd);
			memcpy(e.pd, ev->param.conn.private_data, e.pd_len);
		}
		e.resp_res = ev->param.conn.responder_resources;
		e.init_depth = ev->param.conn.initiator_depth;
		if (rdma_ack_cm_event(ev))
			RDMX_ERR("verbs: rdma_ack_cm_event failed: %s", strerror(errno));
		n += handle(vctx, &e);
	}
	return n;
}
