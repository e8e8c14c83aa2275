/* protoc-gen-rdmx internals: a protoc CodeGeneratorRequest's files as
 * rdmx-gen's model (codegen/gen.h), then rdmx-gen's resolver and emitters. */
#ifndef RDMX_GEN_PLUGIN_H
#define RDMX_GEN_PLUGIN_H

#include <stdbool.h>

#include "gen.h"
#include "google/protobuf/descriptor.pb-c.h"

/* One FileDescriptorProto as a parsed gen_file (imports by name, not yet
 * linked; types unresolved). NULL after reporting an error (groups in a
 * proto3 file, editions). The caller adds it to ctx->files. */
struct gen_file *rdmx_plugin_file(struct gen_ctx *ctx,
                                  const Google__Protobuf__FileDescriptorProto *fd, bool input);

#endif
