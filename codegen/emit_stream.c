/* rdmx-gen: streaming methods (server-, client- and bidi-streaming) in the
 * generated header and source: typed async stubs over rdmx/rpc_stream.h,
 * blocking ones over rdmx/codec_stream.h, and the typed server skeleton
 * (docs/codegen.md, "Streaming methods"). */
#include "gen.h"

static const char *kind_name(const struct gen_method *m)
{
	return m->client_streaming && m->server_streaming ? "bidi"
	       : m->client_streaming                      ? "client"
	                                                  : "server";
}

static const char *kind_const(const struct gen_method *m)
{
	return m->client_streaming && m->server_streaming ? "RDMX_RPC_BIDI_STREAMING"
	       : m->client_streaming                      ? "RDMX_RPC_CLIENT_STREAMING"
	                                                  : "RDMX_RPC_SERVER_STREAMING";
}

/* "const In *req, " for the calls that take the one request up front */
static const char *req_param(struct gen_ctx *ctx, const struct gen_method *m)
{
	if (m->client_streaming)
		return "";
	return gen_printf(&ctx->pool, "const %s *req,\n\t", m->in->cname);
}

void gen_emit_stream_h(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_service *s,
                       const struct gen_method *m)
{
	char *base = m->cbase;
	char *up = gen_upper(ctx, base);
	const char *in = m->in->cname, *out = m->out->cname, *rq = req_param(ctx, m);

	gen_buf_printf(o, "/* %s: %s-streaming */\n", m->name, kind_name(m));
	if (m->deprecated)
		gen_buf_printf(o, "/* %s is deprecated */\n", m->name);
	gen_buf_printf(o, "#define %s_ID 0x%08xu\n", up, m->id);
	gen_buf_printf(o, "#define %s_NAME \"%s/%s\"\n", up, s->full_name, m->name);
	gen_buf_printf(o, "#define %s_KIND %s\n", up, kind_const(m));
	/* client, async */
	gen_buf_printf(o,
	               "struct %s_cbs {\n"
	               "\tvoid (*on_msg)(struct rdmx_rpc_stream *s, const %s *resp, void *arg);\n"
	               "\tvoid (*on_headers)(struct rdmx_rpc_stream *s,\n"
	               "\t\tconst struct rdmx_rpc_md *headers, void *arg);\n"
	               "\tvoid (*on_writable)(struct rdmx_rpc_stream *s, void *arg);\n"
	               "\tvoid (*on_done)(struct rdmx_rpc_stream *s,\n"
	               "\t\tconst struct rdmx_rpc_rich_status *st, void *arg);\n"
	               "};\n",
	               base, out);
	gen_buf_printf(o,
	               "int %s_async(struct rdmx_rpc_ep *ep, %s"
	               "const struct rdmx_rpc_stream_opts *opts, const struct %s_cbs *cbs,\n"
	               "\tvoid *arg, struct rdmx_rpc_stream **s);\n",
	               base, rq, base);
	if (m->client_streaming)
		gen_buf_printf(o, "int %s_write_async(struct rdmx_rpc_stream *s, const %s *req);\n",
		               base, in);
	/* client, blocking */
	gen_buf_printf(
	    o,
	    "int %s_open(struct rdmx_rpc_ep *ep, %s"
	    "const struct rdmx_rpc_stream_opts *opts, struct rdmx_codec_stream **call);\n",
	    base, rq);
	if (m->client_streaming) {
		gen_buf_printf(o, "int %s_write(struct rdmx_codec_stream *call, const %s *req);\n",
		               base, in);
		gen_buf_printf(o, "int %s_close_send(struct rdmx_codec_stream *call);\n", base);
	}
	gen_buf_printf(o,
	               "int %s_read(struct rdmx_codec_stream *call, %s *resp,\n"
	               "\tstruct rdmx_arena *arena);\n",
	               base, out);
	gen_buf_printf(
	    o,
	    "int %s_finish(struct rdmx_codec_stream *call, struct rdmx_rpc_status *status,\n"
	    "\tstruct rdmx_arena *arena);\n",
	    base);
	/* server */
	gen_buf_printf(o,
	               "struct %s_server_cbs {\n"
	               "\tvoid (*on_msg)(struct rdmx_rpc_stream *s, const %s *req, void *arg);\n"
	               "\tvoid (*on_half_close)(struct rdmx_rpc_stream *s, void *arg);\n"
	               "\tvoid (*on_writable)(struct rdmx_rpc_stream *s, void *arg);\n"
	               "\tvoid (*on_done)(struct rdmx_rpc_stream *s,\n"
	               "\t\tconst struct rdmx_rpc_rich_status *st, void *arg);\n"
	               "};\n",
	               base, in);
	gen_buf_printf(o,
	               "int %s_accept(struct rdmx_rpc_stream *s, const struct %s_server_cbs *cbs,\n"
	               "\tvoid *arg);\n",
	               base, base);
	gen_buf_printf(o, "int %s_send(struct rdmx_rpc_stream *s, const %s *resp);\n\n", base, out);
}

/* on_msg of a stream: decode `type` on a stack arena and hand it on */
static void emit_decode_msg(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m)
{
	const char *type = m->cname;
	gen_buf_puts(o, "\tunsigned char buf[RDMX_CODEC_STACK_ARENA];\n\tstruct rdmx_arena a;\n");
	gen_buf_printf(o, "\t%s msg;\n\tint r = 0;\n", type);
	gen_buf_puts(o, "\trdmx_arena_init(&a, buf, sizeof(buf), 0);\n");
	gen_buf_printf(o, "\tif (len == 0)\n\t\t%s\n", gen_empty_payload(ctx, m, "&msg", "r"));
	gen_buf_printf(o, "\telse\n\t\tr = %s_decode(&msg, data, len, &a, NULL);\n", type);
}

static void emit_client_async(struct gen_ctx *ctx, struct gen_buf *o, const char *base,
                              const char *up, const struct gen_method *m)
{
	const char *in = m->in->cname;

	/* the context lives from _async to on_done; `quiet` when _async itself
	 * fails after the open (the caller gets the error, not on_done) */
	gen_buf_printf(o,
	               "struct %s__sctx {\n\tstruct %s_cbs cbs;\n\tvoid *arg;\n"
	               "\tbool bad, quiet;\n};\n\n",
	               base, base);
	gen_buf_printf(
	    o,
	    "static void %s__msg(struct rdmx_rpc_stream *s, const void *data, size_t len,\n"
	    "\tvoid *arg)\n{\n",
	    base);
	gen_buf_printf(o, "\tstruct %s__sctx *c = arg;\n", base);
	emit_decode_msg(ctx, o, m->out);
	gen_buf_puts(o, "\tif (r) {\n\t\tc->bad = true; /* on_done says INTERNAL */\n"
	                "\t\trdmx_rpc_stream_cancel(s);\n");
	gen_buf_puts(o,
	             "\t} else if (c->cbs.on_msg) {\n\t\tc->cbs.on_msg(s, &msg, c->arg);\n\t}\n");
	gen_buf_puts(o, "\trdmx_arena_fini(&a);\n}\n\n");
	gen_buf_printf(o,
	               "static void %s__headers(struct rdmx_rpc_stream *s,\n"
	               "\tconst struct rdmx_rpc_md *headers, void *arg)\n{\n",
	               base);
	gen_buf_printf(o, "\tstruct %s__sctx *c = arg;\n", base);
	gen_buf_puts(o,
	             "\tif (c->cbs.on_headers)\n\t\tc->cbs.on_headers(s, headers, c->arg);\n}\n\n");
	gen_buf_printf(o, "static void %s__writable(struct rdmx_rpc_stream *s, void *arg)\n{\n",
	               base);
	gen_buf_printf(o, "\tstruct %s__sctx *c = arg;\n", base);
	gen_buf_puts(o, "\tif (c->cbs.on_writable)\n\t\tc->cbs.on_writable(s, c->arg);\n}\n\n");
	gen_buf_printf(o,
	               "static void %s__done(struct rdmx_rpc_stream *s,\n"
	               "\tconst struct rdmx_rpc_rich_status *st, void *arg)\n{\n",
	               base);
	gen_buf_printf(o, "\tstruct %s__sctx *c = arg;\n", base);
	gen_buf_puts(o, "\tstruct rdmx_rpc_rich_status bad;\n");
	gen_buf_puts(o, "\tif (c->bad) {\n\t\tbad = *st;\n\t\tbad.code = RDMX_RPC_INTERNAL;\n"
	                "\t\tbad.message = \"malformed response\";\n\t\tst = &bad;\n\t}\n");
	gen_buf_puts(o, "\tif (c->cbs.on_done && !c->quiet)\n\t\tc->cbs.on_done(s, st, c->arg);\n");
	gen_buf_puts(o, "\tfree(c);\n}\n\n");

	gen_buf_printf(o,
	               "int %s_async(struct rdmx_rpc_ep *ep, %s"
	               "const struct rdmx_rpc_stream_opts *opts, const struct %s_cbs *cbs,\n"
	               "\tvoid *arg, struct rdmx_rpc_stream **s)\n{\n",
	               base, req_param(ctx, m), base);
	gen_buf_printf(o,
	               "\tstruct rdmx_rpc_stream_cbs raw = {%s__msg, NULL, %s__writable, "
	               "%s__headers,\n\t\t%s__done};\n",
	               base, base, base, base);
	gen_buf_printf(o, "\tstruct %s__sctx *c;\n\tstruct rdmx_rpc_stream *st;\n\tint r;\n", base);
	gen_buf_printf(o, "\tif (!ep || !cbs%s)\n\t\treturn RDMX_E_INVAL;\n",
	               m->client_streaming ? "" : " || !req");
	gen_buf_puts(o, "\tc = calloc(1, sizeof(*c));\n\tif (!c)\n\t\treturn RDMX_E_NOMEM;\n");
	gen_buf_puts(o, "\tc->cbs = *cbs;\n\tc->arg = arg;\n");
	gen_buf_printf(o, "\tr = rdmx_rpc_stream_open(ep, %s_ID, %s_KIND, opts, &raw, c, &st);\n",
	               up, up);
	gen_buf_puts(o, "\tif (r) {\n\t\tfree(c);\n\t\treturn r;\n\t}\n");
	if (!m->client_streaming) {
		gen_buf_puts(o, "\t{\n\t\tstruct rdmx_rpc_payload p;\n");
		gen_buf_printf(o, "\t\tp = %s_payload(req);\n", in);
		gen_buf_puts(o, "\t\tr = rdmx_rpc_stream_write(st, &p);\n");
		gen_buf_puts(o, "\t\tif (r == 0)\n\t\t\tr = rdmx_rpc_stream_half_close(st);\n");
		gen_buf_puts(o, "\t\tif (r) {\n\t\t\tc->quiet = true; /* frees c */\n"
		                "\t\t\trdmx_rpc_stream_cancel(st);\n\t\t\treturn r;\n\t\t}\n\t}\n");
	}
	gen_buf_puts(o, "\tif (s)\n\t\t*s = st;\n\treturn 0;\n}\n\n");
	if (m->client_streaming) {
		gen_buf_printf(o,
		               "int %s_write_async(struct rdmx_rpc_stream *s, const %s *req)\n{\n",
		               base, in);
		gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n");
		gen_buf_puts(o, "\tif (!s || !req)\n\t\treturn RDMX_E_INVAL;\n");
		gen_buf_printf(o, "\tp = %s_payload(req);\n", in);
		gen_buf_puts(o, "\treturn rdmx_rpc_stream_write(s, &p);\n}\n\n");
	}
}

static void emit_client_blocking(struct gen_ctx *ctx, struct gen_buf *o, const char *base,
                                 const char *up, const struct gen_method *m)
{
	const char *in = m->in->cname, *out = m->out->cname;

	gen_buf_printf(
	    o,
	    "int %s_open(struct rdmx_rpc_ep *ep, %s"
	    "const struct rdmx_rpc_stream_opts *opts, struct rdmx_codec_stream **call)\n{\n",
	    base, req_param(ctx, m));
	if (m->client_streaming) {
		gen_buf_printf(o,
		               "\treturn rdmx__codec_stream_open(ep, %s_ID, %s_KIND, NULL, opts, "
		               "call);\n}\n\n",
		               up, up);
	} else {
		gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n");
		gen_buf_puts(o, "\tif (!req)\n\t\treturn RDMX_E_INVAL;\n");
		gen_buf_printf(o, "\tp = %s_payload(req);\n", in);
		gen_buf_printf(o,
		               "\treturn rdmx__codec_stream_open(ep, %s_ID, %s_KIND, &p, opts, "
		               "call);\n}\n\n",
		               up, up);
	}
	if (m->client_streaming) {
		gen_buf_printf(o,
		               "int %s_write(struct rdmx_codec_stream *call, const %s *req)\n{\n",
		               base, in);
		gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n");
		gen_buf_puts(o, "\tif (!req)\n\t\treturn RDMX_E_INVAL;\n");
		gen_buf_printf(o, "\tp = %s_payload(req);\n", in);
		gen_buf_puts(o, "\treturn rdmx__codec_stream_write(call, &p);\n}\n\n");
		gen_buf_printf(o, "int %s_close_send(struct rdmx_codec_stream *call)\n{\n", base);
		gen_buf_puts(o, "\treturn rdmx__codec_stream_close_send(call);\n}\n\n");
	}
	gen_buf_printf(o,
	               "int %s_read(struct rdmx_codec_stream *call, %s *resp,\n"
	               "\tstruct rdmx_arena *arena)\n{\n",
	               base, out);
	gen_buf_puts(o, "\tstruct rdmx_decode_opts dopts = {0, true, 0};\n");
	gen_buf_puts(o, "\tconst void *data;\n\tsize_t len;\n\tint r;\n");
	gen_buf_puts(o, "\tif (!resp)\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_puts(o, "\tr = rdmx__codec_stream_read(call, &data, &len);\n");
	gen_buf_puts(o, "\tif (r <= 0)\n\t\treturn r;\n");
	if (gen_has_required(m->out)) /* the default message lacks its required fields */
		gen_buf_puts(o, "\tif (len == 0)\n\t\treturn RDMX_E_PROTOCOL;\n");
	else
		gen_buf_printf(o, "\tif (len == 0) {\n\t\t%s_init(resp);\n\t\treturn 1;\n\t}\n",
		               out);
	gen_buf_printf(o, "\tr = %s_decode(resp, data, len, arena, &dopts);\n", out);
	gen_buf_puts(o, "\treturn r ? r : 1;\n}\n\n");
	gen_buf_printf(
	    o,
	    "int %s_finish(struct rdmx_codec_stream *call, struct rdmx_rpc_status *status,\n"
	    "\tstruct rdmx_arena *arena)\n{\n",
	    base);
	gen_buf_puts(o, "\treturn rdmx__codec_stream_finish(call, status, arena);\n}\n\n");
}

static void emit_server(struct gen_ctx *ctx, struct gen_buf *o, const char *base,
                        const struct gen_method *m)
{
	const char *out = m->out->cname;

	gen_buf_printf(o, "struct %s__actx {\n\tstruct %s_server_cbs cbs;\n\tvoid *arg;\n};\n\n",
	               base, base);
	gen_buf_printf(
	    o,
	    "static void %s__smsg(struct rdmx_rpc_stream *s, const void *data, size_t len,\n"
	    "\tvoid *arg)\n{\n",
	    base);
	gen_buf_printf(o, "\tstruct %s__actx *c = arg;\n", base);
	emit_decode_msg(ctx, o, m->in);
	gen_buf_puts(o, "\tif (r)\n\t\trdmx_rpc_stream_finish(s, RDMX_RPC_INVALID_ARGUMENT, "
	                "\"malformed request\", NULL, 0,\n\t\t\tNULL);\n");
	gen_buf_puts(o, "\telse if (c->cbs.on_msg)\n\t\tc->cbs.on_msg(s, &msg, c->arg);\n");
	gen_buf_puts(o, "\trdmx_arena_fini(&a);\n}\n\n");
	gen_buf_printf(o, "static void %s__shalf(struct rdmx_rpc_stream *s, void *arg)\n{\n", base);
	gen_buf_printf(o, "\tstruct %s__actx *c = arg;\n", base);
	gen_buf_puts(o, "\tif (c->cbs.on_half_close)\n\t\tc->cbs.on_half_close(s, c->arg);\n}\n\n");
	gen_buf_printf(o, "static void %s__swritable(struct rdmx_rpc_stream *s, void *arg)\n{\n",
	               base);
	gen_buf_printf(o, "\tstruct %s__actx *c = arg;\n", base);
	gen_buf_puts(o, "\tif (c->cbs.on_writable)\n\t\tc->cbs.on_writable(s, c->arg);\n}\n\n");
	gen_buf_printf(o,
	               "static void %s__sdone(struct rdmx_rpc_stream *s,\n"
	               "\tconst struct rdmx_rpc_rich_status *st, void *arg)\n{\n",
	               base);
	gen_buf_printf(o, "\tstruct %s__actx *c = arg;\n", base);
	gen_buf_puts(o, "\tif (c->cbs.on_done)\n\t\tc->cbs.on_done(s, st, c->arg);\n");
	gen_buf_puts(o, "\tfree(c);\n}\n\n");
	gen_buf_printf(o,
	               "int %s_accept(struct rdmx_rpc_stream *s, const struct %s_server_cbs *cbs,\n"
	               "\tvoid *arg)\n{\n",
	               base, base);
	gen_buf_printf(o,
	               "\tstruct rdmx_rpc_stream_cbs raw = {%s__smsg, %s__shalf, %s__swritable, "
	               "NULL,\n\t\t%s__sdone};\n",
	               base, base, base, base);
	gen_buf_printf(o, "\tstruct %s__actx *c;\n\tint r;\n", base);
	gen_buf_puts(o, "\tif (!s || !cbs)\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_puts(o, "\tc = malloc(sizeof(*c));\n\tif (!c)\n\t\treturn RDMX_E_NOMEM;\n");
	gen_buf_puts(o, "\tc->cbs = *cbs;\n\tc->arg = arg;\n");
	gen_buf_puts(o, "\tr = rdmx_rpc_stream_set_callbacks(s, &raw, c);\n");
	gen_buf_puts(o, "\tif (r)\n\t\tfree(c);\n\treturn r;\n}\n\n");
	gen_buf_printf(o, "int %s_send(struct rdmx_rpc_stream *s, const %s *resp)\n{\n", base, out);
	gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n");
	gen_buf_puts(o, "\tif (!s || !resp)\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_printf(o, "\tp = %s_payload(resp);\n", out);
	gen_buf_puts(o, "\treturn rdmx_rpc_stream_write(s, &p);\n}\n\n");
}

void gen_emit_stream_c(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_method *m)
{
	char *base = m->cbase;
	char *up = gen_upper(ctx, base);

	gen_buf_printf(o, "/* %s: %s-streaming */\n\n", m->name, kind_name(m));
	emit_client_async(ctx, o, base, up, m);
	emit_client_blocking(ctx, o, base, up, m);
	emit_server(ctx, o, base, m);
}
