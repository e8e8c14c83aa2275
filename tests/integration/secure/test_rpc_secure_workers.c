/* The multi-worker secure server (rdmx_rpc_secure_workers_*, rdmx/rpc_secure.h):
 * 16 clients over 2..4 workers on the tcp provider; connections dealt out
 * in turn at accept time (the per-worker counts), every call answered
 * exactly once and served on every worker's thread, interceptors run on
 * the workers, per-method counters summed over the workers, and a shutdown
 * with calls held on every worker (each completes once, UNAVAILABLE).
 * The workers' engine counters, summed (rdmx_rpc_secure_workers_get_engine_
 * stats): fresh after known traffic on 1..4 workers, from a handler on a
 * worker's own thread, and bounded (RDMX_E_TIMEDOUT, the late worker's
 * previous share) while a handler holds a worker's thread. Certificates are made at test time.
 * Waits are bounded by guards; nothing depends on how long anything takes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <criterion/criterion.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/rpc_stream.h>
#include <rdmx/status.h>

#include "test_assert.h"
#include "tls_test_pki.h"
#include "worker_service.h"

#define N_CLIENTS 16
#define CALLS_PER_CLIENT 8
#define ECHO "rdmx.test.Workers/Echo"
#define HOLD "rdmx.test.Workers/Hold"   /* answered when cancelled */
#define BLOCK "rdmx.test.Workers/Block" /* holds its worker's thread */
#define STATS "rdmx.test.Workers/Stats" /* the engine counters, from a worker */
#define GUARD_MS 60000

static struct tls_test_pki pki;

/* ---- the service (runs on the worker threads) ---- */

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

static void on_connected(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                         void *arg)
{
	struct rdmx_rpc_secure_workers **w = arg;

	(void)conn;
	/* the callback runs on the worker that owns the client */
	if (rdmx_rpc_secure_workers_index_of(*w, srv) >= 0)
		atomic_fetch_add(&conn_cbs, 1);
}

static void on_gone(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                    int status, void *arg)
{
	(void)srv;
	(void)status;
	(void)arg;
	count_gone_early(rdmx_rpc_secure_conn_get_ep(conn));
	atomic_fetch_add(&gone_cbs, 1);
}

/* Block: holds its worker's thread (not just the call) until the test
 * releases it, then echoes. */
static pthread_mutex_t block_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cond = PTHREAD_COND_INITIALIZER;
static atomic_bool block_entered;
static bool block_release;

static void block_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	pthread_mutex_lock(&block_lock);
	atomic_store(&block_entered, true);
	while (!block_release)
		pthread_cond_wait(&block_cond, &block_lock);
	pthread_mutex_unlock(&block_lock);
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static void block_free(void)
{
	pthread_mutex_lock(&block_lock);
	block_release = true;
	pthread_cond_broadcast(&block_cond);
	pthread_mutex_unlock(&block_lock);
}

/* Stats: the summed engine counters asked from the handler, on a worker's
 * thread, once both Stats handlers of the test run (each on its worker: so
 * both ask while neither's loop can answer); answers (status << 32) |
 * connections established. */
static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static unsigned meet_count;

static int stats_meet(void)
{
	struct timespec end;
	int met, rc = 0;

	/* bounded: a lost peer fails the test, it does not hang it */
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += GUARD_MS / 1000;
	pthread_mutex_lock(&meet_lock);
	meet_count++;
	pthread_cond_broadcast(&meet_cond);
	while (meet_count < 2 && rc == 0)
		rc = pthread_cond_timedwait(&meet_cond, &meet_lock, &end);
	met = meet_count >= 2;
	pthread_mutex_unlock(&meet_lock);
	return met;
}

static void stats_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_secure_workers *const *w = arg;
	struct rdmx_ctx_stats es;
	uint64_t v;
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(&v, sizeof(v));
	int rc;

	(void)req;
	(void)len;
	memset(&es, 0, sizeof(es));
	rc = stats_meet() ? rdmx_rpc_secure_workers_get_engine_stats(*w, GUARD_MS, &es)
	                  : RDMX_E_BAD_STATE;
	v = ((uint64_t)(uint32_t)rc << 32) | (uint32_t)es.conns_established;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

/* ---- the fixture ---- */

struct fix {
	struct rdmx_rpc_server *server;
	struct rdmx_tls_config *scfg, *ccfg;
	struct rdmx_rpc_secure_workers *w;
	struct rdmx_pe *pe; /* every client connection is driven by this one engine */
	struct rdmx_rpc_secure_conn *conns[N_CLIENTS];
};

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	cr_assert_eq(tls_test_pki_create(&pki), 0, "test PKI");
	wsvc_reset();
	atomic_store(&conn_cbs, 0);
	atomic_store(&gone_cbs, 0);
	atomic_store(&gone_early, 0);
	atomic_store(&block_entered, false);
	block_release = false;
	meet_count = 0;
}

static void teardown(void)
{
	tls_test_pki_destroy(&pki);
}

static void fix_start(struct fix *f, unsigned workers)
{
	struct rdmx_rpc_secure_server_ops ops = {NULL, on_connected, on_gone, 0};
	struct rdmx_rpc_secure_opts so;
	uint16_t port;

	memset(f, 0, sizeof(*f));
	cr_assert_rc(rdmx_rpc_server_create(&f->server), RDMX_OK);
	cr_assert_rc(
	    rdmx_rpc_server_register(f->server, rdmx_rpc_method_id(ECHO), ECHO, wsvc_echo, NULL),
	    RDMX_OK);
	cr_assert_rc(
	    rdmx_rpc_server_register(f->server, rdmx_rpc_method_id(HOLD), HOLD, wsvc_hold, NULL),
	    RDMX_OK);
	cr_assert_rc(rdmx_rpc_server_register(f->server, rdmx_rpc_method_id(BLOCK), BLOCK,
	                                      block_handler, NULL),
	             RDMX_OK);
	cr_assert_rc(rdmx_rpc_server_register(f->server, rdmx_rpc_method_id(STATS), STATS,
	                                      stats_handler, &f->w),
	             RDMX_OK);
	cr_assert_rc(rdmx_rpc_server_add_interceptor(f->server, &wsvc_count_ic, NULL), RDMX_OK);
	f->scfg = tls_test_config(&pki, "client2", "client.test", 0);
	f->ccfg = tls_test_config(&pki, "client", "client2.test", 0);
	cr_assert(f->scfg && f->ccfg);
	rdmx_rpc_secure_opts_init(&so);
	so.device = "tcp";
	so.name = "workers";
	cr_assert_rc(rdmx_rpc_secure_workers_listen(workers, f->server, f->scfg, "127.0.0.1", 0,
	                                            &ops, &so, &f->w, &f->w),
	             RDMX_OK);
	cr_assert_eq(rdmx_rpc_secure_workers_get_count(f->w), workers);
	cr_assert_rc(rdmx_rpc_secure_workers_get_port(f->w, &port), RDMX_OK);
	cr_assert_neq(port, 0);
	cr_assert_rc(rdmx_pe_create(&f->pe), RDMX_OK);
	for (int i = 0; i < N_CLIENTS; i++) {
		struct rdmx_rpc_secure_opts co;

		rdmx_rpc_secure_opts_init(&co);
		co.device = "tcp";
		co.name = "client";
		co.timeout_ms = 30000;
		/* one at a time: the i-th accepted connection is this one */
		cr_assert_rc(
		    rdmx_rpc_secure_connect("127.0.0.1", port, f->ccfg, f->pe, &co, &f->conns[i]),
		    RDMX_OK);
	}
}

static void fix_close_clients(struct fix *f)
{
	for (int i = 0; i < N_CLIENTS; i++)
		cr_assert_rc(rdmx_rpc_secure_close(&f->conns[i]), RDMX_OK);
}

/* Closes the clients and stops the workers (joined: everything they ran
 * is visible); the server stays for the checks. */
static void fix_stop_workers(struct fix *f)
{
	fix_close_clients(f);
	cr_assert_rc(rdmx_rpc_secure_workers_destroy(&f->w), RDMX_OK);
	cr_assert_null(f->w);
}

static void fix_stop(struct fix *f)
{
	if (f->w)
		fix_stop_workers(f);
	cr_assert_rc(rdmx_pe_destroy(&f->pe), RDMX_OK);
	cr_assert_rc(rdmx_rpc_server_destroy(&f->server), RDMX_OK);
	rdmx_tls_config_destroy(&f->scfg);
	rdmx_tls_config_destroy(&f->ccfg);
}

/* ---- the client side: every call counted ---- */

static void drive_until_done(struct fix *f, const struct wsvc_call *v, int n)
{
	int64_t end = (int64_t)(rdmx_pe_now_ns() / 1000000u) + GUARD_MS;

	while (!wsvc_calls_done(v, (unsigned)n) && (int64_t)(rdmx_pe_now_ns() / 1000000u) < end)
		rdmx_pe_wait(f->pe, 20);
	cr_assert(wsvc_calls_done(v, (unsigned)n), "calls still outstanding after the guard");
}

static void start_call(struct fix *f, int conn, const char *method, struct wsvc_call *c)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(&c->tag, sizeof(c->tag));
	struct rdmx_rpc_call_opts o = {0, false};

	cr_assert_rc(rdmx_rpc_call_async(rdmx_rpc_secure_conn_get_ep(f->conns[conn]),
	                                 rdmx_rpc_method_id(method), &p, &o, wsvc_call_done, c,
	                                 NULL),
	             RDMX_OK);
}

/* The engine counters `now` (summed over the workers) count at least the n
 * Echo calls answered since `before` (NULL: since listen): each request
 * received (one message, 8 bytes of it the tag) and each answer posted, by
 * the worker that served it, before the client saw the answer. */
static void engine_assert_served(const struct rdmx_ctx_stats *now,
                                 const struct rdmx_ctx_stats *before, uint64_t n)
{
	static const struct rdmx_ctx_stats zero;
	const struct rdmx_ctx_stats *b = before ? before : &zero;
	const enum rdmx_task_type out[] = {RDMX_TASK_SEND, RDMX_TASK_SEND_IMM, RDMX_TASK_WRITE,
	                                   RDMX_TASK_WRITE_IMM};
	uint64_t sent = 0, failed = 0;

	for (unsigned t = 0; t < RDMX_TASK_TYPE_COUNT; t++) {
		cr_assert_geq(now->submitted[t], b->submitted[t], "%s went down",
		              rdmx_task_type_name((enum rdmx_task_type)t));
		cr_assert_geq(now->completed[t], b->completed[t]);
		cr_assert_geq(now->bytes[t], b->bytes[t]);
		failed += now->failed[t];
	}
	for (unsigned i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		sent += now->submitted[out[i]] - b->submitted[out[i]];
	cr_assert_geq(now->completed[RDMX_TASK_RECEIVE] - b->completed[RDMX_TASK_RECEIVE], n,
	              "%llu receives completed for %llu requests",
	              (unsigned long long)(now->completed[RDMX_TASK_RECEIVE] -
	                                   b->completed[RDMX_TASK_RECEIVE]),
	              (unsigned long long)n);
	cr_assert_geq(now->bytes[RDMX_TASK_RECEIVE] - b->bytes[RDMX_TASK_RECEIVE],
	              n * sizeof(uint64_t));
	cr_assert_geq(sent, n, "%llu sends submitted for %llu answers", (unsigned long long)sent,
	              (unsigned long long)n);
	cr_assert_eq(failed, 0, "%llu tasks failed", (unsigned long long)failed);
	/* every client's engine connection, on whichever worker it landed */
	cr_assert_eq(now->conns_established, N_CLIENTS, "%llu connections established",
	             (unsigned long long)now->conns_established);
	cr_assert_eq(now->conns_sealed, N_CLIENTS);
	cr_assert_eq(now->conns_failed + now->conns_disconnected, 0);
}

static void many_clients(unsigned workers)
{
	static struct wsvc_call calls[N_CLIENTS * CALLS_PER_CLIENT];
	const unsigned total = N_CLIENTS * CALLS_PER_CLIENT;
	struct rdmx_tls_listener_stats ls;
	struct rdmx_ctx_stats e1, e2;
	struct rdmx_rpc_stats st;
	struct fix f;
	uint64_t sum = 0;

	fix_start(&f, workers);
	/* dealt out in turn: worker i got every workers-th connection */
	for (unsigned i = 0; i < workers; i++) {
		uint64_t want = N_CLIENTS / workers + (i < N_CLIENTS % workers ? 1u : 0u);

		cr_assert_eq(rdmx_rpc_secure_workers_get_assigned(&*f.w, i), want,
		             "worker %u got %llu connections, want %llu", i,
		             (unsigned long long)rdmx_rpc_secure_workers_get_assigned(f.w, i),
		             (unsigned long long)want);
		sum += want;
	}
	cr_assert_eq(sum, N_CLIENTS);
	cr_assert_eq(rdmx_rpc_secure_workers_get_assigned(f.w, workers), 0, "bad index");
	memset(calls, 0, sizeof(calls));
	/* two halves, the workers' engine counters read after each: each read
	 * is fresh (it counts the half just answered) */
	for (unsigned i = 0; i < total; i++) {
		calls[i].tag = 0x5157000000000000ull | i;
		start_call(&f, (int)(i % N_CLIENTS), ECHO, &calls[i]);
		if (i + 1 == total / 2) {
			drive_until_done(&f, calls, (int)(i + 1));
			cr_assert_rc(rdmx_rpc_secure_workers_get_engine_stats(f.w, GUARD_MS, &e1),
			             RDMX_OK);
			engine_assert_served(&e1, NULL, i + 1);
		}
	}
	drive_until_done(&f, calls, (int)total);
	wsvc_assert_echoed(calls, total);
	cr_assert_rc(rdmx_rpc_secure_workers_get_engine_stats(f.w, GUARD_MS, &e2), RDMX_OK);
	engine_assert_served(&e2, &e1, total - total / 2);
	/* a reply means its worker ran connected first, on the same thread */
	for (unsigned i = 0; i < workers; i++)
		cr_assert_eq(rdmx_rpc_secure_workers_get_clients(f.w, i),
		             rdmx_rpc_secure_workers_get_assigned(f.w, i), "worker %u clients", i);
	cr_assert_eq(atomic_load(&conn_cbs), N_CLIENTS);
	/* every worker's listener, summed: each client's one handshake */
	cr_assert_rc(rdmx_rpc_secure_workers_get_listener_stats(f.w, &ls), RDMX_OK);
	cr_assert_eq(ls.accepted, N_CLIENTS, "accepted %llu", (unsigned long long)ls.accepted);
	cr_assert_eq(ls.established, N_CLIENTS, "established %llu",
	             (unsigned long long)ls.established);
	cr_assert_eq(ls.refused + ls.timed_out + ls.over_limit + ls.evicted, 0);
	cr_assert_eq(ls.handshaking, 0);
	cr_assert_eq(atomic_load(&wsvc_echoes), total, "the server ran %u echoes",
	             atomic_load(&wsvc_echoes));
	cr_assert_eq(wsvc_threads(), workers, "calls served on %u threads, want %u", wsvc_threads(),
	             workers);
	cr_assert_eq(atomic_load(&wsvc_ic_started), total, "interceptors started %u",
	             atomic_load(&wsvc_ic_started));
	/* read while the workers run: any thread may ask (each call counted
	 * as it arrived; its completion may still be on its way) */
	cr_assert_rc(rdmx_rpc_server_get_method_stats(f.server, rdmx_rpc_method_id(ECHO), &st),
	             RDMX_OK);
	cr_assert_eq(st.calls, total, "method calls %llu", (unsigned long long)st.calls);
	/* the workers are joined: what they did after sending the answers
	 * (interceptors' on_done, the counters of the completion) is done */
	fix_stop_workers(&f);
	cr_assert_eq(atomic_load(&wsvc_ic_done), total, "interceptors done %u",
	             atomic_load(&wsvc_ic_done));
	cr_assert_rc(rdmx_rpc_server_get_method_stats(f.server, rdmx_rpc_method_id(ECHO), &st),
	             RDMX_OK);
	cr_assert_eq(st.calls, total);
	cr_assert_eq(st.completed, total);
	cr_assert_eq(st.by_code[RDMX_RPC_OK], total);
	cr_assert_eq(st.latency.count, total);
	cr_assert_eq(st.bytes_received, total * sizeof(uint64_t));
	cr_assert_eq(st.bytes_sent, total * sizeof(uint64_t));
	fix_stop(&f);
	cr_assert_eq(atomic_load(&gone_cbs), N_CLIENTS);
}

TestSuite(rpc_secure_workers, .init = setup, .fini = teardown, .timeout = 240);

Test(rpc_secure_workers, two_workers_sixteen_clients)
{
	many_clients(2);
}

Test(rpc_secure_workers, three_workers_sixteen_clients)
{
	many_clients(3);
}

Test(rpc_secure_workers, four_workers_sixteen_clients)
{
	many_clients(4);
}

Test(rpc_secure_workers, one_worker_is_the_plain_server)
{
	many_clients(1);
}

Test(rpc_secure_workers, shutdown_with_calls_held_on_every_worker)
{
	static struct wsvc_call holds[N_CLIENTS], echoes_v[N_CLIENTS];
	struct fix f;
	int64_t end;

	fix_start(&f, 4);
	memset(holds, 0, sizeof(holds));
	memset(echoes_v, 0, sizeof(echoes_v));
	for (int i = 0; i < N_CLIENTS; i++) {
		holds[i].tag = (uint64_t)i;
		start_call(&f, i, HOLD, &holds[i]);
		echoes_v[i].tag = 100u + (uint64_t)i;
		start_call(&f, i, ECHO, &echoes_v[i]);
	}
	/* the echo behind each hold on the same connection proves the hold
	 * arrived (one connection delivers in order) */
	drive_until_done(&f, echoes_v, N_CLIENTS);
	end = (int64_t)(rdmx_pe_now_ns() / 1000000u) + GUARD_MS;
	while (atomic_load(&wsvc_held) < N_CLIENTS && (int64_t)(rdmx_pe_now_ns() / 1000000u) < end)
		rdmx_pe_wait(f.pe, 20);
	cr_assert_eq(atomic_load(&wsvc_held), N_CLIENTS);
	for (int i = 0; i < N_CLIENTS; i++)
		cr_assert_eq(holds[i].done, 0, "hold %d answered early", i);
	/* every worker holds calls; stop them all */
	cr_assert_rc(rdmx_rpc_secure_workers_destroy(&f.w), RDMX_OK);
	cr_assert_eq(atomic_load(&wsvc_hold_cancelled), N_CLIENTS,
	             "every held call is cancelled on its worker once");
	cr_assert_eq(atomic_load(&gone_cbs), N_CLIENTS);
	cr_assert_eq(atomic_load(&gone_early), 0,
	             "%u gone callbacks ran before their held call's cancel callback",
	             atomic_load(&gone_early));
	drive_until_done(&f, holds, N_CLIENTS);
	for (int i = 0; i < N_CLIENTS; i++) {
		cr_assert_eq(holds[i].done, 1, "hold %d completed %d times", i, holds[i].done);
		cr_assert_eq(holds[i].code, RDMX_RPC_UNAVAILABLE, "hold %d: %s", i,
		             rdmx_rpc_code_name(holds[i].code));
		cr_assert_eq(echoes_v[i].done, 1);
	}
	/* the connections are dead but still ours to close */
	fix_close_clients(&f);
	for (int i = 0; i < N_CLIENTS; i++) {
		cr_assert_eq(holds[i].done, 1);
		cr_assert_eq(echoes_v[i].done, 1);
	}
	cr_assert_rc(rdmx_pe_destroy(&f.pe), RDMX_OK);
	cr_assert_rc(rdmx_rpc_server_destroy(&f.server), RDMX_OK);
	rdmx_tls_config_destroy(&f.scfg);
	rdmx_tls_config_destroy(&f.ccfg);
}

/* The engine counters asked while a handler holds worker 1's thread: the
 * wait is bounded (RDMX_E_TIMEDOUT after the timeout; the outcome does not
 * depend on how long anything takes: worker 1 cannot answer until the test
 * lets it go), worker 1's share is its previous answer; once it is let go
 * it answers again. And asked from a handler on each worker's own thread at
 * once: each reads its own share and answers the other while it waits
 * (whether the two calls overlap or not, both are fresh). */
Test(rpc_secure_workers, engine_stats_bounded_and_from_a_worker)
{
	static struct wsvc_call echoes_v[N_CLIENTS], more[N_CLIENTS / 2], blocked, st[2];
	struct rdmx_ctx_stats e1, e2, e3;
	struct fix f;
	int64_t end;

	fix_start(&f, 2);
	memset(echoes_v, 0, sizeof(echoes_v));
	memset(more, 0, sizeof(more));
	memset(&blocked, 0, sizeof(blocked));
	memset(st, 0, sizeof(st));
	for (int i = 0; i < N_CLIENTS; i++) {
		echoes_v[i].tag = 0xec00u + (uint64_t)i;
		start_call(&f, i, ECHO, &echoes_v[i]);
	}
	drive_until_done(&f, echoes_v, N_CLIENTS);
	wsvc_assert_echoed(echoes_v, N_CLIENTS);
	cr_assert_rc(rdmx_rpc_secure_workers_get_engine_stats(f.w, GUARD_MS, &e1), RDMX_OK);
	engine_assert_served(&e1, NULL, N_CLIENTS);

	/* connection 1 is worker 1's (dealt in turn): hold its thread */
	blocked.tag = 0xb10c;
	start_call(&f, 1, BLOCK, &blocked);
	end = (int64_t)(rdmx_pe_now_ns() / 1000000u) + GUARD_MS;
	while (!atomic_load(&block_entered) && (int64_t)(rdmx_pe_now_ns() / 1000000u) < end)
		rdmx_pe_wait(f.pe, 20);
	cr_assert(atomic_load(&block_entered), "the blocking call never ran");
	/* worker 0 serves on: the even connections */
	for (int i = 0; i < N_CLIENTS / 2; i++) {
		more[i].tag = 0x3e00u + (uint64_t)i;
		start_call(&f, 2 * i, ECHO, &more[i]);
	}
	drive_until_done(&f, more, N_CLIENTS / 2);
	wsvc_assert_echoed(more, N_CLIENTS / 2);
	cr_assert_rc(rdmx_rpc_secure_workers_get_engine_stats(f.w, 50, &e2), RDMX_E_TIMEDOUT);
	/* worker 1's share is its previous answer (its 8 connections), worker
	 * 0's fresh or its previous one (within 50 ms or not): never below e1 */
	engine_assert_served(&e2, &e1, 0);

	block_free();
	drive_until_done(&f, &blocked, 1);
	cr_assert_eq(blocked.code, RDMX_RPC_OK);
	cr_assert_eq(blocked.got, blocked.tag);
	cr_assert_rc(rdmx_rpc_secure_workers_get_engine_stats(f.w, GUARD_MS, &e3), RDMX_OK);
	/* worker 1 answers again: the blocking call's request is counted now */
	engine_assert_served(&e3, &e1, N_CLIENTS / 2 + 1);
	engine_assert_served(&e3, &e2, 0);

	/* from each worker's thread: connection 0 is worker 0's, 1 worker 1's */
	for (int i = 0; i < 2; i++)
		start_call(&f, i, STATS, &st[i]);
	drive_until_done(&f, st, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(st[i].code, RDMX_RPC_OK);
		cr_assert_eq((int)(int32_t)(uint32_t)(st[i].got >> 32), RDMX_OK,
		             "asked on worker %d: %s", i,
		             rdmx_strerror((int)(int32_t)(uint32_t)(st[i].got >> 32)));
		cr_assert_eq(st[i].got & 0xffffffffu, N_CLIENTS,
		             "asked on worker %d: %llu connections", i,
		             (unsigned long long)(st[i].got & 0xffffffffu));
	}
	fix_stop(&f);
}

Test(rpc_secure_workers, bad_arguments)
{
	struct rdmx_rpc_server *server = NULL;
	struct rdmx_tls_config *cfg = tls_test_config(&pki, "client2", "client.test", 0);
	struct rdmx_rpc_secure_workers *w = NULL;

	cr_assert_rc(rdmx_rpc_server_create(&server), RDMX_OK);
	cr_assert_rc(
	    rdmx_rpc_secure_workers_listen(0, server, cfg, "127.0.0.1", 0, NULL, NULL, NULL, &w),
	    RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_workers_listen(RDMX_RPC_SECURE_MAX_WORKERS + 1, server, cfg,
	                                            "127.0.0.1", 0, NULL, NULL, NULL, &w),
	             RDMX_E_INVAL);
	cr_assert_rc(
	    rdmx_rpc_secure_workers_listen(2, NULL, cfg, "127.0.0.1", 0, NULL, NULL, NULL, &w),
	    RDMX_E_INVAL);
	cr_assert_null(w);
	cr_assert_rc(rdmx_rpc_secure_workers_destroy(NULL), RDMX_OK);
	cr_assert_rc(rdmx_rpc_secure_workers_destroy(&w), RDMX_OK);
	cr_assert_eq(rdmx_rpc_secure_workers_get_count(NULL), 0);
	cr_assert_eq(rdmx_rpc_secure_workers_index_of(NULL, NULL), -1);
	cr_assert_rc(rdmx_rpc_secure_workers_get_port(NULL, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_workers_get_listener_stats(NULL, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_workers_get_engine_stats(NULL, 0, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_secure_server_get_listener_stats(NULL, NULL), RDMX_E_INVAL);
	cr_assert_rc(rdmx_rpc_server_destroy(&server), RDMX_OK);
	rdmx_tls_config_destroy(&cfg);
}
