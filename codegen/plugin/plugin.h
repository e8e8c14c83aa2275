/* protoc-gen-rdmx internals: a protoc CodeGeneratorRequest's files as
 * rdmx-gen's model (codegen/gen.h), then rdmx-gen's resolver and emitters. */
#ifndef RDMX_GEN_PLUGIN_H
#define RDMX_GEN_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gen.h"
#include "google/protobuf/descriptor.pb-c.h"

/* One FileDescriptorProto as a parsed gen_file (imports by name, not yet
 * linked; types unresolved). NULL after reporting an error (groups in a
 * proto3 file, editions). The caller adds it to ctx->files. */
struct gen_file *rdmx_plugin_file(struct gen_ctx *ctx,
                                  const Google__Protobuf__FileDescriptorProto *fd, bool input);

/* a FieldDescriptorProto's unknown field holding its default_value whole
 * when that holds a NUL (rdmx_plugin_unpack adds it; not one of protobuf's
 * field numbers) */
#define RDMX_PLUGIN_DEFAULT_BYTES 536870000u

/* the CodeGeneratorRequest in in[0..len), decoded by protobuf-c once the
 * fields it does not know are dropped (custom options, which may be groups
 * it cannot read; wire.c); NULL when the bytes are not a request */
struct Google__Protobuf__Compiler__CodeGeneratorRequest;
struct Google__Protobuf__Compiler__CodeGeneratorRequest *rdmx_plugin_unpack(const uint8_t *in,
                                                                            size_t len);

#endif
