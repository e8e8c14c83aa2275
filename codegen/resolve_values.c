/* rdmx-gen: the values of options, checked against the types of the
 * fields they set as protoc checks them: a constant against its option's
 * type (OptionInterpreter::SetOptionValue), an aggregate `{ ... }` read as
 * protoc's text format parser reads it into its message (field names,
 * value types and ranges, enum values, fields set twice, oneofs, required
 * fields), in protoc's words. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

/* rdmx-gen's own descriptor.proto, parsed once apart from the run's files
 * (nothing is declared): the types of protobuf's options, whether the
 * file setting one imports it or not */
static struct gen_file *builtin_options(struct gen_ctx *ctx)
{
	struct resolver *r = gen_resolver(ctx);
	struct gen_file *f = r->builtin_options;
	size_t len;
	if (f)
		return f;
	f = gen_alloc(&ctx->pool, sizeof(*f));
	f->path = f->name = "google/protobuf/descriptor.proto";
	f->builtin = true;
	f->text = gen_wkt_text(f->path, &len);
	f->text_len = len;
	f->parsed = f->text && gen_parse(ctx, f, f->text, len);
	r->builtin_options = f;
	return f;
}

/* the field name of protobuf's options message msg ("FileOptions"), with
 * its enum in *en (NULL when not an enum); NULL when rdmx-gen's copy does
 * not have it */
static const struct gen_field *builtin_option(struct gen_ctx *ctx, const char *msg,
                                              const char *name, const struct gen_enum **en)
{
	const struct gen_file *f = builtin_options(ctx);
	const struct gen_message *m = NULL;
	const struct gen_field *fd = NULL;
	int i;
	*en = NULL;
	for (i = 0; f->parsed && i < f->messages.n && !m; i++) {
		const struct gen_message *c = f->messages.items[i];
		if (strcmp(c->name, msg) == 0)
			m = c;
	}
	for (i = 0; m && i < m->fields.n && !fd; i++) {
		const struct gen_field *c = m->fields.items[i];
		if (strcmp(c->name, name) == 0)
			fd = c;
	}
	for (i = 0; fd && fd->type == GT_NAMED && i < m->enums.n; i++) {
		const struct gen_enum *e = m->enums.items[i];
		if (strcmp(e->name, fd->type_name) == 0)
			*en = e;
	}
	return fd;
}

/* the field an option's name ends at, as protoc names it */
struct option_field {
	const struct gen_field *fd;
	const char *full;          /* its full name */
	const struct gen_enum *en; /* its enum type, NULL when it is not one */
	const char *en_full;       /* the enum's full name */
	bool builtin;              /* of rdmx-gen's descriptor.proto, parsed apart */
	const struct gen_file *f;  /* where the option is set (a custom one) */
};

#define OPTION_VALUE(what) "Value must be " what " option \"%s\"."

static bool is_signed_type(enum gen_type t)
{
	return t == GT_INT32 || t == GT_SINT32 || t == GT_SFIXED32 || t == GT_INT64 ||
	       t == GT_SINT64 || t == GT_SFIXED64;
}

static bool is_int_type(enum gen_type t)
{
	return is_signed_type(t) || t == GT_UINT32 || t == GT_FIXED32 || t == GT_UINT64 ||
	       t == GT_FIXED64;
}

static bool is_64bit_type(enum gen_type t)
{
	return t == GT_INT64 || t == GT_SINT64 || t == GT_SFIXED64 || t == GT_UINT64 ||
	       t == GT_FIXED64;
}

/* an integer option's value is an integer its type holds (protoc's words:
 * an unsigned one out of range is named by its field's name alone) */
static void check_int_value(struct gen_ctx *ctx, const struct gen_optref *o,
                            const struct option_field *of)
{
	bool is_signed = is_signed_type(of->fd->type), wide = is_64bit_type(of->fd->type);
	const char *tn = is_signed ? (wide ? "int64" : "int32") : (wide ? "uint64" : "uint32");
	uint64_t max =
	    is_signed ? (wide ? INT64_MAX : INT32_MAX) : (wide ? UINT64_MAX : UINT32_MAX);
	const struct gen_loc *loc = &o->value_loc;
	if (o->value_kind != GV_INT && is_signed)
		gen_error(ctx, loc, OPTION_VALUE("integer for %s"), tn, of->full);
	else if (!is_signed && (o->value_kind != GV_INT || o->value_negative))
		gen_error(ctx, loc, OPTION_VALUE("non-negative integer for %s"), tn, of->full);
	else if (o->value_negative ? o->value_int > max + 1 : o->value_int > max)
		gen_error(ctx, loc, "Value out of range for %s option \"%s\".", tn,
		          is_signed ? of->full : of->fd->name);
}

/* an enum option's value names one of its values; protoc says so when it
 * names a value of another enum of the same scope (C++ scoping makes
 * them siblings), but for protobuf's own options */
static void check_enum_value(struct gen_ctx *ctx, const struct gen_optref *o,
                             const struct option_field *of)
{
	struct resolver *r = gen_resolver(ctx);
	const struct sym *s = NULL;
	if (o->value_kind != GV_IDENT) {
		gen_error(ctx, &o->value_loc, OPTION_VALUE("identifier for enum-valued"), of->full);
		return;
	}
	if (gen_enum_value_named(of->en, o->value))
		return;
	if (!of->builtin)
		s = gen_table_get(&r->syms,
		                  gen_qualify(ctx, gen_scope_of(ctx, of->en_full), o->value));
	gen_error(
	    ctx, &o->value_loc, "Enum type \"%s\" has no value named \"%s\" for option \"%s\".%s",
	    of->en_full, o->value, of->full,
	    s && s->kind == SYM_VALUE ? " This appears to be a value from a sibling type." : "");
}

/* ---- aggregate values, as protoc's text format parser reads them
 * (TextFormat::Parser::ParserImpl, with protoc's option finder) ---- */

/* a reading of one aggregate value: the first error stops it, as it stops
 * protoc; what rdmx-gen cannot follow (a type URL, a group's field, a
 * reserved name, an unresolved type) ends it without one */
struct agg {
	struct gen_ctx *ctx;
	const struct gen_file *f;  /* where the option is set: [ext] is looked up from it */
	const struct gen_tok *t;   /* the current token */
	const struct gen_tok *end; /* the value's closing token */
	char *err;                 /* the first error, protoc's words */
	bool stop;                 /* given up without an error */
};

/* the required fields a message of the value lacks, as protoc lists them:
 * after those of the message they are in, by the number of the field they
 * are under (then as set) */
struct agg_missing {
	int64_t number;
	int seq;
	const char *names;
};

/* a field set in one message of the value: how many times */
struct agg_set {
	const struct gen_field *fd;
	int n;
};

static bool agg_fail(struct agg *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool agg_fail(struct agg *a, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!a->err && !a->stop)
		a->err = gen_strdup(&a->ctx->pool, msg);
	return false;
}

static bool agg_stop(struct agg *a)
{
	a->stop = true;
	return false;
}

static bool agg_at_end(const struct agg *a)
{
	return a->t >= a->end;
}

static bool agg_is(const struct agg *a, char c)
{
	return !agg_at_end(a) && a->t->kind == TK_SYM && a->t->sym == c;
}

static bool agg_accept(struct agg *a, char c)
{
	if (!agg_is(a, c))
		return false;
	a->t++;
	return true;
}

/* the current token as protoc's tokenizer spells it in its errors (a
 * string quoted again, as it was written but for its escapes) */
static const char *agg_text(struct agg *a)
{
	struct gen_buf b = {0};
	const char *r;
	if (agg_at_end(a))
		return "";
	if (a->t->kind != TK_STRING)
		return a->t->text;
	gen_buf_quote(&b, a->t->text, a->t->len, "\"\\");
	r = gen_strdup(&a->ctx->pool, b.data);
	gen_buf_free(&b);
	return r;
}

static bool agg_expect(struct agg *a, char c)
{
	if (agg_accept(a, c))
		return true;
	return agg_fail(a, "Expected \"%c\", found \"%s\".", c, agg_text(a));
}

/* an unsigned integer up to max (ConsumeUnsignedInteger) */
static bool agg_unsigned(struct agg *a, uint64_t max, uint64_t *v)
{
	if (agg_at_end(a) || a->t->kind != TK_INT)
		return agg_fail(a, "Expected integer, got: %s", agg_text(a));
	if (a->t->overflow || a->t->ival > max)
		return agg_fail(a, "Integer out of range (%s)", a->t->text);
	*v = a->t->ival;
	a->t++;
	return true;
}

/* an integer of -max - 1 to max (ConsumeSignedInteger) */
static bool agg_signed(struct agg *a, uint64_t max, int64_t *v)
{
	bool negative = agg_accept(a, '-');
	uint64_t u;
	if (!agg_unsigned(a, max + negative, &u))
		return false;
	*v = negative ? (int64_t)(0 - u) : (int64_t)u;
	return true;
}

/* a number (ConsumeDouble): decimal, a float, inf, infinity or nan */
static bool agg_double(struct agg *a)
{
	const char *s;
	agg_accept(a, '-');
	if (agg_at_end(a))
		return agg_fail(a, "Expected double, got: ");
	s = a->t->text;
	if (a->t->kind == TK_INT) {
		if (s[0] == '0' && s[1])
			return agg_fail(a, "Expect a decimal number, got: %s", s);
	} else if (a->t->kind == TK_IDENT) {
		char *low = gen_strdup(&a->ctx->pool, s), *c;
		for (c = low; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		if (strcmp(low, "inf") != 0 && strcmp(low, "infinity") != 0 &&
		    strcmp(low, "nan") != 0)
			return agg_fail(a, "Expected double, got: %s", low);
	} else if (a->t->kind != TK_FLOAT) {
		return agg_fail(a, "Expected double, got: %s", agg_text(a));
	}
	a->t++;
	return true;
}

static bool agg_bool(struct agg *a, const struct gen_field *fd)
{
	const char *s;
	uint64_t u;
	if (!agg_at_end(a) && a->t->kind == TK_INT)
		return agg_unsigned(a, 1, &u);
	if (agg_at_end(a) || a->t->kind != TK_IDENT)
		return agg_fail(a, "Expected identifier, got: %s", agg_text(a));
	s = a->t->text;
	if (strcmp(s, "true") != 0 && strcmp(s, "True") != 0 && strcmp(s, "t") != 0 &&
	    strcmp(s, "false") != 0 && strcmp(s, "False") != 0 && strcmp(s, "f") != 0)
		return agg_fail(a, "Invalid value for boolean field \"%s\". Value: \"%s\".",
		                fd->name, s);
	a->t++;
	return true;
}

/* an enum's value by name, or by number: any int32 for an open (proto3)
 * enum, one of its values for a closed one */
static bool agg_enum(struct agg *a, const struct gen_field *fd)
{
	const struct gen_enum *e = fd->en;
	const char *value;
	int64_t n;
	int i;
	if (!agg_at_end(a) && a->t->kind == TK_IDENT) {
		value = a->t->text;
		a->t++;
		if (gen_enum_value_named(e, value))
			return true;
	} else if (agg_is(a, '-') || (!agg_at_end(a) && a->t->kind == TK_INT)) {
		if (!agg_signed(a, INT32_MAX, &n))
			return false;
		for (i = 0; i < e->values.n; i++)
			if (((const struct gen_enum_value *)e->values.items[i])->number == n)
				return true;
		if (!e->file->proto2)
			return true;
		value = gen_printf(&a->ctx->pool, "%lld", (long long)n);
	} else {
		return agg_fail(a, "Expected integer or identifier, got: %s", agg_text(a));
	}
	return agg_fail(a, "Unknown enumeration value of \"%s\" for field \"%s\".", value,
	                fd->name);
}

/* a value of fd's scalar type (ConsumeFieldValue) */
static bool agg_scalar(struct agg *a, const struct gen_field *fd)
{
	uint64_t u;
	int64_t i;
	switch (fd->type) {
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
		return agg_signed(a, INT32_MAX, &i);
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		return agg_signed(a, INT64_MAX, &i);
	case GT_UINT32:
	case GT_FIXED32:
		return agg_unsigned(a, UINT32_MAX, &u);
	case GT_UINT64:
	case GT_FIXED64:
		return agg_unsigned(a, UINT64_MAX, &u);
	case GT_FLOAT:
	case GT_DOUBLE:
		return agg_double(a);
	case GT_BOOL:
		return agg_bool(a, fd);
	case GT_STRING:
	case GT_BYTES:
		if (agg_at_end(a) || a->t->kind != TK_STRING)
			return agg_fail(a, "Expected string, got: %s", agg_text(a));
		while (!agg_at_end(a) && a->t->kind == TK_STRING)
			a->t++;
		return true;
	case GT_ENUM:
		return agg_enum(a, fd);
	default:
		return agg_stop(a); /* not resolved */
	}
}

static bool agg_fields(struct agg *a, const struct gen_message *m, bool nested, const char *path,
                       struct gen_buf *missing);

/* a message value of fd, from its '{' or '<' through its close
 * (ConsumeFieldMessage); path: its place, for the required fields it
 * lacks (added to inner) */
static bool agg_message(struct agg *a, const struct gen_field *fd, const char *path,
                        struct gen_vec *inner)
{
	char close = agg_accept(a, '<') ? '>' : '}';
	struct gen_buf names = {0};
	bool ok;
	if (close == '}' && !agg_expect(a, '{'))
		return false;
	ok = agg_fields(a, fd->msg, true, path, &names) && agg_expect(a, close);
	if (ok && names.data && names.data[0]) {
		struct agg_missing *e = gen_alloc(&a->ctx->pool, sizeof(*e));
		e->number = fd->number;
		e->seq = inner->n;
		e->names = gen_strdup(&a->ctx->pool, names.data);
		gen_vec_push(&a->ctx->pool, inner, e);
	}
	gen_buf_free(&names);
	return ok;
}

/* fd was declared as a group: its name is its type's in lower case and
 * it is where its type is */
static bool is_group(const struct gen_field *fd)
{
	return fd->type == GT_MESSAGE && !fd->is_map && fd->msg->loc.line == fd->loc.line &&
	       fd->msg->loc.col == fd->loc.col && fd->msg->loc.file == fd->loc.file;
}

/* the field of m a plain name in the value stands for: a field's own name,
 * a group's by its type's name; NULL when none */
static const struct gen_field *agg_field_named(struct agg *a, const struct gen_message *m,
                                               const char *name)
{
	int i;
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (is_group(fd) ? strcmp(fd->msg->name, name) == 0 : strcmp(fd->name, name) == 0)
			return fd;
		if (fd->type == GT_NAMED)
			agg_stop(a); /* the field may be a group */
	}
	return NULL;
}

/* `[a.b]`, an extension's name in a field's place, looked up from m as
 * protoc's option finder does; NULL (reported) when it is not one of m's */
static const struct gen_field *agg_extension(struct agg *a, const struct gen_message *m,
                                             const char **name, const char **full)
{
	struct resolver *r = gen_resolver(a->ctx);
	struct gen_buf b = {0};
	const struct gen_ext *x = NULL;
	struct sym *s;
	a->t++; /* [ */
	while (!agg_at_end(a) && a->t->kind == TK_IDENT) {
		gen_buf_puts(&b, a->t->text);
		a->t++;
		if (!agg_is(a, '.'))
			break;
		gen_buf_puts(&b, ".");
		a->t++;
	}
	*name = gen_strdup(&a->ctx->pool, b.data ? b.data : "");
	gen_buf_free(&b);
	if (agg_is(a, '/') || !**name)
		return agg_stop(a), NULL; /* an Any's type URL, or not a name */
	if (!agg_expect(a, ']'))
		return NULL;
	s = gen_lookup(a->ctx, a->f, m->full_name, *name, GEN_LOOKUP_EXTS, NULL);
	if (s && gen_table_get(&r->exts, s->name) == s)
		x = s->ptr;
	if (x && x->field && x->extendee_full && strcmp(x->extendee_full, m->full_name) == 0) {
		*full = x->full_name;
		return x->field;
	}
	if (x && (!x->field || !x->extendee_full))
		return agg_stop(a), NULL; /* reported where it is declared */
	agg_fail(a, "Extension \"%s\" is not defined or is not an extension of \"%s\".", *name,
	         m->full_name);
	return NULL;
}

static bool reserved_name(const struct gen_message *m, const char *name)
{
	int i;
	for (i = 0; i < m->rnames.n; i++)
		if (strcmp(((const struct gen_name *)m->rnames.items[i])->name, name) == 0)
			return true;
	return false;
}

/* where a field is counted: how many values it has had in this message */
static struct agg_set *agg_count(struct gen_ctx *ctx, struct gen_vec *set,
                                 const struct gen_field *fd)
{
	struct agg_set *e;
	int i;
	for (i = 0; i < set->n; i++) {
		e = set->items[i];
		if (e->fd == fd)
			return e;
	}
	e = gen_alloc(&ctx->pool, sizeof(*e));
	e->fd = fd;
	gen_vec_push(&ctx->pool, set, e);
	return e;
}

/* fd has presence: set twice is refused (a proto3 scalar without `optional`
 * is set only when not zero, which rdmx-gen does not follow: not checked) */
static bool has_presence(const struct gen_field *fd, const struct gen_message *m)
{
	return m->file->proto2 || fd->type == GT_MESSAGE || fd->oneof >= 0 ||
	       fd->label == GL_OPTIONAL;
}

/* one value of fd (a message or a scalar) at path */
static bool agg_value(struct agg *a, const struct gen_field *fd, const char *path,
                      struct gen_vec *inner)
{
	if (fd->type == GT_MESSAGE)
		return agg_message(a, fd, path, inner);
	return agg_scalar(a, fd);
}

/* one field and its value (ConsumeField) */
static bool agg_field(struct agg *a, const struct gen_message *m, struct gen_vec *set,
                      const char *path, struct gen_vec *inner)
{
	const struct gen_field *fd;
	const char *name, *at, *full = NULL;
	struct agg_set *seen;
	int i;
	if (agg_is(a, '[')) {
		fd = agg_extension(a, m, &name, &full);
		at = gen_printf(&a->ctx->pool, "%s(%s)", path, fd ? full : "");
	} else {
		if (agg_at_end(a) || a->t->kind != TK_IDENT)
			return agg_fail(a, "Expected identifier, got: %s", agg_text(a));
		name = a->t->text;
		a->t++;
		fd = agg_field_named(a, m, name);
		if (!fd && !a->stop && reserved_name(m, name))
			return agg_stop(a); /* protoc skips its value */
		if (!fd)
			return agg_fail(a, "Message type \"%s\" has no field named \"%s\".",
			                m->full_name, name);
		at = gen_printf(&a->ctx->pool, "%s%s", path, fd->name);
	}
	if (!fd)
		return false;
	seen = agg_count(a->ctx, set, fd);
	if (fd->label != GL_REPEATED && seen->n && has_presence(fd, m))
		return agg_fail(a, "Non-repeated field \"%s\" is specified multiple times.", name);
	for (i = 0; fd->oneof >= 0 && i < set->n; i++) {
		const struct agg_set *o = set->items[i];
		const struct gen_oneof *oneof = m->oneofs.items[fd->oneof];
		if (o->fd != fd && o->fd->oneof == fd->oneof)
			return agg_fail(
			    a,
			    "Field \"%s\" is specified along with field \"%s\", another "
			    "member of oneof \"%s\".",
			    name, o->fd->name, oneof->name);
	}
	if (fd->type == GT_MESSAGE)
		agg_accept(a, ':');
	else if (!agg_expect(a, ':'))
		return false;
	if (fd->label == GL_REPEATED && agg_accept(a, '[')) {
		if (agg_accept(a, ']'))
			return true;
		for (;;) {
			if (!agg_value(a, fd, gen_printf(&a->ctx->pool, "%s[%d].", at, seen->n++),
			               inner))
				return false;
			if (agg_accept(a, ']'))
				break;
			if (!agg_expect(a, ','))
				return false;
		}
	} else {
		const char *in = fd->label == GL_REPEATED
		                     ? gen_printf(&a->ctx->pool, "%s[%d].", at, seen->n)
		                     : gen_printf(&a->ctx->pool, "%s.", at);
		seen->n++;
		if (!agg_value(a, fd, in, inner))
			return false;
	}
	if (!agg_accept(a, ';'))
		agg_accept(a, ',');
	return true;
}

static int missing_order(const void *pa, const void *pb)
{
	const struct agg_missing *a = *(const struct agg_missing *const *)pa;
	const struct agg_missing *b = *(const struct agg_missing *const *)pb;
	if (a->number != b->number)
		return a->number < b->number ? -1 : 1;
	return a->seq - b->seq;
}

/* m's fields up to a '}' or '>' (ConsumeMessage, but for the close), or
 * the value's end at the top (a nested message's fields go on there: the
 * field protoc looks for is not found), then the names of its required
 * fields not set into missing (protoc's "Message missing required
 * fields", its own before its messages') */
static bool agg_fields(struct agg *a, const struct gen_message *m, bool nested, const char *path,
                       struct gen_buf *missing)
{
	struct gen_vec set = {0}, inner = {0};
	bool ok = true;
	int i, j;
	while (ok && (nested || !agg_at_end(a)) && !agg_is(a, '}') && !agg_is(a, '>'))
		ok = agg_field(a, m, &set, path, &inner);
	for (i = 0; ok && i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		for (j = 0; fd->required && j < set.n; j++)
			if (((const struct agg_set *)set.items[j])->fd == fd)
				break;
		if (fd->required && j == set.n)
			gen_buf_printf(missing, "%s%s%s",
			               missing->data && missing->data[0] ? ", " : "", path,
			               fd->name);
	}
	if (ok && inner.n)
		qsort(inner.items, (size_t)inner.n, sizeof(*inner.items), missing_order);
	for (i = 0; ok && i < inner.n; i++) {
		const struct agg_missing *e = inner.items[i];
		gen_buf_printf(missing, "%s%s", missing->data && missing->data[0] ? ", " : "",
		               e->names);
	}
	return ok;
}

/* o's aggregate value, of the message type of fd (the field its name ends
 * at), read as protoc reads it; the first error is reported at the value,
 * as protoc reports it */
static void check_aggregate(struct gen_ctx *ctx, const struct gen_file *f,
                            const struct gen_optref *o, const struct gen_field *fd)
{
	struct agg a = {ctx, f, o->agg + 1, o->agg_end, NULL, false};
	struct gen_buf missing = {0};
	bool ok;
	if (!o->agg || !o->agg_end)
		return;
	ok = agg_fields(&a, fd->msg, false, "", &missing);
	if (ok && !agg_at_end(&a)) /* a '}' or '>' before the value's end */
		ok = agg_fail(&a, "Expected identifier, got: %s", agg_text(&a));
	if (a.err)
		gen_error(ctx, &o->value_loc, "Error while parsing option value for \"%s\": %s",
		          fd->name, a.err);
	else if (ok && missing.data && missing.data[0])
		gen_error(ctx, &o->value_loc,
		          "Error while parsing option value for \"%s\": Message missing required "
		          "fields: %s",
		          fd->name, missing.data);
	gen_buf_free(&missing);
}

/* o's value fits the type of the field its name ends at, as protoc
 * requires (OptionInterpreter::SetOptionValue), in protoc's words */
static void check_value(struct gen_ctx *ctx, const struct gen_optref *o,
                        const struct option_field *of)
{
	const struct gen_loc *loc = &o->value_loc;
	enum gen_type t = of->fd->type;
	if (of->en) {
		check_enum_value(ctx, o, of);
	} else if (t == GT_BOOL && o->value_kind != GV_IDENT) {
		gen_error(ctx, loc, OPTION_VALUE("identifier for boolean"), of->full);
	} else if (t == GT_BOOL && strcmp(o->value, "true") != 0 &&
	           strcmp(o->value, "false") != 0) {
		gen_error(ctx, loc, OPTION_VALUE("\"true\" or \"false\" for boolean"), of->full);
	} else if ((t == GT_STRING || t == GT_BYTES) && o->value_kind != GV_STRING) {
		gen_error(ctx, loc, OPTION_VALUE("quoted string for string"), of->full);
	} else if ((t == GT_FLOAT || t == GT_DOUBLE) && o->value_kind != GV_INT &&
	           o->value_kind != GV_FLOAT) {
		gen_error(ctx, loc, OPTION_VALUE("number for %s"),
		          t == GT_FLOAT ? "float" : "double", of->full);
	} else if (t == GT_MESSAGE && o->value_kind != GV_AGGREGATE) {
		gen_error(ctx, loc,
		          "Option \"%s\" is a message. To set the entire message, use syntax like "
		          "\"%s = { <proto text format> }\". To set fields within it, use syntax "
		          "like \"%s.foo = value\".",
		          of->full, of->fd->name, of->fd->name);
	} else if (t == GT_MESSAGE && of->f) {
		check_aggregate(ctx, of->f, o, of->fd);
	} else if (is_int_type(t)) {
		check_int_value(ctx, o, of);
	}
}

bool gen_builtin_option_known(struct gen_ctx *ctx, const char *options, const char *name)
{
	const struct gen_enum *en;
	return builtin_option(ctx, gen_last_of(options), name, &en) != NULL;
}

/* the value of o, a plain option name alone, fits the type of protobuf's
 * option of that name; false when rdmx-gen's descriptor.proto (3.21's) has
 * no option of that name */
bool gen_check_builtin_value(struct gen_ctx *ctx, const struct gen_optref *o)
{
	const char *msg = gen_last_of(o->options), *name = o->parts[0].name;
	struct option_field of = {NULL, NULL, NULL, NULL, true, NULL};
	of.fd = builtin_option(ctx, msg, name, &of.en);
	if (!of.fd)
		return false;
	of.full = gen_printf(&ctx->pool, "%s.%s", o->options, name);
	if (of.en)
		of.en_full = gen_printf(&ctx->pool, "%s.%s", o->options, of.en->name);
	check_value(ctx, o, &of);
	return true;
}

void gen_check_custom_value(struct gen_ctx *ctx, const struct gen_file *f,
                            const struct gen_optref *o, const struct gen_field *fd,
                            const char *full)
{
	struct option_field of = {fd, full, NULL, NULL, false, f};
	if (fd->type == GT_ENUM) {
		of.en = fd->en;
		of.en_full = fd->en->full_name;
	}
	check_value(ctx, o, &of);
}
