/* Scripted in-memory provider for the engine's unit tests: see mock_provider.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mock_provider.h"

enum item_kind { ITEM_TASK, ITEM_EVENT, ITEM_INCOMING, ITEM_REQUEST };

struct item {
	enum item_kind kind;
	struct rdmx_task *task;
	struct rdmx_conn *conn;
	enum rdmx__conn_event ev;
	enum rdmx_opcode opcode;
	uint32_t len, imm;
	struct item *next;
};

struct mock_ctx {
	int evfd;
	bool armed, hold, refuse;
	unsigned limit;
	struct item *head, *tail;
	struct rdmx_task *recvs, *recvs_tail; /* posted receives, through task->next */
};

struct mock_conn {
	int fail_status;
	bool failed;
};

static struct mock_stats stats;
static uint32_t next_key = 0x1000;

const struct mock_stats *mock_stats(void)
{
	return &stats;
}

void mock_stats_reset(void)
{
	memset(&stats, 0, sizeof(stats));
}

static struct mock_ctx *mctx(struct rdmx_ctx *ctx)
{
	return ctx->prov;
}

static void kick(struct mock_ctx *m)
{
	uint64_t one = 1;

	if (m->armed && write(m->evfd, &one, sizeof(one)) < 0)
		perror("mock eventfd write");
}

static void push(struct mock_ctx *m, struct item *it)
{
	it->next = NULL;
	if (m->tail)
		m->tail->next = it;
	else
		m->head = it;
	m->tail = it;
	kick(m);
}

/* Items are recycled so that a steady stream of tasks allocates nothing
 * (the engine's no-allocation test measures the heap around it). */
static struct item *spare_items;

static struct item *new_item(enum item_kind kind)
{
	struct item *it = spare_items;

	if (it)
		spare_items = it->next;
	else if (!(it = malloc(sizeof(*it))))
		abort();
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	return it;
}

static void free_item(struct item *it)
{
	it->next = spare_items;
	spare_items = it;
}

/* ---- controls ---- */

void mock_hold(struct rdmx_ctx *ctx, bool hold)
{
	mctx(ctx)->hold = hold;
	if (!hold)
		kick(mctx(ctx));
}

void mock_poll_limit(struct rdmx_ctx *ctx, unsigned n)
{
	mctx(ctx)->limit = n;
}

void mock_fail_next(struct rdmx_conn *conn, int status)
{
	((struct mock_conn *)conn->prov)->fail_status = status;
}

void mock_incoming(struct rdmx_ctx *ctx, struct rdmx_conn *conn, enum rdmx_opcode opcode,
                   uint32_t len, uint32_t imm)
{
	struct item *it = new_item(ITEM_INCOMING);

	it->conn = conn;
	it->opcode = opcode;
	it->len = len;
	it->imm = imm;
	push(mctx(ctx), it);
}

void mock_incoming_request(struct rdmx_ctx *ctx)
{
	push(mctx(ctx), new_item(ITEM_REQUEST));
}

static void push_event(struct rdmx_conn *conn, enum rdmx__conn_event ev)
{
	struct item *it = new_item(ITEM_EVENT);

	it->conn = conn;
	it->ev = ev;
	push(mctx(conn->ctx), it);
}

void mock_peer_disconnect(struct rdmx_ctx *ctx, struct rdmx_conn *conn)
{
	(void)ctx;
	push_event(conn, RDMX__CONN_EV_DISCONNECTED);
}

void mock_refuse(struct rdmx_ctx *ctx, bool refuse)
{
	mctx(ctx)->refuse = refuse;
}

unsigned mock_pending(struct rdmx_ctx *ctx)
{
	unsigned n = 0;

	for (struct item *it = mctx(ctx)->head; it; it = it->next)
		n++;
	return n;
}

/* ---- device and memory ---- */

static int m_dev_list(struct rdmx_dev_info *infos, size_t max, size_t *count)
{
	if (max > 0)
		snprintf(infos[0].name, sizeof(infos[0].name), "mock0");
	*count += 1;
	return 0;
}

static int m_dev_open(struct rdmx_dev *dev, const char *ip)
{
	(void)ip;
	dev->prov = NULL;
	return 0;
}

static void m_dev_close(struct rdmx_dev *dev)
{
	(void)dev;
}

static int m_dev_query_caps(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps)
{
	(void)dev;
	caps->max_send_queue_size = 1024;
	caps->max_recv_queue_size = 1024;
	caps->max_buf_list_len = 4;
	caps->max_message_size = 1u << 20;
	caps->gid_table_len = 2;
	caps->transport_types = RDMX_TRANSPORT_RC;
	caps->max_connections = 8;
	caps->atomics = true;
	return 0;
}

static int m_dev_get_gid(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16])
{
	(void)dev;
	if (index >= 2)
		return RDMX_E_INVAL;
	memset(gid, 0, 16);
	gid[15] = (uint8_t)(index + 1);
	return 0;
}

static int m_mr_reg(struct rdmx_mr *mr)
{
	mr->rkey = mr->lkey = next_key++;
	return 0;
}

static void m_mr_dereg(struct rdmx_mr *mr)
{
	(void)mr;
}

/* ---- contexts ---- */

static int m_ctx_start(struct rdmx_ctx *ctx)
{
	struct mock_ctx *m = calloc(1, sizeof(*m));

	if (!m)
		return RDMX_E_NOMEM;
	m->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (m->evfd < 0) {
		free(m);
		return RDMX_E_PROVIDER;
	}
	ctx->prov = m;
	return 0;
}

static void complete_send(struct rdmx_task *task)
{
	struct rdmx_conn *conn = task->conn;
	struct mock_conn *mc = conn->prov;

	if (mc->failed) {
		rdmx__task_complete(task, RDMX_E_CONN_ABORTED);
	} else if (mc->fail_status) {
		mc->failed = true;
		rdmx__conn_set_error(conn);
		rdmx__task_complete(task, mc->fail_status);
	} else {
		if (task->op == RDMX__OP_READ)
			task->res_len = (uint32_t)task->len;
		rdmx__task_complete(task, 0);
	}
}

static bool complete_recv(struct mock_ctx *m, struct item *it)
{
	struct rdmx_task *task = m->recvs;

	if (!task)
		return false;
	m->recvs = task->next;
	if (!m->recvs)
		m->recvs_tail = NULL;
	task->res_opcode = it->opcode;
	task->res_len = it->len;
	task->res_imm = it->imm;
	task->res_conn = it->conn;
	rdmx__task_complete(task, 0);
	return true;
}

static void run_item(struct rdmx_ctx *ctx, struct item *it)
{
	struct rdmx_conn *conn;

	switch (it->kind) {
	case ITEM_TASK:
		complete_send(it->task);
		break;
	case ITEM_INCOMING:
		complete_recv(mctx(ctx), it);
		break;
	case ITEM_REQUEST:
		conn = rdmx__conn_new(ctx, RDMX_CONN_REQUESTED);
		if (conn) {
			conn->prov = calloc(1, sizeof(struct mock_conn));
			memcpy(conn->private_data, "hello", 5);
			conn->private_data_len = 5;
			rdmx__conn_event(conn, RDMX__CONN_EV_REQUEST);
		}
		break;
	case ITEM_EVENT:
		rdmx__conn_event(it->conn, it->ev);
		break;
	}
}

static int m_ctx_poll(struct rdmx_ctx *ctx, unsigned budget)
{
	struct mock_ctx *m = mctx(ctx);
	unsigned n = 0, max = m->limit && m->limit < budget ? m->limit : budget;

	stats.polls++;
	if (m->hold)
		return 0;
	while (m->head && n < max) {
		struct item *it = m->head;

		if (it->kind == ITEM_INCOMING && !m->recvs)
			break; /* waits for a receive, like RNR */
		m->head = it->next;
		if (!m->head)
			m->tail = NULL;
		run_item(ctx, it);
		free_item(it);
		n++;
	}
	return (int)n;
}

static void m_ctx_stop(struct rdmx_ctx *ctx)
{
	struct mock_ctx *m = mctx(ctx);

	while (m->head) {
		struct item *it = m->head;

		m->head = it->next;
		if (it->kind == ITEM_TASK)
			rdmx__task_complete(it->task, RDMX_E_CANCELED);
		free_item(it);
	}
	m->tail = NULL;
	while (m->recvs) {
		struct rdmx_task *t = m->recvs;

		m->recvs = t->next;
		rdmx__task_complete(t, RDMX_E_CANCELED);
	}
	close(m->evfd);
	free(m);
	ctx->prov = NULL;
}

static int m_ctx_get_fd(struct rdmx_ctx *ctx)
{
	return mctx(ctx) ? mctx(ctx)->evfd : -1;
}

static int m_ctx_arm(struct rdmx_ctx *ctx)
{
	struct mock_ctx *m = mctx(ctx);

	stats.arms++;
	m->armed = true;
	if (m->head && !m->hold)
		kick(m);
	return 0;
}

static int m_ctx_disarm(struct rdmx_ctx *ctx)
{
	struct mock_ctx *m = mctx(ctx);
	uint64_t v;

	stats.disarms++;
	m->armed = false;
	if (read(m->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		perror("mock eventfd read");
	return 0;
}

/* ---- connections ---- */

static int m_conn_export(struct rdmx_conn *conn, void *details, size_t *len)
{
	conn->prov = calloc(1, sizeof(struct mock_conn));
	if (!conn->prov)
		return RDMX_E_NOMEM;
	*len = (size_t)snprintf(details, *len, "MOCK%u", conn->id);
	return 0;
}

static int m_conn_connect(struct rdmx_conn *conn, const void *details, size_t len)
{
	if (len < 4 || memcmp(details, "MOCK", 4) != 0)
		return RDMX_E_INVAL;
	push_event(conn, RDMX__CONN_EV_ESTABLISHED);
	return 0;
}

static int m_listen(struct rdmx_ctx *ctx, uint16_t port)
{
	(void)ctx;
	(void)port;
	return 0;
}

static void m_stop_listen(struct rdmx_ctx *ctx)
{
	(void)ctx;
}

static int m_connect_to_addr(struct rdmx_conn *conn, const struct rdmx_addr *addr, const void *pd,
                             size_t pd_len)
{
	(void)addr;
	(void)pd;
	(void)pd_len;
	conn->prov = calloc(1, sizeof(struct mock_conn));
	if (!conn->prov)
		return RDMX_E_NOMEM;
	push_event(conn,
	           mctx(conn->ctx)->refuse ? RDMX__CONN_EV_FAILURE : RDMX__CONN_EV_ESTABLISHED);
	return 0;
}

static int m_conn_accept(struct rdmx_conn *conn, const void *pd, size_t pd_len)
{
	(void)pd;
	(void)pd_len;
	push_event(conn, RDMX__CONN_EV_ESTABLISHED);
	return 0;
}

static int m_conn_reject(struct rdmx_conn *conn)
{
	(void)conn;
	return 0;
}

static int m_conn_disconnect(struct rdmx_conn *conn)
{
	push_event(conn, RDMX__CONN_EV_DISCONNECTED);
	return 0;
}

static void m_conn_release(struct rdmx_conn *conn)
{
	stats.conn_releases++;
	free(conn->prov);
	conn->prov = NULL;
}

/* ---- tasks ---- */

static int m_post_recv(struct rdmx_ctx *ctx, struct rdmx_task *task)
{
	struct mock_ctx *m = mctx(ctx);

	stats.posts++;
	task->next = NULL;
	if (m->recvs_tail)
		m->recvs_tail->next = task;
	else
		m->recvs = task;
	m->recvs_tail = task;
	return 0;
}

static int m_post_send(struct rdmx_conn *conn, struct rdmx_task *task)
{
	struct item *it = new_item(ITEM_TASK);

	stats.posts++;
	it->task = task;
	push(mctx(conn->ctx), it);
	return 0;
}

const struct rdmx_provider_ops mock_ops = {
    .name = "mock",
    .id = RDMX_PROVIDER_ID_TCP,
    .dev_list = m_dev_list,
    .dev_open = m_dev_open,
    .dev_close = m_dev_close,
    .dev_query_caps = m_dev_query_caps,
    .dev_get_gid = m_dev_get_gid,
    .mr_reg = m_mr_reg,
    .mr_dereg = m_mr_dereg,
    .ctx_start = m_ctx_start,
    .ctx_stop = m_ctx_stop,
    .ctx_get_fd = m_ctx_get_fd,
    .ctx_arm = m_ctx_arm,
    .ctx_disarm = m_ctx_disarm,
    .ctx_poll = m_ctx_poll,
    .conn_export = m_conn_export,
    .conn_connect = m_conn_connect,
    .listen = m_listen,
    .stop_listen = m_stop_listen,
    .connect_to_addr = m_connect_to_addr,
    .conn_accept = m_conn_accept,
    .conn_reject = m_conn_reject,
    .conn_disconnect = m_conn_disconnect,
    .conn_release = m_conn_release,
    .post_recv = m_post_recv,
    .post_send = m_post_send,
};

int mock_dev_open(struct rdmx_dev **dev)
{
	return rdmx__dev_open_ops(&mock_ops, "mock0", dev);
}
