/* Calls per second of the multi-worker secure server
 * (rdmx_rpc_secure_workers_*) over the tcp provider, on loopback:
 *
 *   workers_bench [--workers N] [--clients C] [--inflight K] [--size B]
 *                 [--seconds S]
 *
 * One process: the server with N worker threads, and C client threads,
 * each with its own progress engine and one secure connection, keeping
 * K / C echo calls of B bytes in flight each (K in flight in all; default
 * N 1, C 4, K 16, B 64, S 3). After a warm-up second, counts the calls
 * completed in S seconds and prints
 *   RESULT workers=N clients=C inflight=K size=B calls_per_s=X
 * Certificates are made at start (the tests' PKI). Not a test: the numbers
 * depend on the host (docs/BENCHMARKS.md says how they were taken). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmx/pe.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>

#include "tls_test_pki.h"

#define ECHO "rdmx.bench.Workers/Echo"

static unsigned n_workers = 1, n_clients = 4, inflight = 16, size = 64, seconds = 3;
static uint16_t port;
static struct rdmx_tls_config *client_cfg;
static atomic_bool counting, stopping;
static atomic_uint_fast64_t completed;
static atomic_uint ready;

static void echo(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);

	(void)arg;
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

struct client {
	pthread_t thread;
	struct rdmx_pe *pe;
	struct rdmx_rpc_secure_conn *conn;
	unsigned depth, outstanding;
	uint8_t *buf;
	int failed;
};

static void issue(struct client *c);

static void done(const struct rdmx_rpc_result *r, void *arg)
{
	struct client *c = arg;

	c->outstanding--;
	if (r->code != RDMX_RPC_OK) {
		c->failed = 1;
		return;
	}
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add_explicit(&completed, 1, memory_order_relaxed);
	if (!atomic_load_explicit(&stopping, memory_order_relaxed))
		issue(c);
}

static void issue(struct client *c)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(c->buf, size);
	struct rdmx_rpc_call_opts o = {0, false};

	if (rdmx_rpc_call_async(rdmx_rpc_secure_conn_get_ep(c->conn), rdmx_rpc_method_id(ECHO), &p,
	                        &o, done, c, NULL) == 0)
		c->outstanding++;
	else
		c->failed = 1;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct rdmx_rpc_secure_opts o;
	int rc;

	rdmx_rpc_secure_opts_init(&o);
	o.device = "tcp";
	o.timeout_ms = 30000;
	rc = rdmx_pe_create(&c->pe);
	if (!rc)
		rc = rdmx_rpc_secure_connect("127.0.0.1", port, client_cfg, c->pe, &o, &c->conn);
	if (rc) {
		fprintf(stderr, "workers_bench: connect: %s\n", rdmx_strerror(rc));
		c->failed = 1;
		atomic_fetch_add(&ready, 1);
		return NULL;
	}
	atomic_fetch_add(&ready, 1);
	for (unsigned i = 0; i < c->depth; i++)
		issue(c);
	while (!c->failed && (c->outstanding || !atomic_load(&stopping)))
		rdmx_pe_wait(c->pe, 50);
	rdmx_rpc_secure_close(&c->conn);
	rdmx_pe_destroy(&c->pe);
	return NULL;
}

static unsigned arg_u(const char *v, unsigned lo, unsigned hi, const char *name)
{
	char *end;
	unsigned long x = strtoul(v, &end, 10);

	if (*end || x < lo || x > hi) {
		fprintf(stderr, "workers_bench: %s wants %u..%u, got %s\n", name, lo, hi, v);
		exit(2);
	}
	return (unsigned)x;
}

static void sleep_s(unsigned s)
{
	struct timespec ts = {(time_t)s, 0};

	while (nanosleep(&ts, &ts))
		;
}

int main(int argc, char **argv)
{
	struct tls_test_pki pki;
	struct rdmx_rpc_server *server = NULL;
	struct rdmx_tls_config *scfg;
	struct rdmx_rpc_secure_workers *w = NULL;
	struct rdmx_rpc_secure_opts so;
	struct client *cl;
	uint64_t n;
	int failed = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--workers"))
			n_workers = arg_u(argv[i + 1], 1, RDMX_RPC_SECURE_MAX_WORKERS, argv[i]);
		else if (!strcmp(argv[i], "--clients"))
			n_clients = arg_u(argv[i + 1], 1, 256, argv[i]);
		else if (!strcmp(argv[i], "--inflight"))
			inflight = arg_u(argv[i + 1], 1, 4096, argv[i]);
		else if (!strcmp(argv[i], "--size"))
			size = arg_u(argv[i + 1], 1, 1u << 20, argv[i]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = arg_u(argv[i + 1], 1, 600, argv[i]);
		else {
			fprintf(stderr, "workers_bench: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (inflight < n_clients)
		inflight = n_clients;
	signal(SIGPIPE, SIG_IGN);
	if (tls_test_pki_create(&pki)) {
		fprintf(stderr, "workers_bench: cannot make the certificates\n");
		return 1;
	}
	scfg = tls_test_config(&pki, "client2", "client.test", 0);
	client_cfg = tls_test_config(&pki, "client", "client2.test", 0);
	if (!scfg || !client_cfg || rdmx_rpc_server_create(&server) ||
	    rdmx_rpc_server_register(server, rdmx_rpc_method_id(ECHO), ECHO, echo, NULL))
		return 1;
	rdmx_rpc_secure_opts_init(&so);
	so.device = "tcp";
	if (rdmx_rpc_secure_workers_listen(n_workers, server, scfg, "127.0.0.1", 0, NULL, &so, NULL,
	                                   &w) ||
	    rdmx_rpc_secure_workers_get_port(w, &port))
		return 1;
	cl = calloc(n_clients, sizeof(*cl));
	if (!cl)
		return 1;
	for (unsigned i = 0; i < n_clients; i++) {
		cl[i].depth = inflight / n_clients + (i < inflight % n_clients ? 1u : 0u);
		cl[i].buf = calloc(1, size);
		if (!cl[i].buf || pthread_create(&cl[i].thread, NULL, client_main, &cl[i]))
			return 1;
	}
	while (atomic_load(&ready) < n_clients)
		sleep_s(1);
	sleep_s(1); /* warm-up */
	atomic_store(&counting, true);
	sleep_s(seconds);
	atomic_store(&counting, false);
	n = atomic_load(&completed);
	atomic_store(&stopping, true);
	for (unsigned i = 0; i < n_clients; i++) {
		pthread_join(cl[i].thread, NULL);
		failed |= cl[i].failed;
		free(cl[i].buf);
	}
	free(cl);
	rdmx_rpc_secure_workers_destroy(&w);
	rdmx_rpc_server_destroy(&server);
	rdmx_tls_config_destroy(&scfg);
	rdmx_tls_config_destroy(&client_cfg);
	tls_test_pki_destroy(&pki);
	if (failed) {
		fprintf(stderr, "workers_bench: some calls failed\n");
		return 1;
	}
	printf("RESULT workers=%u clients=%u inflight=%u size=%u calls_per_s=%.0f\n", n_workers,
	       n_clients, inflight, size, (double)n / seconds);
	return 0;
}
