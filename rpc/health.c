/* rdmx.health.v1.Health/Check, answered by every RPC server
 * (include/rdmx/health.h). The request and response are a few bytes of
 * msgpack, written and read by hand with the codec's inline helpers
 * (rdmx/codec.h): two one-field messages do not justify making the core
 * library depend on rdmx-gen at build time. rpc/idl/health.proto is the
 * contract, and the reflection service serves it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/codec.h>
#include <rdmx/health.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_stream.h>
#include <rdmx/status.h>

#include "builtins.h"
#include "chan/chan_rpc.h"
#include "rpc_priv.h"

#define HEALTH_MAX_SERVICE 255u

/* rpc/idl/health.proto, byte for byte (tests/integration/product checks) */
const char rdmx__health_idl[] =
    "// rdmx.health.v1: the health check every rdmx RPC server answers\n"
    "// (registered by rdmx_rpc_server_create; see include/rdmx/health.h).\n"
    "// Modelled on grpc.health.v1.\n"
    "syntax = \"proto3\";\n"
    "package rdmx.health.v1;\n"
    "\n"
    "message HealthCheckRequest {\n"
    "  // \"\" asks about the server as a whole; otherwise a service name\n"
    "  // (\"package.Service\"). An unknown service answers NOT_FOUND.\n"
    "  string service = 1;\n"
    "}\n"
    "\n"
    "message HealthCheckResponse {\n"
    "  enum ServingStatus {\n"
    "    UNKNOWN = 0;\n"
    "    SERVING = 1;\n"
    "    NOT_SERVING = 2;\n"
    "    SERVICE_UNKNOWN = 3;\n"
    "  }\n"
    "  ServingStatus status = 1;\n"
    "}\n"
    "\n"
    "service Health {\n"
    "  rpc Check(HealthCheckRequest) returns (HealthCheckResponse);\n"
    "  // The current status at once, then every change, until the caller\n"
    "  // cancels. An unknown service is reported SERVICE_UNKNOWN (and watched).\n"
    "  rpc Watch(HealthCheckRequest) returns (stream HealthCheckResponse);\n"
    "}\n";

static bool health_lookup(const struct rdmx__builtins *b, const char *svc, size_t n,
                          enum rdmx_health_status *st)
{
	if (n == 0) {
		*st = b->overall;
		return true;
	}
	for (size_t i = 0; i < b->n_health; i++) {
		const char *s = b->health[i].service;

		if (strlen(s) == n && memcmp(s, svc, n) == 0) {
			*st = b->health[i].status;
			return true;
		}
	}
	if (rdmx__builtins_has_service(b, svc, n)) {
		/* a draining server is not serving any of its services */
		*st = b->overall == RDMX_HEALTH_SERVING ? RDMX_HEALTH_SERVING : b->overall;
		return true;
	}
	return false;
}

/* health_lookup under the lock: the table may change on another thread */
static bool health_get(struct rdmx__builtins *b, const char *svc, size_t n,
                       enum rdmx_health_status *st)
{
	bool found;

	pthread_mutex_lock(&b->health_lock);
	found = health_lookup(b, svc, n, st);
	pthread_mutex_unlock(&b->health_lock);
	return found;
}

/* HealthCheckResponse: {1: status}, nothing when the default (UNKNOWN) */
static struct rdmx_rpc_payload health_response(enum rdmx_health_status st, uint8_t out[4])
{
	if (st == RDMX_HEALTH_UNKNOWN) {
		out[0] = 0x80;
		return rdmx_rpc_bytes(out, 1);
	}
	out[0] = 0x81;
	out[1] = 0x01;
	out[2] = (uint8_t)st;
	return rdmx_rpc_bytes(out, 3);
}

static void health_check(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx__builtins *b = arg;
	enum rdmx_health_status st;
	struct rdmx_rpc_payload p;
	const char *svc;
	uint8_t out[4];
	char why[320];
	size_t n;

	if (rdmx__builtins_decode_str1(req, len, &svc, &n)) {
		rdmx_rpc_respond(call, RDMX_RPC_INVALID_ARGUMENT, "malformed HealthCheckRequest",
		                 NULL);
		return;
	}
	if (!health_get(b, svc, n, &st)) {
		snprintf(why, sizeof(why), "unknown service \"%.*s\"",
		         (int)(n > HEALTH_MAX_SERVICE ? HEALTH_MAX_SERVICE : n), svc);
		rdmx_rpc_respond(call, RDMX_RPC_NOT_FOUND, why, NULL);
		return;
	}
	p = health_response(st, out);
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

/* ---- Watch: server-streaming status changes ----
 *
 * rdmx_rpc_server_set_health may run on any thread, a watch stream is
 * written only on its own worker's thread (the engine that serves it). So
 * a change bumps health_gen under health_lock and each watcher looks on its
 * own engine: set_health on the watcher's thread arms its timer for now,
 * and on any other thread the watcher's periodic timer (WATCH_POLL_MS, an
 * atomic load when nothing changed) sees the new generation. */

#define WATCH_POLL_MS 20u

struct rdmx__health_watch {
	struct rdmx__builtins *b;
	struct rdmx_rpc_stream *s;
	struct rdmx_chan_worker *worker; /* the stream's engine */
	pthread_t owner;                 /* the thread that drives it */
	struct rdmx__timer timer;
	uint64_t seen; /* health_gen last acted on */
	char *service; /* NULL until the request came */
	size_t n;
	int last; /* the status last sent, -1: none */
	struct rdmx__health_watch *next, *prev;
};

/* Sends the watched status when it changed. Without credits it waits for
 * on_writable, which sends the status of then: a slow watcher sees the
 * latest status, not every step. */
static void watch_send(struct rdmx__health_watch *w)
{
	enum rdmx_health_status st;
	struct rdmx_rpc_payload p;
	uint8_t out[4];

	if (!w->service)
		return;
	if (!health_get(w->b, w->service, w->n, &st))
		st = RDMX_HEALTH_SERVICE_UNKNOWN;
	if ((int)st == w->last)
		return;
	p = health_response(st, out);
	if (rdmx_rpc_stream_write(w->s, &p) == 0)
		w->last = (int)st;
}

static void watch_arm(struct rdmx__health_watch *w, uint64_t when_ns)
{
	if (rdmx__worker_timer_arm(w->worker, &w->timer, when_ns))
		RDMX_WARN("rpc health: no memory for the timer of a Watch stream");
}

static void watch_tick(struct rdmx__timer *t)
{
	struct rdmx__health_watch *w =
	    (struct rdmx__health_watch *)((char *)t - offsetof(struct rdmx__health_watch, timer));
	uint64_t gen = atomic_load(&w->b->health_gen);

	/* re-armed first: a write below may end the stream (and free w) */
	watch_arm(w, rdmx__now_ns() + WATCH_POLL_MS * 1000000ull);
	if (gen != w->seen) {
		w->seen = gen;
		watch_send(w);
	}
}

static void watch_request(struct rdmx_rpc_stream *s, const void *req, size_t len, void *arg)
{
	struct rdmx__health_watch *w = arg;
	const char *svc;
	size_t n;

	if (rdmx__builtins_decode_str1(req, len, &svc, &n) || n > HEALTH_MAX_SERVICE) {
		rdmx_rpc_stream_finish(s, RDMX_RPC_INVALID_ARGUMENT, "malformed HealthCheckRequest",
		                       NULL, 0, NULL);
		return;
	}
	w->service = malloc(n + 1);
	if (!w->service) {
		rdmx_rpc_stream_finish(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0,
		                       NULL);
		return;
	}
	memcpy(w->service, svc, n);
	w->service[n] = '\0';
	w->n = n;
	w->seen = atomic_load(&w->b->health_gen);
	watch_send(w);
}

static void watch_writable(struct rdmx_rpc_stream *s, void *arg)
{
	(void)s;
	watch_send(arg);
}

static void watch_done(struct rdmx_rpc_stream *s, const struct rdmx_rpc_rich_status *st, void *arg)
{
	struct rdmx__health_watch *w = arg;
	struct rdmx__builtins *b = w->b;

	(void)s;
	(void)st;
	rdmx__worker_timer_disarm(w->worker, &w->timer);
	pthread_mutex_lock(&b->health_lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		b->watchers = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pthread_mutex_unlock(&b->health_lock);
	free(w->service);
	free(w);
}

static void health_watch(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {
	    .on_msg = watch_request, .on_writable = watch_writable, .on_done = watch_done};
	struct rdmx__builtins *b = arg;
	struct rdmx__health_watch *w = calloc(1, sizeof(*w));
	struct rdmx_rpc_ep *ep = rdmx_rpc_stream_get_ep(s);

	if (!w || rdmx_rpc_stream_set_callbacks(s, &cbs, w)) {
		free(w);
		rdmx_rpc_stream_finish(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0,
		                       NULL);
		return;
	}
	w->b = b;
	w->s = s;
	w->worker = ep->worker;
	w->owner = pthread_self();
	w->timer.fn = watch_tick;
	w->last = -1;
	w->seen = atomic_load(&b->health_gen);
	pthread_mutex_lock(&b->health_lock);
	w->next = b->watchers;
	if (b->watchers)
		b->watchers->prev = w;
	b->watchers = w;
	pthread_mutex_unlock(&b->health_lock);
	watch_arm(w, rdmx__now_ns() + WATCH_POLL_MS * 1000000ull);
}

/* After a change (health_lock held): the watchers of this thread look at
 * once, from their engine's progress; the others on their next tick. */
static void watchers_update(struct rdmx__builtins *b)
{
	pthread_t me = pthread_self();
	uint64_t now = rdmx__now_ns();

	atomic_fetch_add(&b->health_gen, 1);
	for (struct rdmx__health_watch *w = b->watchers; w; w = w->next)
		if (pthread_equal(w->owner, me))
			watch_arm(w, now);
}

int rdmx__health_register(struct rdmx__builtins *b)
{
	int rc;

	b->overall = RDMX_HEALTH_SERVING;
	atomic_init(&b->health_gen, 0);
	if (pthread_mutex_init(&b->health_lock, NULL))
		return RDMX_E_NOMEM;
	b->health_lock_ok = true;
	rc = rdmx_rpc_server_register(b->server, rdmx_rpc_method_id(RDMX_HEALTH_CHECK_NAME),
	                              RDMX_HEALTH_CHECK_NAME, health_check, b);
	if (rc)
		return rc;
	return rdmx_rpc_server_register_stream(
	    b->server, rdmx_rpc_method_id(RDMX_HEALTH_WATCH_NAME), RDMX_HEALTH_WATCH_NAME,
	    RDMX_RPC_SERVER_STREAMING, health_watch, b);
}

void rdmx__health_fini(struct rdmx__builtins *b)
{
	for (size_t i = 0; i < b->n_health; i++)
		free(b->health[i].service);
	free(b->health);
	b->health = NULL;
	b->n_health = 0;
	if (b->health_lock_ok)
		pthread_mutex_destroy(&b->health_lock);
	b->health_lock_ok = false;
}

int rdmx_rpc_server_set_health(struct rdmx_rpc_server *server, const char *service,
                               enum rdmx_health_status status)
{
	struct rdmx__builtins *b = rdmx__builtins_of(server);
	struct rdmx__health_entry *grown;
	char *copy;
	int rc = 0;

	if (!b || (unsigned)status > RDMX_HEALTH_SERVICE_UNKNOWN ||
	    (service && strlen(service) > HEALTH_MAX_SERVICE))
		return RDMX_E_INVAL;
	pthread_mutex_lock(&b->health_lock);
	if (!service || !*service) {
		b->overall = status;
		goto changed;
	}
	for (size_t i = 0; i < b->n_health; i++) {
		if (strcmp(b->health[i].service, service) == 0) {
			b->health[i].status = status;
			goto changed;
		}
	}
	copy = strdup(service);
	grown = copy ? realloc(b->health, (b->n_health + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(copy);
		rc = RDMX_E_NOMEM;
		goto out;
	}
	b->health = grown;
	b->health[b->n_health].service = copy;
	b->health[b->n_health].status = status;
	b->n_health++;
changed:
	watchers_update(b);
out:
	pthread_mutex_unlock(&b->health_lock);
	return rc;
}
