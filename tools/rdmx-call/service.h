/* rdmx-call --registry ADDRESS --service NAME (service.c): no ADDR, the
 * library's balancer picks a live member of the service for each call
 * (the less loaded of two at random), skips a member that cannot be
 * reached, and calls again on another one when the request never reached
 * the server or the method is idempotent. */
#ifndef RDMX_CALL_SERVICE_H
#define RDMX_CALL_SERVICE_H

#include "callopts.h"
#include "target.h"

/* Opens t on o->registry's members of o->service (mutual TLS: o->secure
 * must hold), once one can be reached within --timeout-ms. t and o must
 * outlive the calls (the balancer's member connections read them).
 * Returns 0, or the exit status (said): 2 without TLS, 1 when the
 * registry or every member failed; calltarget_close(t) either way. */
int calltarget_open_service(struct calltarget *t, const struct callopts *o);

#endif
