/* verbs contexts: the SRQ, the CQ pair and their completion channel, the
 * rdma_cm event channel, and the epoll fd the progress engine watches.
 *
 * Notification: ctx_arm requests a CQ event on both CQs and then polls them
 * once, because a completion that arrived before the request raises no
 * event; what that poll finds is stashed (delivered first by ctx_poll) and
 * the eventfd makes the epoll fd readable at once. The eventfd also carries
 * work the provider owes without a CQE (a drained connection's final event,
 * an ESTABLISHED of the export flow), and a timerfd ticks while
 * export/connect connections exist, for their liveness probes (conn.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "verbs.h"

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int qp_access(unsigned permissions)
{
	int f = 0;

	if (permissions & RDMX_ACCESS_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (permissions & RDMX_ACCESS_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (permissions & RDMX_ACCESS_REMOTE_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

/* Sizes and the per-context constants derived from the properties. */
static void ctx_params(struct verbs_ctx *vc, const struct rdmx_ctx_props *p)
{
	const struct verbs_dev *vd = vc->vdev;
	const struct ibv_device_attr *a = &vd->attr.orig_attr;
	uint64_t conns = p->max_connections ? p->max_connections : 1;
	uint64_t scq = (uint64_t)p->send_queue_size * conns + conns;
	int rd;

	/* every send work request is signaled: the send CQ must hold all of
	 * them, tasks (post_send answers RDMX_E_FULL past scq_cap) and one
	 * liveness probe per connection */
	if (scq > (uint64_t)a->max_cqe)
		scq = (uint64_t)a->max_cqe;
	vc->probe_cap = (uint32_t)(conns < scq / 2 ? conns : scq / 2);
	vc->scq_cap = (uint32_t)scq - vc->probe_cap;
	vc->gid_index = rdmx__verbs_dev_gid_index(vd, p->gid_index);
	vc->srq_cap = p->recv_queue_size;
	vc->mtu = rdmx__verbs_mtu_enum(p->mtu);
	if (vd->port_attr.active_mtu && vd->port_attr.active_mtu < vc->mtu)
		vc->mtu = vd->port_attr.active_mtu;
	vc->qp_access = qp_access(p->permissions);
	rd =
	    a->max_qp_rd_atom < a->max_qp_init_rd_atom ? a->max_qp_rd_atom : a->max_qp_init_rd_atom;
	vc->rd_atomic =
	    (uint8_t)(rd > (int)VERBS_MAX_RD_ATOMIC ? (int)VERBS_MAX_RD_ATOMIC : (rd < 0 ? 0 : rd));
}

int rdmx__verbs_ctx_start(struct rdmx_ctx *ctx)
{
	struct verbs_dev *vd = ctx->dev->prov;
	const struct rdmx_ctx_props *p = &ctx->props;
	struct ibv_srq_init_attr sa;
	struct verbs_ctx *vc;
	int rc = RDMX_E_PROVIDER;

	vc = calloc(1, sizeof(*vc));
	if (!vc)
		return RDMX_E_NOMEM;
	vc->ctx = ctx;
	vc->vdev = vd;
	vc->epfd = vc->evfd = vc->tfd = -1;
	vc->dealt_tail = &vc->dealt;
	ctx_params(vc, p);
	rdmx__verbs_cm_expect(vc); /* the cm flow starts with an event awaited */
	vc->soft = vd->attr.orig_attr.vendor_id == VERBS_VENDOR_RXE ||
	           vd->attr.orig_attr.vendor_id == VERBS_VENDOR_SIW;
	vc->qpn_mask = pow2_at_least(p->max_connections < 64 ? 64 : p->max_connections) - 1;
	vc->qpn_tab = calloc((size_t)vc->qpn_mask + 1, sizeof(*vc->qpn_tab));
	if (!vc->qpn_tab) {
		rc = RDMX_E_NOMEM;
		goto free_vc;
	}
	vc->chan = ibv_create_comp_channel(vd->ibv);
	if (!vc->chan) {
		RDMX_ERR("verbs: ibv_create_comp_channel(%s) failed: %s", vd->name,
		         strerror(errno));
		goto free_tab;
	}
	if (set_nonblock(vc->chan->fd)) {
		RDMX_ERR("verbs: fcntl(O_NONBLOCK) on the completion channel failed: %s",
		         strerror(errno));
		goto destroy_chan;
	}
	vc->scq = ibv_create_cq(vd->ibv, (int)(vc->scq_cap + vc->probe_cap), vc, vc->chan, 0);
	if (!vc->scq) {
		RDMX_ERR("verbs: ibv_create_cq(%s, send, %u entries) failed: %s", vd->name,
		         vc->scq_cap + vc->probe_cap, strerror(errno));
		goto destroy_chan;
	}
	vc->rcq = ibv_create_cq(vd->ibv, (int)vc->srq_cap, vc, vc->chan, 0);
	if (!vc->rcq) {
		RDMX_ERR("verbs: ibv_create_cq(%s, recv, %u entries) failed: %s", vd->name,
		         vc->srq_cap, strerror(errno));
		goto destroy_scq;
	}
	memset(&sa, 0, sizeof(sa));
	sa.srq_context = vc;
	sa.attr.max_wr = vc->srq_cap;
	sa.attr.max_sge = p->max_recv_buf_list_len ? p->max_recv_buf_list_len : 1;
	vc->srq = ibv_create_srq(vd->pd, &sa);
	if (!vc->srq) {
		RDMX_ERR("verbs: ibv_create_srq(%s, %u wr, %u sge) failed: %s", vd->name,
		         vc->srq_cap, sa.attr.max_sge, strerror(errno));
		goto destroy_rcq;
	}
	vc->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vc->evfd < 0) {
		RDMX_ERR("verbs: eventfd failed: %s", strerror(errno));
		goto destroy_srq;
	}
	vc->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (vc->tfd < 0) {
		RDMX_ERR("verbs: timerfd_create failed: %s", strerror(errno));
		goto close_evfd;
	}
	vc->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (vc->epfd < 0) {
		RDMX_ERR("verbs: epoll_create1 failed: %s", strerror(errno));
		goto close_tfd;
	}
	if (epoll_add(vc->epfd, vc->chan->fd) || epoll_add(vc->epfd, vc->evfd) ||
	    epoll_add(vc->epfd, vc->tfd)) {
		RDMX_ERR("verbs: epoll_ctl(ADD) failed: %s", strerror(errno));
		goto close_epfd;
	}
	ctx->prov = vc;
	return 0;

close_epfd:
	close(vc->epfd);
close_tfd:
	close(vc->tfd);
close_evfd:
	close(vc->evfd);
destroy_srq:
	ibv_destroy_srq(vc->srq);
destroy_rcq:
	ibv_destroy_cq(vc->rcq);
destroy_scq:
	ibv_destroy_cq(vc->scq);
destroy_chan:
	ibv_destroy_comp_channel(vc->chan);
free_tab:
	free(vc->qpn_tab);
free_vc:
	free(vc);
	return rc;
}

int rdmx__verbs_ctx_cm_channel(struct verbs_ctx *vc)
{
	if (vc->cm)
		return 0;
	vc->cm = rdma_create_event_channel();
	if (!vc->cm) {
		RDMX_ERR("verbs: rdma_create_event_channel failed: %s", strerror(errno));
		return RDMX_E_PROVIDER;
	}
	if (set_nonblock(vc->cm->fd) || epoll_add(vc->epfd, vc->cm->fd)) {
		RDMX_ERR("verbs: setting up the rdma_cm event channel fd failed: %s",
		         strerror(errno));
		rdma_destroy_event_channel(vc->cm);
		vc->cm = NULL;
		return RDMX_E_PROVIDER;
	}
	return 0;
}

int rdmx__verbs_ctx_get_fd(struct rdmx_ctx *ctx)
{
	struct verbs_ctx *vc = ctx->prov;

	return vc ? vc->epfd : -1;
}

void rdmx__verbs_ctx_kick(struct verbs_ctx *vc)
{
	uint64_t one = 1;

	if (write(vc->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		RDMX_WARN("verbs: eventfd write failed: %s", strerror(errno));
}

void rdmx__verbs_ctx_probe_timer(struct verbs_ctx *vc, bool on)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (on) {
		its.it_value.tv_sec = VERBS_PROBE_MS / 1000;
		its.it_value.tv_nsec = (long)(VERBS_PROBE_MS % 1000) * 1000000L;
		its.it_interval = its.it_value;
	}
	if (timerfd_settime(vc->tfd, 0, &its, NULL))
		RDMX_ERR("verbs: timerfd_settime failed: %s", strerror(errno));
}

/* Polls a CQ into an empty stash (see the file comment). */
static void peek(struct ibv_cq *cq, struct ibv_wc *stash, unsigned *n, const char *which)
{
	int got;

	if (*n)
		return;
	got = ibv_poll_cq(cq, (int)VERBS_POLL_BATCH, stash);
	if (got < 0) {
		RDMX_ERR("verbs: ibv_poll_cq(%s) failed: %d", which, got);
		return;
	}
	*n = (unsigned)got;
}

int rdmx__verbs_ctx_arm(struct rdmx_ctx *ctx)
{
	struct verbs_ctx *vc = ctx->prov;

	if (!vc)
		return RDMX_E_BAD_STATE;
	if (ibv_req_notify_cq(vc->scq, 0) || ibv_req_notify_cq(vc->rcq, 0)) {
		RDMX_ERR("verbs: ibv_req_notify_cq failed: %s", strerror(errno));
		return RDMX_E_PROVIDER;
	}
	peek(vc->scq, vc->sstash, &vc->nsstash, "send");
	peek(vc->rcq, vc->rstash, &vc->nrstash, "recv");
	if (vc->nsstash || vc->nrstash || vc->pending ||
	    atomic_load_explicit(&vc->dealt_due, memory_order_relaxed))
		rdmx__verbs_ctx_kick(vc);
	return 0;
}

/* Takes every CQ event off the channel and acks them. */
static void consume_cq_events(struct verbs_ctx *vc)
{
	for (;;) {
		struct ibv_cq *cq;
		void *cq_ctx;

		if (ibv_get_cq_event(vc->chan, &cq, &cq_ctx)) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				RDMX_ERR("verbs: ibv_get_cq_event failed: %s", strerror(errno));
			break;
		}
		if (cq == vc->scq)
			vc->scq_events++;
		else
			vc->rcq_events++;
	}
	if (vc->scq_events) {
		ibv_ack_cq_events(vc->scq, vc->scq_events);
		vc->scq_events = 0;
	}
	if (vc->rcq_events) {
		ibv_ack_cq_events(vc->rcq, vc->rcq_events);
		vc->rcq_events = 0;
	}
}

void rdmx__verbs_ctx_nap(struct verbs_ctx *vc, int ms)
{
	struct epoll_event ev;

	vc->idle = 0;
	if (rdmx__verbs_ctx_arm(vc->ctx))
		return;
	if (epoll_wait(vc->epfd, &ev, 1, ms) < 0 && errno != EINTR)
		RDMX_WARN("verbs: epoll_wait failed: %s", strerror(errno));
	rdmx__verbs_ctx_disarm(vc->ctx);
}

int rdmx__verbs_ctx_disarm(struct rdmx_ctx *ctx)
{
	struct verbs_ctx *vc = ctx->prov;
	uint64_t v;

	if (!vc)
		return RDMX_E_BAD_STATE;
	consume_cq_events(vc);
	vc->cm_due = true; /* the wake-up may be the cm channel's */
	if (read(vc->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RDMX_WARN("verbs: eventfd read failed: %s", strerror(errno));
	if (read(vc->tfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RDMX_WARN("verbs: timerfd read failed: %s", strerror(errno));
	return 0;
}

static void destroy_ctx(struct verbs_ctx *vc)
{
	consume_cq_events(vc);
	if (ibv_destroy_srq(vc->srq))
		RDMX_ERR("verbs: ibv_destroy_srq failed: %s", strerror(errno));
	if (ibv_destroy_cq(vc->rcq))
		RDMX_ERR("verbs: ibv_destroy_cq(recv) failed: %s", strerror(errno));
	if (ibv_destroy_cq(vc->scq))
		RDMX_ERR("verbs: ibv_destroy_cq(send) failed: %s", strerror(errno));
	if (ibv_destroy_comp_channel(vc->chan))
		RDMX_ERR("verbs: ibv_destroy_comp_channel failed: %s", strerror(errno));
	if (vc->cm)
		rdma_destroy_event_channel(vc->cm);
	close(vc->epfd);
	close(vc->evfd);
	close(vc->tfd);
	free(vc->qpn_tab);
	free(vc);
}

void rdmx__verbs_ctx_stop(struct rdmx_ctx *ctx)
{
	struct verbs_ctx *vc = ctx->prov;

	if (!vc)
		return;
	vc->stopping = true;
	rdmx__verbs_lgroup_leave(vc);
	rdmx__verbs_stop_listen(ctx);
	for (struct verbs_conn *v = vc->conns; v; v = v->next) {
		/* tell a cm peer (DREQ); the QP itself goes to error below */
		if (v->id && (v->established || v->accepted) && !v->closing &&
		    rdma_disconnect(v->id))
			RDMX_DBG("verbs: rdma_disconnect(qpn 0x%x) at stop failed: %s", v->qpn,
			         strerror(errno));
		v->closing = true;
		if (v->qp)
			rdmx__verbs_qp_to_err(v);
	}
	rdmx__verbs_drain(vc, VERBS_STOP_DRAIN_MS);
	/* destroying QPs does not flush the SRQ: its receives end here */
	while (vc->recv_head) {
		struct rdmx_task *t = vc->recv_head;

		rdmx__verbs_recv_unlink(vc, t);
		t->res_conn = NULL;
		rdmx__task_complete(t, RDMX_E_CANCELED);
	}
	while (vc->conns) {
		struct verbs_conn *v = vc->conns;

		v->conn->prov = NULL; /* conn_release, later, finds nothing */
		rdmx__verbs_conn_destroy(v);
	}
	destroy_ctx(vc);
	ctx->prov = NULL;
}
