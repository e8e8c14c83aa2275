/* The multi-worker RPC server over the cm flow (rdmx_rpc_workers_*,
 * rdmx/rpc.h) and the shared listener under it (rdmx_ctx_listen_join): 16
 * clients over 2..4 workers; connections dealt in turn at accept time (the
 * per-worker counts), every call answered exactly once and served on every
 * worker's thread, server interceptors on the workers, per-method counters
 * summed over the workers, and a shutdown with calls held on every worker
 * (each completes once, UNAVAILABLE). Both providers share a listener
 * (tcp here; verbs on Soft-RoCE in tests/vm/guest-tests.txt); one that
 * could not would skip. Waits are bounded by guards only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdmx/health.h>
#include <rdmx/rpc_stream.h>

#include "rpcfix.h"
#include "worker_service.h"

#define W_CLIENTS 16
#define W_CALLS 8
#define W_ECHO "rdmx.test.Workers/Echo"
#define W_HOLD "rdmx.test.Workers/Hold"
#define W_CHAT "rdmx.test.Workers/Chat" /* bidi: every message back, then OK */
#define W_MSGS 4

static atomic_uint chat_write_errors;
static atomic_uint conn_cbs, gone_cbs;
/* gone callbacks that ran before their endpoint's held call was cancelled:
 * the hold's cancel callback answers it CANCELLED, counted on the endpoint */
static atomic_uint gone_early;

static void count_gone_early(const struct rdmx_rpc_ep *ep)
{
	struct rdmx_rpc_stats st;

	if (rdmx_rpc_ep_get_stats(ep, RDMX_RPC_ROLE_SERVER, &st) || !st.by_code[RDMX_RPC_CANCELLED])
		atomic_fetch_add(&gone_early, 1);
}

/* ---- the bidi stream, on the worker threads ---- */

static void chat_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(data, len);

	(void)arg;
	wsvc_saw_thread();
	/* the client writes fewer than a window: credit never runs out */
	if (rdmx_rpc_stream_write(s, &p))
		atomic_fetch_add(&chat_write_errors, 1);
}

static void chat_half_close(struct rdmx_rpc_stream *s, void *arg)
{
	(void)arg;
	rdmx_rpc_stream_finish(s, RDMX_RPC_OK, NULL, NULL, 0, NULL);
}

/* Chat streams ended on the server, and those that ended on an endpoint
 * whose gone callback had run (w_gone marks it): an application that frees
 * per-connection state in gone would use freed memory there. Gone callbacks
 * that ran while their endpoint still had a stream open. */
static atomic_uint chat_ends, late_chat_ends, gone_streaming;
static int gone_mark; /* the user data w_gone leaves on its endpoint */

static void chat_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	(void)st;
	(void)arg;
	atomic_fetch_add(&chat_ends, 1);
	if (rdmx_rpc_ep_get_user_data(rdmx_rpc_stream_get_ep(s)) == &gone_mark)
		atomic_fetch_add(&late_chat_ends, 1);
}

static void w_chat(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {chat_msg, chat_half_close, NULL, NULL,
	                                               chat_done};

	(void)arg;
	rdmx_rpc_stream_set_callbacks(s, &cbs, NULL);
}

/* Every message a server call or stream sends goes out on the thread that
 * started it (its worker): the state is that thread. */
static atomic_uint wrong_thread_msgs, watch_msgs_out;
static const uint32_t *watch_id_p;

static enum rdmx_rpc_code t_ic_start(const struct rdmx_rpc_call_info *info,
                                     struct rdmx_rpc_md *annotate, const char **message,
                                     void **state, void *arg)
{
	(void)info;
	(void)annotate;
	(void)message;
	(void)arg;
	*state = (void *)(uintptr_t)pthread_self();
	return RDMX_RPC_OK;
}

static void t_ic_message(const struct rdmx_rpc_call_info *info, bool outgoing, const void *data,
                         size_t len, void *state, void *arg)
{
	(void)data;
	(void)len;
	(void)arg;
	if (!outgoing)
		return;
	if (!pthread_equal((pthread_t)(uintptr_t)state, pthread_self()))
		atomic_fetch_add(&wrong_thread_msgs, 1);
	if (watch_id_p && info->method == *watch_id_p)
		atomic_fetch_add(&watch_msgs_out, 1);
}

static atomic_int destroy_from_worker;

static void w_connected(struct rdmx_rpc_workers *w, unsigned worker, struct rdmx_rpc_ep *ep,
                        void *arg)
{
	struct rdmx_rpc_workers *copy = w;

	(void)ep;
	(void)arg;
	if (worker < rdmx_rpc_workers_get_count(w))
		atomic_fetch_add(&conn_cbs, 1);
	/* a worker cannot stop the workers (it would join itself) */
	atomic_store(&destroy_from_worker, rdmx_rpc_workers_destroy(&copy));
}

static void w_gone(struct rdmx_rpc_workers *w, unsigned worker, struct rdmx_rpc_ep *ep, int status,
                   void *arg)
{
	(void)w;
	(void)worker;
	(void)status;
	(void)arg;
	count_gone_early(ep);
	if (rdmx_rpc_ep_get_streams(ep))
		atomic_fetch_add(&gone_streaming, 1);
	rdmx_rpc_ep_set_user_data(ep, &gone_mark);
	atomic_fetch_add(&gone_cbs, 1);
}

/* ---- the fixture: a server device, a client node with 16 connections ---- */

struct wfix {
	struct rdmx_dev *dev;
	struct rdmx_rpc_server *server;
	struct rdmx_rpc_workers *w;
	struct node cli;
	struct rdmx_conn *conns[W_CLIENTS];
	struct rdmx_chan *chans[W_CLIENTS];
	struct rdmx_rpc_ep *eps[W_CLIENTS];
	int established;
};

static void cli_established(struct rdmx_conn *conn, void *cud, void *ud)
{
	struct wfix *f = ud;

	(void)conn;
	(void)cud;
	f->established++;
}

static void drive_cli(struct wfix *f)
{
	int r = rdmx_chan_worker_progress(f->cli.worker);

	cr_assert(r >= 0, "client progress -> %s", rdmx_err_name(r));
	if (!r)
		sched_yield();
}

#define DRIVE_CLI_UNTIL(f, cond) TEST_DRIVE_UNTIL(cond, drive_cli(f))

static void reset_counters(void)
{
	wsvc_reset();
	atomic_store(&chat_write_errors, 0);
	atomic_store(&conn_cbs, 0);
	atomic_store(&gone_cbs, 0);
	atomic_store(&gone_early, 0);
	atomic_store(&chat_ends, 0);
	atomic_store(&late_chat_ends, 0);
	atomic_store(&gone_streaming, 0);
	atomic_store(&wrong_thread_msgs, 0);
	atomic_store(&watch_msgs_out, 0);
}

/* false: the provider cannot share a listener (skip) */
static bool wfix_start(struct wfix *f, unsigned workers)
{
	static const struct rdmx_rpc_workers_ops ops = {w_connected, w_gone};
	struct rdmx_chan_worker_attr attr;
	const char *addr = env_addr(0);
	struct rdmx_addr *ad = NULL;
	uint16_t port = 0;
	int rc = RDMX_E_INVAL;

	memset(f, 0, sizeof(*f));
	reset_counters();
	ASSERT_OK(rdmx_dev_open(env_device(0), &f->dev));
	ASSERT_OK(rdmx_rpc_server_create(&f->server));
	ASSERT_OK(rdmx_rpc_server_register(f->server, rdmx_rpc_method_id(W_ECHO), W_ECHO, wsvc_echo,
	                                   NULL));
	ASSERT_OK(rdmx_rpc_server_register(f->server, rdmx_rpc_method_id(W_HOLD), W_HOLD, wsvc_hold,
	                                   NULL));
	ASSERT_OK(rdmx_rpc_server_register_stream(f->server, rdmx_rpc_method_id(W_CHAT), W_CHAT,
	                                          RDMX_RPC_BIDI_STREAMING, w_chat, NULL));
	static const struct rdmx_rpc_interceptor tic = {t_ic_start, t_ic_message, NULL};
	ASSERT_OK(rdmx_rpc_server_add_interceptor(f->server, &wsvc_count_ic, NULL));
	ASSERT_OK(rdmx_rpc_server_add_interceptor(f->server, &tic, NULL));
	for (int i = 0; i < 50; i++) {
		unsigned v =
		    (unsigned)getpid() * 7919u + (unsigned)time(NULL) + (unsigned)i * 104729u;

		port = (uint16_t)(20000 + v % 30000);
		rc = rdmx_rpc_workers_listen(workers, f->server, f->dev, port, &ops, NULL, &f->w);
		if (rc != RDMX_E_PROVIDER && rc != RDMX_E_EXISTS)
			break;
	}
	if (rc == RDMX_E_NOT_SUPPORTED) {
		rdmx_rpc_server_destroy(&f->server);
		rdmx_dev_close(&f->dev);
		return false;
	}
	ASSERT_OK(rc);
	cr_assert_eq(rdmx_rpc_workers_get_count(f->w), workers);
	rdmx_chan_worker_attr_init(&attr);
	attr.established_cb = cli_established;
	attr.user_data = f;
	node_open(&f->cli, "client", 1, &attr);
	ASSERT_OK(
	    rdmx_addr_create(strchr(addr, ':') ? RDMX_ADDR_IPV6 : RDMX_ADDR_IPV4, addr, port, &ad));
	for (int i = 0; i < W_CLIENTS; i++) {
		int want = f->established + 1;

		/* one at a time: the i-th accepted connection is this one */
		ASSERT_OK(rdmx_ctx_connect_to_addr(f->cli.ctx, ad, NULL, 0, NULL, &f->conns[i]));
		DRIVE_CLI_UNTIL(f, f->established >= want);
		ASSERT_OK(rdmx_chan_create(f->cli.worker, f->conns[i], &f->chans[i]));
		ASSERT_OK(rdmx_chan_start(f->chans[i]));
		ASSERT_OK(rdmx_rpc_ep_create(f->chans[i], NULL, &f->eps[i]));
	}
	ASSERT_OK(rdmx_addr_destroy(&ad));
	return true;
}

static void wfix_close_clients(struct wfix *f)
{
	for (int i = 0; i < W_CLIENTS; i++) {
		ASSERT_OK(rdmx_rpc_ep_destroy(&f->eps[i]));
		ASSERT_OK(rdmx_chan_destroy(&f->chans[i]));
	}
}

static void wfix_stop(struct wfix *f)
{
	if (f->w)
		ASSERT_OK(rdmx_rpc_workers_destroy(&f->w));
	node_close(&f->cli);
	ASSERT_OK(rdmx_rpc_server_destroy(&f->server));
	ASSERT_OK(rdmx_dev_close(&f->dev));
}

static void wcall_start(struct wfix *f, unsigned conn, const char *method, struct wsvc_call *c)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(&c->tag, sizeof(c->tag));
	struct rdmx_rpc_call_opts o = {0, false};

	ASSERT_OK(rdmx_rpc_call_async(f->eps[conn], rdmx_rpc_method_id(method), &p, &o,
	                              wsvc_call_done, c, NULL));
}

static void many_clients(unsigned workers)
{
	static struct wsvc_call calls[W_CLIENTS * W_CALLS];
	const unsigned total = W_CLIENTS * W_CALLS;
	struct rdmx_rpc_stats st;
	struct wfix f;
	uint64_t sum = 0;

	if (!wfix_start(&f, workers))
		cr_skip_test("the device's provider cannot share a cm listener");
	for (unsigned i = 0; i < workers; i++) {
		uint64_t want = W_CLIENTS / workers + (i < W_CLIENTS % workers ? 1u : 0u);

		cr_assert_eq(rdmx_rpc_workers_get_assigned(f.w, i), want,
		             "worker %u got %llu connections, want %llu", i,
		             (unsigned long long)rdmx_rpc_workers_get_assigned(f.w, i),
		             (unsigned long long)want);
		sum += want;
	}
	cr_assert_eq(sum, W_CLIENTS);
	cr_assert_eq(rdmx_rpc_workers_get_assigned(f.w, workers), 0);
	memset(calls, 0, sizeof(calls));
	for (unsigned i = 0; i < total; i++) {
		calls[i].tag = 0x7700000000000000ull | i;
		wcall_start(&f, i % W_CLIENTS, W_ECHO, &calls[i]);
	}
	DRIVE_CLI_UNTIL(&f, wsvc_calls_done(calls, total));
	wsvc_assert_echoed(calls, total);
	/* a reply means its worker ran connected before, on the same thread */
	for (unsigned i = 0; i < workers; i++)
		cr_assert_eq(rdmx_rpc_workers_get_clients(f.w, i),
		             rdmx_rpc_workers_get_assigned(f.w, i), "worker %u clients", i);
	cr_assert_eq(atomic_load(&conn_cbs), W_CLIENTS);
	cr_assert_eq(atomic_load(&destroy_from_worker), RDMX_E_BAD_STATE);
	cr_assert_eq(atomic_load(&wsvc_echoes), total);
	cr_assert_eq(wsvc_threads(), workers, "calls served on %u threads, want %u", wsvc_threads(),
	             workers);
	cr_assert_eq(atomic_load(&wsvc_ic_started), total);
	ASSERT_OK(rdmx_rpc_server_get_method_stats(f.server, rdmx_rpc_method_id(W_ECHO), &st));
	cr_assert_eq(st.calls, total);
	/* joined workers: what they did after sending the answers is done */
	wfix_close_clients(&f);
	ASSERT_OK(rdmx_rpc_workers_destroy(&f.w));
	cr_assert_null(f.w);
	cr_assert_eq(atomic_load(&wsvc_ic_done), total);
	cr_assert_eq(atomic_load(&gone_cbs), W_CLIENTS);
	ASSERT_OK(rdmx_rpc_server_get_method_stats(f.server, rdmx_rpc_method_id(W_ECHO), &st));
	cr_assert_eq(st.calls, total);
	cr_assert_eq(st.completed, total);
	cr_assert_eq(st.by_code[RDMX_RPC_OK], total);
	cr_assert_eq(st.latency.count, total);
	wfix_stop(&f);
}

Test(rpc_workers, two_workers_sixteen_clients, .timeout = 240)
{
	many_clients(2);
}

Test(rpc_workers, three_workers_sixteen_clients, .timeout = 240)
{
	many_clients(3);
}

Test(rpc_workers, four_workers_sixteen_clients, .timeout = 240)
{
	many_clients(4);
}

struct wstream {
	int msgs, done;
	enum rdmx_rpc_code code;
	uint64_t sum;
};

static void cli_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct wstream *w = arg;
	uint64_t v = 0;

	(void)s;
	if (len == sizeof(v))
		memcpy(&v, data, sizeof(v));
	w->msgs++;
	w->sum += v;
}

static void cli_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct wstream *w = arg;

	(void)s;
	w->done++;
	w->code = st->code;
}

static bool wstreams_done(const struct wstream *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!v[i].done)
			return false;
	return true;
}

Test(rpc_workers, bidi_streams_on_every_worker, .timeout = 240)
{
	static const struct rdmx_rpc_stream_cbs cbs = {cli_msg, NULL, NULL, NULL, cli_done};
	static struct wstream v[W_CLIENTS];
	struct wfix f;

	if (!wfix_start(&f, 4))
		cr_skip_test("the device's provider cannot share a cm listener");
	memset(v, 0, sizeof(v));
	for (unsigned i = 0; i < W_CLIENTS; i++) {
		struct rdmx_rpc_stream *s = NULL;

		ASSERT_OK(rdmx_rpc_stream_open(f.eps[i], rdmx_rpc_method_id(W_CHAT),
		                               RDMX_RPC_BIDI_STREAMING, NULL, &cbs, &v[i], &s));
		for (uint64_t m = 0; m < W_MSGS; m++) {
			uint64_t x = i * 1000u + m;
			struct rdmx_rpc_payload p = rdmx_rpc_bytes(&x, sizeof(x));

			ASSERT_OK(rdmx_rpc_stream_write(s, &p));
		}
		ASSERT_OK(rdmx_rpc_stream_half_close(s));
	}
	DRIVE_CLI_UNTIL(&f, wstreams_done(v, W_CLIENTS));
	for (unsigned i = 0; i < W_CLIENTS; i++) {
		cr_assert_eq(v[i].done, 1, "stream %u ended %d times", i, v[i].done);
		cr_assert_eq(v[i].code, RDMX_RPC_OK, "stream %u: %s", i,
		             rdmx_rpc_code_name(v[i].code));
		cr_assert_eq(v[i].msgs, W_MSGS, "stream %u: %d messages back", i, v[i].msgs);
		cr_assert_eq(v[i].sum, i * 1000u * W_MSGS + W_MSGS * (W_MSGS - 1) / 2);
	}
	cr_assert_eq(wsvc_threads(), 4u, "streams served on %u threads", wsvc_threads());
	cr_assert_eq(atomic_load(&chat_write_errors), 0);
	/* the server interceptors saw every stream */
	cr_assert_eq(atomic_load(&wsvc_ic_started), W_CLIENTS);
	wfix_close_clients(&f);
	wfix_stop(&f);
}

Test(rpc_workers, shutdown_with_calls_held_on_every_worker, .timeout = 240)
{
	static struct wsvc_call holds[W_CLIENTS], echoes_v[W_CLIENTS];
	struct wfix f;

	if (!wfix_start(&f, 4))
		cr_skip_test("the device's provider cannot share a cm listener");
	memset(holds, 0, sizeof(holds));
	memset(echoes_v, 0, sizeof(echoes_v));
	for (unsigned i = 0; i < W_CLIENTS; i++) {
		holds[i].tag = i;
		wcall_start(&f, i, W_HOLD, &holds[i]);
		echoes_v[i].tag = 100u + i;
		wcall_start(&f, i, W_ECHO, &echoes_v[i]);
	}
	/* the echo behind each hold on the same connection: the hold arrived */
	DRIVE_CLI_UNTIL(&f, wsvc_calls_done(echoes_v, W_CLIENTS));
	DRIVE_CLI_UNTIL(&f, atomic_load(&wsvc_held) == W_CLIENTS);
	for (unsigned i = 0; i < W_CLIENTS; i++)
		cr_assert_eq(holds[i].done, 0, "hold %u answered early", i);
	ASSERT_OK(rdmx_rpc_workers_destroy(&f.w));
	cr_assert_eq(atomic_load(&wsvc_hold_cancelled), W_CLIENTS);
	cr_assert_eq(atomic_load(&gone_cbs), W_CLIENTS);
	cr_assert_eq(atomic_load(&gone_early), 0,
	             "%u gone callbacks ran before their held call's cancel callback",
	             atomic_load(&gone_early));
	DRIVE_CLI_UNTIL(&f, wsvc_calls_done(holds, W_CLIENTS));
	for (unsigned i = 0; i < W_CLIENTS; i++) {
		cr_assert_eq(holds[i].done, 1, "hold %u completed %d times", i, holds[i].done);
		cr_assert_eq(holds[i].code, RDMX_RPC_UNAVAILABLE, "hold %u: %s", i,
		             rdmx_rpc_code_name(holds[i].code));
		cr_assert_eq(echoes_v[i].done, 1);
	}
	wfix_close_clients(&f);
	for (unsigned i = 0; i < W_CLIENTS; i++)
		cr_assert_eq(holds[i].done, 1);
	wfix_stop(&f);
}

/* Each client's Chat stream is open both ways (one message echoed) when the
 * workers stop: every stream ends once on its worker, before its endpoint's
 * gone callback; on the clients each ends once, UNAVAILABLE. */
Test(rpc_workers, shutdown_with_streams_open_on_every_worker, .timeout = 240)
{
	static const struct rdmx_rpc_stream_cbs cbs = {cli_msg, NULL, NULL, NULL, cli_done};
	static struct wstream v[W_CLIENTS];
	struct wfix f;

	if (!wfix_start(&f, 4))
		cr_skip_test("the device's provider cannot share a cm listener");
	memset(v, 0, sizeof(v));
	for (unsigned i = 0; i < W_CLIENTS; i++) {
		struct rdmx_rpc_stream *s = NULL;
		uint64_t x = i;
		struct rdmx_rpc_payload p = rdmx_rpc_bytes(&x, sizeof(x));

		ASSERT_OK(rdmx_rpc_stream_open(f.eps[i], rdmx_rpc_method_id(W_CHAT),
		                               RDMX_RPC_BIDI_STREAMING, NULL, &cbs, &v[i], &s));
		ASSERT_OK(rdmx_rpc_stream_write(s, &p));
	}
	/* each message back: every stream is open on its worker */
	for (unsigned i = 0; i < W_CLIENTS; i++)
		DRIVE_CLI_UNTIL(&f, v[i].msgs == 1);
	ASSERT_OK(rdmx_rpc_workers_destroy(&f.w));
	cr_assert_eq(atomic_load(&gone_cbs), W_CLIENTS);
	cr_assert_eq(atomic_load(&chat_ends), W_CLIENTS, "%u of %u streams ended on the server",
	             atomic_load(&chat_ends), W_CLIENTS);
	cr_assert_eq(atomic_load(&gone_streaming), 0,
	             "%u gone callbacks ran while their endpoint had a stream open",
	             atomic_load(&gone_streaming));
	cr_assert_eq(atomic_load(&late_chat_ends), 0, "%u streams ended after their gone callback",
	             atomic_load(&late_chat_ends));
	DRIVE_CLI_UNTIL(&f, wstreams_done(v, W_CLIENTS));
	for (unsigned i = 0; i < W_CLIENTS; i++) {
		cr_assert_eq(v[i].done, 1, "stream %u ended %d times", i, v[i].done);
		cr_assert_eq(v[i].code, RDMX_RPC_UNAVAILABLE, "stream %u: %s", i,
		             rdmx_rpc_code_name(v[i].code));
	}
	cr_assert_eq(atomic_load(&chat_write_errors), 0);
	wfix_close_clients(&f);
	wfix_stop(&f);
}

Test(rpc_workers, bad_arguments_and_listen_join_states)
{
	struct rdmx_rpc_server *server = NULL;
	struct rdmx_rpc_workers *w = NULL;
	struct node a, b;
	int rc;

	ASSERT_OK(rdmx_rpc_server_create(&server));
	node_open(&a, "a", 0, NULL);
	ASSERT_RC(rdmx_rpc_workers_listen(0, server, a.dev, 20000, NULL, NULL, &w), RDMX_E_INVAL);
	ASSERT_RC(
	    rdmx_rpc_workers_listen(RDMX_RPC_MAX_WORKERS + 1, server, a.dev, 20000, NULL, NULL, &w),
	    RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_workers_listen(2, server, a.dev, 0, NULL, NULL, &w), RDMX_E_INVAL);
	ASSERT_RC(rdmx_rpc_workers_listen(2, NULL, a.dev, 20000, NULL, NULL, &w), RDMX_E_INVAL);
	cr_assert_null(w);
	ASSERT_OK(rdmx_rpc_workers_destroy(NULL));
	ASSERT_OK(rdmx_rpc_workers_destroy(&w));
	cr_assert_eq(rdmx_rpc_workers_get_count(NULL), 0);
	cr_assert_eq(rdmx_rpc_workers_get_clients(NULL, 0), 0);
	ASSERT_RC(rdmx_ctx_listen_join(NULL, a.ctx), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_listen_join(a.ctx, NULL), RDMX_E_INVAL);
	ASSERT_RC(rdmx_ctx_listen_join(a.ctx, a.ctx), RDMX_E_INVAL);
	node_close(&a);
	/* a listener that does not listen (and another device): nothing to join */
	node_open(&a, "a", 0, NULL);
	node_open(&b, "b", 0, NULL);
	rc = rdmx_ctx_listen_join(b.ctx, a.ctx);
	cr_assert(rc == RDMX_E_BAD_STATE || rc == RDMX_E_INVAL, "join -> %s", rdmx_err_name(rc));
	node_close(&b);
	node_close(&a);
	ASSERT_OK(rdmx_rpc_server_destroy(&server));
}

/* ---- Health/Watch on the workers, health set from another thread ---- */

struct hwatch {
	struct rdmx_rpc_stream *s;
	int last, got, done;
	enum rdmx_rpc_code code;
};

static void hw_msg(struct rdmx_rpc_stream *s, const void *data, size_t len, void *arg)
{
	struct hwatch *h = arg;
	const uint8_t *b = data;

	(void)s;
	h->got++;
	h->last = len == 3 ? b[2] : 0; /* {1: status}; UNKNOWN is the empty map */
}

static void hw_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct hwatch *h = arg;

	(void)s;
	h->done++;
	h->code = st->code;
	h->s = NULL;
}

struct setter {
	struct rdmx_rpc_server *server;
	int rc;
};

static void *set_not_serving(void *p)
{
	struct setter *x = p;

	x->rc = rdmx_rpc_server_set_health(x->server, "", RDMX_HEALTH_NOT_SERVING);
	if (x->rc == 0)
		x->rc = rdmx_rpc_server_set_health(x->server, "rdmx.test.Workers",
		                                   RDMX_HEALTH_NOT_SERVING);
	return NULL;
}

Test(rpc_workers, health_watch_set_from_another_thread, .timeout = 240)
{
	static const struct rdmx_rpc_stream_cbs cbs = {hw_msg, NULL, NULL, NULL, hw_done};
	uint32_t wid = rdmx_rpc_method_id(RDMX_HEALTH_WATCH_NAME);
	struct hwatch hw[2] = {{0}, {0}};
	const char *svc[2] = {"", "rdmx.test.Workers"};
	struct rdmx_rpc_payload req;
	struct setter x;
	struct wfix f;
	pthread_t th;
	uint8_t body[2][32];

	if (!wfix_start(&f, 2))
		cr_skip_test("the device's provider cannot share a cm listener");
	watch_id_p = &wid;
	/* clients 0 and 1 are on different workers (dealt in turn) */
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(svc[i]);

		body[i][0] = 0x81; /* {1: service} */
		body[i][1] = 0x01;
		body[i][2] = (uint8_t)(0xa0 | n);
		memcpy(body[i] + 3, svc[i], n);
		req = rdmx_rpc_bytes(body[i], n ? 3 + n : 0);
		hw[i].last = -1;
		ASSERT_OK(rdmx_rpc_stream_open(f.eps[i], wid, RDMX_RPC_SERVER_STREAMING, NULL, &cbs,
		                               &hw[i], &hw[i].s));
		ASSERT_OK(rdmx_rpc_stream_write(hw[i].s, &req));
		ASSERT_OK(rdmx_rpc_stream_half_close(hw[i].s));
	}
	DRIVE_CLI_UNTIL(&f, hw[0].got == 1 && hw[1].got == 1);
	cr_assert_eq(hw[0].last, RDMX_HEALTH_SERVING);
	cr_assert_eq(hw[1].last, RDMX_HEALTH_SERVING);
	cr_assert_neq(rdmx_rpc_workers_get_clients(f.w, 0), 0);
	cr_assert_neq(rdmx_rpc_workers_get_clients(f.w, 1), 0);
	/* from a thread that is neither worker */
	x.server = f.server;
	x.rc = -1;
	cr_assert_eq(pthread_create(&th, NULL, set_not_serving, &x), 0);
	pthread_join(th, NULL);
	ASSERT_OK(x.rc);
	DRIVE_CLI_UNTIL(&f, hw[0].last == RDMX_HEALTH_NOT_SERVING &&
	                        hw[1].last == RDMX_HEALTH_NOT_SERVING);
	/* and from this thread (not a worker either) */
	ASSERT_OK(rdmx_rpc_server_set_health(f.server, "", RDMX_HEALTH_SERVING));
	ASSERT_OK(rdmx_rpc_server_set_health(f.server, "rdmx.test.Workers", RDMX_HEALTH_SERVING));
	DRIVE_CLI_UNTIL(&f, hw[0].last == RDMX_HEALTH_SERVING && hw[1].last == RDMX_HEALTH_SERVING);
	cr_assert_eq(hw[0].done + hw[1].done, 0);
	cr_assert(atomic_load(&watch_msgs_out) >= 6, "%u", atomic_load(&watch_msgs_out));
	cr_assert_eq(atomic_load(&wrong_thread_msgs), 0,
	             "a Watch stream was written off its worker's thread");
	for (int i = 0; i < 2; i++)
		ASSERT_OK(rdmx_rpc_stream_cancel(hw[i].s));
	watch_id_p = NULL;
	wfix_close_clients(&f);
	wfix_stop(&f);
}
