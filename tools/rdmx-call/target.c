/* rdmx-call's calls to one server at ADDR or through a --service balancer
 * (service.c opens the latter). */
#include <stdio.h>

#include <rdmx/pe.h>
#include <rdmx/registry.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "callstream.h"
#include "cli.h"
#include "target.h"

int calltarget_connect(struct calltarget *t, const struct callopts *o)
{
	char host[256], err[512];
	uint16_t port;

	if (!o->secure)
		rdmx_cli_warn_plain("rdmx-call");
	if (rdmx_cli_split_addr(o->addr, host, sizeof(host), &port) || !*host || port == 0) {
		fprintf(stderr, "rdmx-call: ADDR is HOST:PORT, got '%s'\n", o->addr);
		return 2;
	}
	if (rpcnet_client_connect(host, port, o->secure ? &o->tls : NULL, "rdmx-call",
	                          o->timeout_ms, &t->c, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: %s\n", err);
		return 1;
	}
	if (o->verbose)
		fprintf(stderr, "rdmx-call: connected to %s on device %s (%s)\n", o->addr,
		        rpcnet_client_device(t->c), o->secure ? "mutual TLS bootstrap" : "plain");
	return 0;
}

void calltarget_close(struct calltarget *t)
{
	rpcnet_client_close(&t->c);
	rdmx_registry_balancer_destroy(&t->b);
	rdmx_tls_config_destroy(&t->cfg);
}

uint64_t calltarget_timeout_us(const struct callopts *o)
{
	uint64_t now = rdmx_pe_now_ns();

	if (!o->deadline_ns)
		return (uint64_t)o->timeout_ms * 1000u;
	return o->deadline_ns > now + 1000u ? (o->deadline_ns - now) / 1000u : 1u;
}

const char *calltarget_device(const struct calltarget *t)
{
	return t->b ? t->device : rpcnet_client_device(t->c);
}

/* -v's line for a call on t: through the balancer, with the retries it
 * took (the balancer's count now less retries0). */
static void say_call(const struct calltarget *t, const char *method, uint64_t t0, size_t len,
                     const struct rdmx_rpc_reply *reply, uint64_t retries0)
{
	char tail[40] = "";

	if (t->b)
		snprintf(tail, sizeof(tail), ", %llu retries",
		         (unsigned long long)(rdmx_registry_balancer_get_retries(t->b) - retries0));
	callmd_print_status(method, reply->code, calltarget_device(t), t0, len, reply->len, tail);
}

int calltarget_call(struct calltarget *t, const struct callopts *o, const char *method,
                    const void *req, size_t len, bool idempotent, struct rdmx_rpc_reply *reply)
{
	struct rdmx_rpc_call_opts co = {calltarget_timeout_us(o), false};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);
	uint64_t t0 = rdmx_pe_now_ns();
	uint64_t retries = rdmx_registry_balancer_get_retries(t->b);
	int rc = t->b ? rdmx_registry_balancer_call(t->b, rdmx_rpc_method_id(method), &p, &co,
	                                            idempotent, reply)
	              : rdmx_rpc_call(rpcnet_client_rpc(t->c), rdmx_rpc_method_id(method), &p, &co,
	                              reply);

	if (rc) {
		fprintf(stderr, "rdmx-call: %s: %s\n", method, rdmx_strerror(rc));
		return 1;
	}
	if (o->verbose)
		say_call(t, method, t0, len, reply, retries);
	return 0;
}
