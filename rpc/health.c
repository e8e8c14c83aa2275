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
	/* HealthCheckResponse: {1: status}, nothing when the default (UNKNOWN) */
	if (st == RDMX_HEALTH_UNKNOWN) {
		out[0] = 0x80;
		p = rdmx_rpc_bytes(out, 1);
	} else {
		out[0] = 0x81;
		out[1] = 0x01;
		out[2] = (uint8_t)st;
		p = rdmx_rpc_bytes(out, 3);
	}
	rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

int rdmx__health_register(struct rdmx__builtins *b)
{
	b->overall = RDMX_HEALTH_SERVING;
	return rdmx_rpc_server_register(b->server, rdmx_rpc_method_id(RDMX_HEALTH_CHECK_NAME),
	                                RDMX_HEALTH_CHECK_NAME, health_check, b);
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
		return 0;
	}
	if (strlen(service) > HEALTH_MAX_SERVICE)
		return RDMX_E_INVAL;
	for (size_t i = 0; i < b->n_health; i++) {
		if (strcmp(b->health[i].service, service) == 0) {
			b->health[i].status = status;
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
	return 0;
}
