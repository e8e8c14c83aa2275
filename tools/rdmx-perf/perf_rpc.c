/* rdmx-perf RPC tests over the channel + RPC layers.
 *
 *   rpc_lat  one call at a time: the WHOLE call round trip (request out,
 *            handler, response in), per call; p50/p99 of those.
 *   rpc_bw   -t calls kept in flight (default 64); ops_per_s = calls/s;
 *            p50/p99 are the round trips of the calls under that load.
 *
 * -s is the request size; the server echoes it (so the response is as big).
 * --poll picks the waiting strategy of BOTH sides (busy: spin on progress;
 * block: sleep on the engine's fd; hybrid). The client's parameters travel
 * in the connection's private data, like the engine tests. */
#include "perf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RPC_METHOD_NAME "rdmx.perf.Echo/Echo"
#define RPC_GUARD_NS (120ull * 1000 * 1000 * 1000)

struct rpc_pd {
	uint32_t magic; /* 'RPCP' */
	uint32_t inflight;
	uint64_t size;
	uint64_t iters;
	uint8_t poll;
};

struct rpc_perf {
	const struct perf_opts *o;
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_chan_worker *worker;
	struct rdmx_rpc_server *srv;
	struct rdmx_conn *conn;
	struct rdmx_chan *chan;
	struct rdmx_rpc_ep *ep;
	volatile bool ready, closed, failed;
	uint32_t method;
	/* client */
	void *req;
	uint64_t done, issued, target;
	uint64_t *start_ns;   /* per call slot */
	uint32_t *free_slots; /* slots with no call, for the main loop */
	uint32_t nfree;
	int issue_rc;    /* a failure of an issue made from a completion */
	double *samples; /* per measured call, us */
	uint64_t nsamples, warmup;
	uint64_t errors;
};
static struct rpc_perf rp;

static void echo(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static void on_closed(struct rdmx_rpc_ep *ep, int status, void *arg)
{
	(void)ep;
	(void)status;
	(void)arg;
	rp.closed = true;
}

static void on_chan_ready(void)
{
	int err = rdmx_chan_create(rp.worker, rp.conn, &rp.chan);

	if (!err)
		err = rdmx_rpc_ep_create(rp.chan, rp.srv, &rp.ep);
	if (!err)
		err = rdmx_rpc_ep_set_closed_cb(rp.ep, on_closed, NULL);
	if (err) {
		fprintf(stderr, "rdmx-perf: channel set-up: %s\n", rdmx_strerror(err));
		rp.failed = true;
		return;
	}
	rdmx_rpc_ep_set_limits(rp.ep, 4096, 4096);
}

static void on_request(struct rdmx_conn *conn, void *ud)
{
	(void)ud;
	if (rp.conn || rdmx_conn_accept(conn, NULL, 0) != 0) {
		rdmx_conn_reject(conn);
		return;
	}
	rp.conn = conn;
}

static void on_established(struct rdmx_conn *conn, void *cud, void *ud)
{
	(void)cud;
	(void)ud;
	rp.conn = conn;
	on_chan_ready();
}

static void on_failure(struct rdmx_conn *conn, void *cud, void *ud)
{
	(void)conn;
	(void)cud;
	(void)ud;
	rp.failed = true;
}

static void on_disconnected(struct rdmx_conn *conn, void *cud, void *ud)
{
	(void)conn;
	(void)cud;
	(void)ud;
	rp.closed = true;
}

static int drive(void)
{
	if (rp.o->poll == RDMX_POLL_BUSY)
		return rdmx_chan_worker_progress(rp.worker);
	return rdmx_chan_worker_wait(rp.worker, 100);
}

static int setup(const struct perf_opts *o, const struct rpc_pd *pd)
{
	struct rdmx_chan_worker_attr attr;
	struct rdmx_addr *addr = NULL;
	int rc;

	memset(&rp, 0, sizeof(rp));
	rp.o = o;
	rp.method = rdmx_rpc_method_id(RPC_METHOD_NAME);
	rc = rdmx_dev_open(o->device, &rp.dev);
	if (!rc)
		rc = rdmx_pe_create(&rp.pe);
	if (!rc)
		rc = rdmx_pe_set_poll_mode(rp.pe, o->poll, 50);
	if (!rc)
		rc = rdmx_ctx_create(rp.dev, rp.pe, &rp.ctx);
	rdmx_chan_worker_attr_init(&attr);
	attr.request_cb = on_request;
	attr.established_cb = on_established;
	attr.failure_cb = on_failure;
	attr.disconnected_cb = on_disconnected;
	if (!rc)
		rc = rdmx_chan_worker_create(rp.ctx, rp.pe, &attr, &rp.worker);
	if (!rc)
		rc = rdmx_ctx_start(rp.ctx);
	if (!rc)
		rc = rdmx_rpc_server_create(&rp.srv);
	if (!rc)
		rc = rdmx_rpc_server_register(rp.srv, rp.method, RPC_METHOD_NAME, echo, NULL);
	if (rc) {
		fprintf(stderr, "rdmx-perf: set-up failed: %s\n", rdmx_strerror(rc));
		return rc;
	}
	if (!o->server) {
		rc = rdmx_ctx_listen(rp.ctx, o->port);
		if (rc) {
			fprintf(stderr, "rdmx-perf: listen on port %u: %s\n", o->port,
			        rdmx_strerror(rc));
			return rc;
		}
		printf("rdmx-perf: %s server on %s port %u, waiting for a client\n", o->test,
		       rdmx_dev_name(rp.dev), o->port);
		fflush(stdout);
		uint64_t t0 = perf_now_ns();
		while (!rp.ep && !rp.failed) {
			rc = rdmx_chan_worker_wait(rp.worker, 100);
			if (rc < 0)
				return rc;
			if (perf_now_ns() - t0 > 10 * RPC_GUARD_NS)
				return RDMX_E_TIMEDOUT;
		}
		rdmx_ctx_stop_listen(rp.ctx);
		return rp.failed ? RDMX_E_CONN_REFUSED : 0;
	}
	enum rdmx_addr_type type = strchr(o->server, ':') ? RDMX_ADDR_IPV6 : RDMX_ADDR_IPV4;
	rc = rdmx_addr_create(type, o->server, o->port, &addr);
	for (int attempt = 0; rc == 0 && attempt < 100; attempt++) {
		struct rdmx_conn *conn;

		rp.failed = false;
		rc = rdmx_ctx_connect_to_addr(rp.ctx, addr, pd, sizeof(*pd), NULL, &conn);
		uint64_t t0 = perf_now_ns();
		while (rc == 0 && !rp.ep && !rp.failed) {
			rc = rdmx_chan_worker_wait(rp.worker, 100);
			rc = rc < 0 ? rc : 0;
			if (perf_now_ns() - t0 > RPC_GUARD_NS)
				rc = RDMX_E_TIMEDOUT;
		}
		if (rc || !rp.failed)
			break;
		struct timespec pause = {0, 100 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	rdmx_addr_destroy(&addr);
	if (!rc && !rp.ep)
		rc = RDMX_E_CONN_REFUSED;
	/* wait for the channel handshake */
	uint64_t t0 = perf_now_ns();
	while (!rc && rdmx_chan_get_state(rp.chan) != RDMX_CHAN_READY) {
		if (rdmx_chan_get_state(rp.chan) == RDMX_CHAN_CLOSED ||
		    perf_now_ns() - t0 > RPC_GUARD_NS)
			rc = RDMX_E_DISCONNECTED;
		else if ((rc = rdmx_chan_worker_wait(rp.worker, 100)) > 0)
			rc = 0;
	}
	if (rc)
		fprintf(stderr, "rdmx-perf: connect to %s:%u: %s\n", o->server, o->port,
		        rdmx_strerror(rc));
	return rc;
}

static void teardown(void)
{
	if (rp.ep && rp.o->server) {
		rdmx_rpc_ep_drain(rp.ep);
		uint64_t t0 = perf_now_ns();
		while (!rdmx_rpc_ep_is_drained(rp.ep) && !rp.closed &&
		       perf_now_ns() - t0 < 2000000000ull)
			rdmx_chan_worker_wait(rp.worker, 10);
	}
	rdmx_rpc_ep_destroy(&rp.ep);
	rdmx_chan_destroy(&rp.chan);
	if (rp.o->server) {
		uint64_t t0 = perf_now_ns();
		while (!rp.closed && perf_now_ns() - t0 < 2000000000ull)
			rdmx_chan_worker_wait(rp.worker, 10);
	}
	if (rp.ctx)
		rdmx_ctx_stop(rp.ctx);
	rdmx_chan_worker_destroy(&rp.worker);
	rdmx_rpc_server_destroy(&rp.srv);
	rdmx_ctx_destroy(&rp.ctx);
	rdmx_pe_destroy(&rp.pe);
	rdmx_dev_close(&rp.dev);
	free(rp.req);
	free(rp.start_ns);
	free(rp.free_slots);
	free(rp.samples);
}

static int serve(void)
{
	uint64_t t0 = perf_now_ns();

	while (!rp.closed) {
		int rc = drive();

		if (rc < 0)
			return rc;
		if (rc > 0)
			t0 = perf_now_ns();
		else if (perf_now_ns() - t0 > 10 * RPC_GUARD_NS)
			return RDMX_E_TIMEDOUT;
	}
	return 0;
}

/* ---- client ---- */

static int issue(uint64_t slot);

/* A finished call's slot issues the next call at once, from its completion
 * (as perftest and the raw TCP client post the next operation as soon as the
 * last one completed); when that cannot go now the slot waits for the main
 * loop. */
static void call_done(const struct rdmx_rpc_result *r, void *arg)
{
	uint64_t slot = (uint64_t)(uintptr_t)arg, seq = rp.done++;
	int rc = RDMX_E_AGAIN;

	if (r->code != RDMX_RPC_OK || r->len != rp.o->size) {
		if (rp.errors++ < 5)
			fprintf(stderr, "rdmx-perf: call failed: %s (%zu bytes)\n",
			        rdmx_rpc_code_name(r->code), r->len);
	}
	if (seq >= rp.warmup && rp.nsamples < rp.target - rp.warmup)
		rp.samples[rp.nsamples++] = (double)(perf_now_ns() - rp.start_ns[slot]) / 1000.0;
	if (rp.issued < rp.target && !rp.issue_rc)
		rc = issue(slot);
	if (rc == RDMX_E_AGAIN)
		rp.free_slots[rp.nfree++] = (uint32_t)slot;
	else if (rc)
		rp.issue_rc = rc;
}

static int issue(uint64_t slot)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(rp.req, rp.o->size);
	int rc;

	rp.start_ns[slot] = perf_now_ns();
	rc = rdmx_rpc_call_async(rp.ep, rp.method, &p, NULL, call_done, (void *)(uintptr_t)slot,
	                         NULL);
	if (rc == 0)
		rp.issued++;
	return rc;
}

static int run_client(uint32_t inflight)
{
	uint64_t warm = rp.o->iters / 10 > 1000 ? 1000 : rp.o->iters / 10;
	uint64_t t_start = 0, guard = perf_now_ns();
	int rc;

	rp.warmup = warm;
	rp.target = rp.o->iters + warm;
	rp.req = malloc(rp.o->size ? rp.o->size : 1);
	rp.start_ns = calloc(inflight, sizeof(*rp.start_ns));
	rp.free_slots = calloc(inflight, sizeof(*rp.free_slots));
	rp.samples = calloc(rp.o->iters, sizeof(double));
	if (!rp.req || !rp.start_ns || !rp.free_slots || !rp.samples)
		return RDMX_E_NOMEM;
	for (uint32_t i = 0; i < inflight; i++)
		rp.free_slots[rp.nfree++] = inflight - 1 - i;
	for (uint64_t i = 0; i < rp.o->size; i++)
		((uint8_t *)rp.req)[i] = (uint8_t)(i * 31);
	/* each slot keeps one call in flight; a finished slot is reused */
	while (rp.done < rp.target) {
		if (rp.done >= warm && !t_start)
			t_start = perf_now_ns();
		while (rp.issued < rp.target && rp.nfree) {
			rc = issue(rp.free_slots[rp.nfree - 1]);
			if (rc == RDMX_E_AGAIN)
				break;
			if (rc)
				return rc;
			rp.nfree--;
		}
		if (rp.issue_rc)
			return rp.issue_rc;
		rc = drive();
		if (rc < 0)
			return rc;
		if (rp.closed)
			return RDMX_E_DISCONNECTED;
		if (perf_now_ns() - guard > RPC_GUARD_NS * 5)
			return RDMX_E_TIMEDOUT;
	}
	double secs = (double)(perf_now_ns() - t_start) / 1e9;
	if (rp.errors) {
		fprintf(stderr, "rdmx-perf: %llu calls failed\n", (unsigned long long)rp.errors);
		return RDMX_E_REMOTE_OP;
	}
	perf_report(rp.o, rp.samples, rp.nsamples, rp.o->iters, rp.o->iters * rp.o->size, secs);
	return 0;
}

/* Round-robin slots would mix start times when calls finish out of order;
 * the echo server answers in order on one connection, so they do not. */
static int run(const struct perf_opts *o, uint32_t inflight)
{
	struct rpc_pd pd = {.magic = 0x50435052u,
	                    .inflight = inflight,
	                    .size = o->size,
	                    .iters = o->iters,
	                    .poll = (uint8_t)o->poll};
	int rc = setup(o, &pd);

	if (!rc)
		rc = o->server ? run_client(inflight) : serve();
	teardown();
	return rc ? 1 : 0;
}

static int run_rpc_lat(const struct perf_opts *o)
{
	return run(o, 1);
}

static int run_rpc_bw(const struct perf_opts *o)
{
	return run(o, o->inflight);
}

const struct perf_test perf_rpc_tests[] = {
    {"rpc_lat", run_rpc_lat},
    {"rpc_bw", run_rpc_bw},
};
const size_t perf_rpc_tests_count = sizeof(perf_rpc_tests) / sizeof(perf_rpc_tests[0]);
