/* rdmx-gen: the generated source (NAME.rdmx.c): size, encode and decode per
 * message, client stubs and server skeletons per service. The emitted code
 * calls the inline readers/writers of include/rdmx/codec.h. */
#include <math.h>
#include <string.h>

#include "gen.h"

/* ---- one value of a field's element type ---- */

static bool is_signed(enum gen_type t)
{
	return t == GT_INT32 || t == GT_INT64 || t == GT_SINT32 || t == GT_SINT64 ||
	       t == GT_SFIXED32 || t == GT_SFIXED64 || t == GT_ENUM;
}

static bool is_unsigned(enum gen_type t)
{
	return t == GT_UINT32 || t == GT_UINT64 || t == GT_FIXED32 || t == GT_FIXED64;
}

/* fixed encoded size of one value, 0 when it depends on the value */
static int fixed_size(enum gen_type t)
{
	return t == GT_BOOL ? 1 : t == GT_FLOAT ? 5 : t == GT_DOUBLE ? 9 : 0;
}

/* least bytes one encoded element takes (for count checks) */
static int min_size(enum gen_type t)
{
	return t == GT_FLOAT || t == GT_DOUBLE ? 5 : t == GT_BYTES ? 2 : 1;
}

/* size expression of value v; `ptr` when a message value is a pointer */
static char *size_expr(struct gen_ctx *ctx, const struct gen_field *fd, const char *v, bool ptr)
{
	enum gen_type t = fd->type;
	if (is_signed(t))
		return gen_printf(&ctx->pool, "rdmx__size_int((int64_t)%s)", v);
	if (is_unsigned(t))
		return gen_printf(&ctx->pool, "rdmx__size_uint((uint64_t)%s)", v);
	if (fixed_size(t))
		return gen_printf(&ctx->pool, "%d", fixed_size(t));
	if (t == GT_STRING)
		return gen_printf(&ctx->pool, "rdmx__size_str(%s.len)", v);
	if (t == GT_BYTES)
		return gen_printf(&ctx->pool, "rdmx__size_bin(%s.len)", v);
	return gen_printf(&ctx->pool, "%s_encoded_size(%s%s)", fd->msg->cname, ptr ? "" : "&", v);
}

static char *enc_stmt(struct gen_ctx *ctx, const struct gen_field *fd, const char *v, bool ptr)
{
	switch (fd->type) {
	case GT_BOOL:
		return gen_printf(&ctx->pool, "rdmx__enc_bool(e, %s);", v);
	case GT_FLOAT:
		return gen_printf(&ctx->pool, "rdmx__enc_f32(e, %s);", v);
	case GT_DOUBLE:
		return gen_printf(&ctx->pool, "rdmx__enc_f64(e, %s);", v);
	case GT_STRING:
		return gen_printf(&ctx->pool, "rdmx__enc_str(e, %s.data, %s.len);", v, v);
	case GT_BYTES:
		return gen_printf(&ctx->pool, "rdmx__enc_bin(e, %s.data, %s.len);", v, v);
	case GT_MESSAGE:
		return gen_printf(&ctx->pool, "%s__enc(e, %s%s);", fd->msg->cname, ptr ? "" : "&",
		                  v);
	default:
		if (is_signed(fd->type))
			return gen_printf(&ctx->pool, "rdmx__enc_int(e, (int64_t)%s);", v);
		return gen_printf(&ctx->pool, "rdmx__enc_uint(e, (uint64_t)%s);", v);
	}
}

/* statement decoding one value into lvalue v (message: pointer member) */
static char *dec_stmt(struct gen_ctx *ctx, const struct gen_field *fd, const char *v)
{
	const char *fn;
	switch (fd->type) {
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
		fn = "i32";
		break;
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		fn = "i64";
		break;
	case GT_UINT32:
	case GT_FIXED32:
		fn = "u32";
		break;
	case GT_UINT64:
	case GT_FIXED64:
		fn = "u64";
		break;
	case GT_BOOL:
		fn = "bool";
		break;
	case GT_FLOAT:
		fn = "f32";
		break;
	case GT_DOUBLE:
		fn = "f64";
		break;
	case GT_STRING:
		fn = "str";
		break;
	case GT_BYTES:
		fn = "bin";
		break;
	case GT_ENUM:
		return gen_printf(&ctx->pool, "rc = rdmx__dec_enum(d, (int32_t *)&%s);", v);
	default:
		return gen_printf(&ctx->pool, "rc = %s__decp(d, &%s);", fd->msg->cname, v);
	}
	return gen_printf(&ctx->pool, "rc = rdmx__dec_%s(d, &%s);", fn, v);
}

/* ---- proto2 defaults ---- */

/* a field that starts at a default other than zero: set by X_init and by the
 * decoder before it reads the message (a oneof member's default is not
 * kept: the union holds one member at a time) */
static bool has_default(const struct gen_field *fd)
{
	return fd->def && !fd->def->zero && fd->label != GL_REPEATED && fd->oneof < 0;
}

/* a C string literal of len bytes: printable ASCII, the rest in octal */
static char *c_literal(struct gen_ctx *ctx, const char *s, size_t len)
{
	struct gen_buf b = {0};
	char *r;
	gen_buf_quote(&b, s, len, "\\\"?");
	r = gen_strdup(&ctx->pool, b.data);
	gen_buf_free(&b);
	return r;
}

/* a floating constant C reads back as the same value */
static char *c_float(struct gen_ctx *ctx, double v, bool is_float)
{
	char *t;
	if (isnan(v))
		return "NAN";
	if (isinf(v))
		return v < 0 ? "-INFINITY" : "INFINITY";
	t = gen_printf(&ctx->pool, is_float ? "%.9g" : "%.17g", v);
	if (!strpbrk(t, ".e"))
		t = gen_printf(&ctx->pool, "%s.0", t);
	return is_float ? gen_printf(&ctx->pool, "%sf", t) : t;
}

/* the default of a scalar or enum field (strings: c_literal) */
static char *default_expr(struct gen_ctx *ctx, const struct gen_field *fd)
{
	const struct gen_default *d = fd->def;
	switch (fd->type) {
	case GT_BOOL:
		return d->i ? "true" : "false";
	case GT_ENUM:
		return d->ev->cname;
	case GT_FLOAT:
	case GT_DOUBLE:
		return c_float(ctx, d->d, fd->type == GT_FLOAT);
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
		return d->i == INT32_MIN ? "(-2147483647 - 1)"
		                         : gen_printf(&ctx->pool, "%lld", (long long)d->i);
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		return d->i == INT64_MIN ? "(-INT64_C(9223372036854775807) - 1)"
		                         : gen_printf(&ctx->pool, "INT64_C(%lld)", (long long)d->i);
	case GT_UINT32:
	case GT_FIXED32:
		return gen_printf(&ctx->pool, "%lluu", (unsigned long long)d->u);
	default:
		return gen_printf(&ctx->pool, "UINT64_C(%llu)", (unsigned long long)d->u);
	}
}

char *gen_default_c(struct gen_ctx *ctx, const struct gen_field *fd)
{
	if (fd->type == GT_STRING || fd->type == GT_BYTES)
		return c_literal(ctx, fd->def->text, fd->def->len);
	return default_expr(ctx, fd);
}

/* statements giving the fields of *var (a pointer) their proto2 defaults */
static void emit_defaults(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m,
                          const char *var)
{
	int i;
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (!has_default(fd))
			continue;
		if (fd->type == GT_STRING || fd->type == GT_BYTES) {
			gen_buf_printf(o, "\t%s->%s.data = %s%s;\n", var, fd->cname,
			               fd->type == GT_BYTES ? "(const uint8_t *)" : "",
			               c_literal(ctx, fd->def->text, fd->def->len));
			gen_buf_printf(o, "\t%s->%s.len = %zu;\n", var, fd->cname, fd->def->len);
		} else {
			gen_buf_printf(o, "\t%s->%s = %s;\n", var, fd->cname,
			               default_expr(ctx, fd));
		}
	}
}

static bool has_defaults(const struct gen_message *m)
{
	int i;
	for (i = 0; i < m->fields.n; i++)
		if (has_default(m->fields.items[i]))
			return true;
	return false;
}

static bool file_needs_math(const struct gen_vec *msgs)
{
	int i, j;
	for (i = 0; i < msgs->n; i++) {
		const struct gen_message *m = msgs->items[i];
		for (j = 0; j < m->fields.n; j++) {
			const struct gen_field *fd = m->fields.items[j];
			if (has_default(fd) && (fd->type == GT_FLOAT || fd->type == GT_DOUBLE) &&
			    !isfinite(fd->def->d))
				return true; /* INFINITY, NAN, isnan() */
		}
	}
	return false;
}

/* when field fd of *m is written; NULL: always (a proto2 required field
 * other than a message, which has no presence in C) */
static char *present_expr(struct gen_ctx *ctx, const struct gen_message *m,
                          const struct gen_field *fd)
{
	const char *f = fd->cname;
	if (fd->oneof >= 0) {
		const struct gen_oneof *o = m->oneofs.items[fd->oneof];
		return gen_printf(&ctx->pool, "m->%s_case == %s_%s_%s", o->cname, m->cname, o->name,
		                  fd->name);
	}
	if (fd->label == GL_REPEATED)
		return gen_printf(&ctx->pool, "m->n_%s != 0", f);
	if (fd->type == GT_MESSAGE)
		return gen_printf(&ctx->pool, "m->%s != NULL", f);
	if (fd->required)
		return NULL; /* always written, as protobuf writes it */
	if (fd->label == GL_OPTIONAL)
		return gen_printf(&ctx->pool, "m->has_%s", f);
	if (has_default(fd)) {
		/* a proto2 field without presence is written unless it holds its
		 * default (which the decoder gives it when it is absent) */
		if (fd->type == GT_STRING || fd->type == GT_BYTES)
			return gen_printf(
			    &ctx->pool, "m->%s.len != %zu || memcmp(m->%s.data, %s, %zu) != 0", f,
			    fd->def->len, f, c_literal(ctx, fd->def->text, fd->def->len),
			    fd->def->len);
		if (fd->type == GT_BOOL)
			return gen_printf(&ctx->pool, "!m->%s", f);
		if ((fd->type == GT_FLOAT || fd->type == GT_DOUBLE) && isnan(fd->def->d))
			return gen_printf(&ctx->pool, "!isnan(m->%s)", f); /* NaN != NaN */
		return gen_printf(&ctx->pool, "m->%s != %s", f, default_expr(ctx, fd));
	}
	switch (fd->type) {
	case GT_BOOL:
		return gen_printf(&ctx->pool, "m->%s", f);
	case GT_FLOAT:
		return gen_printf(&ctx->pool, "rdmx__f32_set(m->%s)", f);
	case GT_DOUBLE:
		return gen_printf(&ctx->pool, "rdmx__f64_set(m->%s)", f);
	case GT_STRING:
	case GT_BYTES:
		return gen_printf(&ctx->pool, "m->%s.len != 0", f);
	default:
		return gen_printf(&ctx->pool, "m->%s != 0", f);
	}
}

static int key_size(int64_t number)
{
	return number < 128 ? 1 : number <= 0xff ? 2 : number <= 0xffff ? 3 : 5;
}

static void emit_key(struct gen_buf *o, const char *ind, int64_t number)
{
	if (number < 128)
		gen_buf_printf(o, "%srdmx__enc_byte(e, %lld);\n", ind, (long long)number);
	else
		gen_buf_printf(o, "%srdmx__enc_uint(e, %lld);\n", ind, (long long)number);
}

static int max_keys(const struct gen_message *m)
{
	int i, n = m->oneofs.n;
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (fd->oneof < 0)
			n++;
	}
	return n;
}

/* ---- size ---- */

static void emit_size(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m)
{
	int i;
	bool loops = false;
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (fd->label == GL_REPEATED && !(fixed_size(fd->type) && !fd->is_map))
			loops = true;
	}
	gen_buf_printf(o, "size_t %s_encoded_size(const %s *m)\n{\n", m->cname, m->cname);
	gen_buf_printf(o, "\tsize_t n = 0, k = 0;\n");
	if (loops)
		gen_buf_printf(o, "\tsize_t i;\n");
	gen_buf_printf(o, "\tif (!m)\n\t\treturn 1;\n");
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		char *pres = present_expr(ctx, m, fd);
		char *v = gen_printf(&ctx->pool, "m->%s", fd->cname);
		if (!pres) {
			gen_buf_printf(o, "\tk++;\n\tn += %d + %s;\n", key_size(fd->number),
			               size_expr(ctx, fd, v, true));
			continue;
		}
		gen_buf_printf(o, "\tif (%s) {\n\t\tk++;\n", pres);
		if (fd->is_map) {
			const struct gen_field *kf = fd->msg->fields.items[0];
			const struct gen_field *vf = fd->msg->fields.items[1];
			char *ke = gen_printf(&ctx->pool, "m->%s[i].key", fd->cname);
			char *ve = gen_printf(&ctx->pool, "m->%s[i].value", fd->cname);
			gen_buf_printf(o, "\t\tn += %d + rdmx__size_hdr(m->n_%s);\n",
			               key_size(fd->number), fd->cname);
			gen_buf_printf(o, "\t\tfor (i = 0; i < m->n_%s; i++)\n", fd->cname);
			gen_buf_printf(o, "\t\t\tn += %s + %s;\n", size_expr(ctx, kf, ke, false),
			               size_expr(ctx, vf, ve, true));
		} else if (fd->label == GL_REPEATED) {
			gen_buf_printf(o, "\t\tn += %d + rdmx__size_hdr(m->n_%s);\n",
			               key_size(fd->number), fd->cname);
			if (fixed_size(fd->type)) {
				gen_buf_printf(o, "\t\tn += m->n_%s * %d;\n", fd->cname,
				               fixed_size(fd->type));
			} else {
				gen_buf_printf(o, "\t\tfor (i = 0; i < m->n_%s; i++)\n", fd->cname);
				gen_buf_printf(
				    o, "\t\t\tn += %s;\n",
				    size_expr(ctx, fd,
				              gen_printf(&ctx->pool, "m->%s[i]", fd->cname),
				              false));
			}
		} else {
			gen_buf_printf(o, "\t\tn += %d + %s;\n", key_size(fd->number),
			               size_expr(ctx, fd, v, true));
		}
		gen_buf_puts(o, "\t}\n");
	}
	gen_buf_puts(o, "\treturn n + rdmx__size_hdr(k);\n}\n\n");
}

/* ---- encode ---- */

/* statements that stop the encoder as a full buffer does, so that X_encode
 * fails with RDMX_E_INVAL: a required message field is NULL (C has no
 * presence for the other required fields, which are always written) */
#define ENC_FAIL(ind)                                                                              \
	ind "/* a required field is unset: X_encode fails */\n" ind "e->overflow = true;\n" ind    \
	    "e->end = e->p;\n"

bool gen_has_required(const struct gen_message *m)
{
	int i;
	for (i = 0; i < m->fields.n; i++)
		if (((const struct gen_field *)m->fields.items[i])->required)
			return true;
	return false;
}

char *gen_empty_payload(struct gen_ctx *ctx, const struct gen_message *m, const char *var,
                        const char *rc)
{
	if (gen_has_required(m))
		return gen_printf(&ctx->pool,
		                  "%s = RDMX_E_PROTOCOL; /* lacks its required fields */", rc);
	return gen_printf(&ctx->pool, "%s_init(%s);", m->cname, var);
}

static void emit_enc(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m)
{
	int i, nkeys = max_keys(m);
	bool patch = nkeys < 16, loops = false;
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (fd->label == GL_REPEATED)
			loops = true;
	}
	gen_buf_printf(o, "void %s__enc(struct rdmx_enc *e, const %s *m)\n{\n", m->cname, m->cname);
	if (patch)
		gen_buf_puts(o, "\tuint8_t *hdr;\n\tsize_t k = 0;\n");
	else
		gen_buf_puts(o, "\tsize_t k = 0;\n");
	if (loops)
		gen_buf_puts(o, "\tsize_t i;\n");
	if (gen_has_required(m))
		/* the default message lacks its required fields */
		gen_buf_printf(o, "\tif (!m) {\n%s\t\treturn;\n\t}\n", ENC_FAIL("\t\t"));
	else
		gen_buf_puts(o, "\tif (!m) {\n\t\trdmx__enc_map(e, 0);\n\t\treturn;\n\t}\n");
	if (patch) {
		/* fewer than 16 keys: a fixmap whose count is patched at the end */
		gen_buf_puts(o, "\thdr = rdmx__enc_room(e, 1) ? e->p++ : NULL;\n");
	} else {
		int always = 0;
		for (i = 0; i < m->fields.n; i++) {
			const struct gen_field *fd = m->fields.items[i];
			char *pres = present_expr(ctx, m, fd);
			if (pres)
				gen_buf_printf(o, "\tk += (%s) ? 1 : 0;\n", pres);
			else
				always++;
		}
		if (always)
			gen_buf_printf(o, "\tk += %d; /* required */\n", always);
		gen_buf_puts(o, "\trdmx__enc_map(e, k);\n");
	}
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		char *pres = present_expr(ctx, m, fd);
		if (!pres) {
			emit_key(o, "\t", fd->number);
			gen_buf_printf(
			    o, "\t%s\n",
			    enc_stmt(ctx, fd, gen_printf(&ctx->pool, "m->%s", fd->cname), true));
			if (patch)
				gen_buf_puts(o, "\tk++;\n");
			continue;
		}
		gen_buf_printf(o, "\tif (%s) {\n", pres);
		emit_key(o, "\t\t", fd->number);
		if (fd->is_map) {
			const struct gen_field *kf = fd->msg->fields.items[0];
			const struct gen_field *vf = fd->msg->fields.items[1];
			gen_buf_printf(o, "\t\trdmx__enc_map(e, m->n_%s);\n", fd->cname);
			gen_buf_printf(o, "\t\tfor (i = 0; i < m->n_%s; i++) {\n", fd->cname);
			gen_buf_printf(o, "\t\t\t%s\n",
			               enc_stmt(ctx, kf,
			                        gen_printf(&ctx->pool, "m->%s[i].key", fd->cname),
			                        false));
			gen_buf_printf(o, "\t\t\t%s\n",
			               enc_stmt(ctx, vf,
			                        gen_printf(&ctx->pool, "m->%s[i].value", fd->cname),
			                        true));
			gen_buf_puts(o, "\t\t}\n");
		} else if (fd->label == GL_REPEATED) {
			gen_buf_printf(o, "\t\trdmx__enc_array(e, m->n_%s);\n", fd->cname);
			gen_buf_printf(o, "\t\tfor (i = 0; i < m->n_%s; i++)\n", fd->cname);
			gen_buf_printf(o, "\t\t\t%s\n",
			               enc_stmt(ctx, fd,
			                        gen_printf(&ctx->pool, "m->%s[i]", fd->cname),
			                        false));
		} else {
			gen_buf_printf(
			    o, "\t\t%s\n",
			    enc_stmt(ctx, fd, gen_printf(&ctx->pool, "m->%s", fd->cname), true));
		}
		if (patch)
			gen_buf_puts(o, "\t\tk++;\n");
		if (fd->required) /* a message: NULL is unset */
			gen_buf_printf(o, "\t} else {\n%s", ENC_FAIL("\t\t"));
		gen_buf_puts(o, "\t}\n");
	}
	if (patch)
		gen_buf_puts(o, "\tif (hdr)\n\t\t*hdr = (uint8_t)(0x80 | k);\n");
	else
		gen_buf_puts(o, "\t(void)k;\n");
	gen_buf_puts(o, "}\n\n");
}

/* ---- decode ---- */

/* req: fd's index among the required fields of m, -1 when it is not one */
static void emit_dec_case(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m,
                          const struct gen_field *fd, int req)
{
	gen_buf_printf(o, "\t\tcase %lld: /* %s */\n", (long long)fd->number, fd->name);
	if (fd->is_map || fd->label == GL_REPEATED) {
		const struct gen_field *el = fd;
		const char *elem = gen_ctype(ctx, fd);
		if (fd->is_map)
			gen_buf_puts(o, "\t\t\trc = rdmx__dec_map(d, &cnt);\n");
		else
			gen_buf_printf(o, "\t\t\trc = rdmx__dec_array(d, &cnt, %d);\n",
			               min_size(fd->type));
		gen_buf_puts(o, "\t\t\tif (rc == 0) {\n");
		gen_buf_printf(o, "\t\t\t\t%s *a = rdmx__dec_alloc(d, cnt, sizeof(*a), &rc);\n",
		               elem);
		gen_buf_puts(o, "\t\t\t\tfor (j = 0; rc == 0 && j < cnt; j++) {\n");
		if (fd->is_map) {
			const struct gen_field *kf = fd->msg->fields.items[0];
			const struct gen_field *vf = fd->msg->fields.items[1];
			gen_buf_printf(o, "\t\t\t\t\t%s\n", dec_stmt(ctx, kf, "a[j].key"));
			gen_buf_puts(o, "\t\t\t\t\tif (rc == 0 && !rdmx__dec_nil(d))\n");
			gen_buf_printf(o, "\t\t\t\t\t\t%s\n", dec_stmt(ctx, vf, "a[j].value"));
		} else if (el->type == GT_MESSAGE) {
			gen_buf_puts(o, "\t\t\t\t\trc = rdmx__dec_enter(d);\n");
			gen_buf_puts(o, "\t\t\t\t\tif (rc)\n\t\t\t\t\t\tbreak;\n");
			gen_buf_printf(o, "\t\t\t\t\trc = %s__dec(d, &a[j]);\n", el->msg->cname);
			gen_buf_puts(o, "\t\t\t\t\trdmx__dec_leave(d);\n");
		} else {
			gen_buf_printf(o, "\t\t\t\t\t%s\n", dec_stmt(ctx, fd, "a[j]"));
		}
		gen_buf_puts(o, "\t\t\t\t}\n");
		gen_buf_printf(o, "\t\t\t\tm->%s = a;\n\t\t\t\tm->n_%s = cnt;\n", fd->cname,
		               fd->cname);
		gen_buf_puts(o, "\t\t\t}\n\t\t\tbreak;\n");
		return;
	}
	gen_buf_printf(o, "\t\t\t%s\n",
	               dec_stmt(ctx, fd, gen_printf(&ctx->pool, "m->%s", fd->cname)));
	if (fd->oneof >= 0) {
		const struct gen_oneof *of = m->oneofs.items[fd->oneof];
		gen_buf_printf(o, "\t\t\tm->%s_case = %s_%s_%s;\n", of->cname, m->cname, of->name,
		               fd->name);
	} else if (fd->label == GL_OPTIONAL && fd->type != GT_MESSAGE) {
		gen_buf_printf(o, "\t\t\tm->has_%s = rc == 0;\n", fd->cname);
	} else if (req >= 0) {
		gen_buf_printf(o, "\t\t\treq[%d] |= 0x%xu;\n", req / 32, 1u << (req % 32));
	}
	gen_buf_puts(o, "\t\t\tbreak;\n");
}

/* messages whose structs a decode of m may allocate (sub-messages, map
 * entries), each once: marked with the walk's stamp */
/* the messages m reaches (into seen when not NULL); returns how many */
static int reachable(struct gen_ctx *ctx, const struct gen_message *m, struct gen_vec *seen)
{
	int i, n = 0;
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		struct gen_message *sub = fd->type == GT_MESSAGE ? fd->msg : NULL;
		if (!sub || sub->mark == ctx->stamp)
			continue;
		sub->mark = ctx->stamp;
		if (seen)
			gen_vec_push(&ctx->pool, seen, sub);
		n += 1 + reachable(ctx, sub, seen);
	}
	return n;
}

/* Past this many reachable messages a decoder's budget comes from one
 * per-file function over everything the file reaches (a bound at least as
 * large), so that large, interlinked schemas do not make code quadratic in
 * their size. */
#define REACH_INLINE_MAX 64

static int reach_count(struct gen_ctx *ctx, const struct gen_message *m)
{
	ctx->stamp++;
	return reachable(ctx, m, NULL);
}

static void emit_dec(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m)
{
	int i, nreq = 0;
	bool arrays = false;
	const char *c = m->cname;
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (fd->label == GL_REPEATED)
			arrays = true;
		nreq += fd->required;
	}
	gen_buf_printf(o, "int %s__dec(struct rdmx_dec *d, %s *m)\n{\n", c, c);
	gen_buf_printf(o, "\tuint32_t n, i, key%s;\n", arrays ? ", cnt, j" : "");
	if (nreq) /* the required fields seen, one bit each */
		gen_buf_printf(o, "\tuint32_t req[%d] = {0};\n", (nreq + 31) / 32);
	if (has_defaults(m)) {
		/* what an absent field holds; set before n is read, so that no
		 * compiler sees a store through m between n's write and its use */
		gen_buf_puts(o, "\tint rc;\n");
		emit_defaults(ctx, o, m, "m");
		gen_buf_puts(o, "\trc = rdmx__dec_map(d, &n);\n");
	} else {
		gen_buf_puts(o, "\tint rc = rdmx__dec_map(d, &n);\n");
	}
	gen_buf_puts(o, "\tfor (i = 0; rc == 0 && i < n; i++) {\n");
	gen_buf_puts(o, "\t\trc = rdmx__dec_key(d, &key);\n");
	gen_buf_puts(o, "\t\tif (rc)\n\t\t\tbreak;\n");
	gen_buf_puts(o, "\t\tif (rdmx__dec_nil(d))\n\t\t\tcontinue; /* nil: absent */\n");
	gen_buf_puts(o, "\t\tswitch (key) {\n");
	for (i = 0, nreq = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		emit_dec_case(ctx, o, m, fd, fd->required ? nreq++ : -1);
	}
	gen_buf_puts(o, "\t\tdefault: /* unknown: a newer peer's field */\n");
	gen_buf_puts(o, "\t\t\trc = rdmx__dec_skip(d);\n\t\t\tbreak;\n\t\t}\n\t}\n");
	if (nreq) {
		/* a message without one of its required fields is malformed, as in
		 * protobuf (a nil value counts as absent) */
		int words = (nreq + 31) / 32;
		gen_buf_puts(o, words > 1 ? "\tif (rc == 0 && (" : "\tif (rc == 0 && ");
		for (i = 0; i < words; i++) {
			int bits = i < nreq / 32 ? 32 : nreq % 32;
			gen_buf_printf(o, "%sreq[%d] != 0x%xu", i ? " || " : "", i,
			               bits == 32 ? 0xffffffffu : (1u << bits) - 1);
		}
		gen_buf_printf(o,
		               "%s\n\t\trc = RDMX_E_PROTOCOL; /* a required field is missing */\n",
		               words > 1 ? "))" : ")");
	}
	if (m->fields.n == 0)
		gen_buf_puts(o, "\t(void)m;\n");
	gen_buf_puts(o, "\treturn rc;\n}\n\n");

	gen_buf_printf(o, "int %s__decp(struct rdmx_dec *d, %s **out)\n{\n", c, c);
	gen_buf_printf(o, "\t%s *m;\n\tint rc = rdmx__dec_enter(d);\n", c);
	gen_buf_puts(o, "\tif (rc)\n\t\treturn rc;\n");
	gen_buf_puts(o, "\tif (!rdmx__dec_is_map(d)) {\n\t\trc = RDMX_E_PROTOCOL;\n");
	gen_buf_puts(o, "\t} else {\n\t\tm = rdmx__dec_alloc(d, 1, sizeof(*m), &rc);\n");
	gen_buf_printf(o, "\t\tif (m) {\n\t\t\trc = %s__dec(d, m);\n\t\t\t*out = m;\n\t\t}\n\t}\n",
	               c);
	gen_buf_puts(o, "\trdmx__dec_leave(d);\n\treturn rc;\n}\n\n");

	gen_buf_printf(
	    o,
	    "int %s_decode(%s *msg, const void *src, size_t len, struct rdmx_arena *arena,\n"
	    "\tconst struct rdmx_decode_opts *opts)\n{\n",
	    c, c);
	gen_buf_printf(o, "\tstruct rdmx_dec d;\n\t%s tmp;\n", c);
	gen_buf_puts(o, "\tsize_t ratio = RDMX_DECODE_ALLOC_FACTOR;\n\tint rc;\n");
	gen_buf_puts(o, "\tif (!msg)\n\t\treturn RDMX_E_INVAL;\n");
	{
		/* the default budget: the largest struct reachable per input byte */
		struct gen_vec seen = {0};
		int k;
		if (reach_count(ctx, m) > REACH_INLINE_MAX) {
			gen_buf_puts(o, "\tratio = rdmx__max_sizeof();\n");
			seen.n = 0;
		} else {
			ctx->stamp++;
			reachable(ctx, m, &seen);
		}
		for (k = 0; k < seen.n; k++) {
			const struct gen_message *r = seen.items[k];
			gen_buf_printf(o, "\tif (sizeof(%s) > ratio)\n\t\tratio = sizeof(%s);\n",
			               r->cname, r->cname);
		}
	}
	gen_buf_puts(o, "\trc = rdmx__dec_init(&d, src, len, arena, opts, ratio);\n");
	gen_buf_puts(o, "\tif (rc)\n\t\treturn rc;\n");
	gen_buf_puts(o, "\tmemset(&tmp, 0, sizeof(tmp));\n");
	gen_buf_printf(o, "\trc = %s__dec(&d, &tmp);\n", c);
	gen_buf_puts(o, "\tif (rc == 0)\n\t\trc = rdmx__dec_finish(&d);\n");
	gen_buf_puts(o, "\tif (rc == 0)\n\t\t*msg = tmp;\n\treturn rc;\n}\n\n");
}

static void emit_message(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_message *m)
{
	const char *c = m->cname;
	gen_buf_printf(o, "/* ---- %s ---- */\n\n", m->full_name);
	gen_buf_printf(o, "void %s_init(%s *msg)\n{\n\tmemset(msg, 0, sizeof(*msg));\n", c, c);
	emit_defaults(ctx, o, m, "msg");
	gen_buf_puts(o, "}\n\n");
	emit_size(ctx, o, m);
	emit_enc(ctx, o, m);
	gen_buf_printf(o, "int %s_encode(const %s *msg, void *dst, size_t len)\n{\n", c, c);
	gen_buf_puts(o, "\tstruct rdmx_enc e;\n");
	gen_buf_puts(o, "\tif (!msg || (!dst && len))\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_printf(o, "\trdmx__enc_init(&e, dst, len);\n\t%s__enc(&e, msg);\n", c);
	gen_buf_puts(o, "\treturn rdmx__enc_finish(&e);\n}\n\n");
	gen_buf_printf(o, "int %s__encode_cb(const void *msg, void *dst, size_t len)\n{\n", c);
	gen_buf_printf(o, "\treturn %s_encode((const %s *)msg, dst, len);\n}\n\n", c, c);
	gen_buf_printf(o, "struct rdmx_rpc_payload %s_payload(const %s *msg)\n{\n", c, c);
	gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n\tp.obj = msg;\n");
	gen_buf_printf(o, "\tp.len = %s_encoded_size(msg);\n\tp.encode = %s__encode_cb;\n", c, c);
	gen_buf_puts(o, "\treturn p;\n}\n\n");
	emit_dec(ctx, o, m);
}

/* ---- services ---- */

static void emit_method_client(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_method *me)
{
	char *base = me->cbase;
	char *up = gen_upper(ctx, base);
	const char *in = me->in->cname, *out = me->out->cname;

	/* blocking */
	gen_buf_printf(o,
	               "int %s(struct rdmx_rpc_ep *ep, const %s *req, %s *resp,\n"
	               "\tstruct rdmx_arena *arena, const struct rdmx_rpc_call_opts *opts,\n"
	               "\tstruct rdmx_rpc_status *status)\n{\n",
	               base, in, out);
	gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n\tstruct rdmx_rpc_reply reply;\n\tint r;\n");
	gen_buf_puts(o, "\tif (!ep || !req || !resp)\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_printf(o, "\tp = %s_payload(req);\n", in);
	gen_buf_puts(o, "\tmemset(&reply, 0, sizeof(reply));\n");
	gen_buf_printf(o, "\tr = rdmx_rpc_call(ep, %s_ID, &p, opts, &reply);\n", up);
	gen_buf_puts(o, "\tif (r < 0)\n\t\treturn r;\n");
	gen_buf_puts(
	    o, "\tr = rdmx__rpc_status_fill(status, arena, (int)reply.code, reply.message);\n");
	gen_buf_puts(o,
	             "\tif (r == 0 && reply.code == RDMX_RPC_OK && !(opts && opts->oneway)) {\n");
	gen_buf_puts(o, "\t\tstruct rdmx_decode_opts dopts = {0, true, 0};\n");
	gen_buf_printf(o, "\t\tif (reply.len == 0)\n\t\t\t%s\n",
	               gen_empty_payload(ctx, me->out, "resp", "r"));
	gen_buf_printf(
	    o, "\t\telse\n\t\t\tr = %s_decode(resp, reply.data, reply.len, arena, &dopts);\n", out);
	gen_buf_puts(o, "\t}\n");
	gen_buf_puts(o, "\tif (r == 0)\n\t\tr = (int)reply.code;\n");
	gen_buf_puts(o, "\trdmx_rpc_reply_fini(&reply);\n\treturn r;\n}\n\n");

	/* async */
	gen_buf_printf(o, "struct %s__ctx {\n\t%s_cb cb;\n\tvoid *arg;\n\tbool oneway;\n};\n\n",
	               base, base);
	gen_buf_printf(o, "static void %s__done(const struct rdmx_rpc_result *res, void *arg)\n{\n",
	               base);
	gen_buf_printf(o, "\tstruct %s__ctx c = *(struct %s__ctx *)arg;\n", base, base);
	gen_buf_puts(o, "\tunsigned char buf[RDMX_CODEC_STACK_ARENA];\n\tstruct rdmx_arena a;\n");
	gen_buf_printf(o, "\t%s resp;\n\tint r = 0;\n\tfree(arg);\n", out);
	gen_buf_puts(o, "\tif (res->code != RDMX_RPC_OK || c.oneway) {\n");
	gen_buf_puts(o, "\t\tc.cb(res->code, res->message, NULL, c.arg);\n\t\treturn;\n\t}\n");
	gen_buf_puts(o, "\trdmx_arena_init(&a, buf, sizeof(buf), 0);\n");
	gen_buf_printf(o, "\tif (res->len == 0)\n\t\t%s\n",
	               gen_empty_payload(ctx, me->out, "&resp", "r"));
	gen_buf_printf(o, "\telse\n\t\tr = %s_decode(&resp, res->data, res->len, &a, NULL);\n",
	               out);
	gen_buf_puts(o, "\tif (r)\n");
	gen_buf_puts(o, "\t\tc.cb(RDMX_RPC_INTERNAL, \"malformed response\", NULL, c.arg);\n");
	gen_buf_puts(o, "\telse\n\t\tc.cb(RDMX_RPC_OK, res->message, &resp, c.arg);\n");
	gen_buf_puts(o, "\trdmx_arena_fini(&a);\n}\n\n");

	gen_buf_printf(o,
	               "int %s_async(struct rdmx_rpc_ep *ep, const %s *req,\n"
	               "\tconst struct rdmx_rpc_call_opts *opts, %s_cb cb, void *arg,\n"
	               "\tuint64_t *call_id)\n{\n",
	               base, in, base);
	gen_buf_printf(o, "\tstruct rdmx_rpc_payload p;\n\tstruct %s__ctx *c;\n\tint r;\n", base);
	gen_buf_puts(o, "\tif (!ep || !req || !cb)\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_puts(o, "\tc = malloc(sizeof(*c));\n\tif (!c)\n\t\treturn RDMX_E_NOMEM;\n");
	gen_buf_puts(o, "\tc->cb = cb;\n\tc->arg = arg;\n\tc->oneway = opts && opts->oneway;\n");
	gen_buf_printf(o, "\tp = %s_payload(req);\n", in);
	gen_buf_printf(o, "\tr = rdmx_rpc_call_async(ep, %s_ID, &p, opts, %s__done, c, call_id);\n",
	               up, base);
	gen_buf_puts(o, "\tif (r)\n\t\tfree(c);\n\treturn r;\n}\n\n");

	/* over a service: the blocking form through the balancer */
	gen_buf_printf(
	    o,
	    "int %s_balanced(struct rdmx_registry_balancer *balancer,\n"
	    "\tconst %s *req, %s *resp, struct rdmx_arena *arena,\n"
	    "\tconst struct rdmx_rpc_call_opts *opts, struct rdmx_rpc_status *status)\n{\n",
	    base, in, out);
	gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n\tstruct rdmx_rpc_reply reply;\n\tint r;\n");
	gen_buf_puts(o, "\tif (!balancer || !req || !resp)\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_printf(o, "\tp = %s_payload(req);\n", in);
	gen_buf_puts(o, "\tmemset(&reply, 0, sizeof(reply));\n");
	gen_buf_printf(
	    o, "\tr = rdmx_registry_balancer_call(balancer, %s_ID, &p, opts, %s, &reply);\n", up,
	    me->idempotent ? "true" : "false");
	gen_buf_puts(o, "\tif (r < 0)\n\t\treturn r;\n");
	gen_buf_puts(
	    o, "\tr = rdmx__rpc_status_fill(status, arena, (int)reply.code, reply.message);\n");
	gen_buf_puts(o, "\tif (r == 0 && reply.code == RDMX_RPC_OK) {\n");
	gen_buf_puts(o, "\t\tstruct rdmx_decode_opts dopts = {0, true, 0};\n");
	gen_buf_printf(o, "\t\tif (reply.len == 0)\n\t\t\t%s\n",
	               gen_empty_payload(ctx, me->out, "resp", "r"));
	gen_buf_printf(
	    o, "\t\telse\n\t\t\tr = %s_decode(resp, reply.data, reply.len, arena, &dopts);\n", out);
	gen_buf_puts(o, "\t}\n");
	gen_buf_puts(o, "\tif (r == 0)\n\t\tr = (int)reply.code;\n");
	gen_buf_puts(o, "\trdmx_rpc_reply_fini(&reply);\n\treturn r;\n}\n\n");

	/* respond */
	gen_buf_printf(
	    o,
	    "int %s_respond(struct rdmx_rpc_server_call *call, enum rdmx_rpc_code code,\n"
	    "\tconst char *message, const %s *resp)\n{\n",
	    base, out);
	gen_buf_puts(o, "\tstruct rdmx_rpc_payload p;\n");
	gen_buf_puts(o, "\tif (!resp)\n\t\treturn rdmx_rpc_respond(call, code, message, NULL);\n");
	gen_buf_printf(o, "\tp = %s_payload(resp);\n", out);
	gen_buf_puts(o, "\treturn rdmx_rpc_respond(call, code, message, &p);\n}\n\n");
}

/* ---- the IDL text, for the server's reflection service ---- */

/* One C string literal per piece of at most IDL_PIECE bytes (C compilers
 * need only accept 4095-character literals; -pedantic warns past that):
 * ASCII, with every other byte, quotes, backslashes and '?' (trigraphs)
 * escaped. */
#define IDL_PIECE 2000u

static void emit_idl_text(struct gen_buf *o, const char *text, size_t len)
{
	size_t piece = 0;

	gen_buf_puts(o, "\t\"");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (piece >= IDL_PIECE) {
			gen_buf_puts(o, "\",\n\t\"");
			piece = 0;
		}
		piece++;
		if (c == '\\' || c == '"' || c == '?')
			gen_buf_printf(o, "\\%c", c);
		else if (c == '\n' && i + 1 < len && piece < IDL_PIECE)
			gen_buf_puts(o, "\\n\"\n\t\"");
		else if (c == '\n')
			gen_buf_puts(o, "\\n");
		else if (c == '\t')
			gen_buf_puts(o, "\\t");
		else if (c < 0x20 || c >= 0x7f)
			gen_buf_printf(o, "\\%03o", c);
		else
			gen_buf_printf(o, "%c", c);
	}
	gen_buf_puts(o, "\"");
}

static size_t idl_pieces(size_t len)
{
	return len ? (len + IDL_PIECE - 1) / IDL_PIECE : 1;
}

/* the file, then what it imports (each once), as (name, file) pairs */
static void idl_closure(struct gen_ctx *ctx, const struct gen_file *f, const char *name,
                        struct gen_vec *names, struct gen_vec *files)
{
	for (int i = 0; i < files->n; i++)
		if (files->items[i] == f)
			return;
	gen_vec_push(&ctx->pool, names, (void *)name);
	gen_vec_push(&ctx->pool, files, (void *)f);
	for (int i = 0; i < f->imports.n; i++) {
		const struct gen_import *im = f->imports.items[i];

		if (gen_import_needed(f, im))
			idl_closure(ctx, im->file, im->name, names, files);
	}
}

static void emit_idl(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_file *f)
{
	struct gen_vec names = {0}, files = {0}, texts = {0};
	int i;

	idl_closure(ctx, f, f->name, &names, &files);
	gen_buf_puts(
	    o, "/* ---- the IDL this file was generated from (and what it imports), for the\n"
	       " * server's reflection service (rdmx/reflection.h): clients such as rdmx-call\n"
	       " * need no local copy of it ---- */\n\n");
	for (i = 0; i < files.n; i++) {
		const struct gen_file *g = files.items[i];

		struct gen_buf *t = gen_alloc(&ctx->pool, sizeof(*t));

		/* the canonical text: the same from rdmx-gen and protoc-gen-rdmx */
		gen_print_proto(ctx, g, t);
		gen_vec_push(&ctx->pool, &texts, t);
		gen_buf_printf(o, "static const char *const rdmx__idl_%d[] = {\n", i);
		emit_idl_text(o, t->data ? t->data : "", t->len);
		gen_buf_puts(o, ",\n};\n\n");
	}
	gen_buf_puts(o, "static void rdmx__idl_add(struct rdmx_rpc_server *server)\n{\n");
	gen_buf_puts(o, "\t/* best effort: a server without reflection still serves */\n");
	for (i = 0; i < files.n; i++) {
		struct gen_buf *t = texts.items[i];
		const char *name = names.items[i];

		gen_buf_puts(o, "\t(void)rdmx__rpc_server_add_reflection_parts(server,\n\t");
		emit_idl_text(o, name, strlen(name));
		gen_buf_printf(o, ", rdmx__idl_%d, %zu);\n", i, idl_pieces(t->len));
		gen_buf_free(t);
	}
	gen_buf_puts(o, "}\n\n");
}

static void emit_service(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_service *s)
{
	int i;
	gen_buf_printf(o, "/* ---- service %s ---- */\n\n", s->full_name);
	for (i = 0; i < s->methods.n; i++) {
		const struct gen_method *me = s->methods.items[i];
		if (GEN_UNARY(me))
			emit_method_client(ctx, o, me);
		else
			gen_emit_stream_c(ctx, o, me);
	}
	gen_buf_printf(
	    o,
	    "int %s_connect_service(const char *registry, const char *service,\n"
	    "\tstruct rdmx_tls_config *tls, struct rdmx_registry_balancer **balancer)\n{\n",
	    s->cname);
	gen_buf_puts(o, "\tstruct rdmx_registry_balancer_opts o;\n");
	gen_buf_puts(o, "\trdmx_registry_balancer_opts_init(&o);\n");
	gen_buf_puts(o, "\to.url = registry;\n\to.cfg = tls;\n");
	gen_buf_printf(o, "\to.service = service ? service : \"%s\";\n", s->full_name);
	gen_buf_puts(o, "\to.pick = RDMX_REGISTRY_PICK_TWO_CHOICES;\n");
	gen_buf_puts(o,
	             "\treturn rdmx_registry_balancer_create_secure(&o, NULL, balancer);\n}\n\n");

	gen_buf_printf(o, "struct %s__binding {\n\tstruct %s_handlers h;\n\tvoid *arg;\n};\n\n",
	               s->cname, s->cname);
	for (i = 0; i < s->methods.n; i++) {
		const struct gen_method *me = s->methods.items[i];
		const char *in = me->in->cname;
		if (!GEN_UNARY(me)) {
			gen_buf_printf(
			    o,
			    "static void %s__handle(struct rdmx_rpc_stream *s, void *arg)\n"
			    "{\n",
			    me->cbase);
			gen_buf_printf(o, "\tconst struct %s__binding *b = arg;\n", s->cname);
			gen_buf_printf(o, "\tb->h.%s(s, b->arg);\n}\n\n", me->cname);
			continue;
		}
		gen_buf_printf(o,
		               "static void %s__handle(struct rdmx_rpc_server_call *call, const "
		               "void *req,\n"
		               "\tsize_t len, void *arg)\n{\n",
		               me->cbase);
		gen_buf_printf(o, "\tconst struct %s__binding *b = arg;\n", s->cname);
		gen_buf_puts(
		    o, "\tunsigned char buf[RDMX_CODEC_STACK_ARENA];\n\tstruct rdmx_arena a;\n");
		gen_buf_printf(o, "\t%s msg;\n\tint r = 0;\n", in);
		gen_buf_puts(o, "\trdmx_arena_init(&a, buf, sizeof(buf), 0);\n");
		gen_buf_printf(o, "\tif (len == 0)\n\t\t%s\n",
		               gen_empty_payload(ctx, me->in, "&msg", "r"));
		gen_buf_printf(o, "\telse\n\t\tr = %s_decode(&msg, req, len, &a, NULL);\n", in);
		gen_buf_puts(o, "\tif (r)\n\t\trdmx_rpc_respond(call, RDMX_RPC_INVALID_ARGUMENT, "
		                "\"malformed request\", NULL);\n");
		gen_buf_printf(o, "\telse\n\t\tb->h.%s(call, &msg, b->arg);\n", me->cname);
		gen_buf_puts(o, "\trdmx_arena_fini(&a);\n}\n\n");
	}
	gen_buf_printf(o,
	               "int %s_register(struct rdmx_rpc_server *server,\n"
	               "\tconst struct %s_handlers *handlers, void *arg)\n{\n",
	               s->cname, s->cname);
	gen_buf_printf(o, "\tstruct %s__binding *b;\n\tint r;\n", s->cname);
	gen_buf_puts(o, "\tif (!server || !handlers)\n\t\treturn RDMX_E_INVAL;\n");
	gen_buf_puts(o, "\tb = malloc(sizeof(*b));\n\tif (!b)\n\t\treturn RDMX_E_NOMEM;\n");
	gen_buf_puts(o, "\tb->h = *handlers;\n\tb->arg = arg;\n");
	gen_buf_puts(o, "\tr = rdmx__codec_keep_binding(server, b);\n");
	gen_buf_puts(o, "\tif (r) {\n\t\tfree(b);\n\t\treturn r;\n\t}\n");
	for (i = 0; i < s->methods.n; i++) {
		const struct gen_method *me = s->methods.items[i];
		char *up = gen_upper(ctx, me->cbase);
		gen_buf_printf(o, "\tif (handlers->%s) {\n", me->cname);
		if (!GEN_UNARY(me)) {
			gen_buf_printf(
			    o,
			    "\t\tr = rdmx_rpc_server_register_stream(server, %s_ID, %s_NAME,\n"
			    "\t\t\t%s_KIND, %s__handle, b);\n",
			    up, up, up, me->cbase);
			gen_buf_puts(o, "\t\tif (r)\n\t\t\treturn r;\n\t}\n");
			continue;
		}
		gen_buf_printf(o,
		               "\t\tr = rdmx_rpc_server_register(server, %s_ID, %s_NAME,\n"
		               "\t\t\t%s__handle, b);\n",
		               up, up, me->cbase);
		gen_buf_puts(o, "\t\tif (r)\n\t\t\treturn r;\n\t}\n");
	}
	gen_buf_puts(o, "\trdmx__idl_add(server);\n\treturn 0;\n}\n\n");
}

/* the largest struct any message of the file reaches */
static void emit_max_sizeof(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_vec *msgs)
{
	struct gen_vec all = {0};
	int i;
	ctx->stamp++;
	for (i = 0; i < msgs->n; i++) {
		struct gen_message *m = msgs->items[i];
		if (m->mark != ctx->stamp) {
			m->mark = ctx->stamp;
			gen_vec_push(&ctx->pool, &all, m);
		}
		reachable(ctx, m, &all);
	}
	gen_buf_puts(o, "/* the largest struct the messages of this file reach: the decode budget\n"
	                " * per input byte of the messages that reach many */\n");
	gen_buf_puts(
	    o, "static size_t rdmx__max_sizeof(void)\n{\n\tsize_t r = RDMX_DECODE_ALLOC_FACTOR;\n");
	for (i = 0; i < all.n; i++) {
		const struct gen_message *m = all.items[i];
		gen_buf_printf(o, "\tif (sizeof(%s) > r)\n\t\tr = sizeof(%s);\n", m->cname,
		               m->cname);
	}
	gen_buf_puts(o, "\treturn r;\n}\n\n");
}

void gen_emit_c(struct gen_ctx *ctx, struct gen_file *f, struct gen_buf *o)
{
	struct gen_vec msgs = {0};
	int i;
	gen_collect(ctx, f, &msgs, NULL);
	gen_buf_printf(o, "/* Generated by rdmx-gen from %s. Do not edit. */\n",
	               gen_comment_text(ctx, f->name));
	/* the header sits next to this file */
	gen_buf_printf(o, "#include \"%s.rdmx.h\"\n\n", f->basename);
	if (file_needs_math(&msgs))
		gen_buf_puts(o, "#include <math.h>\n");
	gen_buf_puts(o, "#include <stdlib.h>\n#include <string.h>\n\n");
	if (f->services.n)
		gen_buf_puts(o, "#include <rdmx/reflection.h>\n#include <rdmx/registry.h>\n\n");
	for (i = 0; i < msgs.n; i++) {
		const struct gen_message *m = msgs.items[i];
		if (!m->map_entry && reach_count(ctx, m) > REACH_INLINE_MAX) {
			emit_max_sizeof(ctx, o, &msgs);
			break;
		}
	}
	for (i = 0; i < msgs.n; i++) {
		const struct gen_message *m = msgs.items[i];
		if (!m->map_entry)
			emit_message(ctx, o, m);
	}
	if (f->services.n)
		emit_idl(ctx, o, f);
	for (i = 0; i < f->services.n; i++)
		emit_service(ctx, o, f->services.items[i]);
}
