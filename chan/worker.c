/* The channel worker: the channel layer's hold on one context.
 *
 * Receive tasks belong to the context (a shared receive queue), and every
 * ring write with immediate consumes one, so the worker keeps a pool of them
 * posted and reposts each one after dispatching its completion to the
 * channel of the connection that delivered it. The receive buffers are only
 * used by the control SENDs (hello, credit updates); ring data lands in the
 * rings. A hello that arrives before its channel was started is kept here. */
#include <stdlib.h>
#include <string.h>

#include "chan_internal.h"

#define WORKER_DEFAULT_RECV 1024u
#define WORKER_DEFAULT_WRITE 2048u
#define WORKER_DEFAULT_SEND 1024u
#define WORKER_DEFAULT_READ 64u
#define WORKER_MAX_EARLY 1024u
#define HOST_DEFAULT_KEEPALIVE_MS 1000u

void rdmx_chan_worker_attr_init(struct rdmx_chan_worker_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->recv_tasks = WORKER_DEFAULT_RECV;
	attr->write_tasks = WORKER_DEFAULT_WRITE;
	attr->send_tasks = WORKER_DEFAULT_SEND;
	attr->read_tasks = WORKER_DEFAULT_READ;
	attr->keepalive_ms = HOST_DEFAULT_KEEPALIVE_MS;
}

static uint64_t conn_key(const struct rdmx_conn *conn)
{
	return (uint64_t)(uintptr_t)conn;
}

static uint32_t conn_id(const struct rdmx_conn *conn)
{
	uint32_t id = UINT32_MAX;

	rdmx_conn_get_id(conn, &id);
	return id;
}

/* ---- timers and callback bracketing ---- */

static void worker_timer_fired(struct rdmx_pe_timer *pt, void *arg)
{
	struct rdmx_chan_worker *worker = arg;
	struct rdmx__timer *t =
	    (struct rdmx__timer *)((char *)pt - offsetof(struct rdmx__timer, pe_timer));

	worker->depth++;
	t->fn(t);
	worker->depth--;
}

int rdmx__worker_timer_arm(struct rdmx_chan_worker *worker, struct rdmx__timer *t, uint64_t when_ns)
{
	if (!t->pe_timer.pe)
		rdmx_pe_timer_init(worker->pe, &t->pe_timer, worker_timer_fired, worker);
	return rdmx_pe_timer_start(&t->pe_timer, when_ns);
}

void rdmx__worker_timer_disarm(struct rdmx_chan_worker *worker, struct rdmx__timer *t)
{
	(void)worker;
	rdmx_pe_timer_stop(&t->pe_timer);
}

int rdmx__worker_depth(const struct rdmx_chan_worker *worker)
{
	return worker->depth;
}

bool rdmx__worker_more_pending(const struct rdmx_chan_worker *worker)
{
	uint32_t n = 0;

	rdmx_ctx_get_completions_pending(worker->ctx, &n);
	return n > 0;
}

uint64_t rdmx__worker_pass(const struct rdmx_chan_worker *worker)
{
	uint64_t pass = 0;

	rdmx_pe_get_pass(worker->pe, &pass);
	return pass;
}

void rdmx__worker_enter(struct rdmx_chan_worker *worker)
{
	worker->depth++;
}

void rdmx__worker_leave(struct rdmx_chan_worker *worker)
{
	worker->depth--;
}

int rdmx_chan_worker_progress(struct rdmx_chan_worker *worker)
{
	if (!worker)
		return RDMX_E_INVAL;
	return rdmx_pe_progress(worker->pe);
}

int rdmx_chan_worker_wait(struct rdmx_chan_worker *worker, int timeout_ms)
{
	if (!worker)
		return RDMX_E_INVAL;
	return rdmx_pe_wait(worker->pe, timeout_ms);
}

struct rdmx_ctx *rdmx_chan_worker_get_ctx(const struct rdmx_chan_worker *worker)
{
	return worker ? worker->ctx : NULL;
}

struct rdmx_pe *rdmx_chan_worker_get_pe(const struct rdmx_chan_worker *worker)
{
	return worker ? worker->pe : NULL;
}

int rdmx_chan_worker_get_reg_cache_stats(const struct rdmx_chan_worker *worker,
                                         struct rdmx_chan_reg_cache_stats *stats)
{
	if (!worker || !stats)
		return RDMX_E_INVAL;
	rdmx__regcache_stats(&worker->regc, stats);
	return 0;
}

int rdmx_chan_worker_set_reg_cache_limit(struct rdmx_chan_worker *worker, uint64_t bytes)
{
	if (!worker)
		return RDMX_E_INVAL;
	rdmx__regcache_set_limit(&worker->regc, bytes ? bytes : CHAN_DEFAULT_REG_CACHE_BYTES);
	return 0;
}

/* ---- the receive pool ---- */

static void recv_retry_later(struct rdmx_chan_worker *worker, struct worker_recv *r)
{
	r->next_retry = worker->retry_head;
	worker->retry_head = r;
}

static void recv_submit(struct rdmx_chan_worker *worker, struct worker_recv *r)
{
	int rc = rdmx_task_submit(r->task);

	if (rc == 0) {
		worker->recvs_outstanding++;
		return;
	}
	if (rc != RDMX_E_BAD_STATE)
		RDMX_WARN("chan: receive repost failed (%s): retried later", rdmx_err_name(rc));
	recv_retry_later(worker, r);
}

static void recv_retry(struct rdmx_chan_worker *worker)
{
	struct worker_recv *list = worker->retry_head;

	worker->retry_head = NULL;
	while (list) {
		struct worker_recv *r = list;

		list = r->next_retry;
		r->next_retry = NULL;
		recv_submit(worker, r);
	}
}

int rdmx__worker_post_recvs(struct rdmx_chan_worker *worker)
{
	uint32_t n = worker->attr.recv_tasks;
	int rc;

	if (worker->recvs_posted)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		struct worker_recv *r = &worker->recvs[i];

		if (!r->task) {
			rc = rdmx_task_receive_alloc(worker->ctx, &r->buf, r, &r->task);
			if (rc) {
				RDMX_ERR("chan: receive task %u of %u: %s", i, n,
				         rdmx_err_name(rc));
				return rc;
			}
		}
		rc = rdmx_task_submit(r->task);
		if (rc) {
			RDMX_ERR("chan: receive post %u of %u: %s", i, n, rdmx_err_name(rc));
			return rc;
		}
		worker->recvs_outstanding++;
	}
	worker->recvs_posted = true;
	return 0;
}

static void stash_hello(struct rdmx_chan_worker *worker, struct rdmx_conn *conn, const void *buf,
                        uint32_t len)
{
	struct rdmx__ctl ctl;
	const char *why = NULL;
	uint8_t *copy;

	if (rdmx__ctl_decode(buf, len, &ctl, &why) || ctl.type != RDMX__CTL_HELLO) {
		rdmx__worker_reject_conn(worker, conn, why ? why : "control message before hello");
		return;
	}
	if (worker->early.len >= WORKER_MAX_EARLY ||
	    rdmx__map_get(&worker->early, conn_key(conn))) {
		rdmx__worker_reject_conn(worker, conn, "second hello before the channel started");
		return;
	}
	copy = malloc(RDMX__CTL_HELLO_LEN);
	if (!copy || rdmx__map_put(&worker->early, conn_key(conn), copy)) {
		free(copy);
		rdmx__worker_reject_conn(worker, conn, "out of memory keeping an early hello");
		return;
	}
	memcpy(copy, buf, RDMX__CTL_HELLO_LEN);
}

/* A ring write that came (a receive completion's, or a light message's). */
static void worker_on_write(struct rdmx_chan_worker *worker, struct rdmx_conn *conn, uint32_t imm,
                            uint32_t len)
{
	struct rdmx_chan *chan = rdmx__map_get(&worker->chans, conn_key(conn));

	if (chan)
		rdmx__chan_on_write(chan, imm, len);
	else
		rdmx__worker_reject_conn(worker, conn, "ring write before the channel exists");
}

/* The context's light message handler (engine/msg.h). */
static void worker_msg(void *arg, struct rdmx_conn *conn, uint32_t imm, uint32_t len)
{
	struct rdmx_chan_worker *worker = arg;

	rdmx__worker_enter(worker);
	worker_on_write(worker, conn, imm, len);
	rdmx__worker_leave(worker);
}

static void worker_recv_ok(struct rdmx_task *task, void *ud, void *cud)
{
	struct worker_recv *r = ud;
	struct rdmx_chan_worker *worker = r->worker;
	struct rdmx_conn *conn = rdmx_task_receive_get_conn(task);
	enum rdmx_opcode op = rdmx_task_receive_get_opcode(task);
	uint32_t len = rdmx_task_receive_get_len(task);
	struct rdmx_chan *chan;

	(void)cud;
	worker->recvs_outstanding--;
	rdmx__worker_enter(worker);
	chan = conn && op != RDMX_OPCODE_WRITE_WITH_IMM
	           ? rdmx__map_get(&worker->chans, conn_key(conn))
	           : NULL;
	if (!conn) {
		RDMX_WARN("chan: receive completion without a connection: ignored");
	} else if (op == RDMX_OPCODE_WRITE_WITH_IMM) {
		worker_on_write(worker, conn, rdmx_task_receive_get_imm(task), len);
	} else if (op == RDMX_OPCODE_SEND) {
		if (len > RDMX__CTL_MAX_LEN)
			len = RDMX__CTL_MAX_LEN + 1; /* truncated: decoders reject it */
		if (chan)
			rdmx__chan_on_ctl(chan, r->buf.addr, len);
		else
			stash_hello(worker, conn, r->buf.addr, len);
	} else {
		if (chan)
			rdmx__chan_fail(chan, RDMX_E_PROTOCOL, "send with immediate is not used");
		else
			rdmx__worker_reject_conn(worker, conn, "send with immediate is not used");
	}
	if (!worker->stopped)
		recv_submit(worker, r);
	if (worker->retry_head && !worker->stopped)
		recv_retry(worker);
	rdmx__worker_leave(worker);
}

static void worker_mark_stopped(struct rdmx_chan_worker *worker)
{
	enum rdmx_ctx_state st = RDMX_CTX_RUNNING;

	rdmx_ctx_get_state(worker->ctx, &st);
	if (st != RDMX_CTX_RUNNING)
		worker->stopped = true;
}

static void worker_recv_err(struct rdmx_task *task, void *ud, void *cud)
{
	struct worker_recv *r = ud;
	struct rdmx_chan_worker *worker = r->worker;
	int st = rdmx_task_get_status(task);

	(void)cud;
	worker->recvs_outstanding--;
	worker_mark_stopped(worker);
	if (worker->stopped)
		return; /* the context stops: the pool goes with it */
	/* a receive failing on a running context (a provider error): repost */
	RDMX_WARN("chan: receive failed (%s): reposting", rdmx_err_name(st));
	recv_retry_later(worker, r);
}

/* ---- connections ---- */

void rdmx__worker_reject_conn(struct rdmx_chan_worker *worker, struct rdmx_conn *conn,
                              const char *why)
{
	int rc;

	RDMX_ERR("chan: conn %u: protocol violation: %s; closing the connection", conn_id(conn),
	         why);
	if (worker->stopped)
		return;
	rc = rdmx_conn_disconnect(conn);
	if (rc)
		RDMX_DBG("chan: conn %u: disconnect: %s", conn_id(conn), rdmx_err_name(rc));
}

static void drop_early(struct rdmx_chan_worker *worker, struct rdmx_conn *conn)
{
	free(rdmx__map_del(&worker->early, conn_key(conn)));
}

static void on_request(struct rdmx_conn *conn, void *cud)
{
	struct rdmx_chan_worker *worker = cud;

	rdmx__worker_enter(worker);
	if (worker->attr.request_cb)
		worker->attr.request_cb(conn, worker->attr.user_data);
	else
		rdmx_conn_reject(conn);
	rdmx__worker_leave(worker);
}

static void on_established(struct rdmx_conn *conn, void *ud, void *cud)
{
	struct rdmx_chan_worker *worker = cud;

	struct rdmx_chan *chan;

	rdmx__worker_enter(worker);
	if (!worker->recvs_posted)
		rdmx__worker_post_recvs(worker);
	/* a channel started before its connection could post: send its hello */
	chan = rdmx__map_get(&worker->chans, conn_key(conn));
	if (chan && chan->hello_pending)
		rdmx__chan_pump(chan);
	if (worker->attr.established_cb)
		worker->attr.established_cb(conn, ud, worker->attr.user_data);
	rdmx__worker_leave(worker);
}

static void conn_ended(struct rdmx_chan_worker *worker, struct rdmx_conn *conn, int status)
{
	struct rdmx_chan *chan = rdmx__map_get(&worker->chans, conn_key(conn));

	drop_early(worker, conn);
	worker_mark_stopped(worker);
	if (chan)
		rdmx__chan_conn_gone(chan, worker->stopped ? RDMX_E_CANCELED : status);
}

static void on_failure(struct rdmx_conn *conn, void *ud, void *cud)
{
	struct rdmx_chan_worker *worker = cud;

	rdmx__worker_enter(worker);
	conn_ended(worker, conn, RDMX_E_CONN_REFUSED);
	if (worker->attr.failure_cb)
		worker->attr.failure_cb(conn, ud, worker->attr.user_data);
	rdmx__worker_leave(worker);
}

static void on_disconnected(struct rdmx_conn *conn, void *ud, void *cud)
{
	struct rdmx_chan_worker *worker = cud;

	rdmx__worker_enter(worker);
	conn_ended(worker, conn, RDMX_E_DISCONNECTED);
	if (worker->attr.disconnected_cb)
		worker->attr.disconnected_cb(conn, ud, worker->attr.user_data);
	rdmx__worker_leave(worker);
}

/* ---- starved channels (a task pool ran dry) ---- */

static bool unlink_starved(struct rdmx_chan **head, struct rdmx_chan *chan)
{
	for (struct rdmx_chan **pp = head; *pp; pp = &(*pp)->next_starved) {
		if (*pp == chan) {
			*pp = chan->next_starved;
			return true;
		}
	}
	return false;
}

void rdmx__worker_add_starved(struct rdmx_chan_worker *worker, struct rdmx_chan *chan)
{
	if (chan->starved)
		return;
	chan->starved = true;
	chan->next_starved = worker->starved_head;
	worker->starved_head = chan;
}

int rdmx__chan_submit(struct rdmx_chan *chan, int alloc_rc, struct rdmx_task *task)
{
	int rc;

	if (alloc_rc == RDMX_E_FULL)
		rdmx__worker_add_starved(chan->worker, chan);
	if (alloc_rc)
		return alloc_rc;
	rc = rdmx_task_submit(task);
	if (rc)
		rdmx_task_free(task);
	return rc;
}

/* Called after a task of the pool came back: give waiting channels a go,
 * their sends and their rendezvous reads (a read that found the pool empty
 * waits here too). The list being fed stays where a channel destroyed from
 * a callback meanwhile unlinks itself (worker_chan_unlink). */
static void worker_feed_starved(struct rdmx_chan_worker *worker)
{
	worker->feeding = worker->starved_head;
	worker->starved_head = NULL;
	while (worker->feeding) {
		struct rdmx_chan *c = worker->feeding;

		worker->feeding = c->next_starved;
		c->next_starved = NULL;
		c->starved = false;
		if (c->state == RDMX_CHAN_READY && c->rx_consumed != c->rx_seq)
			rdmx__rdv_rx_start(c);
		rdmx__chan_pump(c); /* last: its callbacks may end the channel */
	}
}

/* The bracket around every task completion of the channel: enter, mark the
 * worker stopped on an error (its context may be stopping), run the
 * channel's handler, then give freed tasks to starved channels (after an
 * error only for a write, and only while the worker runs). The worker is
 * found before the handler runs: the handler may free `ud`. */
typedef void (*worker_task_fn)(struct rdmx_task *task, void *ud, void *cud);

static void worker_dispatch(struct rdmx_chan_worker *worker, worker_task_fn fn,
                            struct rdmx_task *task, void *ud, void *cud, bool err, bool feed)
{
	rdmx__worker_enter(worker);
	if (err)
		worker_mark_stopped(worker);
	fn(task, ud, cud);
	if (feed && worker->starved_head && !(err && worker->stopped))
		worker_feed_starved(worker);
	rdmx__worker_leave(worker);
}

static void worker_write_ok(struct rdmx_task *task, void *ud, void *cud)
{
	worker_dispatch(((struct tx_slot *)ud)->chan->worker, rdmx__chan_write_ok, task, ud, cud,
	                false, true);
}

static void worker_write_err(struct rdmx_task *task, void *ud, void *cud)
{
	worker_dispatch(((struct tx_slot *)ud)->chan->worker, rdmx__chan_write_err, task, ud, cud,
	                true, true);
}

static void worker_send_ok(struct rdmx_task *task, void *ud, void *cud)
{
	worker_dispatch(((struct ctl_entry *)ud)->chan->worker, rdmx__chan_send_ok, task, ud, cud,
	                false, true);
}

static void worker_send_err(struct rdmx_task *task, void *ud, void *cud)
{
	worker_dispatch(((struct ctl_entry *)ud)->chan->worker, rdmx__chan_send_err, task, ud, cud,
	                true, false);
}

static void worker_read_ok(struct rdmx_task *task, void *ud, void *cud)
{
	worker_dispatch(((struct rdv_rx *)ud)->chan->worker, rdmx__chan_read_ok, task, ud, cud,
	                false, true);
}

static void worker_read_err(struct rdmx_task *task, void *ud, void *cud)
{
	worker_dispatch(((struct rdv_rx *)ud)->chan->worker, rdmx__chan_read_err, task, ud, cud,
	                true, false);
}

/* ---- create / destroy ---- */

static int raise_queue(struct rdmx_ctx *ctx, bool send, uint32_t want, uint32_t cap)
{
	uint32_t cur = 0;
	int rc;

	if (want > cap)
		want = cap;
	rc = send ? rdmx_ctx_get_send_queue_size(ctx, &cur)
	          : rdmx_ctx_get_recv_queue_size(ctx, &cur);
	if (rc || cur >= want)
		return rc;
	return send ? rdmx_ctx_set_send_queue_size(ctx, want)
	            : rdmx_ctx_set_recv_queue_size(ctx, want);
}

static int worker_conf_ctx(struct rdmx_chan_worker *worker)
{
	struct rdmx_ctx *ctx = worker->ctx;
	struct rdmx_dev_caps caps;
	const struct rdmx_chan_worker_attr *a = &worker->attr;
	uint32_t sge = 0;
	int rc;

	rc = rdmx_dev_query_caps(worker->dev, &caps);
	if (rc)
		return rc;
	worker->dev_max_msg = caps.max_message_size;
	if (a->rdv_read_max && (!worker->dev_max_msg || a->rdv_read_max < worker->dev_max_msg))
		worker->dev_max_msg = a->rdv_read_max;
	if (a->recv_tasks > caps.max_recv_queue_size) {
		RDMX_ERR("chan: %u receive tasks above the device's receive queue (%u)",
		         a->recv_tasks, caps.max_recv_queue_size);
		return RDMX_E_INVAL;
	}
	/* the shared receive queue holds the whole pool; the send queue of a
	 * connection one ring's worth of writes plus control sends */
	rc = raise_queue(ctx, false, a->recv_tasks, caps.max_recv_queue_size);
	if (!rc)
		rc = raise_queue(ctx, true, 1024, caps.max_send_queue_size);
	if (rc)
		return rc;
	/* zero-copy eager sends chain the header before the caller's buffer */
	rdmx_ctx_get_max_send_buf_list_len(ctx, &sge);
	if (sge < 2 && caps.max_buf_list_len >= 2 &&
	    rdmx_ctx_set_max_send_buf_list_len(ctx, 2) == 0)
		sge = 2;
	worker->max_sge = sge;
	rc = rdmx_ctx_set_task_conf(ctx, RDMX_TASK_RECEIVE, worker_recv_ok, worker_recv_err,
	                            a->recv_tasks);
	if (!rc)
		rc = rdmx_ctx_set_task_conf(ctx, RDMX_TASK_WRITE_IMM, worker_write_ok,
		                            worker_write_err, a->write_tasks);
	if (!rc)
		rc = rdmx_ctx_set_task_conf(ctx, RDMX_TASK_SEND, worker_send_ok, worker_send_err,
		                            a->send_tasks);
	if (!rc)
		rc = rdmx_ctx_set_task_conf(ctx, RDMX_TASK_READ, worker_read_ok, worker_read_err,
		                            a->read_tasks);
	if (!rc)
		rc = rdmx_ctx_set_conn_callbacks(ctx, on_request, on_established, on_failure,
		                                 on_disconnected);
	if (!rc)
		rc = rdmx_ctx_set_user_data(ctx, worker);
	/* small ring writes go as light messages where the provider has them */
	if (!rc)
		worker->light = rdmx__ctx_set_msg_handler(ctx, worker_msg, worker) == 0;
	return rc;
}

int rdmx_chan_worker_create(struct rdmx_ctx *ctx, struct rdmx_pe *pe,
                            const struct rdmx_chan_worker_attr *attr,
                            struct rdmx_chan_worker **worker)
{
	struct rdmx_chan_worker *h;
	enum rdmx_ctx_state st;
	size_t mem_len;
	int rc;

	if (!ctx || !pe || !worker)
		return RDMX_E_INVAL;
	rc = rdmx_ctx_get_state(ctx, &st);
	if (rc)
		return rc;
	if (st != RDMX_CTX_IDLE)
		return RDMX_E_BAD_STATE;
	h = calloc(1, sizeof(*h));
	if (!h)
		return RDMX_E_NOMEM;
	h->ctx = ctx;
	h->pe = pe;
	if (attr)
		h->attr = *attr;
	else
		rdmx_chan_worker_attr_init(&h->attr);
	if (!h->attr.recv_tasks || !h->attr.write_tasks || !h->attr.send_tasks ||
	    !h->attr.read_tasks) {
		rc = RDMX_E_INVAL;
		goto free_host;
	}
	rc = rdmx_ctx_get_dev(ctx, &h->dev);
	if (rc)
		goto free_host;
	rdmx__map_init(&h->chans);
	rdmx__map_init(&h->early);
	rdmx__regcache_init(&h->regc, h->dev,
	                    h->attr.reg_cache_bytes ? h->attr.reg_cache_bytes
	                                            : CHAN_DEFAULT_REG_CACHE_BYTES);

	h->recvs = calloc(h->attr.recv_tasks, sizeof(*h->recvs));
	mem_len = (size_t)h->attr.recv_tasks * RDMX__CTL_MAX_LEN;
	h->recv_mem = aligned_alloc(64, mem_len);
	if (!h->recvs || !h->recv_mem) {
		rc = RDMX_E_NOMEM;
		goto free_mem;
	}
	memset(h->recv_mem, 0, mem_len);
	rc = rdmx_mr_reg(h->dev, h->recv_mem, mem_len, RDMX_ACCESS_LOCAL_WRITE, &h->recv_mr);
	if (rc)
		goto free_mem;
	for (uint32_t i = 0; i < h->attr.recv_tasks; i++) {
		struct worker_recv *r = &h->recvs[i];

		r->worker = h;
		r->buf.mr = h->recv_mr;
		r->buf.addr = h->recv_mem + (size_t)i * RDMX__CTL_MAX_LEN;
		r->buf.len = RDMX__CTL_MAX_LEN;
	}
	rc = worker_conf_ctx(h);
	if (rc)
		goto dereg;
	*worker = h;
	return 0;

dereg:
	rdmx_mr_dereg(&h->recv_mr);
free_mem:
	free(h->recv_mem);
	free(h->recvs);
free_host:
	free(h);
	return rc;
}

int rdmx_chan_worker_destroy(struct rdmx_chan_worker **worker)
{
	struct rdmx_chan_worker *h;
	enum rdmx_ctx_state st = RDMX_CTX_IDLE;
	uint32_t pos = 0;
	void *v;

	if (!worker || !*worker)
		return 0;
	h = *worker;
	rdmx_ctx_get_state(h->ctx, &st);
	if (st != RDMX_CTX_IDLE)
		return RDMX_E_BAD_STATE;
	for (struct rdmx_chan *c = h->all; c; c = c->next_all)
		if (c->user_ref)
			return RDMX_E_BAD_STATE;
	h->stopped = true;
	/* channels the user destroyed whose connection never reported its end */
	while (h->all)
		rdmx__chan_free(h->all);
	while ((v = rdmx__map_next(&h->early, &pos, NULL)))
		free(v);
	rdmx__map_fini(&h->early);
	rdmx__map_fini(&h->chans);
	/* the context's stop completed and freed every task */
	rdmx__regcache_fini(&h->regc);
	rdmx_mr_dereg(&h->recv_mr);
	free(h->recv_mem);
	free(h->recvs);
	rdmx_ctx_set_user_data(h->ctx, NULL);
	free(h);
	*worker = NULL;
	return 0;
}

/* ---- channel registration (channel.c) ---- */

int rdmx__worker_chan_add(struct rdmx_chan_worker *worker, struct rdmx_chan *chan)
{
	int rc = rdmx__map_put(&worker->chans, conn_key(chan->conn), chan);

	if (rc)
		return rc;
	chan->next_all = worker->all;
	chan->prev_all = NULL;
	if (worker->all)
		worker->all->prev_all = chan;
	worker->all = chan;
	worker->num_chans++;
	return 0;
}

/* Unmaps the channel's connection (the channel stays on the `all` list). */
void rdmx__worker_chan_remove(struct rdmx_chan_worker *worker, struct rdmx_chan *chan)
{
	if (chan->conn && rdmx__map_get(&worker->chans, conn_key(chan->conn)) == chan)
		rdmx__map_del(&worker->chans, conn_key(chan->conn));
}

void rdmx__worker_chan_unlink(struct rdmx_chan_worker *worker, struct rdmx_chan *chan)
{
	rdmx__worker_chan_remove(worker, chan);
	if (chan->prev_all)
		chan->prev_all->next_all = chan->next_all;
	else if (worker->all == chan)
		worker->all = chan->next_all;
	if (chan->next_all)
		chan->next_all->prev_all = chan->prev_all;
	chan->next_all = chan->prev_all = NULL;
	if (chan->starved) {
		if (!unlink_starved(&worker->starved_head, chan))
			unlink_starved(&worker->feeding, chan);
		chan->starved = false;
	}
	worker->num_chans--;
}

void *rdmx__worker_take_early(struct rdmx_chan_worker *worker, struct rdmx_conn *conn)
{
	return rdmx__map_del(&worker->early, conn_key(conn));
}
