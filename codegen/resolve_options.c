/* rdmx-gen: extensions (`extend X { ... }`) and the names of custom options
 * (`(a).b.(c)`), checked against the *Options messages they extend as protoc
 * does. */
#include <string.h>

#include "resolve.h"

/* the type of x's field, looked up from x's scope as a field type is; not
 * generated, so neither "used" (its file is not included) nor refused for
 * being a descriptor type rdmx-gen leaves out (then it stays unresolved) */
static void resolve_ext_type(struct gen_ctx *ctx, struct gen_ext *x, const char *scope)
{
	struct gen_field *fd = x->field;
	const char *undefined;
	struct sym *s;
	if (!fd || fd->type != GT_NAMED)
		return;
	s = gen_lookup(ctx, x->file, scope, fd->type_name, GEN_LOOKUP_TYPES, &undefined);
	if (!s && gen_descriptor_message(ctx, scope, fd->type_name))
		return;
	if (!s || !gen_visible(x->file, s->file))
		gen_not_defined(ctx, &fd->type_loc, fd->type_name, s, undefined, x->file);
	else if (s->kind != SYM_MESSAGE && s->kind != SYM_ENUM)
		gen_error(ctx, &fd->type_loc, "\"%s\" is not a type.", fd->type_name);
	else if (s->kind == SYM_MESSAGE) {
		fd->type = GT_MESSAGE;
		fd->msg = s->ptr;
	} else {
		fd->type = GT_ENUM;
		fd->en = s->ptr;
	}
}

/* x's number is in a range its extendee (a message, s) declares, as protoc
 * checks */
static void check_ext_number(struct gen_ctx *ctx, const struct gen_ext *x, const struct sym *s)
{
	const struct gen_message *m = s->ptr;
	if (!x->field || gen_range_find(&m->ext_ranges, x->field->number))
		return;
	gen_error(ctx, &x->field->number_loc,
	          "\"%s\" does not declare %lld as an extension number.", s->name,
	          (long long)x->field->number);
}

/* x extends one of protobuf's *Options, as a proto3 extension must */
static bool options_extendee(const struct gen_ext *x)
{
	const char *e = x->extendee_full;
	size_t n = e ? strlen(e) : 0;
	return e && strncmp(e, "google.protobuf.", 16) == 0 && n > 7 &&
	       strcmp(e + n - 7, "Options") == 0;
}

/* the extensions of f declared in m (NULL: at the file's level) of a
 * proto3 file: of options only, of no proto2 enum (ValidateProto3Field) */
void gen_check_proto3_exts(struct gen_ctx *ctx, const struct gen_file *f,
                           const struct gen_message *m)
{
	int i;
	for (i = 0; i < f->exts.n; i++) {
		const struct gen_ext *x = f->exts.items[i];
		if (x->parent != m)
			continue;
		if (x->extendee_full && !options_extendee(x))
			gen_error(ctx, &x->extendee_loc,
			          "Extensions in proto3 are only allowed for defining options.");
		if (x->field && x->extendee_full)
			gen_check_proto3_enum_field(ctx, x->field, x->extendee_full);
	}
}

void gen_build_ext(struct gen_ctx *ctx, struct gen_file *f, struct gen_ext *x)
{
	struct resolver *r = gen_resolver(ctx);
	const char *scope = x->parent ? x->parent->full_name : f->package;
	struct sym *s;
	x->full_name = gen_qualify(ctx, scope, x->name);
	if (x->field && x->field->required) /* as protoc: an old peer could never send it */
		gen_error(ctx, &x->field->type_loc, "The extension %s cannot be required.",
		          x->full_name);
	if (x->field)
		gen_check_field_number(ctx, x->field, true);
	if ((s = gen_table_get(&r->syms, x->full_name)) != NULL ||
	    (s = gen_table_get(&r->exts, x->full_name)) != NULL) {
		gen_report_defined(ctx, &x->loc, x->full_name, s, false, f);
		return;
	}
	s = gen_alloc(&ctx->pool, sizeof(*s));
	s->name = x->full_name;
	s->ptr = x;
	s->file = f;
	s->loc = x->loc;
	gen_table_put(&ctx->pool, &r->exts, s);
}

static void check_ext_number_free(struct gen_ctx *ctx, const struct gen_ext *x);

void gen_link_ext(struct gen_ctx *ctx, struct gen_file *f, struct gen_ext *x)
{
	const char *scope = x->parent ? x->parent->full_name : f->package;
	const char *undefined;
	struct sym *s = gen_lookup(ctx, f, scope, x->extendee, 0, &undefined);
	if (!s || !gen_visible(f, s->file)) {
		gen_not_defined(ctx, &x->extendee_loc, x->extendee, s, undefined, f);
		return;
	}
	if (s->kind != SYM_MESSAGE) {
		gen_error(ctx, &x->extendee_loc, "\"%s\" is not a message type.", x->extendee);
		return;
	}
	/* (a proto3 one of a data message: refused with the options, as
	 * protoc's ValidateProto3Field refuses it) */
	x->extendee_full = (char *)s->name;
	check_ext_number(ctx, x, s);
	resolve_ext_type(ctx, x, scope);
	check_ext_number_free(ctx, x);
}

/* x's number is not one an extension of its extendee declared before it
 * has (protoc's "has already been used": an error in one file, a warning
 * across files) */
static void check_ext_number_free(struct gen_ctx *ctx, const struct gen_ext *x)
{
	struct resolver *r = gen_resolver(ctx);
	const struct gen_ext *o;
	struct sym *s;
	char *key;
	if (!x->extendee_full || !x->field)
		return;
	key = gen_printf(&ctx->pool, "%s/%lld", x->extendee_full, (long long)x->field->number);
	s = gen_table_get(&r->ext_numbers, key);
	if (!s) {
		s = gen_alloc(&ctx->pool, sizeof(*s));
		s->name = key;
		s->ptr = (void *)x;
		s->file = x->file;
		s->loc = x->loc;
		gen_table_put(&ctx->pool, &r->ext_numbers, s);
		return;
	}
	o = s->ptr;
	if (o->file == x->file)
		gen_error(ctx, &x->field->number_loc,
		          "Extension number %lld has already been used in \"%s\" by extension "
		          "\"%s\".",
		          (long long)x->field->number, x->extendee_full, o->full_name);
	else
		gen_warning(ctx, &x->field->number_loc,
		            "Extension number %lld has already been used in \"%s\" by extension "
		            "\"%s\" defined in %s.",
		            (long long)x->field->number, x->extendee_full, o->full_name,
		            o->file->name);
}

/* the (name) of an option, looked up as protoc does (LookupSymbol, any kind
 * of symbol, extensions included): only what from can see; when a dotted
 * name's aggregate does not define the rest, NULL with *undefined set to the
 * full name it stood for */
static struct sym *lookup_option(struct gen_ctx *ctx, const struct gen_file *from,
                                 const char *scope, const char *name, const char **undefined)
{
	struct sym *s = gen_lookup(ctx, from, scope, name, GEN_LOOKUP_EXTS, undefined);
	return s && gen_sym_visible(from, s) ? s : NULL;
}

/* parts 0..n-1 of o's name as written: (a).b.(c) */
static char *option_name(struct gen_ctx *ctx, const struct gen_optref *o, int n)
{
	struct gen_buf b = {0};
	char *r;
	int i;
	for (i = 0; i < n; i++)
		gen_buf_printf(&b, o->parts[i].ext ? "%s(%s)" : "%s%s", i ? "." : "",
		               o->parts[i].name);
	r = gen_strdup(&ctx->pool, b.data);
	gen_buf_free(&b);
	return r;
}

#define OPTION_UNKNOWN                                                                             \
	"Option \"%s\" unknown. Ensure that your proto definition file imports the proto which "   \
	"defines the option."

/* a field's [default = ...] and [json_name = ...], which protoc's parser
 * takes: they are not FieldOptions */
static bool pseudo_option(const struct gen_optref *o)
{
	return strcmp(o->options, "google.protobuf.FieldOptions") == 0 &&
	       (strcmp(o->parts[0].name, "default") == 0 ||
	        strcmp(o->parts[0].name, "json_name") == 0);
}

/* as protoc (OptionInterpreter::InterpretSingleOption): each part of a
 * custom option's name is a field or an extension of the message of the part
 * before it, the first one of the *Options message of the place the option
 * is set (a FieldOptions extension on a field, not on a method); (x) is
 * defined in the file or an import; every part but the last is a message,
 * not repeated (nor a map). Stops at a part whose message is not known (a
 * type rdmx-gen's descriptor.proto leaves out). A plain name alone is one
 * of protobuf 3.21's options of that place (a field's default and
 * json_name aside), as protoc 3.21 has them. */
void gen_check_optref(struct gen_ctx *ctx, struct gen_file *f, struct gen_optref *o)
{
	struct resolver *r = gen_resolver(ctx);
	const char *scope = o->scope ? o->scope->full_name : f->package;
	const char *msg = o->options; /* full name of the message the part is in */
	int i;
	o->resolved = !o->check_name;
	if (!o->check_name && !pseudo_option(o) && !gen_check_builtin_value(ctx, o)) {
		o->resolved = false;
		gen_error(ctx, &o->parts[0].loc, OPTION_UNKNOWN, o->parts[0].name);
	}
	for (i = 0; i < o->nparts && o->check_name; i++) {
		struct gen_optpart *pt = &o->parts[i];
		const char *name = option_name(ctx, o, i + 1), *in, *undefined;
		const struct gen_field *fd;
		struct sym *s;
		if (!pt->ext && strcmp(pt->name, "uninterpreted_option") == 0 && i == 0) {
			gen_error(ctx, &pt->loc,
			          "Option must not use reserved name \"uninterpreted_option\".");
			return;
		}
		if (pt->ext) {
			s = lookup_option(ctx, f, scope, pt->name, &undefined);
			if (!s && undefined) {
				gen_error(
				    ctx, &pt->loc,
				    "Option \"%s\" is resolved to \"(%s)\", which is not defined. "
				    "The innermost scope is searched first in name resolution. "
				    "Consider using a leading '.'(i.e., \"(.%s)\") to start from "
				    "the outermost scope.",
				    name, undefined, pt->name);
				return;
			}
			if (s && s->kind == SYM_FIELD) {
				fd = s->ptr;
				in = gen_scope_of(ctx, s->name);
			} else if (s && gen_table_get(&r->exts, s->name) == s) {
				const struct gen_ext *x = s->ptr;
				if (!x->extendee_full || !x->field)
					return; /* reported where it is defined */
				fd = x->field;
				in = x->extendee_full;
			} else {
				gen_error(ctx, &pt->loc, OPTION_UNKNOWN, name);
				return;
			}
			if (strcmp(in, msg) != 0) {
				gen_error(
				    ctx, &pt->loc,
				    "Option field \"%s\" is not a field or extension of message "
				    "\"%s\": it %s \"%s\"",
				    name, gen_last_of(msg),
				    s->kind == SYM_FIELD ? "is a field of" : "extends", in);
				return;
			}
		} else {
			if (!gen_table_get(&r->syms, msg)) {
				/* i == 0 and the file does not import descriptor.proto:
				 * rdmx-gen's copy, where none of protobuf's own options
				 * is a message */
				if (gen_builtin_option_known(ctx, msg, pt->name))
					gen_error(ctx, &pt->loc,
					          "Option \"%s\" is an atomic type, not a message.",
					          name);
				else
					gen_error(ctx, &pt->loc, OPTION_UNKNOWN, name);
				return;
			}
			s = gen_table_get(&r->syms, gen_qualify(ctx, msg, pt->name));
			if (!s || s->kind != SYM_FIELD) {
				gen_error(ctx, &pt->loc, OPTION_UNKNOWN, name);
				return;
			}
			fd = s->ptr;
		}
		pt->field = fd;
		if (i == o->nparts - 1) {
			o->resolved = true;
			o->repeated = fd->label == GL_REPEATED;
			gen_check_custom_value(ctx, f, o, fd, s->name);
			return;
		}
		if (fd->type == GT_NAMED)
			return; /* not resolved: reported, or a descriptor type */
		if (fd->type != GT_MESSAGE) {
			gen_error(ctx, &pt->loc, "Option \"%s\" is an atomic type, not a message.",
			          name);
			return;
		}
		if (fd->label == GL_REPEATED) {
			gen_error(
			    ctx, &pt->loc,
			    "Option field \"%s\" is a repeated message. Repeated message options "
			    "must be initialized using an aggregate value.",
			    name);
			return;
		}
		msg = fd->msg->full_name;
	}
}

/* a and b, after the same parts, name the same field: the same extension,
 * or the same plain name */
static bool same_part(const struct gen_optpart *a, const struct gen_optpart *b)
{
	if (a->ext != b->ext)
		return false;
	return a->ext ? a->field == b->field : strcmp(a->name, b->name) == 0;
}

/* the first n parts of a and b name the same fields */
static bool same_parts(const struct gen_optref *a, const struct gen_optref *b, int n)
{
	int i;
	for (i = 0; i < n; i++)
		if (!same_part(&a->parts[i], &b->parts[i]))
			return false;
	return true;
}

/* the length of the first part of an aggregate value's key k: up to its
 * first '.' but inside an extension's name (`[x.y]`) */
static size_t key_part_len(const char *k)
{
	const char *end = k[0] == '[' ? strchr(k, ']') + 1 : strchr(k, '.');
	return end ? (size_t)(end - k) : strlen(k);
}

/* k, the first part (n bytes) of a key of an aggregate value of message
 * msg, names the field of pt: the same plain name, or an extension's name
 * that stands, looked up from msg as protoc looks it up, for pt's extension */
static bool key_part_is(struct gen_ctx *ctx, const struct gen_file *f, const char *msg,
                        const char *k, size_t n, const struct gen_optpart *pt)
{
	struct resolver *r = gen_resolver(ctx);
	struct sym *s;
	if (k[0] != '[')
		return !pt->ext && strlen(pt->name) == n && strncmp(k, pt->name, n) == 0;
	if (!pt->ext)
		return false;
	s = gen_lookup(ctx, f, msg, gen_strndup(&ctx->pool, k + 1, n - 2), GEN_LOOKUP_EXTS, NULL);
	return s && gen_table_get(&r->exts, s->name) == s &&
	       ((const struct gen_ext *)s->ptr)->field == pt->field;
}

/* o's parts after e's are a field e's aggregate value set, or a message it
 * set a field in: the start of one of e's keys */
static bool set_in_aggregate(struct gen_ctx *ctx, const struct gen_file *f,
                             const struct gen_optref *o, const struct gen_optref *e)
{
	int i, j;
	for (j = 0; j < e->keys.n; j++) {
		const char *k = e->keys.items[j];
		for (i = e->nparts; i < o->nparts && *k; i++) {
			size_t n = key_part_len(k);
			const char *msg = o->parts[i - 1].field->msg->full_name;
			if (!key_part_is(ctx, f, msg, k, n, &o->parts[i]))
				break;
			k += n + (k[n] == '.');
		}
		if (i == o->nparts)
			return true;
	}
	return false;
}

/* o sets again what e, set before it on the same place, did: the same
 * field (not a repeated one), a message e set a field of, or a field e's
 * aggregate value set (protoc's OptionInterpreter::ExamineIfOptionIsSet) */
static bool set_again(struct gen_ctx *ctx, const struct gen_file *f, const struct gen_optref *o,
                      const struct gen_optref *e)
{
	if (o->repeated)
		return false;
	if (o->nparts <= e->nparts)
		return same_parts(o, e, o->nparts);
	return e->value_kind == GV_AGGREGATE && same_parts(o, e, e->nparts) &&
	       set_in_aggregate(ctx, f, o, e);
}

bool gen_check_option_twice(struct gen_ctx *ctx, const struct gen_file *f,
                            const struct gen_optref *o)
{
	int j;
	for (j = 0; j < f->optrefs.n && o->resolved; j++) {
		const struct gen_optref *e = f->optrefs.items[j];
		if (e == o)
			break;
		if (e->owner == o->owner && e->resolved && set_again(ctx, f, o, e)) {
			gen_error(ctx, &o->parts[0].loc, "Option \"%s\" was already set.",
			          option_name(ctx, o, o->nparts));
			return false;
		}
	}
	return true;
}
