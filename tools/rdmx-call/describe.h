/* rdmx-call ... describe SERVICE_OR_METHOD (describe.c), as grpcurl
 * prints it: "X is a service:" and its IDL block, or "X is a method:" and
 * its rpc line, from --proto or the server's reflection service. */
#ifndef RDMX_CALL_DESCRIBE_H
#define RDMX_CALL_DESCRIBE_H

#include "callopts.h"
#include "target.h"

/* Describes o->data ("package.Service", "package.Service/Method" or
 * "package.Service.Method"). Returns the exit status (1: no such symbol,
 * or no schema). */
int cmd_describe(struct calltarget *t, const struct callopts *o);

#endif
