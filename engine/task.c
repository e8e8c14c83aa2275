/* Tasks: pools, allocation, validation, submission and completion.
 *
 * Validation runs at alloc, in every setter (on a copy, so a rejected value
 * leaves the task as it was) and again at submit, because buffer chains are
 * referenced, not copied: the caller may have changed a length in place.
 * A submit skips the walk when the task's chain is one entry (or none) that
 * still reads as the last validation copied it (task->checked): the region,
 * address and length are what the checks read, and a region's own fields
 * never change while it is registered. So resubmitting a completed task
 * costs a few compares and allocates nothing. */
#include <stdlib.h>
#include <string.h>

#include "provider.h"

static const enum rdmx__op type_op[RDMX_TASK_TYPE_COUNT] = {
    [RDMX_TASK_RECEIVE] = RDMX__OP_RECV,
    [RDMX_TASK_SEND] = RDMX__OP_SEND,
    [RDMX_TASK_SEND_IMM] = RDMX__OP_SEND_IMM,
    [RDMX_TASK_READ] = RDMX__OP_READ,
    [RDMX_TASK_WRITE] = RDMX__OP_WRITE,
    [RDMX_TASK_WRITE_IMM] = RDMX__OP_WRITE_IMM,
    [RDMX_TASK_ATOMIC_CAS] = RDMX__OP_CAS,
    [RDMX_TASK_ATOMIC_FADD] = RDMX__OP_FADD,
    [RDMX_TASK_ATOMIC_WRITE] = RDMX__OP_ATOMIC_WRITE,
    [RDMX_TASK_FLUSH] = RDMX__OP_FLUSH,
    [RDMX_TASK_SYNC_EVENT_GET] = RDMX__OP_READ,
    [RDMX_TASK_SYNC_EVENT_NOTIFY_SET] = RDMX__OP_ATOMIC_WRITE,
    [RDMX_TASK_SYNC_EVENT_NOTIFY_ADD] = RDMX__OP_FADD,
};

/* ---- pools ---- */

int rdmx__task_pools_create(struct rdmx_ctx *ctx)
{
	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++) {
		struct rdmx_task_pool *pool = &ctx->pool[t];
		uint32_t n = ctx->conf[t].num_tasks;

		memset(pool, 0, sizeof(*pool));
		if (!n)
			continue;
		pool->tasks = calloc(n, sizeof(*pool->tasks));
		if (!pool->tasks) {
			rdmx__task_pools_destroy(ctx);
			return RDMX_E_NOMEM;
		}
		for (uint32_t i = n; i-- > 0;) {
			struct rdmx_task *task = &pool->tasks[i];

			task->ctx = ctx;
			task->type = (enum rdmx_task_type)t;
			task->op = type_op[t];
			task->state = RDMX__TASK_FREE;
			task->next = pool->free;
			pool->free = task;
		}
	}
	return 0;
}

void rdmx__task_pools_destroy(struct rdmx_ctx *ctx)
{
	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++) {
		struct rdmx_task_pool *pool = &ctx->pool[t];

		if (pool->tasks) {
			for (uint32_t i = 0; i < ctx->conf[t].num_tasks; i++)
				if (pool->tasks[i].state == RDMX__TASK_INFLIGHT)
					RDMX_ERR("task of type %u still in flight at stop", t);
		}
		free(pool->tasks);
		memset(pool, 0, sizeof(*pool));
	}
	ctx->deferred_head = ctx->deferred_tail = NULL;
}

/* ---- validation ---- */

/* Checks a local chain: length, device, access and bounds of every entry. */
static int check_chain(const struct rdmx_ctx *ctx, const struct rdmx_buf *b, uint32_t max,
                       bool need_write, uint64_t *total)
{
	uint64_t sum = 0;
	uint32_t n = 0;

	for (; b; b = b->next) {
		uintptr_t start, mstart, mend;

		if (++n > max) /* also ends a cyclic chain */
			return RDMX_E_INVAL;
		if (!b->mr || b->mr->dev != ctx->dev)
			return RDMX_E_INVAL;
		if (need_write && !(b->mr->access & RDMX_ACCESS_LOCAL_WRITE))
			return RDMX_E_INVAL;
		start = (uintptr_t)b->addr;
		mstart = (uintptr_t)b->mr->addr;
		mend = mstart + b->mr->len;
		if (start < mstart || start > mend || b->len > mend - start)
			return RDMX_E_INVAL;
		sum += b->len;
	}
	*total = sum;
	return 0;
}

static int check_remote(const struct rdmx_ctx *ctx, const struct rdmx_rbuf *r)
{
	if (!r->mr || r->mr->provider != ctx->dev->ops->id)
		return RDMX_E_INVAL;
	return 0;
}

/* An 8-byte atomic target: aligned, length 0 or 8. */
static int check_atomic_target(const struct rdmx_ctx *ctx, const struct rdmx_rbuf *r)
{
	int rc = check_remote(ctx, r);

	if (rc)
		return rc;
	if (r->len != 0 && r->len != 8)
		return RDMX_E_INVAL;
	if ((r->mr->addr + r->offset) & 7u)
		return RDMX_E_INVAL;
	return 0;
}

/* Records the chain a successful validation saw (the submit shortcut). */
static void remember_chain(struct rdmx_task *t)
{
	const struct rdmx_buf *b = t->local;

	t->checked = (struct rdmx__task_checked){.valid = !b || !b->next};
	if (b && !b->next) {
		t->checked.buf = *b;
		t->checked.mr_serial = b->mr->serial;
	}
}

/* True when the chain is still the one entry (or none) validated last. */
static bool chain_unchanged(const struct rdmx_task *t)
{
	const struct rdmx_buf *b = t->local, *c = &t->checked.buf;

	if (!t->checked.valid)
		return false;
	if (!b)
		return c->mr == NULL;
	return !b->next && b->mr == c->mr && b->addr == c->addr && b->len == c->len &&
	       b->mr->serial == t->checked.mr_serial;
}

/* The checks of rdmx__task_validate. */
static int validate_op(struct rdmx_task *t)
{
	const struct rdmx_ctx *ctx = t->ctx;
	const struct rdmx_ctx_props *p = &ctx->props;
	uint64_t total;
	int rc;

	if (t->conn && t->conn->ctx != ctx)
		return RDMX_E_INVAL;
	switch (t->op) {
	case RDMX__OP_RECV:
		rc = check_chain(ctx, t->local, p->max_recv_buf_list_len, true, &total);
		if (rc)
			return rc;
		t->len = total;
		return 0;
	case RDMX__OP_SEND:
	case RDMX__OP_SEND_IMM:
		rc = check_chain(ctx, t->local, p->max_send_buf_list_len, false, &total);
		if (rc)
			return rc;
		break;
	case RDMX__OP_READ:
		rc = check_remote(ctx, &t->remote);
		if (!rc)
			rc = check_chain(ctx, t->local, p->max_send_buf_list_len, true, &total);
		if (rc)
			return rc;
		if (total < t->remote.len)
			return RDMX_E_INVAL;
		total = t->remote.len;
		break;
	case RDMX__OP_WRITE:
	case RDMX__OP_WRITE_IMM:
		/* a write without data says nothing; write_imm without data is
		 * a notification */
		if (t->op == RDMX__OP_WRITE && !t->local)
			return RDMX_E_INVAL;
		rc = check_remote(ctx, &t->remote);
		if (!rc)
			rc = check_chain(ctx, t->local, p->max_send_buf_list_len, false, &total);
		if (rc)
			return rc;
		if (t->remote.len != 0 && t->remote.len != total)
			return RDMX_E_INVAL;
		break;
	case RDMX__OP_CAS:
	case RDMX__OP_FADD:
		rc = check_atomic_target(ctx, &t->remote);
		if (rc)
			return rc;
		if (!t->local || t->local->next || t->local->len != 8)
			return RDMX_E_INVAL;
		rc = check_chain(ctx, t->local, 1, true, &total);
		if (rc)
			return rc;
		break;
	case RDMX__OP_ATOMIC_WRITE:
		rc = check_atomic_target(ctx, &t->remote);
		if (rc)
			return rc;
		if (t->local)
			return RDMX_E_INVAL;
		total = 8;
		break;
	case RDMX__OP_FLUSH:
		rc = check_remote(ctx, &t->remote);
		if (rc)
			return rc;
		if (t->local)
			return RDMX_E_INVAL;
		total = t->remote.len;
		break;
	default:
		return RDMX_E_INVAL;
	}
	if (total > ctx->caps.max_message_size)
		return RDMX_E_INVAL;
	t->len = total;
	return 0;
}

/* Checks a task's fields for its op and sets task->len (internal.h). */
int rdmx__task_validate(struct rdmx_task *t)
{
	int rc = validate_op(t);

	if (rc == 0)
		remember_chain(t);
	else
		t->checked.valid = false;
	return rc;
}

/* ---- allocation ---- */

/* Validates `tmpl` (fields set by the alloc function) and takes a pool task. */
static int task_alloc(struct rdmx_ctx *ctx, enum rdmx_task_type type, struct rdmx_task *tmpl,
                      struct rdmx_task **task)
{
	struct rdmx_task_pool *pool;
	struct rdmx_task *t;
	int rc;

	if (!ctx || !task)
		return RDMX_E_INVAL;
	if (ctx->state != RDMX_CTX_RUNNING || ctx->conf[type].num_tasks == 0)
		return RDMX_E_BAD_STATE;
	tmpl->ctx = ctx;
	tmpl->type = type;
	tmpl->op = type_op[type];
	rc = rdmx__task_validate(tmpl);
	if (rc)
		return rc;
	pool = &ctx->pool[type];
	t = pool->free;
	if (!t)
		return RDMX_E_FULL;
	pool->free = t->next;
	pool->in_use++;
	memset(t, 0, sizeof(*t));
	t->ctx = ctx;
	t->type = type;
	t->op = tmpl->op;
	t->state = RDMX__TASK_IDLE;
	t->status = RDMX_E_AGAIN;
	t->conn = tmpl->conn;
	t->user_data = tmpl->user_data;
	t->local = tmpl->local;
	t->remote = tmpl->remote;
	t->len = tmpl->len;
	t->imm = tmpl->imm;
	t->op0 = tmpl->op0;
	t->op1 = tmpl->op1;
	t->checked = tmpl->checked;
	*task = t;
	return 0;
}

#define TMPL(name) struct rdmx_task name = {0}

static int copy_rbuf(const struct rdmx_rbuf *r, struct rdmx_task *t)
{
	if (!r)
		return RDMX_E_INVAL;
	t->remote = *r;
	return 0;
}

int rdmx_task_receive_alloc(struct rdmx_ctx *ctx, struct rdmx_buf *dst, void *user_data,
                            struct rdmx_task **task)
{
	TMPL(t);
	t.local = dst;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_RECEIVE, &t, task);
}

int rdmx_task_send_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                         void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	t.conn = conn;
	t.local = src;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_SEND, &t, task);
}

int rdmx_task_send_imm_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                             uint32_t imm, void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	t.conn = conn;
	t.local = src;
	t.imm = imm;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_SEND_IMM, &t, task);
}

int rdmx_task_read_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, const struct rdmx_rbuf *src,
                         struct rdmx_buf *dst, void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	if (copy_rbuf(src, &t))
		return RDMX_E_INVAL;
	t.conn = conn;
	t.local = dst;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_READ, &t, task);
}

int rdmx_task_write_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                          const struct rdmx_rbuf *dst, void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	if (copy_rbuf(dst, &t))
		return RDMX_E_INVAL;
	t.conn = conn;
	t.local = src;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_WRITE, &t, task);
}

int rdmx_task_write_imm_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn, struct rdmx_buf *src,
                              const struct rdmx_rbuf *dst, uint32_t imm, void *user_data,
                              struct rdmx_task **task)
{
	TMPL(t);
	if (copy_rbuf(dst, &t))
		return RDMX_E_INVAL;
	t.conn = conn;
	t.local = src;
	t.imm = imm;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_WRITE_IMM, &t, task);
}

int rdmx_task_atomic_cas_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                               const struct rdmx_rbuf *dst, struct rdmx_buf *result, uint64_t cmp,
                               uint64_t swap, void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	if (copy_rbuf(dst, &t))
		return RDMX_E_INVAL;
	t.conn = conn;
	t.local = result;
	t.op0 = cmp;
	t.op1 = swap;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_ATOMIC_CAS, &t, task);
}

int rdmx_task_atomic_fadd_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                const struct rdmx_rbuf *dst, struct rdmx_buf *result, uint64_t add,
                                void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	if (copy_rbuf(dst, &t))
		return RDMX_E_INVAL;
	t.conn = conn;
	t.local = result;
	t.op0 = add;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_ATOMIC_FADD, &t, task);
}

int rdmx_task_atomic_write_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                 const struct rdmx_rbuf *dst, uint64_t value, void *user_data,
                                 struct rdmx_task **task)
{
	TMPL(t);
	if (copy_rbuf(dst, &t))
		return RDMX_E_INVAL;
	t.conn = conn;
	t.op0 = value;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_ATOMIC_WRITE, &t, task);
}

int rdmx_task_flush_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                          const struct rdmx_rbuf *range, void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	if (copy_rbuf(range, &t))
		return RDMX_E_INVAL;
	t.conn = conn;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_FLUSH, &t, task);
}

/* Sync events: an 8-byte word at offset 0 of the event's region. */
static void event_rbuf(struct rdmx_mr_remote *event, struct rdmx_task *t)
{
	t->remote.mr = event;
	t->remote.offset = 0;
	t->remote.len = 8;
}

int rdmx_task_sync_event_get_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                   struct rdmx_mr_remote *event, struct rdmx_buf *result,
                                   void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	if (!event || !result)
		return RDMX_E_INVAL;
	event_rbuf(event, &t);
	t.conn = conn;
	t.local = result;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_SYNC_EVENT_GET, &t, task);
}

int rdmx_task_sync_event_notify_set_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                          struct rdmx_mr_remote *event, uint64_t value,
                                          void *user_data, struct rdmx_task **task)
{
	TMPL(t);
	if (!event)
		return RDMX_E_INVAL;
	event_rbuf(event, &t);
	t.conn = conn;
	t.op0 = value;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_SYNC_EVENT_NOTIFY_SET, &t, task);
}

int rdmx_task_sync_event_notify_add_alloc(struct rdmx_ctx *ctx, struct rdmx_conn *conn,
                                          struct rdmx_mr_remote *event, uint64_t add,
                                          struct rdmx_buf *result, void *user_data,
                                          struct rdmx_task **task)
{
	TMPL(t);
	if (!event)
		return RDMX_E_INVAL;
	event_rbuf(event, &t);
	t.conn = conn;
	t.local = result;
	t.op0 = add;
	t.user_data = user_data;
	return task_alloc(ctx, RDMX_TASK_SYNC_EVENT_NOTIFY_ADD, &t, task);
}

/* ---- submit, completion, deferred aborts ---- */

static void defer(struct rdmx_task *task)
{
	struct rdmx_ctx *ctx = task->ctx;

	task->next = NULL;
	if (ctx->deferred_tail)
		ctx->deferred_tail->next = task;
	else
		ctx->deferred_head = task;
	ctx->deferred_tail = task;
	rdmx__pe_signal(ctx->pe);
}

int rdmx_task_submit(struct rdmx_task *task)
{
	struct rdmx_conn *conn;
	struct rdmx_ctx *ctx;
	int rc;

	if (!task)
		return RDMX_E_INVAL;
	ctx = task->ctx;
	if (task->state != RDMX__TASK_IDLE || ctx->state != RDMX_CTX_RUNNING)
		return RDMX_E_BAD_STATE;
	if (!chain_unchanged(task)) {
		rc = rdmx__task_validate(task);
		if (rc)
			return rc;
	}
	task->status = RDMX_E_AGAIN;
	if (task->op == RDMX__OP_RECV) {
		task->res_conn = NULL;
		task->res_len = 0;
		task->res_imm = 0;
		task->state = RDMX__TASK_INFLIGHT;
		rc = ctx->dev->ops->post_recv(ctx, task);
		if (rc)
			task->state = RDMX__TASK_IDLE;
		else
			ctx->stats.submitted[task->type]++;
		return rc;
	}
	conn = task->conn;
	if (!conn)
		return RDMX_E_BAD_STATE;
	switch (conn->state) {
	case RDMX_CONN_REQUESTED:
		return RDMX_E_BAD_STATE;
	case RDMX_CONN_ERROR:
	case RDMX_CONN_DISCONNECTED:
		task->state = RDMX__TASK_INFLIGHT;
		ctx->stats.submitted[task->type]++;
		defer(task);
		return 0;
	default:
		break;
	}
	if (conn->closing) {
		task->state = RDMX__TASK_INFLIGHT;
		ctx->stats.submitted[task->type]++;
		defer(task);
		return 0;
	}
	if (!conn->can_post)
		return RDMX_E_BAD_STATE;
	if (RDMX_UNLIKELY(conn->fail_posts)) { /* tests: rdmx__conn_fail_posts */
		conn->fail_posts--;
		RDMX_DBG("conn %u: post refused by the test hook", conn->id);
		return RDMX_E_PROVIDER;
	}
	task->state = RDMX__TASK_INFLIGHT;
	conn->outstanding++;
	rc = ctx->dev->ops->post_send(conn, task);
	if (rc) {
		conn->outstanding--;
		task->state = RDMX__TASK_IDLE;
	} else {
		ctx->stats.submitted[task->type]++;
	}
	return rc;
}

void rdmx__task_finish(struct rdmx_task *task, int status)
{
	struct rdmx_ctx *ctx = task->ctx;
	const struct rdmx_task_conf *conf = &ctx->conf[task->type];

	task->state = RDMX__TASK_IDLE;
	task->status = status;
	task->next = NULL;
	if (status == 0) {
		ctx->stats.completed[task->type]++;
		ctx->stats.bytes[task->type] += task->op == RDMX__OP_RECV    ? task->res_len
		                                : task->op == RDMX__OP_FLUSH ? 0
		                                                             : task->len;
	} else {
		ctx->stats.failed[task->type]++;
	}
	(status == 0 ? conf->ok_cb : conf->err_cb)(task, task->user_data, ctx->user_data);
}

void rdmx__task_complete(struct rdmx_task *task, int status)
{
	if (task->op != RDMX__OP_RECV && task->conn && task->conn->outstanding)
		task->conn->outstanding--;
	rdmx__task_finish(task, status);
}

static bool deferred_task_ready(const struct rdmx_task *t)
{
	return !t->conn || t->conn->outstanding == 0;
}

bool rdmx__ctx_deferred_ready(const struct rdmx_ctx *ctx)
{
	for (const struct rdmx_task *t = ctx->deferred_head; t; t = t->next)
		if (deferred_task_ready(t))
			return true;
	return false;
}

int rdmx__ctx_deliver_deferred(struct rdmx_ctx *ctx, bool all)
{
	struct rdmx_task *list = ctx->deferred_head, *keep = NULL, *keep_tail = NULL;
	int n = 0;

	/* callbacks below may defer more: those queue behind the kept ones */
	ctx->deferred_head = ctx->deferred_tail = NULL;
	while (list) {
		struct rdmx_task *t = list;

		list = t->next;
		if (!all && !deferred_task_ready(t)) {
			/* the provider still holds earlier tasks of this connection */
			t->next = NULL;
			if (keep_tail)
				keep_tail->next = t;
			else
				keep = t;
			keep_tail = t;
			continue;
		}
		rdmx__task_finish(t, RDMX_E_CONN_ABORTED);
		n++;
	}
	if (keep) {
		keep_tail->next = ctx->deferred_head;
		if (!ctx->deferred_head)
			ctx->deferred_tail = keep_tail;
		ctx->deferred_head = keep;
	}
	return n;
}

int rdmx_task_free(struct rdmx_task *task)
{
	struct rdmx_task_pool *pool;

	if (!task)
		return 0;
	if (task->state != RDMX__TASK_IDLE)
		return RDMX_E_BAD_STATE;
	pool = &task->ctx->pool[task->type];
	task->state = RDMX__TASK_FREE;
	task->conn = NULL;
	task->res_conn = NULL;
	task->local = NULL;
	task->next = pool->free;
	pool->free = task;
	pool->in_use--;
	return 0;
}
