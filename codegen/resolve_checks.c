/* rdmx-gen: the semantic checks of proto3 (numbers, names, reserved, enums,
 * the generated struct's members) and the collisions of the global C
 * identifiers the emitters make. */
#include <ctype.h>
#include <string.h>

#include "resolve.h"

/* ---- checks ---- */

const struct gen_enum_value *gen_enum_value_named(const struct gen_enum *e, const char *name)
{
	int i;
	for (i = 0; i < e->values.n; i++) {
		const struct gen_enum_value *v = e->values.items[i];
		if (strcmp(v->name, name) == 0)
			return v;
	}
	return NULL;
}

const struct gen_range *gen_range_find(const struct gen_vec *ranges, int64_t n)
{
	int i;
	for (i = 0; i < ranges->n; i++) {
		const struct gen_range *r = ranges->items[i];
		if (n >= r->lo && n <= r->hi)
			return r;
	}
	return NULL;
}

static bool in_names(const struct gen_vec *names, const char *n)
{
	int i;
	for (i = 0; i < names->n; i++) {
		const struct gen_name *r = names->items[i];
		if (strcmp(r->name, n) == 0)
			return true;
	}
	return false;
}

/* protoc's exclusive end of `N to 2147483647` wraps around */
static bool ext_range_empty(const struct gen_range *r)
{
	return r->lo > r->hi || r->hi == INT32_MAX;
}

void gen_check_ext_range(struct gen_ctx *ctx, const struct gen_range *r)
{
	if (r->lo <= 0)
		gen_error(ctx, &r->loc, "Extension numbers must be positive integers.");
	if (ext_range_empty(r))
		gen_error(ctx, &r->loc,
		          "Extension range end number must be greater than start number.");
}

/* the upper bound of m's extension ranges, which protoc checks with the
 * options (ValidateMessageOptions: a message set's is higher) */
void gen_check_ext_ranges_max(struct gen_ctx *ctx, const struct gen_message *m)
{
	int64_t max = m->message_set ? INT32_MAX : GEN_FIELD_MAX;
	int i;
	for (i = 0; i < m->ext_ranges.n && !m->map_entry; i++) {
		const struct gen_range *r = m->ext_ranges.items[i];
		if (!ext_range_empty(r) && r->hi > max)
			gen_error(ctx, &r->loc, "Extension numbers cannot be greater than %lld.",
			          (long long)max);
	}
}

static bool in_range(const struct gen_range *r, int64_t n)
{
	return r->lo <= n && n <= r->hi;
}

static bool overlap(const struct gen_range *a, const struct gen_range *b)
{
	return a->lo <= b->hi && b->lo <= a->hi;
}

/* the ranges of ranges after i overlapping range i, at range i, as protoc
 * reports them (kind: "Reserved" or "Extension") */
static void check_overlaps_of(struct gen_ctx *ctx, const struct gen_vec *ranges, int i,
                              const char *kind)
{
	const struct gen_range *r = ranges->items[i];
	int j;
	for (j = i + 1; j < ranges->n; j++) {
		const struct gen_range *o = ranges->items[j];
		if (overlap(r, o))
			gen_error(ctx, &r->loc,
			          "%s range %lld to %lld overlaps with already-defined range %lld "
			          "to %lld.",
			          kind, (long long)o->lo, (long long)o->hi, (long long)r->lo,
			          (long long)r->hi);
	}
}

static void check_overlaps(struct gen_ctx *ctx, const struct gen_vec *ranges, const char *kind)
{
	int i;
	for (i = 0; i < ranges->n; i++)
		check_overlaps_of(ctx, ranges, i, kind);
}

/* a name reserved twice, at its message's or enum's name (loc) as protoc
 * reports it; what: "Field name" or "Enum value" */
static void check_names_twice(struct gen_ctx *ctx, const struct gen_vec *names,
                              const struct gen_loc *loc, const char *what)
{
	int i, j;
	for (i = 0; i < names->n; i++) {
		const struct gen_name *n = names->items[i];
		for (j = 0; j < i; j++) {
			const struct gen_name *o = names->items[j];
			if (strcmp(n->name, o->name) == 0) {
				gen_error(ctx, loc, "%s \"%s\" is reserved multiple times.", what,
				          n->name);
				break;
			}
		}
	}
}

void gen_check_enum_parsed(struct gen_ctx *ctx, const struct gen_enum *e)
{
	int i;
	/* (allow_alias against the values: the parser's, as protoc's) */
	if (e->values.n == 0)
		gen_error(ctx, &e->loc, "Enums must contain at least one value.");
	for (i = 0; i < e->values.n; i++) {
		const struct gen_enum_value *v = e->values.items[i];
		if (v->number < INT32_MIN || v->number > INT32_MAX)
			gen_error(ctx, &v->loc,
			          "enum value \"%s\" = %lld is out of the int32 range", v->name,
			          (long long)v->number);
	}
	/* (numbers outside int32 are syntax errors) */
	for (i = 0; i < e->reserved.n; i++) {
		const struct gen_range *r = e->reserved.items[i];
		if (r->lo > r->hi)
			gen_error(ctx, &r->loc,
			          "Reserved range end number must be greater than start number.");
	}
}

void gen_check_enum_reserved(struct gen_ctx *ctx, const struct gen_enum *e)
{
	int i, j;
	check_overlaps(ctx, &e->reserved, "Reserved");
	check_names_twice(ctx, &e->rnames, &e->loc, "Enum value");
	for (i = 0; i < e->values.n; i++) {
		const struct gen_enum_value *v = e->values.items[i];
		if (v->number < INT32_MIN || v->number > INT32_MAX)
			continue;
		for (j = 0; j < e->reserved.n; j++)
			if (in_range(e->reserved.items[j], v->number))
				gen_error(ctx, &v->loc,
				          "Enum value \"%s\" uses reserved number %lld.", v->name,
				          (long long)v->number);
		if (in_names(&e->rnames, v->name))
			gen_error(ctx, &v->loc, "Enum value \"%s\" is reserved.", v->name);
	}
}

void gen_check_enum_aliases(struct gen_ctx *ctx, const struct gen_enum *e)
{
	int i, j;
	for (i = 0; i < e->values.n && !e->allow_alias; i++) {
		const struct gen_enum_value *v = e->values.items[i];
		if (v->number < INT32_MIN || v->number > INT32_MAX)
			continue;
		for (j = 0; j < i; j++) {
			const struct gen_enum_value *o = e->values.items[j];
			if (o->number == v->number) {
				/* protoc's words, with the values' full names (in
				 * the enum's scope) */
				const char *scope = gen_scope_of(ctx, e->full_name);
				gen_error(ctx, &v->number_loc,
				          "\"%s\" uses the same enum value as \"%s\". If this is "
				          "intended, set 'option allow_alias = true;' to the enum "
				          "definition.",
				          gen_qualify(ctx, scope, v->name),
				          gen_qualify(ctx, scope, o->name));
				break;
			}
		}
	}
}

void gen_check_enum_zero(struct gen_ctx *ctx, const struct gen_enum *e)
{
	const struct gen_enum_value *v = e->values.n ? e->values.items[0] : NULL;
	if (v && v->number != 0 && !e->file->proto2 && v->number >= INT32_MIN &&
	    v->number <= INT32_MAX)
		gen_error(ctx, &v->number_loc, "The first enum value must be zero in proto3.");
}

/* protoc's PrefixRemover::MaybeRemove: str past prefix (lower case, no
 * underscores), compared without case and underscores, and the
 * underscores after it; str itself when the prefix is not all there or
 * nothing would be left */
static const char *strip_enum_prefix(const char *prefix, const char *str)
{
	const char *s = str;
	size_t j = 0, n = strlen(prefix);
	for (; *s && j < n; s++) {
		if (*s == '_')
			continue;
		if (tolower((unsigned char)*s) != prefix[j++])
			return str;
	}
	if (j < n)
		return str;
	while (*s == '_')
		s++;
	return *s ? s : str;
}

/* name without the enum's name as a prefix, in PascalCase as protoc's
 * EnumValueToPascalCase makes it (each letter after an underscore upper
 * case, the others lower case, underscores dropped) */
static char *enum_value_pascal(struct gen_ctx *ctx, const char *enum_name, const char *name)
{
	char *prefix = gen_alloc(&ctx->pool, strlen(enum_name) + 1), *o = prefix;
	const char *s;
	bool upper = true;
	for (s = enum_name; *s; s++)
		if (*s != '_')
			*o++ = (char)tolower((unsigned char)*s);
	*o = 0;
	s = strip_enum_prefix(prefix, name);
	o = gen_alloc(&ctx->pool, strlen(s) + 1);
	prefix = o;
	for (; *s; s++) {
		if (*s == '_') {
			upper = true;
			continue;
		}
		*o++ = (char)(upper ? toupper((unsigned char)*s) : tolower((unsigned char)*s));
		upper = false;
	}
	*o = 0;
	return prefix;
}

/* e's values are distinct without e's name as a prefix, case and
 * underscores (CheckEnumValueUniqueness): two of different numbers that
 * are not are an error in proto3, a warning in proto2, at the later one */
void gen_check_enum_value_names(struct gen_ctx *ctx, const struct gen_enum *e)
{
	struct table t = {0};
	int i;
	for (i = 0; i < e->values.n; i++) {
		const struct gen_enum_value *v = e->values.items[i], *o;
		char *key = enum_value_pascal(ctx, e->name, v->name);
		struct sym *s = gen_table_get(&t, key);
		if (!s) {
			s = gen_alloc(&ctx->pool, sizeof(*s));
			s->name = key;
			s->ptr = (void *)v;
			gen_table_put(&ctx->pool, &t, s);
			continue;
		}
		o = s->ptr;
		if (strcmp(o->name, v->name) == 0 || o->number == v->number)
			continue;
		(e->file->proto2 ? gen_warning : gen_error)(
		    ctx, &v->loc,
		    "Enum name %s has the same name as %s if you ignore case and strip out the "
		    "enum name prefix (if any). This is error-prone and can lead to undefined "
		    "behavior. Please avoid doing this. If you are using allow_alias, please "
		    "assign "
		    "the same numeric value to both enums.",
		    v->name, o->name);
	}
}

/* a proto3 message's fields use proto3 enums only (ValidateProto3Field) */
void gen_check_proto3_enum_field(struct gen_ctx *ctx, const struct gen_field *fd,
                                 const char *containing)
{
	if (fd->type == GT_ENUM && fd->en && fd->en->file->proto2)
		gen_error(ctx, &fd->type_loc,
		          "Enum type \"%s\" is not a proto3 enum, but is used in \"%s\" which is a "
		          "proto3 message type.",
		          fd->en->full_name, containing);
}

/* Member names of the generated struct: name, has_name, n_name, oneof_case. */
void gen_check_members(struct gen_ctx *ctx, struct gen_message *m)
{
	struct table t = {0};
	int i;
	for (i = 0; i < m->fields.n + m->oneofs.n; i++) {
		const char *names[2] = {NULL, NULL};
		const char *pname;
		const struct gen_loc *loc;
		int k;
		if (i < m->fields.n) {
			struct gen_field *fd = m->fields.items[i];
			names[0] = fd->cname;
			pname = fd->name;
			loc = &fd->loc;
			if (fd->label == GL_REPEATED)
				names[1] = gen_printf(&ctx->pool, "n_%s", fd->cname);
			else if (fd->label == GL_OPTIONAL && fd->type != GT_MESSAGE)
				names[1] = gen_printf(&ctx->pool, "has_%s", fd->cname);
		} else {
			struct gen_oneof *o = m->oneofs.items[i - m->fields.n];
			names[0] = gen_printf(&ctx->pool, "%s_case", o->cname);
			pname = o->name;
			loc = &o->loc;
		}
		for (k = 0; k < 2 && names[k]; k++) {
			struct sym *s, *old = gen_table_get(&t, names[k]);
			if (old) {
				/* the same proto name twice is reported as a duplicate */
				if (strcmp((const char *)old->ptr, pname) != 0)
					gen_error(
					    ctx, loc,
					    "generated C member \"%s\" of \"%s\" (for \"%s\") "
					    "collides with the one for \"%s\"",
					    names[k], m->full_name, pname, (const char *)old->ptr);
				continue;
			}
			s = gen_alloc(&ctx->pool, sizeof(*s));
			s->name = names[k];
			s->ptr = (void *)pname;
			gen_table_put(&ctx->pool, &t, s);
		}
	}
}

static void check_jstype(struct gen_ctx *ctx, const struct gen_field *fd)
{
	switch (fd->type) {
	case GT_INT64:
	case GT_UINT64:
	case GT_SINT64:
	case GT_FIXED64:
	case GT_SFIXED64:
		return;
	default:
		if (fd->jstype)
			gen_error(ctx, &fd->type_loc,
			          "jstype is only allowed on int64, uint64, sint64, fixed64 or "
			          "sfixed64 fields.");
	}
}

/* protoc's FieldDescriptor::is_packable: repeated, of a number, bool or enum
 * type */
static bool packable(const struct gen_field *fd)
{
	return fd->label == GL_REPEATED && fd->type != GT_STRING && fd->type != GT_BYTES &&
	       fd->type != GT_MESSAGE && fd->type != GT_NAMED;
}

/* a map's key type and an enum value's first value, as protoc checks
 * them with the field's options (ValidateMapEntry), at the map's type */
static void check_map_key(struct gen_ctx *ctx, const struct gen_field *fd)
{
	const struct gen_field *key, *value;
	const struct gen_enum_value *first;
	if (!fd->is_map || !fd->msg || fd->msg->fields.n < 2)
		return;
	key = fd->msg->fields.items[0];
	value = fd->msg->fields.items[1];
	if (key->type == GT_ENUM)
		gen_error(ctx, &fd->type_loc, "Key in map fields cannot be enum types.");
	else if (key->type == GT_FLOAT || key->type == GT_DOUBLE || key->type == GT_BYTES ||
	         key->type == GT_MESSAGE)
		gen_error(ctx, &fd->type_loc,
		          "Key in map fields cannot be float/double, bytes or message types.");
	first = value->type == GT_ENUM && value->en->values.n ? value->en->values.items[0] : NULL;
	if (first && first->number != 0)
		gen_error(ctx, &fd->type_loc,
		          "Enum value in map must define 0 as the first value.");
}

void gen_check_field_options(struct gen_ctx *ctx, const struct gen_field *fd,
                             const struct gen_message *container, bool ext)
{
	if (fd->lazy && (fd->type != GT_MESSAGE || fd->group))
		gen_error(ctx, &fd->type_loc,
		          "[lazy = true] can only be specified for submessage fields.");
	if (fd->packed && !packable(fd))
		gen_error(ctx, &fd->type_loc,
		          "[packed = true] can only be specified for repeated primitive fields.");
	if (container && container->message_set && !ext)
		gen_error(ctx, &fd->loc, "MessageSets cannot have fields, only extensions.");
	else if (container && container->message_set &&
	         (fd->label != GL_OPTIONAL || fd->type != GT_MESSAGE || fd->group))
		gen_error(ctx, &fd->type_loc,
		          "Extensions of MessageSets must be optional messages.");
	check_map_key(ctx, fd);
	check_jstype(ctx, fd);
	if (ext && fd->json_name && !gen_is_default_json_name(fd->name, fd->json_name))
		gen_error(ctx, &fd->json_name_loc,
		          "option json_name is not allowed on extension fields.");
}

/* protoc's checks of a field's number (BuildFieldOrExtension): an
 * extension's upper bound is its extendee's ranges, checked when linked */
void gen_check_field_number(struct gen_ctx *ctx, const struct gen_field *fd, bool ext)
{
	if (fd->number <= 0)
		gen_error(ctx, &fd->number_loc, "Field numbers must be positive integers.");
	else if (!ext && fd->number > GEN_FIELD_MAX)
		gen_error(ctx, &fd->number_loc, "Field numbers cannot be greater than %d.",
		          GEN_FIELD_MAX);
	else if (fd->number >= 19000 && fd->number <= 19999)
		gen_error(ctx, &fd->number_loc,
		          "Field numbers 19000 through 19999 are reserved for the protocol buffer "
		          "library implementation.");
}

/* protoc's ToLowercaseWithoutUnderscores */
static char *lower_without_underscores(struct gen_ctx *ctx, const char *name)
{
	char *s = gen_alloc(&ctx->pool, strlen(name) + 1), *o = s;
	for (; *name; name++)
		if (*name != '_')
			*o++ = (char)(*name >= 'A' && *name <= 'Z' ? *name - 'A' + 'a' : *name);
	*o = 0;
	return s;
}

void gen_check_proto3_message(struct gen_ctx *ctx, const struct gen_message *m)
{
	struct table t = {0};
	int i;
	if (m->message_set)
		gen_error(ctx, &m->loc, "MessageSet is not supported in proto3.");
	/* protoc 3.21 compares the names so, whatever json_name says */
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		char *key = lower_without_underscores(ctx, fd->name);
		struct sym *s = gen_table_get(&t, key);
		if (s) {
			gen_error(ctx, &fd->loc,
			          "The JSON camel-case name of field \"%s\" conflicts with field "
			          "\"%s\". This is not allowed in proto3.",
			          fd->name, ((const struct gen_field *)s->ptr)->name);
			continue;
		}
		s = gen_alloc(&ctx->pool, sizeof(*s));
		s->name = key;
		s->ptr = (void *)fd;
		gen_table_put(&ctx->pool, &t, s);
	}
}

/* fd's number in m's extension ranges: one error per range, at the
 * range, as protoc reports it */
static void check_in_ext_ranges(struct gen_ctx *ctx, const struct gen_message *m,
                                const struct gen_field *fd)
{
	int j;
	for (j = 0; j < m->ext_ranges.n; j++) {
		const struct gen_range *r = m->ext_ranges.items[j];
		if (in_range(r, fd->number))
			gen_error(ctx, &r->loc,
			          "Extension range %lld to %lld includes field \"%s\" (%lld).",
			          (long long)r->lo, (long long)r->hi, fd->name,
			          (long long)fd->number);
	}
}

void gen_check_message_numbers(struct gen_ctx *ctx, const struct gen_message *m)
{
	int i, j;
	if (m->map_entry)
		return;
	check_overlaps(ctx, &m->reserved, "Reserved");
	check_names_twice(ctx, &m->rnames, &m->loc, "Field name");
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		if (fd->number <= 0 || fd->number > GEN_FIELD_MAX)
			continue;
		check_in_ext_ranges(ctx, m, fd);
		/* once per range, as protoc; its place for this one is none (it
		 * finds no source location for a reserved range): the number's */
		for (j = 0; j < m->reserved.n; j++)
			if (in_range(m->reserved.items[j], fd->number))
				gen_error(ctx, &fd->number_loc,
				          "Field \"%s\" uses reserved number %lld.", fd->name,
				          (long long)fd->number);
		if (in_names(&m->rnames, fd->name))
			gen_error(ctx, &fd->loc, "Field name \"%s\" is reserved.", fd->name);
	}
	/* each extension range against the reserved ones, then the later
	 * extension ranges, as protoc checks them */
	for (i = 0; i < m->ext_ranges.n; i++) {
		const struct gen_range *r = m->ext_ranges.items[i];
		for (j = 0; j < m->reserved.n; j++) {
			const struct gen_range *o = m->reserved.items[j];
			if (overlap(r, o))
				gen_error(
				    ctx, &r->loc,
				    "Extension range %lld to %lld overlaps with reserved range "
				    "%lld to %lld.",
				    (long long)r->lo, (long long)r->hi, (long long)o->lo,
				    (long long)o->hi);
		}
		check_overlaps_of(ctx, &m->ext_ranges, i, "Extension");
	}
}

void gen_check_oneofs(struct gen_ctx *ctx, const struct gen_message *m)
{
	int i;
	for (i = 0; i < m->oneofs.n; i++) {
		const struct gen_oneof *o = m->oneofs.items[i];
		if (o->nfields == 0)
			gen_error(ctx, &o->loc, "oneof \"%s\" must have at least one field",
			          o->name);
	}
}

/* ---- global C identifiers ---- */

static void c_ident(struct gen_ctx *ctx, struct table *t, const char *name, const char *owner,
                    const struct gen_loc *loc, struct gen_file *f)
{
	struct sym *old = gen_table_get(t, name), *s;
	struct resolver *r = gen_resolver(ctx);
	if (old) {
		/* once per pair of owners: their other names collide alike */
		if (r->last_owner && strcmp(r->last_owner, owner) == 0 &&
		    strcmp(r->last_other, (const char *)old->ptr) == 0)
			return;
		r->last_owner = owner;
		r->last_other = old->ptr;
		gen_error(ctx, loc,
		          "generated C name \"%s\" of \"%s\" collides with the one of \"%s\"", name,
		          owner, (const char *)old->ptr);
		return;
	}
	s = gen_alloc(&ctx->pool, sizeof(*s));
	s->name = name;
	s->ptr = (void *)owner;
	s->file = f;
	s->loc = *loc;
	gen_table_put(&ctx->pool, t, s);
}

static void c_enum_idents(struct gen_ctx *ctx, struct table *t, struct gen_enum *e)
{
	int i;
	c_ident(ctx, t, e->cname, e->full_name, &e->loc, e->file);
	c_ident(ctx, t, gen_printf(&ctx->pool, "%s__FORCE_INT_MIN", e->cname), e->full_name,
	        &e->loc, e->file);
	c_ident(ctx, t, gen_printf(&ctx->pool, "%s__FORCE_INT_MAX", e->cname), e->full_name,
	        &e->loc, e->file);
	for (i = 0; i < e->values.n; i++) {
		struct gen_enum_value *v = e->values.items[i];
		c_ident(ctx, t, v->cname, gen_printf(&ctx->pool, "%s.%s", e->full_name, v->name),
		        &v->loc, e->file);
	}
}

static void c_message_idents(struct gen_ctx *ctx, struct table *t, struct gen_message *m)
{
	static const char *const suffixes[] = {"",        "_init",      "_encoded_size", "_encode",
	                                       "_decode", "_payload",   "__enc",         "__dec",
	                                       "__decp",  "__encode_cb"};
	int i;
	for (i = 0; i < (m->map_entry ? 1 : (int)(sizeof(suffixes) / sizeof(suffixes[0]))); i++)
		c_ident(ctx, t, gen_printf(&ctx->pool, "%s%s", m->cname, suffixes[i]), m->full_name,
		        &m->loc, m->file);
	for (i = 0; i < m->oneofs.n; i++) {
		struct gen_oneof *o = m->oneofs.items[i];
		int j;
		char *base = gen_printf(&ctx->pool, "%s_%s", m->cname, o->name);
		char *owner = gen_printf(&ctx->pool, "%s.%s", m->full_name, o->name);
		c_ident(ctx, t, gen_printf(&ctx->pool, "%s_case", base), owner, &o->loc, m->file);
		c_ident(ctx, t, gen_printf(&ctx->pool, "%s_NOT_SET", base), owner, &o->loc,
		        m->file);
		for (j = 0; j < m->fields.n; j++) {
			struct gen_field *fd = m->fields.items[j];
			if (fd->oneof == i)
				c_ident(ctx, t, gen_printf(&ctx->pool, "%s_%s", base, fd->name),
				        owner, &fd->loc, m->file);
		}
	}
	for (i = 0; i < m->messages.n; i++)
		c_message_idents(ctx, t, m->messages.items[i]);
	for (i = 0; i < m->enums.n; i++)
		c_enum_idents(ctx, t, m->enums.items[i]);
}

static void c_file_idents(struct gen_ctx *ctx, struct table *t, struct gen_file *f)
{
	int i, j;
	for (i = 0; i < f->messages.n; i++)
		c_message_idents(ctx, t, f->messages.items[i]);
	for (i = 0; i < f->enums.n; i++)
		c_enum_idents(ctx, t, f->enums.items[i]);
	for (i = 0; i < f->services.n; i++) {
		struct gen_service *s = f->services.items[i];
		c_ident(ctx, t, gen_printf(&ctx->pool, "%s_handlers", s->cname), s->full_name,
		        &s->loc, f);
		c_ident(ctx, t, gen_printf(&ctx->pool, "%s_register", s->cname), s->full_name,
		        &s->loc, f);
		c_ident(ctx, t, gen_printf(&ctx->pool, "%s_connect_service", s->cname),
		        s->full_name, &s->loc, f);
		for (j = 0; j < s->methods.n; j++) {
			struct gen_method *m = s->methods.items[j];
			char *base = m->cbase;
			char *up = gen_upper(ctx, base);
			char *owner = gen_printf(&ctx->pool, "%s/%s", s->full_name, m->name);
			c_ident(ctx, t, base, owner, &m->loc, f);
			c_ident(ctx, t, gen_printf(&ctx->pool, "%s_async", base), owner, &m->loc,
			        f);
			c_ident(ctx, t, gen_printf(&ctx->pool, "%s_cb", base), owner, &m->loc, f);
			c_ident(ctx, t, gen_printf(&ctx->pool, "%s_respond", base), owner, &m->loc,
			        f);
			c_ident(ctx, t, gen_printf(&ctx->pool, "%s_ID", up), owner, &m->loc, f);
			c_ident(ctx, t, gen_printf(&ctx->pool, "%s_NAME", up), owner, &m->loc, f);
			if (GEN_UNARY(m))
				c_ident(ctx, t, gen_printf(&ctx->pool, "%s_balanced", base), owner,
				        &m->loc, f);
			if (GEN_UNARY(m) && m->idempotent)
				c_ident(ctx, t, gen_printf(&ctx->pool, "%s_IDEMPOTENT", up), owner,
				        &m->loc, f);
			if (!GEN_UNARY(m)) {
				static const char *const sfx[] = {
				    "_cbs",        "_write_async", "_open",   "_write",
				    "_close_send", "_read",        "_finish", "_server_cbs",
				    "_accept",     "_send"};
				size_t k;
				for (k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++)
					c_ident(ctx, t,
					        gen_printf(&ctx->pool, "%s%s", base, sfx[k]), owner,
					        &m->loc, f);
				c_ident(ctx, t, gen_printf(&ctx->pool, "%s_KIND", up), owner,
				        &m->loc, f);
			}
		}
	}
}

/* C identifiers are checked per input together with what it includes. */
void gen_check_c_names(struct gen_ctx *ctx, struct gen_file *f)
{
	struct table t = {0};
	int i;
	c_file_idents(ctx, &t, f);
	for (i = 0; i < f->imports.n; i++) {
		struct gen_import *im = f->imports.items[i];
		if (im->file && im->file != f) {
			int before = ctx->errors;
			FILE *diag = ctx->diag;
			struct table ti = {0};
			size_t k;
			ctx->diag = NULL;
			c_file_idents(ctx, &ti, im->file);
			ctx->diag = diag;
			ctx->errors = before; /* reported when that file is checked */
			for (k = 0; k < ti.cap; k++) {
				struct sym *s = ti.slots[k];
				struct sym *o = s ? gen_table_get(&t, s->name) : NULL;
				if (o && o->file == f)
					gen_error(ctx, &o->loc,
					          "generated C name \"%s\" of \"%s\" collides with "
					          "the one "
					          "of \"%s\" in \"%s\"",
					          s->name, (const char *)o->ptr,
					          (const char *)s->ptr, im->file->path);
			}
		}
	}
}
