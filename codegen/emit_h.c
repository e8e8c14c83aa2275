/* rdmx-gen: the generated header (NAME.rdmx.h): types and prototypes.
 * Naming scheme (docs/codegen.md): package "a.b", message Outer.Inner ->
 * a_b_Outer_Inner; enum values a_b_Enum_VALUE; service methods
 * a_b_Service_Method; method ids A_B_SERVICE_METHOD_ID. */
#include <ctype.h>
#include <string.h>

#include "gen.h"

static void collect_msg(struct gen_ctx *ctx, struct gen_message *m, struct gen_vec *msgs,
                        struct gen_vec *enums)
{
	int i;
	if (msgs)
		gen_vec_push(&ctx->pool, msgs, m);
	for (i = 0; i < m->enums.n; i++)
		if (enums)
			gen_vec_push(&ctx->pool, enums, m->enums.items[i]);
	for (i = 0; i < m->messages.n; i++)
		collect_msg(ctx, m->messages.items[i], msgs, enums);
}

void gen_collect(struct gen_ctx *ctx, const struct gen_file *f, struct gen_vec *msgs,
                 struct gen_vec *enums)
{
	int i;
	for (i = 0; i < f->enums.n; i++)
		if (enums)
			gen_vec_push(&ctx->pool, enums, f->enums.items[i]);
	for (i = 0; i < f->messages.n; i++)
		collect_msg(ctx, f->messages.items[i], msgs, enums);
}

char *gen_upper(struct gen_ctx *ctx, const char *s)
{
	char *u = gen_strdup(&ctx->pool, s), *p;
	for (p = u; *p; p++)
		*p = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
	return u;
}

char *gen_guard(struct gen_ctx *ctx, const struct gen_file *f)
{
	/* by the proto path: v1/service.proto and v2/service.proto differ */
	return gen_upper(ctx, gen_printf(&ctx->pool, "RDMX_GEN_%s_RDMX_H", gen_out_stem(ctx, f)));
}

const char *gen_ctype(struct gen_ctx *ctx, const struct gen_field *fd)
{
	(void)ctx;
	switch (fd->type) {
	case GT_DOUBLE:
		return "double";
	case GT_FLOAT:
		return "float";
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
		return "int32_t";
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		return "int64_t";
	case GT_UINT32:
	case GT_FIXED32:
		return "uint32_t";
	case GT_UINT64:
	case GT_FIXED64:
		return "uint64_t";
	case GT_BOOL:
		return "bool";
	case GT_STRING:
		return "struct rdmx_str";
	case GT_BYTES:
		return "struct rdmx_bytes";
	case GT_ENUM:
		return fd->en->cname;
	case GT_MESSAGE:
		return fd->msg->cname;
	default:
		return "void";
	}
}

static const char *proto_type(const struct gen_field *fd)
{
	if (fd->type == GT_MESSAGE)
		return fd->msg->full_name;
	if (fd->type == GT_ENUM)
		return fd->en->full_name;
	return gen_type_name(fd->type);
}

static void emit_member(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_field *fd,
                        const char *indent)
{
	/* `struct X` / `enum X`: a member named like a type (package-less
	 * files) must not change what the type name means in C++ */
	const char *t = fd->type == GT_MESSAGE ? gen_printf(&ctx->pool, "struct %s", fd->msg->cname)
	                : fd->type == GT_ENUM  ? gen_printf(&ctx->pool, "enum %s", fd->en->cname)
	                                       : gen_ctype(ctx, fd);
	if (fd->deprecated)
		gen_buf_printf(o, "%s/* %s is deprecated */\n", indent, fd->name);
	if (fd->is_map) {
		const struct gen_field *k = fd->msg->fields.items[0], *v = fd->msg->fields.items[1];
		gen_buf_printf(o, "%ssize_t n_%s; /* %lld: map<%s, %s> */\n", indent, fd->cname,
		               (long long)fd->number, gen_type_name(k->type), proto_type(v));
		gen_buf_printf(o, "%s%s *%s;\n", indent, t, fd->cname);
	} else if (fd->label == GL_REPEATED) {
		gen_buf_printf(o, "%ssize_t n_%s; /* %lld: repeated %s */\n", indent, fd->cname,
		               (long long)fd->number, proto_type(fd));
		gen_buf_printf(o, "%s%s *%s;\n", indent, t, fd->cname);
	} else if (fd->type == GT_MESSAGE) {
		gen_buf_printf(o, "%s%s *%s; /* %lld: %s%s, NULL when absent */\n", indent, t,
		               fd->cname, (long long)fd->number,
		               fd->label == GL_OPTIONAL ? "optional "
		               : fd->required           ? "required "
		                                        : "",
		               proto_type(fd));
	} else if (fd->label == GL_OPTIONAL) {
		gen_buf_printf(o, "%sbool has_%s;\n", indent, fd->cname);
		gen_buf_printf(o, "%s%s %s; /* %lld: optional %s */\n", indent, t, fd->cname,
		               (long long)fd->number, proto_type(fd));
	} else if (fd->oneof >= 0 && fd->def) {
		/* a oneof member's default is what protobuf reads while the oneof
		 * holds another member or none: the union cannot keep it, the
		 * comment does (a string's "*" "/" must not end it, nor its "/" "*"
		 * open another: gcc's -Wcomment) */
		char *v = gen_comment_text(ctx, gen_default_c(ctx, fd));
		gen_buf_printf(o, "%s%s %s; /* %lld: %s [default = %s] */\n", indent, t, fd->cname,
		               (long long)fd->number, proto_type(fd), v);
	} else {
		gen_buf_printf(o, "%s%s %s; /* %lld: %s%s */\n", indent, t, fd->cname,
		               (long long)fd->number, fd->required ? "required " : "",
		               proto_type(fd));
	}
}

static void emit_enum(struct gen_buf *o, const struct gen_enum *e)
{
	int i;
	gen_buf_printf(o, "/* enum %s%s */\n", e->full_name, e->deprecated ? " (deprecated)" : "");
	gen_buf_printf(o, "typedef enum %s {\n", e->cname);
	for (i = 0; i < e->values.n; i++) {
		const struct gen_enum_value *v = e->values.items[i];
		if (v->deprecated)
			gen_buf_printf(o, "\t/* %s is deprecated */\n", v->name);
		if (v->number == INT32_MIN)
			gen_buf_printf(o, "\t%s = -2147483647 - 1,\n", v->cname);
		else
			gen_buf_printf(o, "\t%s = %lld,\n", v->cname, (long long)v->number);
	}
	gen_buf_printf(o, "\t%s__FORCE_INT_MIN = -2147483647 - 1, /* keeps the enum an int */\n",
	               e->cname);
	gen_buf_printf(o, "\t%s__FORCE_INT_MAX = 2147483647\n", e->cname);
	gen_buf_printf(o, "} %s;\n\n", e->cname);
}

static void emit_oneof_enum(struct gen_buf *o, const struct gen_message *m, int idx)
{
	const struct gen_oneof *of = m->oneofs.items[idx];
	int i;
	gen_buf_printf(o, "/* which member of oneof %s.%s is set */\n", m->full_name, of->name);
	gen_buf_printf(o, "typedef enum %s_%s_case {\n", m->cname, of->name);
	gen_buf_printf(o, "\t%s_%s_NOT_SET = 0", m->cname, of->name);
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (fd->oneof == idx)
			gen_buf_printf(o, ",\n\t%s_%s_%s = %lld", m->cname, of->name, fd->name,
			               (long long)fd->number);
	}
	gen_buf_printf(o, "\n} %s_%s_case;\n\n", m->cname, of->name);
}

static void emit_struct(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m)
{
	int i, j;
	if (m->map_entry)
		gen_buf_printf(o, "/* map entry %s */\n", m->full_name);
	else
		gen_buf_printf(o, "/* message %s%s */\n", m->full_name,
		               m->deprecated ? " (deprecated)" : "");
	gen_buf_printf(o, "struct %s {\n", m->cname);
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (fd->oneof < 0) {
			emit_member(ctx, o, fd, "\t");
			continue;
		}
		/* the whole oneof at the place of its first member */
		for (j = 0; j < i; j++) {
			const struct gen_field *prev = m->fields.items[j];
			if (prev->oneof == fd->oneof)
				break;
		}
		if (j < i)
			continue;
		{
			const struct gen_oneof *of = m->oneofs.items[fd->oneof];
			gen_buf_printf(o, "\t%s_%s_case %s_case; /* oneof %s */\n", m->cname,
			               of->name, of->cname, of->name);
			gen_buf_puts(o, "\tunion {\n");
			for (j = i; j < m->fields.n; j++) {
				const struct gen_field *mem = m->fields.items[j];
				if (mem->oneof == fd->oneof)
					emit_member(ctx, o, mem, "\t\t");
			}
			gen_buf_puts(o, "\t};\n");
		}
	}
	if (m->fields.n == 0)
		gen_buf_puts(o, "\tchar unused_; /* C needs one member */\n");
	gen_buf_puts(o, "};\n\n");
}

static void emit_prototypes(struct gen_buf *o, const struct gen_message *m)
{
	const char *c = m->cname;
	gen_buf_printf(o, "/* %s */\n", m->full_name);
	gen_buf_printf(o, "void %s_init(%s *msg);\n", c, c);
	gen_buf_printf(o, "size_t %s_encoded_size(const %s *msg);\n", c, c);
	gen_buf_printf(o, "int %s_encode(const %s *msg, void *dst, size_t len);\n", c, c);
	gen_buf_printf(
	    o,
	    "int %s_decode(%s *msg, const void *src, size_t len, struct rdmx_arena *arena,\n"
	    "\tconst struct rdmx_decode_opts *opts);\n",
	    c, c);
	gen_buf_printf(o, "struct rdmx_rpc_payload %s_payload(const %s *msg);\n", c, c);
	gen_buf_printf(o, "void %s__enc(struct rdmx_enc *e, const %s *msg);\n", c, c);
	gen_buf_printf(o, "int %s__dec(struct rdmx_dec *d, %s *msg);\n", c, c);
	gen_buf_printf(o, "int %s__decp(struct rdmx_dec *d, %s **msg);\n", c, c);
	gen_buf_printf(o, "int %s__encode_cb(const void *msg, void *dst, size_t len);\n\n", c);
}

static const char header_doc[] =
    "/* Messages (include/rdmx/codec.h has the wire format).\n"
    " * Ownership: a generated struct owns nothing. Its strings, bytes, arrays and\n"
    " * sub-messages point into memory owned by whoever filled it: your own data\n"
    " * when you encode; when you decode, the input buffer (strings/bytes, unless\n"
    " * opts->copy) and the arena (arrays, sub-messages, copies). Keep those alive\n"
    " * as long as you use the struct; rdmx_arena_reset/fini frees it all at once.\n"
    " * Presence: X_init makes the default message: zeroed, but for the fields\n"
    " * of proto2 files with a default (the decoder gives an absent field its\n"
    " * default too). Singular message fields are pointers (NULL = absent);\n"
    " * `optional` scalars have a has_<field> flag; repeated and map fields are\n"
    " * n_<field> + an array (a map is an array of key/value entries, in wire\n"
    " * order); a oneof is <oneof>_case (0 = none) + an anonymous union of its\n"
    " * members.\n"
    " *\n"
    " * X_encoded_size(msg)  exact size of the encoding (1 for NULL: an empty map)\n"
    " * X_encode(msg, dst, len)  writes exactly len = X_encoded_size(msg) bytes;\n"
    " *     RDMX_E_INVAL when len is not that size (nothing past dst + len is written)\n"
    " * X_decode(msg, src, len, arena, opts)  decodes all of src (trailing bytes are\n"
    " *     an error); opts may be NULL (depth 32, no copy, default budget); arena may\n"
    " *     be NULL only when nothing needs memory; *msg is written only on success;\n"
    " *     errors: RDMX_E_PROTOCOL, RDMX_E_TOO_BIG, RDMX_E_NOMEM, RDMX_E_INVAL\n"
    " * X_payload(msg)  a struct rdmx_rpc_payload that encodes msg straight into the\n"
    " *     channel buffer (msg must stay valid until the call/respond returns)\n"
    " * X__* functions are internal to generated code. */\n\n";

static const char required_doc[] =
    "/* proto2 required fields (members marked so) are always written; X_decode\n"
    " * refuses a message without one (RDMX_E_PROTOCOL, at any depth); X_encode\n"
    " * fails with RDMX_E_INVAL when a required message field is NULL, or when a\n"
    " * NULL map value is of a message type with required fields. An RPC payload\n"
    " * of no bytes (S_M_respond with resp NULL) is not such a message either: the\n"
    " * stubs fail it as malformed, the skeletons answer INVALID_ARGUMENT. */\n\n";

static const char service_doc[] =
    "/* Services.\n"
    " * Client, blocking: S_M(rc, req, resp, arena, opts, status) drives progress until\n"
    " *   the call completes. Returns 0 when the call succeeded (RDMX_RPC_OK) and\n"
    " *   *resp was decoded into arena (strings copied, NUL-terminated); a positive\n"
    " *   enum rdmx_rpc_code when the server or the runtime answered another status\n"
    " *   (*resp untouched); a negative RDMX_E_* code when the call could not be made\n"
    " *   or the response could not be decoded (RDMX_E_PROTOCOL). status (may be NULL)\n"
    " *   gets the code and the status message copied into arena (NULL without arena).\n"
    " *   opts may be NULL (no deadline). With opts->oneway, *resp is left as is.\n"
    " * Client, async: S_M_async(rc, req, opts, cb, arg, call_id) returns 0 or a\n"
    " *   negative RDMX_E_* code; cb then runs exactly once from progress with the\n"
    " *   code, the status message (may be NULL) and the decoded response (non-NULL\n"
    " *   only when code is RDMX_RPC_OK; valid only during cb: copy what you keep).\n"
    " *   An undecodable response completes with RDMX_RPC_INTERNAL. *call_id (may be\n"
    " *   NULL) names the call for rdmx_rpc_cancel.\n"
    " * Client, over a service's registered members: S_connect_service(registry,\n"
    " *   service, tls, &balancer) looks the service up in the registry (URL as\n"
    " *   rdmx_registry_client_open; service NULL: \"package.Service\"), watches it and\n"
    " *   connects members with rdmx_rpc_secure_connect on first use (tls: the\n"
    " *   registry's config, also checking the members' certificates; free with\n"
    " *   rdmx_registry_balancer_destroy). S_M_balanced(balancer, req, resp, arena,\n"
    " *   opts, status) is S_M on a member picked per call (least in flight of two),\n"
    " *   failing over and retrying as rdmx_registry_balancer_call: a request that\n"
    " *   never reached a server always, one that may have only for a method marked\n"
    " *   idempotent (S_M_IDEMPOTENT), within opts->timeout_us and the retry budget.\n"
    " * Server: fill a struct S_handlers (NULL members stay unimplemented: the server\n"
    " *   answers UNIMPLEMENTED) and S_register(server, handlers, arg) it (the table is\n"
    " *   copied; rdmx_codec_release_bindings(server) frees the copy after the server\n"
    " *   is gone). A handler gets the decoded request, valid only during the handler\n"
    " *   (a malformed request is answered INVALID_ARGUMENT without calling it), and\n"
    " *   answers once, now or later, with S_M_respond(call, code, message, resp)\n"
    " *   (resp NULL sends the default message). Method ids: 32-bit FNV-1a of\n"
    " *   \"package.Service/Method\".\n"
    " * Streaming methods (S_M_KIND: RDMX_RPC_SERVER_STREAMING, _CLIENT_ or _BIDI_;\n"
    " *   rdmx/rpc_stream.h has the stream model: flow control, half-close, one\n"
    " *   deadline, on_done exactly once):\n"
    " * Client, async: S_M_async(ep, [req,] opts, cbs, arg, &s) opens the stream (a\n"
    " *   server-streaming call also writes req and half-closes); struct S_M_cbs (cbs\n"
    " *   copied, every member optional) gets each response decoded (valid during\n"
    " *   on_msg only), the response headers, credits back (on_writable) and the\n"
    " *   final status once (an undecodable response ends it INTERNAL). Returns 0 or\n"
    " *   a negative RDMX_E_* (then no callback runs). S_M_write_async(s, req) writes\n"
    " *   one request: RDMX_E_AGAIN without credit (on_writable follows);\n"
    " *   rdmx_rpc_stream_half_close / _cancel end the sending / the stream.\n"
    " * Client, blocking (drives progress; never from a callback): S_M_open(ep,\n"
    " *   [req,] opts, &call); S_M_write(call, req) waits for credits until the\n"
    " *   stream's deadline: 0, or a positive code when the stream ended;\n"
    " *   S_M_close_send(call); S_M_read(call, resp, arena) waits for the next\n"
    " *   response: 1 (decoded into arena, strings copied), 0 at the end, negative\n"
    " *   RDMX_E_*; S_M_finish(call, status, arena) half-closes, waits for the end and\n"
    " *   frees call: 0 (OK), a positive code or a negative RDMX_E_*\n"
    " *   (rdmx/codec_stream.h).\n"
    " * Server: the handler member (s, arg) runs once per stream and, before it\n"
    " *   returns, calls S_M_accept(s, cbs, arg): struct S_M_server_cbs gets each\n"
    " *   request decoded (valid during on_msg; a malformed one ends the stream\n"
    " *   INVALID_ARGUMENT), the client's half-close, credits back and the end, once.\n"
    " *   S_M_send(s, resp) writes one response (RDMX_E_AGAIN without credit:\n"
    " *   on_writable follows); rdmx_rpc_stream_finish ends the stream with a status. */\n\n";

static void emit_service(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_service *s)
{
	int i, n;
	gen_buf_printf(o, "/* service %s */\n", s->full_name);
	for (i = 0; i < s->methods.n; i++) {
		const struct gen_method *m = s->methods.items[i];
		if (!GEN_UNARY(m)) {
			gen_emit_stream_h(ctx, o, s, m);
			continue;
		}
		if (m->deprecated)
			gen_buf_printf(o, "/* %s is deprecated */\n", m->name);
		char *base = m->cbase;
		char *up = gen_upper(ctx, base);
		const char *in = m->in->cname, *out = m->out->cname;
		gen_buf_printf(o, "#define %s_ID 0x%08xu\n", up, m->id);
		gen_buf_printf(o, "#define %s_NAME \"%s/%s\"\n", up, s->full_name, m->name);
		if (m->idempotent) /* may be retried (rdmx_registry_balancer_may_retry) */
			gen_buf_printf(o, "#define %s_IDEMPOTENT 1\n", up);
		gen_buf_printf(
		    o,
		    "typedef void (*%s_cb)(enum rdmx_rpc_code code, const char *message,\n"
		    "\tconst %s *resp, void *arg);\n",
		    base, out);
		gen_buf_printf(
		    o,
		    "int %s(struct rdmx_rpc_ep *ep, const %s *req, %s *resp,\n"
		    "\tstruct rdmx_arena *arena, const struct rdmx_rpc_call_opts *opts,\n"
		    "\tstruct rdmx_rpc_status *status);\n",
		    base, in, out);
		gen_buf_printf(o,
		               "int %s_async(struct rdmx_rpc_ep *ep, const %s *req,\n"
		               "\tconst struct rdmx_rpc_call_opts *opts, %s_cb cb, void *arg,\n"
		               "\tuint64_t *call_id);\n",
		               base, in, base);
		gen_buf_printf(
		    o,
		    "int %s_balanced(struct rdmx_registry_balancer *balancer,\n"
		    "\tconst %s *req, %s *resp, struct rdmx_arena *arena,\n"
		    "\tconst struct rdmx_rpc_call_opts *opts, struct rdmx_rpc_status *status);\n",
		    base, in, out);
		gen_buf_printf(
		    o,
		    "int %s_respond(struct rdmx_rpc_server_call *call, enum rdmx_rpc_code code,\n"
		    "\tconst char *message, const %s *resp);\n\n",
		    base, out);
	}
	gen_buf_printf(
	    o,
	    "int %s_connect_service(const char *registry, const char *service,\n"
	    "\tstruct rdmx_tls_config *tls, struct rdmx_registry_balancer **balancer);\n",
	    s->cname);
	gen_buf_printf(o, "struct %s_handlers {\n", s->cname);
	for (i = 0, n = 0; i < s->methods.n; i++) {
		const struct gen_method *m = s->methods.items[i];
		n++;
		if (!GEN_UNARY(m)) {
			gen_buf_printf(o, "\tvoid (*%s)(struct rdmx_rpc_stream *s, void *arg);\n",
			               m->cname);
			continue;
		}
		gen_buf_printf(
		    o,
		    "\tvoid (*%s)(struct rdmx_rpc_server_call *call, const %s *req, void *arg);\n",
		    m->cname, m->in->cname);
	}
	if (n == 0)
		gen_buf_puts(o, "\tchar unused_; /* no methods */\n");
	gen_buf_puts(o, "};\n");
	gen_buf_printf(o,
	               "int %s_register(struct rdmx_rpc_server *server,\n"
	               "\tconst struct %s_handlers *handlers, void *arg);\n\n",
	               s->cname, s->cname);
}

static bool has_streaming(const struct gen_file *f)
{
	int i, j;
	for (i = 0; i < f->services.n; i++) {
		const struct gen_service *s = f->services.items[i];
		for (j = 0; j < s->methods.n; j++)
			if (!GEN_UNARY((const struct gen_method *)s->methods.items[j]))
				return true;
	}
	return false;
}

void gen_emit_h(struct gen_ctx *ctx, struct gen_file *f, struct gen_buf *o)
{
	struct gen_vec msgs = {0}, enums = {0};
	char *guard = gen_guard(ctx, f);
	int i, j;
	bool required = false;
	gen_collect(ctx, f, &msgs, &enums);
	gen_buf_printf(o, "/* Generated by rdmx-gen from %s. Do not edit. */\n",
	               gen_comment_text(ctx, f->name));
	gen_buf_printf(o, "#ifndef %s\n#define %s\n\n", guard, guard);
	gen_buf_puts(o, "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n");
	gen_buf_puts(o, "#include <rdmx/codec.h>\n#include <rdmx/rpc.h>\n");
	if (has_streaming(f))
		gen_buf_puts(o, "#include <rdmx/codec_stream.h>\n");
	gen_buf_puts(o, "\n");
	for (i = 0, j = 0; i < f->imports.n; i++) {
		const struct gen_import *im = f->imports.items[i];
		/* option-definition imports (descriptor.proto, ...) have no header */
		if (!gen_import_needed(f, im))
			continue;
		gen_buf_printf(o, "#include \"%s.rdmx.h\"\n", gen_out_stem(ctx, im->file));
		j++;
	}
	if (j)
		gen_buf_puts(o, "\n");
	gen_buf_puts(o, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	gen_buf_puts(o, header_doc);
	for (i = 0; i < msgs.n && !required; i++) {
		const struct gen_message *m = msgs.items[i];
		for (j = 0; j < m->fields.n; j++)
			required |= ((const struct gen_field *)m->fields.items[j])->required;
	}
	if (required)
		gen_buf_puts(o, required_doc);
	for (i = 0; i < msgs.n; i++) {
		const struct gen_message *m = msgs.items[i];
		gen_buf_printf(o, "typedef struct %s %s;\n", m->cname, m->cname);
	}
	if (msgs.n)
		gen_buf_puts(o, "\n");
	for (i = 0; i < enums.n; i++)
		emit_enum(o, enums.items[i]);
	for (i = 0; i < msgs.n; i++) {
		const struct gen_message *m = msgs.items[i];
		for (j = 0; j < m->oneofs.n; j++)
			emit_oneof_enum(o, m, j);
	}
	for (i = 0; i < msgs.n; i++)
		emit_struct(ctx, o, msgs.items[i]);
	for (i = 0; i < msgs.n; i++) {
		const struct gen_message *m = msgs.items[i];
		if (!m->map_entry)
			emit_prototypes(o, m);
	}
	if (f->services.n) {
		gen_buf_puts(o, service_doc);
		gen_buf_puts(o, "struct rdmx_registry_balancer; /* rdmx/registry.h */\n"
		                "struct rdmx_tls_config;       /* rdmx/tls.h */\n\n");
	}
	for (i = 0; i < f->services.n; i++)
		emit_service(ctx, o, f->services.items[i]);
	gen_buf_puts(o, "#ifdef __cplusplus\n}\n#endif\n");
	gen_buf_printf(o, "#endif /* %s */\n", guard);
}
