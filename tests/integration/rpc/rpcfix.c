/* Channel/RPC battery fixture: nodes, connections, the drive loop. Only the
 * public API is used. */
#include "rpcfix.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdmx/pe.h>

uint64_t now_ms(void)
{
	return (uint64_t)(rdmx_pe_now_ns() / 1000000u);
}

void node_open(struct node *n, const char *name, int which,
               const struct rdmx_chan_worker_attr *attr)
{
	const char *dev = env_device(which);
	const char *addr = env_addr_raw(which);
	int rc;

	memset(n, 0, sizeof(*n));
	n->name = name;
	n->which = which;
	if (strcmp(dev, "tcp") == 0 && addr)
		rc = rdmx_dev_open_by_addr(addr, &n->dev);
	else
		rc = rdmx_dev_open(dev, &n->dev);
	cr_assert_eq(rc, 0, "opening device %s -> %s", dev, rdmx_err_name(rc));
	n->tcp = strcmp(rdmx_dev_provider(n->dev), "tcp") == 0;
	ASSERT_OK(rdmx_pe_create(&n->pe));
	ASSERT_OK(rdmx_pe_set_poll_mode(n->pe, RDMX_POLL_BUSY, 0));
	ASSERT_OK(rdmx_ctx_create(n->dev, n->pe, &n->ctx));
	ASSERT_OK(rdmx_ctx_set_max_connections(n->ctx, 40));
	ASSERT_OK(rdmx_chan_worker_create(n->ctx, n->pe, attr, &n->worker));
	ASSERT_OK(rdmx_ctx_start(n->ctx));
}

void node_close(struct node *n)
{
	enum rdmx_ctx_state st;

	if (!n->ctx)
		return;
	ASSERT_OK(rdmx_ctx_get_state(n->ctx, &st));
	if (st == RDMX_CTX_RUNNING)
		ASSERT_OK(rdmx_ctx_stop(n->ctx));
	ASSERT_OK(rdmx_chan_worker_destroy(&n->worker));
	ASSERT_OK(rdmx_ctx_destroy(&n->ctx));
	ASSERT_OK(rdmx_pe_destroy(&n->pe));
	ASSERT_OK(rdmx_dev_close(&n->dev));
}

void drive_once(struct node *a, struct node *b)
{
	int n = 0, r;

	if (a) {
		r = rdmx_chan_worker_progress(a->worker);
		cr_assert(r >= 0, "progress of %s -> %s", a->name, rdmx_err_name(r));
		n += r;
	}
	if (b) {
		r = rdmx_chan_worker_progress(b->worker);
		cr_assert(r >= 0, "progress of %s -> %s", b->name, rdmx_err_name(r));
		n += r;
	}
	if (!n)
		sched_yield(); /* 2 shared cores: let the soft NIC threads run */
}

void drive_for(struct node *a, struct node *b, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (now_ms() < end)
		drive_once(a, b);
}

void conn_pair(struct node *a, struct node *b, struct rdmx_conn **ca, struct rdmx_conn **cb)
{
	const void *da = NULL, *db = NULL;
	size_t la = 0, lb = 0;
	struct rdmx_conn *x = NULL, *y = NULL;

	ASSERT_OK(rdmx_ctx_export(a->ctx, &da, &la, &x));
	ASSERT_OK(rdmx_ctx_export(b->ctx, &db, &lb, &y));
	ASSERT_OK(rdmx_ctx_connect(a->ctx, db, lb, x));
	ASSERT_OK(rdmx_ctx_connect(b->ctx, da, la, y));
	*ca = x;
	*cb = y;
}

static void apply_conf(struct rdmx_chan *c, const struct chan_conf *conf)
{
	if (!conf)
		return;
	if (conf->slot_count)
		ASSERT_OK(rdmx_chan_set_slot_count(c, conf->slot_count));
	if (conf->slot_size)
		ASSERT_OK(rdmx_chan_set_slot_size(c, conf->slot_size));
	if (conf->max_msg)
		ASSERT_OK(rdmx_chan_set_max_msg_size(c, conf->max_msg));
	if (conf->queue_len)
		ASSERT_OK(rdmx_chan_set_send_queue_len(c, conf->queue_len));
	ASSERT_OK(rdmx_chan_set_callbacks(c, conf->recv_cb, conf->event_cb, conf->arg));
}

void chan_pair(struct node *a, struct node *b, const struct chan_conf *ca,
               const struct chan_conf *cb, struct rdmx_chan **xa, struct rdmx_chan **xb,
               bool wait_ready)
{
	struct rdmx_conn *x, *y;
	struct rdmx_chan *p = NULL, *q = NULL;

	conn_pair(a, b, &x, &y);
	ASSERT_OK(rdmx_chan_create(a->worker, x, &p));
	ASSERT_OK(rdmx_chan_create(b->worker, y, &q));
	apply_conf(p, ca);
	apply_conf(q, cb);
	ASSERT_OK(rdmx_chan_start(p));
	ASSERT_OK(rdmx_chan_start(q));
	if (wait_ready)
		DRIVE_UNTIL(a, b,
		            rdmx_chan_get_state(p) == RDMX_CHAN_READY &&
		                rdmx_chan_get_state(q) == RDMX_CHAN_READY);
	*xa = p;
	*xb = q;
}

void rpc_pair(struct node *a, struct node *b, struct rdmx_rpc_server *sa,
              struct rdmx_rpc_server *sb, const struct chan_conf *ca, const struct chan_conf *cb,
              struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb)
{
	struct chan_conf xa = {0}, xb = {0};
	struct rdmx_chan *p, *q;

	if (ca)
		xa = *ca;
	if (cb)
		xb = *cb;
	xa.recv_cb = NULL;
	xa.event_cb = NULL;
	xb.recv_cb = NULL;
	xb.event_cb = NULL;
	chan_pair(a, b, &xa, &xb, &p, &q, false);
	ASSERT_OK(rdmx_rpc_ep_create(p, sa, ra));
	ASSERT_OK(rdmx_rpc_ep_create(q, sb, rb));
	DRIVE_UNTIL(a, b,
	            rdmx_chan_get_state(p) == RDMX_CHAN_READY &&
	                rdmx_chan_get_state(q) == RDMX_CHAN_READY);
}

void chan_pair_close(struct rdmx_chan **xa, struct rdmx_chan **xb, struct node *a, struct node *b)
{
	ASSERT_OK(rdmx_chan_destroy(xa));
	ASSERT_OK(rdmx_chan_destroy(xb));
	node_close(a);
	node_close(b);
}

void rpc_pair_close(struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb)
{
	struct rdmx_chan *p = *ra ? rdmx_rpc_ep_get_chan(*ra) : NULL;
	struct rdmx_chan *q = *rb ? rdmx_rpc_ep_get_chan(*rb) : NULL;

	ASSERT_OK(rdmx_rpc_ep_destroy(ra));
	ASSERT_OK(rdmx_rpc_ep_destroy(rb));
	ASSERT_OK(rdmx_chan_destroy(&p));
	ASSERT_OK(rdmx_chan_destroy(&q));
}

void rpc_pair_close_all(struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb,
                        struct rdmx_rpc_server **srv, struct node *a, struct node *b)
{
	rpc_pair_close(ra, rb);
	ASSERT_OK(rdmx_rpc_server_destroy(srv));
	node_close(a);
	node_close(b);
}

static void echo_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct echo_state *st = arg;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	st->echoed++;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static void fail_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct echo_state *st = arg;

	(void)req;
	(void)len;
	st->failed++;
	rdmx_rpc_respond(call, RDMX_RPC_NOT_FOUND, "no such key", NULL);
}

static void hold_cancel(struct rdmx_rpc_server_call *call, void *arg)
{
	struct echo_state *st = arg;

	(void)call;
	st->cancels++;
}

static void hold_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct echo_state *st = arg;

	(void)req;
	(void)len;
	cr_assert(st->held_n < HELD_MAX, "too many held calls");
	st->held_deadline[st->held_n] = rdmx_rpc_call_get_deadline(call);
	st->held[st->held_n++] = call;
	rdmx_rpc_call_set_cancel_cb(call, hold_cancel, st);
}

struct rdmx_rpc_server *echo_server(struct echo_state *st)
{
	struct rdmx_rpc_server *s = NULL;

	ASSERT_OK(rdmx_rpc_server_create(&s));
	ASSERT_OK(rdmx_rpc_server_register(s, rdmx_rpc_method_id(ECHO_NAME), ECHO_NAME,
	                                   echo_handler, st));
	ASSERT_OK(rdmx_rpc_server_register(s, rdmx_rpc_method_id(FAIL_NAME), FAIL_NAME,
	                                   fail_handler, st));
	ASSERT_OK(rdmx_rpc_server_register(s, rdmx_rpc_method_id(HOLD_NAME), HOLD_NAME,
	                                   hold_handler, st));
	return s;
}

void echo_pair_open(struct node *a, struct node *b, const struct rdmx_chan_worker_attr *attr,
                    struct echo_state *st, struct rdmx_rpc_server **srv, struct rdmx_rpc_ep **ra,
                    struct rdmx_rpc_ep **rb)
{
	*srv = echo_server(st);
	server_pair_open(a, b, attr, *srv, ra, rb);
}

void server_pair_open(struct node *a, struct node *b, const struct rdmx_chan_worker_attr *attr,
                      struct rdmx_rpc_server *srv, struct rdmx_rpc_ep **ra, struct rdmx_rpc_ep **rb)
{
	node_open(a, "a", 0, attr);
	node_open(b, "b", 1, attr);
	rpc_pair(a, b, NULL, srv, NULL, NULL, ra, rb);
}

/* ---- log capture ---- */

#define CAP_LINES 256
static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static char cap_lines[CAP_LINES][256];
static int cap_n;

static void cap_fn(enum rdmx_log_level level, const char *file, int line, const char *func,
                   const char *message)
{
	(void)file;
	(void)line;
	(void)func;
	fprintf(stderr, "rdmx %d: %s\n", (int)level, message);
	if (level > RDMX_LOG_ERROR)
		return;
	pthread_mutex_lock(&cap_lock);
	if (cap_n < CAP_LINES)
		snprintf(cap_lines[cap_n++], sizeof(cap_lines[0]), "%s", message);
	pthread_mutex_unlock(&cap_lock);
}

void log_capture_begin(void)
{
	pthread_mutex_lock(&cap_lock);
	cap_n = 0;
	pthread_mutex_unlock(&cap_lock);
	rdmx_log_set_function(cap_fn);
}

int log_capture_count(const char *needle)
{
	int n = 0;

	pthread_mutex_lock(&cap_lock);
	for (int i = 0; i < cap_n; i++)
		if (strstr(cap_lines[i], needle))
			n++;
	pthread_mutex_unlock(&cap_lock);
	return n;
}

void log_capture_end(void)
{
	rdmx_log_set_function(NULL);
}

/* ---- peer death: the server in another process ---- */

static int xfer(int fd, void *p, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, (char *)p + done, len - done)
		                : read(fd, (char *)p + done, len - done);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* The child: its own device, context, worker and endpoint; plain checks. */
static void peer_child_main(int fd, int (*setup)(struct rdmx_rpc_server *srv), bool (*ready)(void))
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_pe *pe = NULL;
	struct rdmx_ctx *ctx = NULL;
	struct rdmx_chan_worker *worker = NULL;
	struct rdmx_conn *conn = NULL;
	struct rdmx_chan *chan = NULL;
	struct rdmx_rpc_ep *ep = NULL;
	struct rdmx_rpc_server *srv = NULL;
	const void *det;
	size_t dlen;
	uint8_t peer[512];
	uint32_t plen;
	bool signalled = false;
	const char *devname = env_device(1);
	const char *addr = getenv("RDMX_TEST_PEER_ADDR");

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (strcmp(devname, "tcp") == 0 && addr && *addr) {
		if (rdmx_dev_open_by_addr(addr, &dev))
			_exit(10);
	} else if (rdmx_dev_open(devname, &dev)) {
		_exit(10);
	}
	if (rdmx_pe_create(&pe) || rdmx_ctx_create(dev, pe, &ctx) ||
	    rdmx_chan_worker_create(ctx, pe, NULL, &worker) || rdmx_ctx_start(ctx))
		_exit(11);
	if (rdmx_rpc_server_create(&srv) || setup(srv))
		_exit(12);
	if (rdmx_ctx_export(ctx, &det, &dlen, &conn))
		_exit(13);
	plen = (uint32_t)dlen;
	if (xfer(fd, &plen, 4, true) || xfer(fd, (void *)det, dlen, true))
		_exit(14);
	if (xfer(fd, &plen, 4, false) || plen > sizeof(peer) || xfer(fd, peer, plen, false))
		_exit(15);
	if (rdmx_ctx_connect(ctx, peer, plen, conn) || rdmx_chan_create(worker, conn, &chan) ||
	    rdmx_rpc_ep_create(chan, srv, &ep))
		_exit(16);
	for (;;) {
		if (rdmx_chan_worker_progress(worker) == 0)
			sched_yield();
		if (!signalled && ready()) {
			uint8_t one = 1;

			signalled = true;
			if (xfer(fd, &one, 1, true))
				_exit(17);
		}
	}
}

void peer_proc_open(struct node *a, int (*setup)(struct rdmx_rpc_server *srv), bool (*ready)(void),
                    struct peer_proc *p)
{
	int sp[2];
	struct rdmx_conn *conn;
	const void *det;
	size_t dlen;
	uint32_t plen;
	uint8_t peer[512];

	memset(p, 0, sizeof(*p));
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	p->pid = fork(); /* before this process opens anything */
	cr_assert(p->pid >= 0);
	if (p->pid == 0) {
		close(sp[0]);
		peer_child_main(sp[1], setup, ready);
		_exit(0);
	}
	close(sp[1]);
	p->fd = sp[0];
	node_open(a, "a", 0, NULL);
	ASSERT_OK(rdmx_ctx_export(a->ctx, &det, &dlen, &conn));
	cr_assert_eq(xfer(p->fd, &plen, 4, false), 0, "child died early");
	cr_assert(plen <= sizeof(peer));
	cr_assert_eq(xfer(p->fd, peer, plen, false), 0);
	plen = (uint32_t)dlen;
	cr_assert_eq(xfer(p->fd, &plen, 4, true), 0);
	cr_assert_eq(xfer(p->fd, (void *)det, dlen, true), 0);
	ASSERT_OK(rdmx_ctx_connect(a->ctx, peer, (size_t)plen, conn));
	ASSERT_OK(rdmx_chan_create(a->worker, conn, &p->chan));
	ASSERT_OK(rdmx_rpc_ep_create(p->chan, NULL, &p->ep));
}

void peer_proc_wait_ready(struct node *a, struct peer_proc *p, const char *what)
{
	uint64_t guard = now_ms() + GUARD_MS;
	uint8_t one = 0;

	for (;;) {
		struct timeval tv = {0, 0};
		fd_set fds;

		cr_assert(now_ms() < guard, "%s", what);
		drive_once(a, NULL);
		FD_ZERO(&fds);
		FD_SET(p->fd, &fds);
		if (select(p->fd + 1, &fds, NULL, NULL, &tv) == 1) {
			cr_assert_eq(xfer(p->fd, &one, 1, false), 0, "child died early");
			return;
		}
	}
}

void peer_proc_kill(struct peer_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
}

void peer_proc_close(struct peer_proc *p)
{
	peer_proc_kill(p);
	ASSERT_OK(rdmx_rpc_ep_destroy(&p->ep));
	ASSERT_OK(rdmx_chan_destroy(&p->chan));
	close(p->fd);
	p->fd = -1;
}

static void *node_serve_main(void *p)
{
	struct node_serve *s = p;

	while (!s->stop)
		if (rdmx_chan_worker_progress(s->n->worker) == 0)
			sched_yield();
	return NULL;
}

void node_serve_start(struct node_serve *s, struct node *n)
{
	s->n = n;
	s->stop = 0;
	cr_assert_eq(pthread_create(&s->th, NULL, node_serve_main, s), 0);
}

void node_serve_stop(struct node_serve *s)
{
	s->stop = 1;
	pthread_join(s->th, NULL);
}

void call_rec_cb(const struct rdmx_rpc_result *r, void *arg)
{
	struct call_rec *x = arg;

	x->done++;
	x->code = r->code;
	snprintf(x->msg, sizeof(x->msg), "%s", r->message ? r->message : "");
	x->len = r->len;
	x->first = r->len ? ((const uint8_t *)r->data)[0] : 0;
	x->sum = r->len ? checksum64(r->data, r->len) : 0;
}

int call_recs_done(const struct call_rec *r, int n)
{
	int d = 0;

	for (int i = 0; i < n; i++)
		d += r[i].done;
	return d;
}
