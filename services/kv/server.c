/* rdmx-kv serve: the kv service on the default device, behind a mutual-TLS
 * bootstrap endpoint, registered with rdmx-bootstrapd.
 *
 *   rdmx-kv serve --listen HOST:PORT --ca F --cert F --key F [--crl F]
 *                 [--registry ADDRESS] [--registry-name PATTERN]
 *                 [--service NAME] [--advertise HOST:PORT] [--allow PATTERN]...
 *                 [--ttl-ms N] [--max-bytes SIZE] [--data DIR [--data-max-bytes SIZE]]
 *                 [--workers N] [--verbose]
 *
 * Prints "listening HOST PORT" once clients can connect, then
 * "registered service=NAME id=N endpoint=HOST:PORT" once it is in the
 * registry. SIGINT / SIGTERM: NOT_SERVING, leave the registry, close.
 * --data DIR keeps the keys and values in LMDB there (store.h): a Put or
 * Delete is answered OK only after its transaction committed.
 * A large Put value is not copied on its way in: the memory store keeps the
 * buffer the value was read into (rdmx_rpc_server_call_take_request), LMDB
 * copies it once into its map.
 * --workers N serves from N threads (rdmx_rpc_secure_workers_*, each with
 * its own device, engine and loop; clients dealt out in turn at accept
 * time); the handlers then run on the workers concurrently: the store has
 * its lock (store.h), the call counters are atomic, and the metrics keep
 * the clients' counters under conns_lock (a live client's channel is
 * counted when it leaves; the engine counters are the workers' contexts'
 * summed). Signals, the registry and /metrics stay on the main loop. */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include <rdmx/dev.h>
#include <rdmx/health.h>
#include <rdmx/metrics.h>
#include <rdmx/registry.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "cli.h"
#include "kv.h"
#include "kv.rdmx.h"
#include "metrics_http.h"
#include "put.h"
#include "read.h"
#include "scan.h"
#include "sd_notify.h"
#include "store.h"

#define MAX_ALLOW 32

struct serve_opts {
	const char *listen, *registry, *registry_name, *service, *advertise, *metrics, *data;
	char metrics_host[256];
	uint16_t metrics_port;
	const char *allow[MAX_ALLOW];
	int n_allow;
	struct kv_tls tls;
	uint32_t ttl_ms;
	int64_t max_bytes;
	uint64_t data_max_bytes;
	unsigned workers;
	bool verbose;
};

struct kv_server {
	struct serve_opts o;
	struct ev_loop *loop;
	struct kv_store *store;
	struct rdmx_rpc_server *rpc;
	struct rdmx_tls_config *tls, *reg_tls;
	struct rdmx_dev *dev;
	uint64_t max_msg, max_value;
	struct rdmx_rpc_secure_server *srv;
	struct rdmx_rpc_secure_workers *workers; /* --workers N > 1, instead of srv */
	struct rdmx_registry_keeper *keeper;
	char reg_host[256], endpoint[300];
	uint16_t reg_port;
	ev_signal sigint, sigterm;
	int stop_signal; /* SIGINT or SIGTERM came */
	_Atomic uint64_t calls[4];
	/* --metrics: the live endpoints and the counters of those gone */
	struct rdmx_metrics_http *metrics;
	struct rdmx_rpc_ep **conns;
	size_t n_conns, cap_conns;
	struct rdmx_rpc_stats client_retired;
	struct rdmx_chan_stats chan_retired;
	pthread_mutex_t conns_lock; /* conns and the retired counters */
};

/* ---- handlers ---- */

static bool key_ok(struct rdmx_str key)
{
	return key.len >= 1 && key.len <= KV_MAX_KEY;
}

/* a one-way Get or Scan is refused (read.h): counted apart, not as a call */
static void on_get(struct rdmx_rpc_server_call *call, const kv_GetRequest *req, void *arg)
{
	struct kv_server *k = arg;

	if (kv_get_respond(k->store, call, req)) /* read.c */
		k->calls[0]++;
}

/* a failed put or delete: the status code and the client's message */
static enum rdmx_rpc_code store_code(int rc)
{
	if (rc == RDMX_E_FULL || rc == RDMX_E_NOMEM)
		return RDMX_RPC_RESOURCE_EXHAUSTED;
	if (rc == RDMX_E_TOO_BIG)
		return RDMX_RPC_INVALID_ARGUMENT;
	return RDMX_RPC_INTERNAL;
}

static const char *store_message(const struct kv_server *k, int rc)
{
	if (rc == RDMX_E_FULL)
		return k->o.data ? "the store is full (--data-max-bytes)"
		                 : "the store is full (--max-bytes)";
	if (rc == RDMX_E_NOMEM)
		return "out of memory";
	if (rc == RDMX_E_TOO_BIG)
		return "the key is too long for the LMDB store (--data)";
	return "the store failed (logged)";
}

static void on_put(struct rdmx_rpc_server_call *call, const kv_PutRequest *req, void *arg)
{
	struct kv_server *k = arg;
	kv_PutResponse resp;
	int rc;

	k->calls[1]++;
	if (!key_ok(req->key)) {
		kv_KV_Put_respond(call, RDMX_RPC_INVALID_ARGUMENT, "a key is 1..4096 bytes", NULL);
		return;
	}
	if (req->value.len > k->max_value) {
		kv_KV_Put_respond(call, RDMX_RPC_INVALID_ARGUMENT, "the value is too large", NULL);
		return;
	}
	kv_PutResponse_init(&resp);
	rc = kv_put_request(k->store, call, req, &resp.replaced, NULL); /* put.c */
	if (rc) {
		kv_KV_Put_respond(call, store_code(rc), store_message(k, rc), NULL);
		return;
	}
	kv_KV_Put_respond(call, RDMX_RPC_OK, NULL, &resp);
}

static void on_delete(struct rdmx_rpc_server_call *call, const kv_DeleteRequest *req, void *arg)
{
	struct kv_server *k = arg;
	kv_DeleteResponse resp;
	int rc;

	k->calls[2]++;
	if (!key_ok(req->key)) {
		kv_KV_Delete_respond(call, RDMX_RPC_INVALID_ARGUMENT, "a key is 1..4096 bytes",
		                     NULL);
		return;
	}
	kv_DeleteResponse_init(&resp);
	rc = kv_store_del(k->store, req->key.data, req->key.len, &resp.deleted);
	if (rc) {
		kv_KV_Delete_respond(call, store_code(rc), store_message(k, rc), NULL);
		return;
	}
	kv_KV_Delete_respond(call, RDMX_RPC_OK, NULL, &resp);
}

static void on_scan(struct rdmx_rpc_server_call *call, const kv_ScanRequest *req, void *arg)
{
	struct kv_server *k = arg;

	if (kv_scan_respond(k->store, call, req)) /* scan.c */
		k->calls[3]++;
}

static const char *server_device(const struct kv_server *k)
{
	return k->dev ? rdmx_dev_name(k->dev) : "?";
}

/* ---- registry ---- */

/* From the keeper's thread: registry traffic never runs on the serving
 * loop (a frozen registry must not stall the calls). */
static void registry_changed(struct rdmx_registry_keeper *keeper, uint64_t member, int status,
                             void *arg)
{
	struct kv_server *k = arg;

	(void)keeper;
	if (member) {
		printf("registered service=%s id=%llu endpoint=%s\n", k->o.service,
		       (unsigned long long)member, k->endpoint);
		fflush(stdout);
	} else {
		fprintf(stderr, "rdmx-kv: registry membership lost: %s; joining again\n",
		        rdmx_strerror(status));
	}
}

static int registry_join(struct kv_server *k)
{
	static const char *meta_keys[] = {"device", "protocol"};
	struct rdmx_registry_keeper_opts ko;
	struct rdmx_registry_kv meta[2];
	int rc;

	meta[0].key = meta_keys[0];
	meta[0].value = server_device(k);
	meta[1].key = meta_keys[1];
	meta[1].value = "rdmx-bootstrap-mtls";
	rdmx_registry_keeper_opts_init(&ko);
	ko.url = k->o.registry; /* HOST:PORT, rdmx://HOST:PORT or etcd://... */
	ko.cfg = k->reg_tls;
	ko.service = k->o.service;
	ko.endpoint = k->endpoint;
	ko.meta = meta;
	ko.n_meta = 2;
	ko.ttl_ms = k->o.ttl_ms;
	ko.cb = registry_changed;
	ko.arg = k;
	rc = rdmx_registry_keeper_start(&ko, &k->keeper);
	if (rc)
		fprintf(stderr, "rdmx-kv: joining the registry as %s: %s\n", k->o.service,
		        rdmx_strerror(rc));
	return rc;
}

/* ---- life cycle ---- */

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct kv_server *k = w->data;

	(void)revents;
	fprintf(stderr, "rdmx-kv: signal %d, stopping\n", w->signum);
	k->stop_signal = w->signum;
	ev_break(loop, EVBREAK_ALL);
}

/* Caught from the start: a stop asked while the server binds or joins the
 * registry (before the loop runs) is a clean stop once that step returns,
 * not the signal's default death. */
static void catch_stop_signals(struct kv_server *k)
{
	ev_signal_init(&k->sigint, stop_cb, SIGINT);
	ev_signal_init(&k->sigterm, stop_cb, SIGTERM);
	k->sigint.data = k->sigterm.data = k;
	ev_signal_start(k->loop, &k->sigint);
	ev_signal_start(k->loop, &k->sigterm);
}

enum {
	S_LISTEN = RDMX_CLI_OPT_VERSION + 1,
	S_REGISTRY,
	S_REGISTRY_NAME,
	S_SERVICE,
	S_ADVERTISE,
	S_ALLOW,
	S_TTL,
	S_MAX_BYTES,
	S_METRICS,
	S_DATA,
	S_DATA_MAX_BYTES,
	S_WORKERS,
};

static const struct option serve_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"listen", required_argument, NULL, S_LISTEN},
    {"registry", required_argument, NULL, S_REGISTRY},
    {"registry-name", required_argument, NULL, S_REGISTRY_NAME},
    {"service", required_argument, NULL, S_SERVICE},
    {"advertise", required_argument, NULL, S_ADVERTISE},
    RDMX_CLI_LONGOPTS_TLS,
    {"allow", required_argument, NULL, S_ALLOW},
    {"ttl-ms", required_argument, NULL, S_TTL},
    {"max-bytes", required_argument, NULL, S_MAX_BYTES},
    {"metrics", required_argument, NULL, S_METRICS},
    {"data", required_argument, NULL, S_DATA},
    {"data-max-bytes", required_argument, NULL, S_DATA_MAX_BYTES},
    {"workers", required_argument, NULL, S_WORKERS},
    {"device", required_argument, NULL, 'd'},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* 0 parsed, 1 help / version printed, -1 usage error (said) */
static int parse(int argc, char **argv, struct serve_opts *o)
{
	struct rdmx_cli_tls tls = {NULL, NULL, NULL, NULL, false};
	uint64_t size;
	long v;
	int c;

	o->service = KV_DEFAULT_SERVICE;
	o->ttl_ms = 10000;
	o->max_bytes = 1ll << 30;
	o->data_max_bytes = 1ull << 30;
	o->workers = 1;
	o->registry = rdmx_cli_registry_env();
	rdmx_cli_reset();
	while ((c = rdmx_cli_getopt("rdmx-kv", argc, argv, "hd:v", serve_options, true)) != -1) {
		if (rdmx_cli_tls_opt(&tls, c, optarg))
			continue;
		if (rdmx_cli_std_opt("rdmx-kv", c, kv_usage))
			return 1;
		switch (c) {
		case S_LISTEN:
			o->listen = optarg;
			break;
		case S_REGISTRY:
			o->registry = optarg;
			break;
		case S_REGISTRY_NAME:
			o->registry_name = optarg;
			break;
		case S_SERVICE:
			o->service = optarg;
			break;
		case S_ADVERTISE:
			o->advertise = optarg;
			break;
		case S_ALLOW:
			if (o->n_allow == MAX_ALLOW) {
				fprintf(stderr, "rdmx-kv: at most %d --allow\n", MAX_ALLOW);
				return -1;
			}
			o->allow[o->n_allow++] = optarg;
			break;
		case S_TTL:
			if (rdmx_cli_parse_long("rdmx-kv", "--ttl-ms", optarg, 100, 3600000, &v))
				return -1;
			o->ttl_ms = (uint32_t)v;
			break;
		case S_MAX_BYTES:
			if (rdmx_cli_parse_size("rdmx-kv", "--max-bytes", optarg, 1, 1ull << 40,
			                        &size))
				return -1;
			o->max_bytes = (int64_t)size;
			break;
		case S_DATA:
			if (!*optarg) {
				rdmx_cli_bad_value("rdmx-kv", "--data", optarg);
				return -1;
			}
			o->data = optarg;
			break;
		case S_DATA_MAX_BYTES:
			if (rdmx_cli_parse_size("rdmx-kv", "--data-max-bytes", optarg, 1ull << 20,
			                        1ull << 40, &o->data_max_bytes))
				return -1;
			break;
		case S_WORKERS:
			if (rdmx_cli_parse_long("rdmx-kv", "--workers", optarg, 1,
			                        RDMX_RPC_SECURE_MAX_WORKERS, &v))
				return -1;
			o->workers = (unsigned)v;
			break;
		case S_METRICS:
			if (rdmx_cli_split_addr(optarg, o->metrics_host, sizeof(o->metrics_host),
			                        &o->metrics_port)) {
				rdmx_cli_bad_value("rdmx-kv", "--metrics", optarg);
				return -1;
			}
			o->metrics = optarg;
			break;
		case 'd':
			rdmx_cli_set_device(optarg);
			break;
		case 'v':
			o->verbose = true;
			break;
		default:
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmx-kv: serve takes no operand ('%s')\n", argv[optind]);
		return -1;
	}
	rdmx_cli_tls_env(&tls);
	o->tls.ca = tls.ca;
	o->tls.cert = tls.cert;
	o->tls.key = tls.key;
	o->tls.crl = tls.crl;
	o->tls.allow_insecure_key = tls.allow_insecure_key;
	if (!o->listen || !o->tls.ca || !o->tls.cert || !o->tls.key) {
		fprintf(stderr, "rdmx-kv: serve needs --listen, --ca, --cert and --key\n");
		return -1;
	}
	return 0;
}

static void conns_add(struct kv_server *k, struct rdmx_rpc_ep *ep)
{
	if (k->n_conns == k->cap_conns) {
		size_t cap = k->cap_conns ? 2 * k->cap_conns : 16;
		struct rdmx_rpc_ep **grown = realloc(k->conns, cap * sizeof(*grown));

		if (grown) {
			k->conns = grown;
			k->cap_conns = cap;
		}
	}
	if (k->n_conns < k->cap_conns)
		k->conns[k->n_conns++] = ep;
	else
		fprintf(stderr,
		        "rdmx-kv: out of memory: a client's channel is not in the metrics\n");
}

static void on_connected(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                         void *arg)
{
	struct rdmx_rpc_ep *ep = rdmx_rpc_secure_conn_get_ep(conn);
	struct kv_server *k = arg;
	const char *cert = "?", *hello = "";
	struct kv_conn *kc;

	(void)srv;
	kc = calloc(1, sizeof(*kc));
	if (!kc || rdmx_rpc_ep_set_user_data(ep, kc)) {
		free(kc);
		fprintf(stderr, "rdmx-kv: out of memory: a client's one-way reads are refused "
		                "without a line\n");
	}
	pthread_mutex_lock(&k->conns_lock);
	/* with workers a live endpoint is its worker's alone: counted when it
	 * goes (on_gone) */
	if (k->o.workers <= 1)
		conns_add(k, ep);
	pthread_mutex_unlock(&k->conns_lock);
	if (!k->o.verbose)
		return;
	rdmx_rpc_secure_get_peer_names(conn, &cert, &hello);
	fprintf(stderr, "rdmx-kv: client %s (%s) connected\n", cert, hello);
}

static void on_gone(struct rdmx_rpc_secure_server *srv, struct rdmx_rpc_secure_conn *conn,
                    int status, void *arg)
{
	struct rdmx_rpc_ep *ep = rdmx_rpc_secure_conn_get_ep(conn);
	struct kv_server *k = arg;
	const char *cert = "?", *hello = "";

	free(rdmx_rpc_ep_get_user_data(ep)); /* its struct kv_conn (on_connected) */
	rdmx_rpc_ep_set_user_data(ep, NULL);
	pthread_mutex_lock(&k->conns_lock);
	if (k->o.workers > 1)
		rdmx_metrics_retire(ep, &k->client_retired, &k->chan_retired);
	for (size_t i = 0; i < k->n_conns; i++) {
		if (k->conns[i] != ep)
			continue;
		rdmx_metrics_retire(ep, &k->client_retired, &k->chan_retired);
		k->conns[i] = k->conns[--k->n_conns];
		break;
	}
	pthread_mutex_unlock(&k->conns_lock);
	if (k->o.verbose) {
		rdmx_rpc_secure_get_peer_names(conn, &cert, &hello);
		fprintf(stderr, "rdmx-kv: client %s (%s) gone: %s\n", cert, hello,
		        rdmx_strerror(status));
	}
#ifdef __GLIBC__
	/* the last client is leaving: give the heap its sessions and deleted
	 * values held back to the system, so an idle server shrinks again */
	if (rdmx_rpc_secure_server_get_clients(srv) <= 1)
		malloc_trim(0);
#else
	(void)srv;
#endif
}

/* /metrics: the RPC server's methods, the clients' channels, the engine
 * and the TLS listener (every worker's, summed) */
static int fill_metrics(FILE *f, void *arg)
{
	struct kv_server *k = arg;
	struct rdmx_metrics_sources src;
	struct rdmx_tls_listener_stats ls;
	struct rdmx_ctx_stats es;
	struct rdmx_ctx *ctx;
	int rc;

	memset(&src, 0, sizeof(src));
	/* the engine context the secure server made for its clients; with
	 * workers, their contexts' counters summed (each worker copies its
	 * own on its thread; one busy past the library's default bound, 1 s,
	 * counts with its previous copy, the library logs it) */
	ctx = k->srv ? rdmx_chan_worker_get_ctx(rdmx_rpc_secure_server_get_worker(k->srv)) : NULL;
	if (ctx && rdmx_ctx_get_stats(ctx, &es) == 0)
		src.engine = &es;
	if (k->workers) {
		rc = rdmx_rpc_secure_workers_get_engine_stats(k->workers, 0, &es);
		if (rc == RDMX_OK || rc == RDMX_E_TIMEDOUT)
			src.engine = &es;
	}
	src.server = k->rpc;
	if ((k->srv ? rdmx_rpc_secure_server_get_listener_stats(k->srv, &ls)
	            : rdmx_rpc_secure_workers_get_listener_stats(k->workers, &ls)) == 0)
		src.listener = &ls;
	src.conns = k->conns;
	src.n_conns = k->n_conns;
	src.client_retired = &k->client_retired;
	src.chan_retired = &k->chan_retired;
	src.clients = k->srv ? (int64_t)rdmx_rpc_secure_server_get_clients(k->srv) : 0;
	for (unsigned i = 0; i < rdmx_rpc_secure_workers_get_count(k->workers); i++)
		src.clients += rdmx_rpc_secure_workers_get_clients(k->workers, i);
	pthread_mutex_lock(&k->conns_lock);
	rc = rdmx_metrics_write(f, &src);
	pthread_mutex_unlock(&k->conns_lock);
	return rc;
}

int kv_serve_main(int argc, char **argv)
{
	static const struct kv_KV_handlers handlers = {on_get, on_put, on_delete, on_scan};
	struct kv_server k;
	struct rdmx_rpc_secure_server_ops ops = {NULL, NULL, NULL, 0};
	struct rdmx_rpc_secure_opts so;
	char host[256];
	uint16_t bound = 0;
	uint16_t port;
	int ret = 1, rc;

	memset(&k, 0, sizeof(k));
	pthread_mutex_init(&k.conns_lock, NULL);
	rc = parse(argc, argv, &k.o);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (kv_split_addr(k.o.listen, host, sizeof(host), &port)) {
		fprintf(stderr, "rdmx-kv serve: --listen wants HOST:PORT, got %s\n", k.o.listen);
		return 2;
	}
	if (k.o.registry && !strstr(k.o.registry, "://") &&
	    kv_split_addr(k.o.registry, k.reg_host, sizeof(k.reg_host), &k.reg_port)) {
		fprintf(stderr,
		        "rdmx-kv serve: --registry wants HOST:PORT, rdmx://HOST:PORT or "
		        "etcd://HOST:PORT[,HOST:PORT...], got %s\n",
		        k.o.registry);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	k.loop = ev_default_loop(0);
	if (!k.loop) {
		fprintf(stderr, "rdmx-kv serve: no event loop\n");
		goto out;
	}
	catch_stop_signals(&k);
	rc = k.o.data ? kv_store_open_lmdb(k.o.data, k.o.data_max_bytes, &k.store)
	              : kv_store_open_memory((uint64_t)k.o.max_bytes, &k.store);
	if (rc) {
		fprintf(stderr, "rdmx-kv serve: opening the store%s%s: %s\n",
		        k.o.data ? " in " : "", k.o.data ? k.o.data : "", rdmx_strerror(rc));
		goto out;
	}
	if (rdmx_rpc_server_create(&k.rpc))
		goto out;
	/* the handlers, and kv.proto for the reflection service */
	rc = kv_KV_register(k.rpc, &handlers, &k);
	if (rc) {
		fprintf(stderr, "rdmx-kv serve: registering the service: %s\n", rdmx_strerror(rc));
		goto out;
	}
	k.tls = kv_tls_config(&k.o.tls, k.o.allow, k.o.n_allow, "rdmx-kv serve");
	if (!k.tls)
		goto out;
	/* mutual TLS bootstrap, then a channel and an RPC endpoint per client,
	 * all driven by the loop (rdmx/rpc_secure.h) */
	ops.connected = on_connected;
	ops.gone = on_gone;
	if (kv_open_device(&k.dev, &k.max_msg, &k.max_value, "rdmx-kv serve"))
		goto out;
	rdmx_rpc_secure_opts_init(&so);
	so.dev = k.dev;
	so.name = k.o.service;
	so.max_msg_size = k.max_msg;
	if (k.o.workers > 1) {
		/* each worker opens a device of its own, by the same name */
		so.dev = NULL;
		so.device = rdmx_dev_name(k.dev);
		rc = rdmx_rpc_secure_workers_listen(k.o.workers, k.rpc, k.tls, host, port, &ops,
		                                    &so, &k, &k.workers);
		if (!rc)
			rc = rdmx_rpc_secure_workers_get_port(k.workers, &bound);
	} else {
		rc =
		    rdmx_rpc_secure_listen(k.loop, k.rpc, k.tls, host, port, &ops, &so, &k, &k.srv);
		if (!rc)
			rc = rdmx_rpc_secure_server_get_port(k.srv, &bound);
	}
	if (rc) {
		fprintf(stderr, "rdmx-kv serve: listening on %s: %s\n", k.o.listen,
		        rdmx_strerror(rc));
		goto out;
	}
	if (k.o.advertise)
		snprintf(k.endpoint, sizeof(k.endpoint), "%s", k.o.advertise);
	else
		snprintf(k.endpoint, sizeof(k.endpoint), "%s%s%s:%u", strchr(host, ':') ? "[" : "",
		         host, strchr(host, ':') ? "]" : "", bound);
	printf("listening %s %u\n", host, bound);
	fflush(stdout);
	if (k.o.metrics) {
		if (rdmx_metrics_http_create(k.loop, k.o.metrics_host, k.o.metrics_port,
		                             fill_metrics, &k, "rdmx-kv", &k.metrics))
			goto out;
		printf("metrics %s %u\n", *k.o.metrics_host ? k.o.metrics_host : "*",
		       rdmx_metrics_http_port(k.metrics));
		fflush(stdout);
	}
	fprintf(stderr,
	        "rdmx-kv: serving %s on %s (device %s, mutual TLS), values up to %llu MiB, "
	        "%u worker%s\n",
	        k.o.service, k.endpoint, server_device(&k), (unsigned long long)(k.max_value >> 20),
	        k.o.workers, k.o.workers == 1 ? "" : "s");
	if (k.o.data)
		fprintf(stderr, "rdmx-kv: store: lmdb in %s (%zu keys, map up to %llu MiB)\n",
		        k.o.data, kv_store_count(k.store),
		        (unsigned long long)(k.o.data_max_bytes >> 20));
	if (k.o.registry) {
		const char *reg_name[1] = {k.o.registry_name};

		k.reg_tls =
		    kv_tls_config(&k.o.tls, reg_name, k.o.registry_name ? 1 : 0, "rdmx-kv serve");
		if (!k.reg_tls)
			goto out;
		if (registry_join(&k)) {
			ev_run(k.loop, EVRUN_NOWAIT); /* a stop asked meanwhile */
			if (!k.stop_signal)
				goto out;
		}
	}
	if (!k.stop_signal) { /* else a stop came while joining: seen already */
		rdmx__svc_notify("READY=1");
		ev_run(k.loop, 0);
	}
	rdmx__svc_notify("STOPPING=1");
	ret = 0;
	rdmx_rpc_server_set_health(k.rpc, NULL, RDMX_HEALTH_NOT_SERVING);
	rdmx_registry_keeper_stop(&k.keeper); /* leaves the registry */
	fprintf(stderr,
	        "rdmx-kv: stopped (%zu keys, %llu bytes; calls: get %llu, put %llu, del %llu, "
	        "scan %llu; one-way reads refused %llu)\n",
	        kv_store_count(k.store), (unsigned long long)kv_store_bytes(k.store),
	        (unsigned long long)k.calls[0], (unsigned long long)k.calls[1],
	        (unsigned long long)k.calls[2], (unsigned long long)k.calls[3],
	        (unsigned long long)kv_read_oneway_refused());
	for (unsigned i = 0; i < rdmx_rpc_secure_workers_get_count(k.workers); i++)
		fprintf(stderr, "rdmx-kv: worker %u: %llu connections\n", i,
		        (unsigned long long)rdmx_rpc_secure_workers_get_assigned(k.workers, i));
out:
	if (k.loop) {
		ev_signal_stop(k.loop, &k.sigint);
		ev_signal_stop(k.loop, &k.sigterm);
	}
	rdmx_metrics_http_destroy(&k.metrics);
	rdmx_registry_keeper_stop(&k.keeper);
	rdmx_rpc_secure_server_destroy(&k.srv);
	rdmx_rpc_secure_workers_destroy(&k.workers);
	free(k.conns);
	rdmx_dev_close(&k.dev);
	{
		const struct rdmx_rpc_server *gone = k.rpc;

		rdmx_rpc_server_destroy(&k.rpc);
		rdmx_codec_release_bindings(gone);
	}
	rdmx_tls_config_destroy(&k.tls);
	rdmx_tls_config_destroy(&k.reg_tls);
	kv_store_destroy(&k.store);
	return ret;
}
