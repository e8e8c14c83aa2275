/* tcp provider: posting work and the ops table.
 *
 * post_send assigns the task its psn and appends it to the connection's send
 * queue; when nothing is queued ahead of it and the wire is up, its frame is
 * written to the socket right here, on the application thread (no thread
 * hop). Before the wire is up tasks wait on the queue; on a connection in
 * error or down they complete with RDMX_E_CONN_ABORTED, in order. */
#include <sys/epoll.h>

#include "tcp.h"

#include "../../msg.h"

_Static_assert(RDMX__TCP_MSG_MAX == RDMX__MSG_MAX, "a light message fits a MSG frame");

int rdmx__tcp_post_recv(struct rdmx_ctx *ctx, struct rdmx_task *task)
{
	struct tcp_ctx *tc = TCP_CTX(ctx);
	int rc = 0;

	rdmx__tcp_ctx_enter(tc);
	if (tc->rq_count >= ctx->props.recv_queue_size) {
		rc = RDMX_E_FULL;
		goto unlock;
	}
	task->next = NULL;
	task->prov_ptr = NULL; /* the connection that fills it (rx.c) */
	if (tc->rq_tail)
		tc->rq_tail->next = task;
	else
		tc->rq_head = task;
	tc->rq_tail = task;
	tc->rq_count++;
unlock:
	pthread_mutex_unlock(&tc->lock);
	return rc;
}

int rdmx__tcp_post_send(struct rdmx_conn *conn, struct rdmx_task *task)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc = c->tc;
	bool held = false;
	int rc = 0;

	rdmx__tcp_ctx_enter(tc);
	switch (c->state) {
	case TC_ERROR:
	case TC_DOWN:
		rdmx__tcp_cq_task(tc, task, RDMX_E_CONN_ABORTED);
		goto unlock;
	case TC_REQUESTED:
		rc = RDMX_E_BAD_STATE;
		goto unlock;
	default:
		break;
	}
	if (c->sq_count >= tc->ctx->props.send_queue_size) {
		rc = RDMX_E_FULL;
		goto unlock;
	}
	task->prov_u64[0] = c->next_psn++;
	task->prov_u64[1] = task->remote.mr ? task->remote.mr->rkey : 0;
	task->next = NULL;
	if (c->sq_tail)
		c->sq_tail->next = task;
	else
		c->sq_head = task;
	c->sq_tail = task;
	if (!c->sq_cur)
		c->sq_cur = task;
	if (!c->sq_count++ && c->tt_ns) {
		/* the peer owes us nothing until now: its time starts here */
		c->tt_last = rdmx__stamp_ns();
		rdmx__tcp_ctx_timer(tc, c->tt_last + c->tt_ns);
	}
	/* Straight to the socket, unless it is full (EPOLLOUT will resume) or
	 * requests posted before are still unanswered while the application
	 * is not armed: then it waits on the dirty list for the application's
	 * next poll or arm, which every wait makes (or the NIC's next look,
	 * nic.c), so that requests posted back to back share segments: one
	 * sendmsg for a burst of calls instead of one each. A request with
	 * nothing outstanding ahead of it (a ping-pong) goes at once, and so
	 * does one posted while armed (the application may sleep next
	 * without another arm: from a callback of another loop's watcher). */
	held = c->state == TC_UP && !(c->ep_events & EPOLLOUT) && c->sq_count > 1 &&
	       !atomic_load_explicit(&tc->armed, memory_order_relaxed);
	if (held)
		rdmx__tcp_conn_dirty(c);
	else if (c->state == TC_UP && !(c->ep_events & EPOLLOUT))
		rdmx__tcp_tx_flush(c);
unlock:
	pthread_mutex_unlock(&tc->lock);
	if (held)
		rdmx__tcp_nic_nudge(tc); /* a parked NIC looks, should no poll come */
	return rc;
}

/* As post_send's requests, a light message goes at once unless others sent
 * since the peer's last frame wait for it (a burst: they share a sendmsg at
 * the application's next poll or arm). */
int rdmx__tcp_post_msg(struct rdmx_conn *conn, const struct rdmx_buf *src,
                       const struct rdmx_rbuf *dst, uint32_t imm, uint32_t len)
{
	struct tcp_conn *c = TCP_CONN(conn);
	struct tcp_ctx *tc = c->tc;
	bool held, posted;

	rdmx__tcp_ctx_enter(tc);
	held = c->msgs_unheard > 0 && !(c->ep_events & EPOLLOUT) &&
	       !atomic_load_explicit(&tc->armed, memory_order_relaxed);
	posted = !held && rdmx__tcp_tx_msg_now(c, src, dst, imm, len);
	if (!posted && rdmx__tcp_tx_msg(c, src, dst, imm, len)) {
		posted = true;
		if (held)
			rdmx__tcp_conn_dirty(c);
		else if (!(c->ep_events & EPOLLOUT))
			rdmx__tcp_tx_flush(c);
	}
	if (posted)
		c->msgs_unheard++;
	pthread_mutex_unlock(&tc->lock);
	if (posted && held)
		rdmx__tcp_nic_nudge(tc);
	return posted ? 0 : RDMX_E_AGAIN;
}

const struct rdmx_provider_ops rdmx__tcp_ops = {
    .name = "tcp",
    .id = RDMX_PROVIDER_ID_TCP,
    .dev_list = rdmx__tcp_dev_list,
    .dev_open = rdmx__tcp_dev_open,
    .dev_close = rdmx__tcp_dev_close,
    .dev_query_caps = rdmx__tcp_dev_query_caps,
    .dev_get_gid = rdmx__tcp_dev_get_gid,
    .dev_find_by_addr = rdmx__tcp_dev_find_by_addr,
    .mr_reg = rdmx__tcp_mr_reg,
    .mr_dereg = rdmx__tcp_mr_dereg,
    .mr_grant = rdmx__tcp_mr_grant,
    .mr_revoke = rdmx__tcp_mr_revoke,
    .ctx_start = rdmx__tcp_ctx_start,
    .ctx_stop = rdmx__tcp_ctx_stop,
    .ctx_get_fd = rdmx__tcp_ctx_get_fd,
    .ctx_arm = rdmx__tcp_ctx_arm,
    .ctx_wait_read = rdmx__tcp_ctx_wait_read,
    .ctx_disarm = rdmx__tcp_ctx_disarm,
    .ctx_poll = rdmx__tcp_ctx_poll,
    .conn_export = rdmx__tcp_conn_export,
    .conn_connect = rdmx__tcp_conn_connect,
    .listen = rdmx__tcp_listen,
    .stop_listen = rdmx__tcp_stop_listen,
    .listen_join = rdmx__tcp_listen_join,
    .connect_to_addr = rdmx__tcp_connect_to_addr,
    .conn_accept = rdmx__tcp_conn_accept,
    .conn_reject = rdmx__tcp_conn_reject,
    .conn_disconnect = rdmx__tcp_conn_disconnect,
    .conn_set_keys = rdmx__tcp_conn_set_keys,
    .conn_release = rdmx__tcp_conn_release,
    .post_recv = rdmx__tcp_post_recv,
    .post_send = rdmx__tcp_post_send,
    .post_msg = rdmx__tcp_post_msg,
};
