/* rdmx.health.v1.Health/Check, answered by every RPC server
 * (include/rdmx/health.h). The request and response are a few bytes of
 * msgpack, written and read by hand with the codec's inline helpers
 * (rdmx/codec.h): two one-field messages do not justify making the core
 * library depend on rdmx-gen at build time. rpc/idl/health.proto is the
 * contract, and the reflection service serves it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/codec.h>
#include <rdmx/health.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_stream.h>
#include <rdmx/status.h>

#include "builtins.h"

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
	if (!health_lookup(b, svc, n, &st)) {
		snprintf(why, sizeof(why), "unknown service \"%.*s\"",
		         (int)(n > HEALTH_MAX_SERVICE ? HEALTH_MAX_SERVICE : n), svc);
		rdmx_rpc_respond(call, RDMX_RPC_NOT_FOUND, why, NULL);
		return;
	}
	p = health_response(st, out);
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

/* ---- Watch: server-streaming status changes ---- */

struct rdmx__health_watch {
	struct rdmx__builtins *b;
	struct rdmx_rpc_stream *s;
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
	if (!health_lookup(w->b, w->service, w->n, &st))
		st = RDMX_HEALTH_SERVICE_UNKNOWN;
	if ((int)st == w->last)
		return;
	p = health_response(st, out);
	if (rdmx_rpc_stream_write(w->s, &p) == 0)
		w->last = (int)st;
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

	(void)s;
	(void)st;
	if (w->prev)
		w->prev->next = w->next;
	else
		w->b->watchers = w->next;
	if (w->next)
		w->next->prev = w->prev;
	free(w->service);
	free(w);
}

static void health_watch(struct rdmx_rpc_stream *s, void *arg)
{
	static const struct rdmx_rpc_stream_cbs cbs = {
	    .on_msg = watch_request, .on_writable = watch_writable, .on_done = watch_done};
	struct rdmx__builtins *b = arg;
	struct rdmx__health_watch *w = calloc(1, sizeof(*w));

	if (!w || rdmx_rpc_stream_set_callbacks(s, &cbs, w)) {
		free(w);
		rdmx_rpc_stream_finish(s, RDMX_RPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0,
		                       NULL);
		return;
	}
	w->b = b;
	w->s = s;
	w->last = -1;
	w->next = b->watchers;
	if (b->watchers)
		b->watchers->prev = w;
	b->watchers = w;
}

static void watchers_update(struct rdmx__builtins *b)
{
	struct rdmx__health_watch *w = b->watchers, *next;

	for (; w; w = next) {
		next = w->next; /* a failed write may end w */
		watch_send(w);
	}
}

int rdmx__health_register(struct rdmx__builtins *b)
{
	int rc;

	b->overall = RDMX_HEALTH_SERVING;
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
}

int rdmx_rpc_server_set_health(struct rdmx_rpc_server *server, const char *service,
                               enum rdmx_health_status status)
{
	struct rdmx__builtins *b = rdmx__builtins_of(server);
	struct rdmx__health_entry *grown;
	char *copy;

	if (!b || (unsigned)status > RDMX_HEALTH_SERVICE_UNKNOWN)
		return RDMX_E_INVAL;
	if (!service || !*service) {
		b->overall = status;
		watchers_update(b);
		return 0;
	}
	if (strlen(service) > HEALTH_MAX_SERVICE)
		return RDMX_E_INVAL;
	for (size_t i = 0; i < b->n_health; i++) {
		if (strcmp(b->health[i].service, service) == 0) {
			b->health[i].status = status;
			watchers_update(b);
			return 0;
		}
	}
	copy = strdup(service);
	if (!copy)
		return RDMX_E_NOMEM;
	grown = realloc(b->health, (b->n_health + 1) * sizeof(*grown));
	if (!grown) {
		free(copy);
		return RDMX_E_NOMEM;
	}
	b->health = grown;
	b->health[b->n_health].service = copy;
	b->health[b->n_health].status = status;
	b->n_health++;
	watchers_update(b);
	return 0;
}
