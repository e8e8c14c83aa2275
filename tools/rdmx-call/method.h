/* rdmx-call ... package.Service/Method [REQUEST] (method.c): the method's
 * schema from --proto or the server's reflection service, the requests
 * from JSON, every response printed as JSON. At ADDR any kind of method
 * (callstream.c); through --service unary ones (the balancer's calls). */
#ifndef RDMX_CALL_METHOD_H
#define RDMX_CALL_METHOD_H

#include "callopts.h"
#include "target.h"

/* Calls o->what ("package.Service/Method" or "package.Service.Method")
 * with the requests of -d (o->data_opt) or of o->data ('{json}', @FILE,
 * "-": standard input; none: "{}"). Returns the exit status: 0 OK, 1
 * failure, 2 a bad method name, 64 + the RPC code of another status. */
int cmd_method(struct calltarget *t, const struct callopts *o);

#endif
