/* The IDL a command works from (schema.c): the local --proto file, or the
 * server's own through its reflection service
 * (rdmx.reflection.v1.Reflection/FileContaining), written under a private
 * temporary folder, parsed, and removed. */
#ifndef RDMX_CALL_SCHEMA_H
#define RDMX_CALL_SCHEMA_H

#include "callopts.h"
#include "pbjson.h"
#include "target.h"

/* Loads into schema (zeroed by the caller; pbschema_fini it either way)
 * o->proto with o->includes, else the files the server on t has for
 * symbol ("package.Service" or a method of it). 0, or -1 with the reason
 * on stderr. */
int callschema_load(struct calltarget *t, const struct callopts *o, const char *symbol,
                    struct pbschema *schema);

#endif
