/* rdmx-gen: recursive-descent parser of .proto files (proto3, proto2).
 * Syntax errors are reported where they happen; the parser then skips the
 * statement and goes on, so one run reports several errors. Constructs
 * outside the subset get a "not supported" error, never silence. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

#define MAX_NESTING 64

struct parser {
	struct gen_ctx *ctx;
	struct gen_file *f;
	struct gen_tok *t;
	int n, i;
	bool failed;
	bool seen_statement;
	bool seen_syntax;
	bool seen_package;
	int reached;                    /* tokens before it had their lexical errors reported */
	struct gen_message *ext_parent; /* scope of the extend block being read */
	unsigned pseudo_seen;           /* [default], [json_name] of this field: PSEUDO_* */
};

#define PSEUDO_DEFAULT 1u
#define PSEUDO_JSON_NAME 2u

static const struct {
	const char *name;
	enum gen_type type;
} scalars[] = {
    {"double", GT_DOUBLE},   {"float", GT_FLOAT},       {"int32", GT_INT32},
    {"int64", GT_INT64},     {"uint32", GT_UINT32},     {"uint64", GT_UINT64},
    {"sint32", GT_SINT32},   {"sint64", GT_SINT64},     {"fixed32", GT_FIXED32},
    {"fixed64", GT_FIXED64}, {"sfixed32", GT_SFIXED32}, {"sfixed64", GT_SFIXED64},
    {"bool", GT_BOOL},       {"string", GT_STRING},     {"bytes", GT_BYTES},
};

bool gen_is_scalar(enum gen_type t)
{
	return t >= GT_DOUBLE && t <= GT_BYTES;
}

const char *gen_type_name(enum gen_type t)
{
	size_t i;
	for (i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
		if (scalars[i].type == t)
			return scalars[i].name;
	return t == GT_MESSAGE ? "message" : t == GT_ENUM ? "enum" : "type";
}

static enum gen_type scalar_type(const char *name)
{
	size_t i;
	for (i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
		if (strcmp(scalars[i].name, name) == 0)
			return scalars[i].type;
	return GT_NONE;
}

/* the lexical errors of the tokens up to the current one, not yet
 * reported: protoc's tokenizer reports them when its parser moves there */
static void reach(struct parser *p)
{
	for (; p->reached <= p->i && p->reached < p->n; p->reached++) {
		const struct gen_lexerr *e;
		for (e = p->t[p->reached].errs; e; e = e->next) {
			gen_error(p->ctx, &e->loc, "%s", e->msg);
			p->failed = true;
		}
	}
}

static struct gen_tok *cur(struct parser *p)
{
	reach(p);
	return &p->t[p->i];
}

static struct gen_tok *peek(struct parser *p, int k)
{
	int j = p->i + k;
	return &p->t[j < p->n ? j : p->n - 1];
}

static void next(struct parser *p)
{
	if (p->t[p->i].kind != TK_EOF)
		p->i++;
}

static bool is_sym(const struct gen_tok *t, char c)
{
	return t->kind == TK_SYM && t->sym == c;
}

static bool is_kw(const struct gen_tok *t, const char *kw)
{
	return t->kind == TK_IDENT && strcmp(t->text, kw) == 0;
}

static void syntax_error(struct parser *p, const struct gen_tok *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void syntax_error(struct parser *p, const struct gen_tok *t, const char *fmt, ...)
{
	va_list ap;
	char msg[512];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->failed = true;
	gen_error(p->ctx, &t->loc, "%s", msg);
}

/* protoc's words (msg: "Expected field name.", ...) at the current token */
static void expected(struct parser *p, const char *msg)
{
	syntax_error(p, cur(p), "%s", msg);
}

/* Skips the rest of a statement: through the next ';' or a whole { } block,
 * or up to (not through) a '}' that closes the enclosing body. */
static void skip_statement(struct parser *p)
{
	int depth = 0;
	for (;;) {
		struct gen_tok *t = cur(p);
		if (t->kind == TK_EOF)
			return;
		if (is_sym(t, '{')) {
			depth++;
		} else if (is_sym(t, '}')) {
			if (depth == 0)
				return;
			if (--depth == 0) {
				next(p);
				if (is_sym(cur(p), ';'))
					next(p);
				return;
			}
		} else if (is_sym(t, ';') && depth == 0) {
			next(p);
			return;
		}
		next(p);
	}
}

static bool accept_sym(struct parser *p, char c)
{
	if (is_sym(cur(p), c)) {
		next(p);
		return true;
	}
	return false;
}

static bool expect_sym(struct parser *p, char c)
{
	if (accept_sym(p, c))
		return true;
	syntax_error(p, cur(p), "Expected \"%c\".", c);
	return false;
}

/* A missing ';' is reported, and the statement skipped from there, as
 * protoc skips it (even when the next statement stands on the next line:
 * what protoc then reports, rdmx-gen reports) */
static bool expect_semi(struct parser *p)
{
	return expect_sym(p, ';');
}

static char *expect_ident(struct parser *p, const char *what, struct gen_loc *loc)
{
	struct gen_tok *t = cur(p);
	if (t->kind != TK_IDENT) {
		expected(p, what);
		return NULL;
	}
	if (loc)
		*loc = t->loc;
	next(p);
	return t->text;
}

/* a.b.c, or .a.b.c when leading_dot */
static char *parse_dotted(struct parser *p, bool leading_dot, const char *what, struct gen_loc *loc)
{
	struct gen_buf b = {0};
	char *r;
	struct gen_loc l = cur(p)->loc;
	if (leading_dot && is_sym(cur(p), '.')) {
		gen_buf_puts(&b, ".");
		next(p);
	}
	for (;;) {
		struct gen_tok *t = cur(p);
		if (t->kind != TK_IDENT) {
			expected(p, what);
			gen_buf_free(&b);
			return NULL;
		}
		gen_buf_puts(&b, t->text);
		next(p);
		if (!is_sym(cur(p), '.'))
			break;
		gen_buf_puts(&b, ".");
		next(p);
	}
	r = gen_strdup(&p->ctx->pool, b.data);
	gen_buf_free(&b);
	if (loc)
		*loc = l;
	return r;
}

/* a message type's name (protoc's ParseUserDefinedType): a scalar type's
 * name (or group) is refused there, and taken to go on */
static char *parse_message_type(struct parser *p, struct gen_loc *loc)
{
	struct gen_tok *t = cur(p);
	if (t->kind == TK_IDENT &&
	    (scalar_type(t->text) != GT_NONE || strcmp(t->text, "group") == 0)) {
		expected(p, "Expected message type.");
		*loc = t->loc;
		next(p);
		return t->text;
	}
	return parse_dotted(p, true, "Expected type name.", loc);
}

/* ['-'] integer in int32, as protoc's parser reads one (ConsumeInteger,
 * ConsumeSignedInteger): msg, protoc's words, where there is none (at a
 * '-' when !allow_neg), "Integer out of range." at one outside int32 (or
 * no integer: "08"); false after reporting an error */
static bool parse_int(struct parser *p, bool allow_neg, const char *msg, int64_t *out,
                      struct gen_loc *loc)
{
	bool neg = false;
	struct gen_tok *t;
	*loc = cur(p)->loc;
	if (allow_neg && is_sym(cur(p), '-')) {
		neg = true;
		next(p);
	}
	t = cur(p);
	if (t->kind != TK_INT) {
		expected(p, msg);
		return false;
	}
	if (t->overflow || t->ival > (uint64_t)INT32_MAX + neg) {
		syntax_error(p, t, "Integer out of range.");
		return false;
	}
	*out = neg ? -(int64_t)t->ival : (int64_t)t->ival;
	next(p);
	return true;
}

/* ---- options ----
 * Every option protoc takes is parsed: `name`, `(ext.name)`, `(a).b.(c).d`,
 * with a constant (identifier, signed number, concatenated strings) or an
 * aggregate `{ ... }` in text format. A few mean something for C (see
 * apply_option); the rest are ignored. Custom names `(x)` are recorded and
 * resolved against the `extend` fields of the file and its imports. */

enum opt_owner {
	OPT_FILE,
	OPT_MESSAGE,
	OPT_FIELD,
	OPT_ENUM,
	OPT_VALUE,
	OPT_ONEOF,
	OPT_SERVICE,
	OPT_METHOD,
	OPT_EXTRANGE /* extensions N to M [...] */
};

struct opt_target {
	enum opt_owner owner;
	struct gen_message *scope; /* for resolving (x) */
	void *ptr;                 /* the gen_* object the option is about, may be NULL */
};

#define AGGREGATE_DEPTH 64 /* deeper keys are not recorded */

/* name is a field's name in an aggregate value: followed by ':' or a
 * message's '{' or '<' */
static bool is_key(const struct gen_tok *name)
{
	return name->kind == TK_IDENT &&
	       (is_sym(&name[1], ':') || is_sym(&name[1], '{') || is_sym(&name[1], '<'));
}

/* t starts an extension's name in a field's place (`[x.y]` before ':', '{'
 * or '<'): the number of its tokens, else 0 (a list, or an Any's type URL) */
static int ext_key_len(const struct gen_tok *t)
{
	int n = 1;
	if (!is_sym(t, '['))
		return 0;
	while (t[n].kind == TK_IDENT && is_sym(&t[n + 1], '.'))
		n += 2;
	if (t[n].kind != TK_IDENT || !is_sym(&t[n + 1], ']'))
		return 0;
	n += 2;
	return is_sym(&t[n], ':') || is_sym(&t[n], '{') || is_sym(&t[n], '<') ? n : 0;
}

/* in (a path, "" at the top) followed by the extension's name of n tokens
 * at t, without spaces: `[x.y]`, `a.[x.y]` */
static char *ext_key(struct parser *p, const char *in, const struct gen_tok *t, int n)
{
	struct gen_buf b = {0};
	char *r;
	int i;
	gen_buf_printf(&b, "%s%s", in, in[0] ? "." : "");
	for (i = 0; i < n; i++) {
		if (t[i].kind == TK_SYM)
			gen_buf_printf(&b, "%c", t[i].sym);
		else
			gen_buf_puts(&b, t[i].text);
	}
	r = gen_strdup(&p->ctx->pool, b.data);
	gen_buf_free(&b);
	return r;
}

/* skips an aggregate value from '{' through the '}' closing it, recording
 * in keys the fields it sets as paths from the value (`a`, `b.c` for
 * `{ a: 1 b { c: 2 } }`, `[x.y].c` for `{ [x.y] { c: 2 } }`); none inside
 * a list. As protoc (ParseUninterpretedBlock), only braces count for the
 * value's end: a stray '>' or ']' is left to the text format check of the
 * value, and closes a '<' or '[' only when one is open (depth > braces) */
static bool skip_aggregate(struct parser *p, struct gen_vec *keys)
{
	const char *path[AGGREGATE_DEPTH]; /* of each open bracket; NULL: not recorded */
	const char *key = NULL;            /* the field just named, before its value */
	int depth = 0, braces = 0, n;      /* open brackets of any kind; open braces */
	do {
		struct gen_tok *t = cur(p);
		const char *in = depth && depth <= AGGREGATE_DEPTH ? path[depth - 1] : NULL;
		if (t->kind == TK_EOF) {
			syntax_error(p, t,
			             "Unexpected end of stream while parsing aggregate value.");
			return false;
		}
		if (in && (n = ext_key_len(t)) > 0) {
			key = ext_key(p, in, t, n);
			gen_vec_push(&p->ctx->pool, keys, (void *)key);
			p->i += n;
			continue;
		}
		if (is_sym(t, '{') || is_sym(t, '<') || is_sym(t, '[')) {
			if (depth < AGGREGATE_DEPTH)
				path[depth] = depth == 0 ? "" : is_sym(t, '[') ? NULL : key;
			depth++;
			braces += is_sym(t, '{');
		} else if (is_sym(t, '}')) {
			depth--;
			braces--;
		} else if ((is_sym(t, '>') || is_sym(t, ']')) && depth > braces) {
			depth--;
		} else if (in && is_key(t)) {
			key = in[0] ? gen_printf(&p->ctx->pool, "%s.%s", in, t->text) : t->text;
			gen_vec_push(&p->ctx->pool, keys, (void *)key);
			next(p);
			continue;
		}
		if (!is_sym(t, ':'))
			key = NULL;
		next(p);
	} while (braces > 0);
	return true;
}

/* the number at the current token, after a '-' when negative, as r's
 * value; an integer must fit 64 bits (protoc's parser: not below -2^63,
 * not above 2^64 - 1), but in a default (checked against its field) */
static bool number_value(struct parser *p, struct gen_optref *r, bool negative, bool in_default)
{
	struct gen_tok *t = cur(p);
	bool in_range = !t->overflow && (!negative || t->ival <= (uint64_t)INT64_MAX + 1);
	if (t->kind == TK_INT && !in_range && !in_default) {
		syntax_error(p, t, "Integer out of range.");
		return false;
	}
	r->value_kind = t->kind == TK_INT ? GV_INT : GV_FLOAT;
	r->value_int = t->ival;
	r->value_negative = negative;
	r->value = negative ? gen_printf(&p->ctx->pool, "-%s", t->text) : t->text;
	next(p);
	return true;
}

/* a value after '-' or '+' (at the current token): a number; as protoc,
 * '+' only in a default, and a signed identifier only there, inf or nan */
static bool signed_value(struct parser *p, struct gen_optref *r, bool in_default)
{
	struct gen_tok *sign = cur(p), *t = peek(p, 1);
	if (!in_default && is_sym(sign, '+')) {
		syntax_error(p, sign, "Expected option value.");
		return false;
	}
	next(p);
	if (t->kind == TK_INT || t->kind == TK_FLOAT)
		return number_value(p, r, is_sym(sign, '-'), in_default);
	if (!in_default && t->kind == TK_IDENT) {
		syntax_error(p, t, "Invalid '-' symbol before identifier.");
		return false;
	}
	if (t->kind != TK_IDENT || (strcmp(t->text, "inf") != 0 && strcmp(t->text, "nan") != 0)) {
		expected(p, "Expected option value.");
		return false;
	}
	r->value_kind = GV_FLOAT;
	r->value_negative = is_sym(sign, '-');
	next(p);
	return true;
}

/* the constant after '=' of r: its kind and spelling into r (an
 * aggregate's fields into r->keys); in_default: of a field's [default =
 * ...], which takes more (a '+', a signed inf or nan) and is checked
 * against its field by the resolver */
static bool parse_option_value(struct parser *p, struct gen_optref *r, bool in_default)
{
	struct gen_tok *t = cur(p);
	r->value_loc = t->loc;
	if (is_sym(t, '{')) {
		r->value_kind = GV_AGGREGATE;
		r->agg = t;
		if (!skip_aggregate(p, &r->keys))
			return false;
		r->agg_end = p->t + p->i - 1;
		return true;
	}
	if (is_sym(t, '-') || is_sym(t, '+'))
		return signed_value(p, r, in_default);
	if (t->kind == TK_INT || t->kind == TK_FLOAT)
		return number_value(p, r, false, in_default);
	if (t->kind == TK_STRING) {
		struct gen_buf b = {0};
		while (cur(p)->kind == TK_STRING) {
			gen_buf_puts(&b, cur(p)->text);
			next(p);
		}
		r->value = gen_strdup(&p->ctx->pool, b.data ? b.data : "");
		gen_buf_free(&b);
		r->value_kind = GV_STRING;
		return true;
	}
	if (t->kind == TK_IDENT) {
		r->value = t->text;
		r->value_kind = GV_IDENT;
		next(p);
		return true;
	}
	expected(p, "Expected option value.");
	return false;
}

/* protoc's words (ParseDefaultAssignment) for a default of type t that
 * is not one; NULL for a named type, whose default protoc takes as one
 * token before it is resolved */
static const char *default_what(enum gen_type t)
{
	switch (t) {
	case GT_NONE:
	case GT_NAMED:
	case GT_MESSAGE:
	case GT_ENUM:
		return NULL;
	case GT_FLOAT:
	case GT_DOUBLE:
		return "Expected number.";
	case GT_BOOL:
		return "Expected \"true\" or \"false\".";
	case GT_STRING:
		return "Expected string for field default value.";
	case GT_BYTES:
		return "Expected string.";
	default:
		return "Expected integer for field default value.";
	}
}

/* a sign before a [default = ...] of fd, at the current token: refused
 * where protoc's parser (ParseDefaultAssignment) refuses it, in its words
 * for fd's type: a '+' always, a '-' but before a number of a signed or
 * floating type; not for a named type (the value after the sign is
 * refused) */
static bool default_sign(struct parser *p, const struct gen_field *fd)
{
	const struct gen_tok *sign = cur(p), *t = peek(p, 1);
	bool minus = is_sym(sign, '-'), number = t->kind == TK_INT || t->kind == TK_FLOAT;
	bool inf_nan =
	    t->kind == TK_IDENT && (strcmp(t->text, "inf") == 0 || strcmp(t->text, "nan") == 0);
	bool is_unsigned = fd->type == GT_UINT32 || fd->type == GT_UINT64 ||
	                   fd->type == GT_FIXED32 || fd->type == GT_FIXED64;
	const char *what = default_what(fd->type);
	if (!what)
		return true;
	/* a negative number of an unsigned type: refused by the resolver, in
	 * the same words */
	if (minus && number && is_unsigned)
		return true;
	if (minus && (number || inf_nan) && !is_unsigned && fd->type != GT_BOOL &&
	    fd->type != GT_STRING && fd->type != GT_BYTES)
		return true;
	/* protoc's parser refuses the '-', then wants an integer */
	if (minus && is_unsigned)
		syntax_error(p, t, "Unsigned field can't have negative default value.");
	/* after a '-' protoc's error is at the token after it, but for the
	 * types that take no sign at all */
	syntax_error(p,
	             minus && fd->type != GT_BOOL && fd->type != GT_STRING && fd->type != GT_BYTES
	                 ? t
	                 : sign,
	             "%s", what);
	return false;
}

/* the value of a proto2 [default = ...] from its first token t (after '='),
 * as written: the resolver checks it against the field's type */
static void keep_default(struct parser *p, struct gen_field *fd, const struct gen_tok *t,
                         const char *value)
{
	struct gen_default *d = gen_alloc(&p->ctx->pool, sizeof(*d));
	const struct gen_tok *u;
	size_t n = 0;
	d->loc = d->num_loc = t->loc;
	if (t->kind == TK_STRING) {
		/* concatenated literals; the value may hold NULs */
		for (u = t; u->kind == TK_STRING; u++)
			n += u->len;
		d->text = gen_alloc(&p->ctx->pool, n + 1);
		for (u = t; u->kind == TK_STRING; u++) {
			memcpy(d->text + d->len, u->text, u->len);
			d->len += u->len;
		}
		d->string = true;
	} else if (is_sym(t, '-') || is_sym(t, '+')) {
		d->text = gen_printf(&p->ctx->pool, "%s%s", t->sym == '-' ? "-" : "", t[1].text);
		d->num_loc = t[1].loc;
	} else {
		/* a symbol, or the end: protoc's one token of a named type */
		d->text = t->kind == TK_IDENT || t->kind == TK_INT || t->kind == TK_FLOAT
		              ? t->text
		              : gen_strdup(&p->ctx->pool, value ? value : "");
	}
	fd->def = d;
}

static void apply_option(struct parser *p, const struct opt_target *tg, const char *name,
                         const struct gen_tok *name_tok, const char *value)
{
	bool yes = value && strcmp(value, "true") == 0;
	if (strcmp(name, "deprecated") == 0) {
		switch (tg->owner) {
		case OPT_MESSAGE:
			((struct gen_message *)tg->ptr)->deprecated = yes;
			break;
		case OPT_FIELD:
			((struct gen_field *)tg->ptr)->deprecated = yes;
			break;
		case OPT_ENUM:
			((struct gen_enum *)tg->ptr)->deprecated = yes;
			break;
		case OPT_VALUE:
			((struct gen_enum_value *)tg->ptr)->deprecated = yes;
			break;
		case OPT_SERVICE:
			((struct gen_service *)tg->ptr)->deprecated = yes;
			break;
		case OPT_METHOD:
			((struct gen_method *)tg->ptr)->deprecated = yes;
			break;
		default:
			break;
		}
	} else if (tg->owner == OPT_FIELD && strcmp(name, "json_name") == 0) {
		/* a string: pseudo_value took nothing else */
		((struct gen_field *)tg->ptr)->json_name = (char *)value;
		((struct gen_field *)tg->ptr)->json_name_loc = name_tok->loc;
	} else if (tg->owner == OPT_FIELD && strcmp(name, "default") == 0 && !p->f->proto2) {
		syntax_error(p, name_tok,
		             "explicit default values are not allowed in proto3: remove "
		             "[default = ...] and set the value in code");
	} else if (tg->owner == OPT_FIELD && strcmp(name, "default") == 0) {
		keep_default(p, tg->ptr, name_tok + 2, value);
	} else if (tg->owner == OPT_FIELD && strcmp(name, "jstype") == 0) {
		((struct gen_field *)tg->ptr)->jstype =
		    value && (strcmp(value, "JS_STRING") == 0 || strcmp(value, "JS_NUMBER") == 0);
	} else if (tg->owner == OPT_FIELD && strcmp(name, "packed") == 0) {
		((struct gen_field *)tg->ptr)->packed = yes;
	} else if (tg->owner == OPT_FIELD &&
	           (strcmp(name, "lazy") == 0 || strcmp(name, "unverified_lazy") == 0)) {
		((struct gen_field *)tg->ptr)->lazy |= yes;
	} else if (tg->owner == OPT_METHOD && strcmp(name, "idempotency_level") == 0) {
		/* protobuf's own MethodOptions.idempotency_level: a client may retry
		 * such a call after a failure that may have reached the server (the
		 * resolver checks the value against the enum) */
		((struct gen_method *)tg->ptr)->idempotent =
		    value &&
		    (strcmp(value, "IDEMPOTENT") == 0 || strcmp(value, "NO_SIDE_EFFECTS") == 0);
	} else if (tg->owner == OPT_FILE && strcmp(name, "optimize_for") == 0) {
		p->f->lite = value && strcmp(value, "LITE_RUNTIME") == 0;
	} else if (tg->owner == OPT_FILE && (strcmp(name, "cc_generic_services") == 0 ||
	                                     strcmp(name, "java_generic_services") == 0)) {
		p->f->generic_services |= yes;
	} else if (tg->owner == OPT_MESSAGE && strcmp(name, "message_set_wire_format") == 0) {
		((struct gen_message *)tg->ptr)->message_set = yes;
	} else if (tg->owner == OPT_ENUM && strcmp(name, "allow_alias") == 0) {
		struct gen_enum *e = tg->ptr;
		e->allow_alias = yes;
		if (!e->alias_loc.line) {
			e->alias_loc = name_tok->loc;
			e->alias_false =
			    name_tok[2].kind == TK_IDENT && strcmp(value, "false") == 0;
		}
	}
}

/* a field's [default = ...] or [json_name = ...] at the current token,
 * which protoc's parser reads apart from options (ParseDefaultAssignment,
 * ParseJsonName): PSEUDO_*, or 0; the second one of a field is an error
 * of its syntax, and its name takes no further part (`default.x`) */
static unsigned field_pseudo(struct parser *p, const struct opt_target *tg)
{
	const struct gen_tok *t = cur(p);
	unsigned bit;
	if (tg->owner != OPT_FIELD || t->kind != TK_IDENT)
		return 0;
	if (strcmp(t->text, "default") == 0)
		bit = PSEUDO_DEFAULT;
	else if (strcmp(t->text, "json_name") == 0)
		bit = PSEUDO_JSON_NAME;
	else
		return 0;
	if (p->pseudo_seen & bit)
		syntax_error(p, t, "Already set option \"%s\".", t->text);
	p->pseudo_seen |= bit;
	return bit;
}

/* the value of fd's [default = ...], at the current token: as protoc's
 * parser, a symbol (a sign too) is taken alone as the default of a named
 * type (it is resolved later), refused in its words for a scalar */
static bool default_value(struct parser *p, struct gen_optref *r, const struct gen_field *fd)
{
	struct gen_tok *t = cur(p);
	const char *what = default_what(fd->type);
	bool sym = t->kind == TK_SYM || t->kind == TK_EOF;
	if (what && (is_sym(t, '+') || is_sym(t, '-')))
		return default_sign(p, fd) && parse_option_value(p, r, true);
	if (!sym)
		return parse_option_value(p, r, true);
	if (what) {
		syntax_error(p, t, "%s", what);
		return false;
	}
	r->value_loc = t->loc;
	r->value = t->kind == TK_SYM ? gen_printf(&p->ctx->pool, "%c", t->sym) : "";
	r->value_kind = GV_IDENT;
	next(p);
	return true;
}

/* the value of an option (pseudo: field_pseudo's) at the current token */
static bool pseudo_value(struct parser *p, struct gen_optref *r, const struct opt_target *tg,
                         unsigned pseudo)
{
	if (pseudo == PSEUDO_DEFAULT)
		return default_value(p, r, tg->ptr);
	if (pseudo == PSEUDO_JSON_NAME && cur(p)->kind != TK_STRING) {
		expected(p, "Expected string for JSON name.");
		return false;
	}
	return parse_option_value(p, r, false);
}

/* name = value (without the leading `option` or the surrounding [ ]) */
static bool parse_option(struct parser *p, const struct opt_target *tg)
{
	static const char *const options[] = {
	    [OPT_FILE] = "google.protobuf.FileOptions",
	    [OPT_MESSAGE] = "google.protobuf.MessageOptions",
	    [OPT_FIELD] = "google.protobuf.FieldOptions",
	    [OPT_ENUM] = "google.protobuf.EnumOptions",
	    [OPT_VALUE] = "google.protobuf.EnumValueOptions",
	    [OPT_ONEOF] = "google.protobuf.OneofOptions",
	    [OPT_SERVICE] = "google.protobuf.ServiceOptions",
	    [OPT_METHOD] = "google.protobuf.MethodOptions",
	    [OPT_EXTRANGE] = "google.protobuf.ExtensionRangeOptions",
	};
	struct gen_tok *first = cur(p);
	struct gen_vec parts = {0};
	struct gen_optref *r;
	unsigned pseudo = field_pseudo(p, tg);
	bool custom = false;
	int i;
	for (;;) {
		struct gen_optpart *part = gen_alloc(&p->ctx->pool, sizeof(*part));
		struct gen_loc open = cur(p)->loc;
		if (accept_sym(p, '(')) {
			part->ext = custom = true;
			part->name = parse_dotted(p, true, "Expected identifier.", &part->loc);
			if (!part->name || !expect_sym(p, ')'))
				return false;
			part->loc = open; /* protoc's place for (name): its '(' */
		} else if (cur(p)->kind == TK_IDENT) {
			part->name = cur(p)->text;
			part->loc = cur(p)->loc;
			next(p);
		} else {
			expected(p, "Expected identifier.");
			return false;
		}
		gen_vec_push(&p->ctx->pool, &parts, part);
		if (pseudo || !accept_sym(p, '.'))
			break;
	}
	if (!expect_sym(p, '='))
		return false;
	r = gen_alloc(&p->ctx->pool, sizeof(*r));
	r->parts = gen_alloc(&p->ctx->pool, sizeof(*r->parts) * (size_t)parts.n);
	for (i = 0; i < parts.n; i++)
		r->parts[i] = *(struct gen_optpart *)parts.items[i];
	r->nparts = parts.n;
	r->scope = tg->scope;
	r->options = options[tg->owner];
	r->owner = tg->ptr ? tg->ptr : p->f;
	/* a plain name alone is looked up in rdmx-gen's descriptor.proto only
	 * (but the one protoc reserves) */
	r->check_name = custom || parts.n > 1 || strcmp(first->text, "uninterpreted_option") == 0;
	gen_vec_push(&p->ctx->pool, &p->f->optrefs, r);
	if (!pseudo_value(p, r, tg, pseudo))
		return false;
	if (!custom && parts.n == 1)
		apply_option(p, tg, first->text, first, r->value);
	return true;
}

/* `[a = 1, (b).c = {...}]` after a field or an enum value */
static bool parse_field_options(struct parser *p, const struct opt_target *tg)
{
	if (!accept_sym(p, '['))
		return true;
	p->pseudo_seen = 0;
	do {
		if (!parse_option(p, tg))
			return false;
	} while (accept_sym(p, ','));
	return expect_sym(p, ']');
}

/* `option name = value;` */
static void parse_option_statement(struct parser *p, const struct opt_target *tg)
{
	next(p); /* option */
	if (!parse_option(p, tg) || !expect_semi(p))
		skip_statement(p);
}

/* `N`, `N to M`, `N to max`, ... into ranges (max: max's value, or 0 to
 * leave the range's hi for the end of the message, `to_max`); first_msg,
 * next_msg: protoc's words where the first range, a later one, is not a
 * number; false, the statement skipped, on a syntax error */
static bool parse_ranges(struct parser *p, struct gen_vec *ranges, bool allow_neg, int64_t max,
                         const char *first_msg, const char *next_msg)
{
	const char *msg = first_msg;
	for (;;) {
		struct gen_range *r = gen_alloc(&p->ctx->pool, sizeof(*r));
		struct gen_loc l;
		if (!parse_int(p, allow_neg, msg, &r->lo, &r->loc)) {
			skip_statement(p);
			return false;
		}
		r->hi = r->lo;
		if (is_kw(cur(p), "to")) {
			next(p);
			if (is_kw(cur(p), "max")) {
				r->hi = max;
				r->to_max = !max;
				next(p);
			} else if (!parse_int(p, allow_neg, "Expected integer.", &r->hi, &l)) {
				skip_statement(p);
				return false;
			}
		}
		gen_vec_push(&p->ctx->pool, ranges, r);
		if (!accept_sym(p, ','))
			return true;
		msg = next_msg;
	}
}

static void parse_reserved(struct parser *p, struct gen_vec *ranges, struct gen_vec *names,
                           int64_t max)
{
	next(p); /* reserved */
	if (cur(p)->kind == TK_STRING) {
		for (;;) {
			struct gen_name *n;
			if (cur(p)->kind != TK_STRING) {
				expected(p, max == GEN_FIELD_MAX ? "Expected field name."
				                                 : "Expected enum value.");
				skip_statement(p);
				return;
			}
			n = gen_alloc(&p->ctx->pool, sizeof(*n));
			n->name = cur(p)->text;
			n->loc = cur(p)->loc;
			gen_vec_push(&p->ctx->pool, names, n);
			next(p);
			if (!accept_sym(p, ','))
				break;
		}
	} else if (cur(p)->kind == TK_INT || (is_sym(cur(p), '-') && max != GEN_FIELD_MAX)) {
		bool field = max == GEN_FIELD_MAX;
		if (!parse_ranges(p, ranges, !field, max,
		                  field ? "Expected field name or number range."
		                        : "Expected enum value or number range.",
		                  field ? "Expected field number range."
		                        : "Expected enum number range."))
			return;
	} else {
		/* protoc's words, at what follows the keyword */
		syntax_error(p, cur(p), "%s",
		             max == GEN_FIELD_MAX ? "Expected field name or number range."
		                                  : "Expected enum value or number range.");
		skip_statement(p);
		return;
	}
	if (!expect_semi(p))
		skip_statement(p);
}

/* proto2 `extensions 100 to 199, 500 to max [options];` in m: the ranges
 * are kept for the checks (extensions are not generated), the options
 * checked */
static void parse_extensions(struct parser *p, struct gen_message *m)
{
	/* options are looked up around m, as a message's own; they are about
	 * the statement's first range */
	struct opt_target tg = {OPT_EXTRANGE, m->parent, NULL};
	int first = m->ext_ranges.n;
	next(p); /* extensions */
	if (!parse_ranges(p, &m->ext_ranges, false, 0, "Expected field number range.",
	                  "Expected field number range."))
		return;
	tg.ptr = m->ext_ranges.items[first];
	if (!parse_field_options(p, &tg) || !expect_semi(p))
		skip_statement(p);
}

static void parse_field(struct parser *p, struct gen_message *m, int oneof);
static void parse_message_body(struct parser *p, struct gen_message *m, int depth);

/* extend X { fields } : kept as extensions (custom option definitions) */
static void parse_extend(struct parser *p, struct gen_message *parent)
{
	struct gen_message tmp;
	struct gen_loc xloc;
	char *extendee;
	int i;
	next(p); /* extend */
	extendee = parse_message_type(p, &xloc);
	if (!extendee || !expect_sym(p, '{')) {
		skip_statement(p);
		return;
	}
	memset(&tmp, 0, sizeof(tmp));
	tmp.file = p->f;
	p->ext_parent = parent;
	while (!accept_sym(p, '}')) {
		if (cur(p)->kind == TK_EOF) {
			expected(p, "Reached end of input in extend definition (missing '}').");
			return;
		}
		if (accept_sym(p, ';'))
			continue;
		parse_field(p, &tmp, -1);
	}
	accept_sym(p, ';');
	for (i = 0; i < tmp.fields.n; i++) {
		struct gen_field *fd = tmp.fields.items[i];
		struct gen_ext *x = gen_alloc(&p->ctx->pool, sizeof(*x));
		x->name = fd->name;
		x->field = fd;
		x->extendee = extendee;
		x->parent = parent;
		x->file = p->f;
		x->loc = fd->loc;
		x->extendee_loc = xloc;
		gen_vec_push(&p->ctx->pool, &p->f->exts, x);
	}
}

/* Statements every body takes the same way (option, extend, extensions);
 * true when one was handled. */
static bool common_statement(struct parser *p, const struct opt_target *tg)
{
	struct gen_tok *t = cur(p);
	if (t->kind != TK_IDENT)
		return false;
	/* as in protoc, these words start their statement wherever it takes
	 * them, whatever follows: `option = 1;` is a broken option, not a field
	 * of a type named option (write `.pkg.option` for one) */
	if (is_kw(t, "option")) {
		parse_option_statement(p, tg);
		return true;
	}
	if (is_kw(t, "extend") && (tg->owner == OPT_FILE || tg->owner == OPT_MESSAGE)) {
		parse_extend(p, tg->owner == OPT_MESSAGE ? tg->ptr : NULL);
		return true;
	}
	if (is_kw(t, "extensions") && tg->owner == OPT_MESSAGE) {
		if (p->f->proto2) {
			parse_extensions(p, tg->ptr);
			return true;
		}
		{
			/* read as in proto2, so a broken one gets protoc's syntax
			 * error; refused at its first range, where protoc does */
			struct gen_message *m = tg->ptr;
			int first = m->ext_ranges.n, errors = p->ctx->errors;
			parse_extensions(p, m);
			if (m->ext_ranges.n > first && p->ctx->errors == errors) {
				const struct gen_range *r = m->ext_ranges.items[first];
				p->failed = true;
				gen_error(
				    p->ctx, &r->loc,
				    "extension ranges (\"extensions\") are not allowed in "
				    "proto3: extend only google.protobuf.*Options, for custom "
				    "options");
			}
			m->ext_ranges.n = first;
		}
		return true;
	}
	return false;
}

static char *camel_entry_name(struct parser *p, const char *field)
{
	size_t n = strlen(field), i, j = 0;
	char *s = gen_alloc(&p->ctx->pool, n + 6);
	bool up = true;
	for (i = 0; i < n; i++) {
		if (field[i] == '_') {
			up = true;
			continue;
		}
		s[j++] = up ? (char)toupper((unsigned char)field[i]) : field[i];
		up = false;
	}
	memcpy(s + j, "Entry", 6);
	return s;
}

static struct gen_field *new_field(struct parser *p, struct gen_message *m)
{
	struct gen_field *fd = gen_alloc(&p->ctx->pool, sizeof(*fd));
	fd->oneof = -1;
	gen_vec_push(&p->ctx->pool, &m->fields, fd);
	return fd;
}

/* The "name =" of a field whose type (at type_loc) was read: a new field of
 * m with its name and locations, or NULL with the statement skipped. */
static struct gen_field *named_field(struct parser *p, struct gen_message *m,
                                     struct gen_loc type_loc)
{
	struct gen_loc nloc;
	struct gen_field *fd;
	char *name = expect_ident(p, "Expected field name.", &nloc);

	if (name && !accept_sym(p, '='))
		expected(p, "Missing field number.");
	if (!name || !is_sym(&p->t[p->i - 1], '=')) {
		skip_statement(p);
		return NULL;
	}
	fd = new_field(p, m);
	fd->name = name;
	fd->loc = nloc;
	fd->type_loc = type_loc;
	return fd;
}

/* a field's type, as protoc's ParseType reads it: a scalar's keyword
 * alone (`int32.x` is int32, then a '.'), else a dotted name */
static char *parse_type_name(struct parser *p, struct gen_loc *loc)
{
	struct gen_tok *t = cur(p);
	if (t->kind == TK_IDENT && scalar_type(t->text) != GT_NONE) {
		*loc = t->loc;
		next(p);
		return t->text;
	}
	return parse_dotted(p, true, "Expected type name.", loc);
}

/* map<K, V> name = N; -> a repeated field of the nested entry message. */
static void parse_map_field(struct parser *p, struct gen_message *m, struct gen_loc start)
{
	struct gen_message *entry;
	struct gen_field *fd, *key, *val;
	struct gen_loc kloc, vloc;
	char *kname, *vname;
	next(p); /* map */
	next(p); /* < */
	/* any type, as protoc's parser takes it: the key's is checked with
	 * the field's options (gen_check_field_options) */
	kname = parse_type_name(p, &kloc);
	if (!kname) {
		skip_statement(p);
		return;
	}
	if (!expect_sym(p, ',')) {
		skip_statement(p);
		return;
	}
	/* a map value (`map<K, map<...>>`) is the type name map, then
	 * protoc's `Expected ">".` */
	vname = parse_type_name(p, &vloc);
	if (!vname || !expect_sym(p, '>')) {
		skip_statement(p);
		return;
	}
	fd = named_field(p, m, start);
	if (!fd)
		return;
	fd->label = GL_REPEATED;
	fd->is_map = true;
	fd->type = GT_MESSAGE;
	if (!parse_int(p, false, "Expected field number.", &fd->number, &fd->number_loc)) {
		skip_statement(p);
		fd->number = 1;
	} else {
		struct opt_target tg = {OPT_FIELD, m->name ? m : p->ext_parent, fd};
		if (!parse_field_options(p, &tg) || !expect_semi(p))
			skip_statement(p);
	}

	entry = gen_alloc(&p->ctx->pool, sizeof(*entry));
	entry->name = camel_entry_name(p, fd->name);
	entry->loc = fd->loc;
	entry->parent = m;
	entry->file = p->f;
	entry->map_entry = true;
	gen_vec_push(&p->ctx->pool, &m->messages, entry);
	fd->msg = entry;
	key = new_field(p, entry);
	key->name = "key";
	key->number = 1;
	key->type = scalar_type(kname);
	if (key->type == GT_NONE) {
		key->type = GT_NAMED;
		key->type_name = kname;
	}
	key->loc = key->type_loc = key->number_loc = kloc;
	val = new_field(p, entry);
	val->name = "value";
	val->number = 2;
	val->type = scalar_type(vname);
	if (val->type == GT_NONE) {
		val->type = GT_NAMED;
		val->type_name = vname;
	}
	val->loc = val->type_loc = val->number_loc = vloc;
}

/* proto2 `[label] group Name = N [options] { ... }`: a field of the nested
 * message type Name protoc defines (of m, or of the scope of the extend block
 * m stands for), named like the group in lower case, as protoc names it. The
 * wire format has no groups: its value is a message like any other */
static void parse_group(struct parser *p, struct gen_message *m, enum gen_label label,
                        bool required, int oneof)
{
	struct gen_message *g = gen_alloc(&p->ctx->pool, sizeof(*g)), *up;
	struct gen_tok *kw = cur(p);
	struct gen_field *fd;
	int depth = 0;
	char *c;
	next(p); /* group */
	g->name = expect_ident(p, "Expected field name.", &g->loc);
	if (!g->name || !expect_sym(p, '=')) {
		skip_statement(p);
		return;
	}
	fd = new_field(p, m);
	fd->name = gen_strdup(&p->ctx->pool, g->name);
	for (c = fd->name; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	fd->loc = g->loc;
	fd->type_loc = kw->loc;
	fd->label = label;
	fd->required = required;
	fd->oneof = oneof;
	fd->type = GT_NAMED;
	fd->type_name = g->name;
	fd->group = true;
	if (!parse_int(p, false, "Expected field number.", &fd->number, &fd->number_loc)) {
		skip_statement(p);
		return;
	}
	{
		struct opt_target tg = {OPT_FIELD, m->name ? m : p->ext_parent, fd};
		if (!parse_field_options(p, &tg) || !expect_sym(p, '{')) {
			skip_statement(p);
			return;
		}
	}
	g->parent = m->name ? m : p->ext_parent;
	g->file = p->f;
	for (up = g->parent; up; up = up->parent)
		depth++;
	if (depth >= MAX_NESTING) {
		syntax_error(p, kw, "messages nested more than %d levels deep", MAX_NESTING);
		p->i--; /* back to '{' */
		skip_statement(p);
		return;
	}
	gen_vec_push(&p->ctx->pool, g->parent ? &g->parent->messages : &p->f->messages, g);
	parse_message_body(p, g, depth);
}

/* proto2 has no unlabelled fields outside oneofs (maps excepted), as in
 * protoc, whose parser reads on as if the label were `optional` */
#define UNLABELLED "Expected \"required\", \"optional\", or \"repeated\"."

#define ONEOF_LABEL "Fields in oneofs must not have labels (required / optional / repeated)."

static void parse_field(struct parser *p, struct gen_message *m, int oneof)
{
	struct gen_tok *start = cur(p);
	enum gen_label label = GL_NONE;
	bool required = false;
	struct gen_field *fd;
	struct gen_loc tloc;
	char *tname;
	if (is_kw(start, "required") && p->f->proto2 && oneof >= 0) {
		syntax_error(p, start, ONEOF_LABEL);
		skip_statement(p);
		return;
	} else if (is_kw(start, "required") && p->f->proto2) {
		next(p);
		required = true;
	} else if (is_kw(start, "required")) {
		syntax_error(p, start,
		             "\"required\" fields are not allowed in proto3: drop the label "
		             "and check presence in code");
		skip_statement(p);
		return;
	} else if (is_kw(start, "optional") || is_kw(start, "repeated")) {
		label = is_kw(start, "optional") ? GL_OPTIONAL : GL_REPEATED;
		if (oneof >= 0) {
			syntax_error(p, start, ONEOF_LABEL);
			skip_statement(p);
			return;
		}
		next(p);
	}
	if (is_kw(cur(p), "group") && peek(p, 1)->kind == TK_IDENT && is_sym(peek(p, 2), '=')) {
		if (p->f->proto2 && oneof < 0 && label == GL_NONE && !required) {
			syntax_error(p, start, UNLABELLED);
			label = GL_OPTIONAL; /* and on, as protoc goes on */
		}
		if (p->f->proto2)
			parse_group(p, m, label, required, oneof);
		else {
			syntax_error(p, cur(p),
			             "groups are not allowed in proto3: use a nested message and a "
			             "field of its type");
			skip_statement(p);
		}
		return;
	}
	if (is_kw(cur(p), "map") && is_sym(peek(p, 1), '<')) {
		if (label != GL_NONE || required || oneof >= 0) {
			/* protoc's words, at the '<' */
			syntax_error(p, peek(p, 1), "%s",
			             oneof >= 0
			                 ? "Map fields are not allowed in oneofs."
			                 : "Field labels (required/optional/repeated) are not "
			                   "allowed on map fields.");
			skip_statement(p);
			return;
		}
		parse_map_field(p, m, start->loc);
		return;
	}
	if (p->f->proto2 && oneof < 0 && label == GL_NONE && !required) {
		/* protoc goes on, the field taken as optional */
		syntax_error(p, start, UNLABELLED);
		label = GL_OPTIONAL;
	}
	tname = parse_type_name(p, &tloc);
	if (!tname) {
		skip_statement(p);
		return;
	}
	fd = named_field(p, m, tloc);
	if (!fd)
		return;
	fd->label = label;
	fd->required = required;
	fd->oneof = oneof;
	fd->type = scalar_type(tname);
	if (fd->type == GT_NONE) {
		fd->type = GT_NAMED;
		fd->type_name = tname;
	}
	if (!parse_int(p, false, "Expected field number.", &fd->number, &fd->number_loc)) {
		skip_statement(p);
		return;
	}
	{
		struct opt_target tg = {OPT_FIELD, m->name ? m : p->ext_parent, fd};
		if (!parse_field_options(p, &tg) || !expect_semi(p))
			skip_statement(p);
	}
}

static void parse_enum(struct parser *p, struct gen_file *f, struct gen_message *parent,
                       struct gen_vec *into);
static void parse_message(struct parser *p, struct gen_message *parent, struct gen_vec *into,
                          int depth);

enum body_step { BODY_END, BODY_TAKEN, BODY_ITEM };

/* One step in the body of a message, enum or service (`what`): BODY_END at
 * its end (the "}" taken, or the end of file reported in protoc's words),
 * BODY_TAKEN after an empty statement or one that
 * common_statement took, else BODY_ITEM: the caller parses the item at
 * cur(p). */
static enum body_step body_step(struct parser *p, const char *what, const struct opt_target *tg)
{
	struct gen_tok *t = cur(p);

	if (t->kind == TK_EOF) {
		syntax_error(p, t, "Reached end of input in %s definition (missing '}').", what);
		return BODY_END;
	}
	if (is_sym(t, '}')) {
		next(p);
		return BODY_END;
	}
	if (accept_sym(p, ';') || common_statement(p, tg))
		return BODY_TAKEN;
	return BODY_ITEM;
}

static void parse_oneof(struct parser *p, struct gen_message *m)
{
	struct gen_oneof *o = gen_alloc(&p->ctx->pool, sizeof(*o));
	int idx = m->oneofs.n;
	next(p);
	o->name = expect_ident(p, "Expected oneof name.", &o->loc);
	if (!o->name || !expect_sym(p, '{')) {
		skip_statement(p);
		return;
	}
	gen_vec_push(&p->ctx->pool, &m->oneofs, o);
	/* protoc reads a field before it looks for the end */
	if (is_sym(cur(p), '}'))
		syntax_error(p, cur(p), "Expected type name.");
	while (!is_sym(cur(p), '}')) {
		int before = m->fields.n;
		if (cur(p)->kind == TK_EOF) {
			expected(p, "Reached end of input in oneof definition (missing '}').");
			return;
		}
		{
			struct opt_target tg = {OPT_ONEOF, m, o};
			if (accept_sym(p, ';') || common_statement(p, &tg))
				continue;
		}
		parse_field(p, m, idx);
		o->nfields += m->fields.n - before;
	}
	next(p);
}

static void parse_message(struct parser *p, struct gen_message *parent, struct gen_vec *into,
                          int depth)
{
	struct gen_message *m = gen_alloc(&p->ctx->pool, sizeof(*m));
	struct gen_tok *kw = cur(p);
	next(p);
	m->name = expect_ident(p, "Expected message name.", &m->loc);
	if (!m->name || !expect_sym(p, '{')) {
		skip_statement(p);
		return;
	}
	if (depth >= MAX_NESTING) {
		syntax_error(p, kw, "messages nested more than %d levels deep", MAX_NESTING);
		p->i--; /* back to '{' */
		skip_statement(p);
		return;
	}
	m->parent = parent;
	m->file = p->f;
	gen_vec_push(&p->ctx->pool, into, m);
	parse_message_body(p, m, depth);
}

/* `to max` of m's extension ranges, known once m's options are: protoc's
 * largest field number, or the largest int32 a message set takes (protoc's
 * range ends are exclusive int32s) */
static void end_ext_ranges(struct gen_message *m)
{
	int i;
	for (i = 0; i < m->ext_ranges.n; i++) {
		struct gen_range *r = m->ext_ranges.items[i];
		if (r->to_max)
			r->hi = m->message_set ? INT32_MAX - 1 : GEN_FIELD_MAX;
	}
}

/* the statements of m's body, through its closing '}' */
static void parse_message_body(struct parser *p, struct gen_message *m, int depth)
{
	for (;;) {
		/* (x) is looked up around m, not in it, as protoc does (a
		 * message's own options cannot name its nested extensions) */
		struct opt_target tg = {OPT_MESSAGE, m->parent, m};
		enum body_step step = body_step(p, "message", &tg);
		struct gen_tok *t = cur(p);

		if (step == BODY_END) {
			end_ext_ranges(m);
			return;
		}
		if (step == BODY_TAKEN)
			continue;
		/* statement words, whatever follows, as in protoc (a field of a
		 * type named message is written `.pkg.message x = 1;`) */
		if (is_kw(t, "message"))
			parse_message(p, m, &m->messages, depth + 1);
		else if (is_kw(t, "enum"))
			parse_enum(p, p->f, m, &m->enums);
		else if (is_kw(t, "oneof"))
			parse_oneof(p, m);
		else if (is_kw(t, "reserved"))
			parse_reserved(p, &m->reserved, &m->rnames, GEN_FIELD_MAX);
		else
			parse_field(p, m, -1);
	}
}

/* two values of e share a number */
static bool has_aliases(const struct gen_enum *e)
{
	int i, j;
	for (i = 0; i < e->values.n; i++) {
		const struct gen_enum_value *v = e->values.items[i];
		for (j = 0; j < i; j++) {
			const struct gen_enum_value *o = e->values.items[j];
			if (o->number == v->number)
				return true;
		}
	}
	return false;
}

/* allow_alias, where written, says what e's values do, as protoc's parser
 * requires after the enum's "}" (ValidateEnum): never false (that has no
 * effect), true only with aliases; the error is at the token after the
 * "}", and the statement fails there (its rest is skipped), as in protoc */
static void validate_enum(struct parser *p, const struct gen_enum *e)
{
	if (e->alias_false)
		syntax_error(p, cur(p),
		             "\"%s\" declares 'option allow_alias = false;' which has no effect. "
		             "Please remove the declaration.",
		             e->name);
	else if (e->allow_alias && e->alias_loc.line && !has_aliases(e))
		syntax_error(p, cur(p),
		             "\"%s\" declares support for enum aliases but no enum values share "
		             "field numbers. Please remove the unnecessary 'option allow_alias = "
		             "true;' declaration.",
		             e->name);
	else
		return;
	skip_statement(p);
}

static void parse_enum(struct parser *p, struct gen_file *f, struct gen_message *parent,
                       struct gen_vec *into)
{
	struct gen_enum *e = gen_alloc(&p->ctx->pool, sizeof(*e));
	next(p);
	e->name = expect_ident(p, "Expected enum name.", &e->loc);
	if (!e->name || !expect_sym(p, '{')) {
		skip_statement(p);
		return;
	}
	e->parent = parent;
	e->file = f;
	gen_vec_push(&p->ctx->pool, into, e);
	for (;;) {
		struct opt_target etg = {OPT_ENUM, parent, e};
		bool closing = is_sym(cur(p), '}');
		enum body_step step = body_step(p, "enum", &etg);
		struct gen_tok *t = cur(p);
		struct gen_enum_value *v;

		if (step == BODY_END && closing)
			validate_enum(p, e);
		if (step == BODY_END)
			return;
		if (step == BODY_TAKEN)
			continue;
		if (is_kw(t, "reserved")) {
			parse_reserved(p, &e->reserved, &e->rnames, INT32_MAX);
			continue;
		}
		v = gen_alloc(&p->ctx->pool, sizeof(*v));
		v->name = expect_ident(p, "Expected enum constant name.", &v->loc);
		if (v->name && !accept_sym(p, '='))
			expected(p, "Missing numeric value for enum constant.");
		if (!v->name || !is_sym(&p->t[p->i - 1], '=')) {
			skip_statement(p);
			continue;
		}
		{
			struct opt_target tg = {OPT_VALUE, parent, v};
			if (!parse_int(p, true, "Expected integer.", &v->number, &v->number_loc) ||
			    !parse_field_options(p, &tg) || !expect_semi(p)) {
				skip_statement(p);
				continue;
			}
		}
		gen_vec_push(&p->ctx->pool, &e->values, v);
	}
}

static bool parse_method_type(struct parser *p, char **name, struct gen_loc *loc, bool *stream)
{
	if (!expect_sym(p, '('))
		return false;
	/* as protoc: a leading `stream` is always the keyword, so `(stream)`
	 * names no type, even when a message is called stream */
	if (is_kw(cur(p), "stream")) {
		*stream = true;
		next(p);
		if (is_sym(cur(p), ')')) {
			expected(p, "Expected type name.");
			return false;
		}
	}
	*name = parse_message_type(p, loc);
	return *name && expect_sym(p, ')');
}

static void parse_service(struct parser *p)
{
	struct gen_service *s = gen_alloc(&p->ctx->pool, sizeof(*s));
	next(p);
	s->name = expect_ident(p, "Expected service name.", &s->loc);
	if (!s->name || !expect_sym(p, '{')) {
		skip_statement(p);
		return;
	}
	gen_vec_push(&p->ctx->pool, &p->f->services, s);
	for (;;) {
		struct opt_target tg = {OPT_SERVICE, NULL, s};
		enum body_step step = body_step(p, "service", &tg);
		struct gen_tok *t = cur(p);
		struct gen_method *m;

		if (step == BODY_END)
			return;
		if (step == BODY_TAKEN)
			continue;
		if (!is_kw(t, "rpc")) {
			expected(p, "Expected \"rpc\".");
			skip_statement(p);
			continue;
		}
		next(p);
		m = gen_alloc(&p->ctx->pool, sizeof(*m));
		m->name = expect_ident(p, "Expected method name.", &m->loc);
		if (!m->name ||
		    !parse_method_type(p, &m->in_name, &m->in_loc, &m->client_streaming)) {
			skip_statement(p);
			continue;
		}
		if (!is_kw(cur(p), "returns")) {
			expected(p, "Expected \"returns\".");
			skip_statement(p);
			continue;
		}
		next(p);
		if (!parse_method_type(p, &m->out_name, &m->out_loc, &m->server_streaming)) {
			skip_statement(p);
			continue;
		}
		gen_vec_push(&p->ctx->pool, &s->methods, m);
		if (accept_sym(p, ';'))
			continue;
		if (!accept_sym(p, '{')) {
			expected(p, "Expected \";\".");
			skip_statement(p);
			continue;
		}
		tg.owner = OPT_METHOD;
		tg.ptr = m;
		while (!accept_sym(p, '}')) {
			if (cur(p)->kind == TK_EOF) {
				/* and the service's end, as protoc says */
				expected(p,
				         "Reached end of input in method options (missing '}').");
				break;
			}
			if (accept_sym(p, ';'))
				continue;
			/* "option = 5;" is not an option statement either: every
			 * turn consumes a statement, so the loop always ends */
			if (!is_kw(cur(p), "option") || !common_statement(p, &tg)) {
				expected(p, "Expected \"option\".");
				skip_statement(p);
			}
		}
		accept_sym(p, ';');
	}
}

static void parse_syntax(struct parser *p)
{
	struct gen_tok *kw = cur(p);
	if (p->seen_statement) { /* protoc reads it only first */
		syntax_error(p, kw, "Expected top-level statement (e.g. \"message\").");
		skip_statement(p);
		return;
	}
	next(p);
	p->seen_syntax = true;
	if (!expect_sym(p, '=')) {
		skip_statement(p);
		return;
	}
	if (cur(p)->kind != TK_STRING) {
		expected(p, "Expected syntax identifier.");
		skip_statement(p);
		return;
	}
	p->f->syntax_loc = cur(p)->loc;
	if (strcmp(cur(p)->text, "proto2") == 0)
		p->f->proto2 = true;
	else if (strcmp(cur(p)->text, "proto3") != 0)
		syntax_error(p, cur(p),
		             "Unrecognized syntax identifier \"%s\".  This parser only recognizes "
		             "\"proto2\" and \"proto3\".",
		             cur(p)->text);
	next(p);
	if (!expect_semi(p))
		skip_statement(p);
}

static void parse_import(struct parser *p)
{
	struct gen_import *im;
	struct gen_loc kw = cur(p)->loc;
	next(p);
	im = gen_alloc(&p->ctx->pool, sizeof(*im));
	im->stmt_loc = kw;
	if (is_kw(cur(p), "public") || is_kw(cur(p), "weak")) {
		im->is_public = is_kw(cur(p), "public");
		im->is_weak = !im->is_public;
		next(p);
	}
	if (cur(p)->kind != TK_STRING) {
		expected(p, "Expected a string naming the file to import.");
		skip_statement(p);
		return;
	}
	im->name = cur(p)->text;
	im->loc = cur(p)->loc;
	if (strlen(im->name) != cur(p)->len || im->name[0] == 0) {
		syntax_error(p, cur(p), "invalid import file name");
		skip_statement(p);
		return;
	}
	next(p);
	gen_vec_push(&p->ctx->pool, &p->f->imports, im);
	if (!expect_semi(p))
		skip_statement(p);
}

static void parse_package(struct parser *p)
{
	struct gen_tok *kw = cur(p);
	char *name;
	struct gen_loc l;
	if (p->seen_package) /* as protoc, before the name */
		syntax_error(p, kw, "Multiple package definitions.");
	next(p);
	name = parse_dotted(p, false, "Expected identifier.", &l);
	if (!name) {
		skip_statement(p);
		return;
	}
	if (!p->seen_package) {
		p->f->package = name;
		p->f->package_loc = l;
		p->f->package_stmt_loc = kw->loc;
	}
	p->seen_package = true;
	if (!expect_semi(p))
		skip_statement(p);
}

bool gen_parse(struct gen_ctx *ctx, struct gen_file *f, const char *text, size_t len)
{
	struct parser p;
	struct opt_target file_tg = {OPT_FILE, NULL, NULL};
	int errors = ctx->errors;
	memset(&p, 0, sizeof(p));
	p.ctx = ctx;
	p.f = f;
	p.t = gen_lex(ctx, f->path, text, len, &p.n);
	/* proto2 decides how leniently the rest is read: look ahead for it */
	if (p.n > 3 && is_kw(&p.t[0], "syntax") && p.t[2].kind == TK_STRING &&
	    strcmp(p.t[2].text, "proto2") == 0)
		f->proto2 = true;
	/* without a syntax line protoc reads proto2: so does rdmx-gen, with a
	 * warning */
	if (!is_kw(&p.t[0], "syntax") && !is_kw(&p.t[0], "edition"))
		f->proto2 = true;
	if (!f->package)
		f->package = "";
	while (cur(&p)->kind != TK_EOF) {
		struct gen_tok *t = cur(&p);
		if (accept_sym(&p, ';'))
			continue;
		if (is_kw(t, "syntax"))
			parse_syntax(&p);
		else if (is_kw(t, "edition")) {
			syntax_error(&p, t,
			             "editions (\"edition = ...\") are not supported: write "
			             "syntax = \"proto3\"");
			skip_statement(&p);
		} else if (is_kw(t, "package"))
			parse_package(&p);
		else if (is_kw(t, "import"))
			parse_import(&p);
		else if (is_kw(t, "message"))
			parse_message(&p, NULL, &f->messages, 0);
		else if (is_kw(t, "enum"))
			parse_enum(&p, f, NULL, &f->enums);
		else if (is_kw(t, "service"))
			parse_service(&p);
		else if (common_statement(&p, &file_tg))
			;
		else {
			syntax_error(&p, t, "Expected top-level statement (e.g. \"message\").");
			skip_statement(&p);
			if (is_sym(cur(&p), '}')) {
				syntax_error(&p, cur(&p), "Unmatched \"}\".");
				next(&p);
			}
		}
		p.seen_statement = true;
	}
	p.i = p.n - 1;
	reach(&p);
	if (!p.seen_syntax && ctx->errors == errors) {
		struct gen_loc l = {f->path, 1, 1};
		gen_warning(ctx, &l, "no syntax specified; assuming syntax = \"%s\"%s",
		            f->proto2 ? "proto2" : "proto3", f->proto2 ? " (as protoc does)" : "");
	}
	return !p.failed && ctx->errors == errors;
}
