/* Where rdmx-call's calls go: one connection to ADDR (target.c), or a
 * registry balancer that picks a member of --service for each call
 * (service.c). Every command (list.c, describe.c, method.c) calls through
 * it. */
#ifndef RDMX_CALL_TARGET_H
#define RDMX_CALL_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/rpc.h>

#include "callopts.h"
#include "rpcnet.h"

struct rdmx_registry_balancer;
struct rdmx_tls_config;

/* Zeroed before use; exactly one of c and b is set once open. */
struct calltarget {
	struct rpcnet_client *c;          /* ADDR: the connection */
	struct rdmx_registry_balancer *b; /* --service: the balancer */
	struct rdmx_tls_config *cfg;      /* --service: its TLS config */
	const struct callopts *o;         /* --service: for the member connections */
	char device[64]; /* --service: the device of the member the last attempt went on */
};

/* Connects t to o->addr (with -v, says so on stderr; without TLS, warns
 * that the flow is plain). Returns 0, or the exit status (said): 2 for a
 * bad ADDR, 1 when the connection failed. */
int calltarget_connect(struct calltarget *t, const struct callopts *o);
/* Closes the connection or destroys the balancer; t may be partly open. */
void calltarget_close(struct calltarget *t);

/* What is left of -max-time (at least 1 us, so that it ends the call with
 * DEADLINE_EXCEEDED), else --timeout-ms, in microseconds. */
uint64_t calltarget_timeout_us(const struct callopts *o);
/* The device of t's connection (ADDR), or of the member the last call went
 * on (--service). */
const char *calltarget_device(const struct calltarget *t);

/* One unary call of method on t with the message req[0..len) (through the
 * balancer, retried when idempotent or when it never reached a server).
 * Returns 0 when a status came back (reply->code tells; with -v, the
 * device, status, latency and sizes on stderr, and with --service the
 * retries it took), 1 when the call could not be made (said). */
int calltarget_call(struct calltarget *t, const struct callopts *o, const char *method,
                    const void *req, size_t len, bool idempotent, struct rdmx_rpc_reply *reply);

#endif
