/* rdmx-call ... list [SERVICE] (list.c): the services of the server's
 * reflection service (rdmx.reflection.v1.Reflection/List) and their
 * methods, "package.Service" then "  package.Service/Method" lines. */
#ifndef RDMX_CALL_LIST_H
#define RDMX_CALL_LIST_H

#include "callopts.h"
#include "target.h"

/* Lists every service on t, or only o->data when given (an error when the
 * server has no such service). Returns the exit status. */
int cmd_list(struct calltarget *t, const struct callopts *o);

#endif
