/* protoc-gen-rdmx: protoc's FileDescriptorProtos turned into rdmx-gen's own
 * model (codegen/gen.h) in the state the parser leaves it, so the resolver,
 * its checks and the emitters run unchanged. Locations come from the
 * request's SourceCodeInfo when protoc sends it. */
#include <string.h>

#include "google/protobuf/descriptor.pb-c.h"
#include "plugin.h"

typedef Google__Protobuf__FieldDescriptorProto FieldDP;
typedef Google__Protobuf__DescriptorProto MessageDP;
typedef Google__Protobuf__EnumDescriptorProto EnumDP;
typedef Google__Protobuf__FileDescriptorProto FileDP;

/* a path into the FileDescriptorProto (field numbers and indexes), as
 * SourceCodeInfo names declarations */
struct dpath {
	int32_t p[64];
	size_t n;
};

struct conv {
	struct gen_ctx *ctx;
	const FileDP *fd;
	struct gen_file *f;
	struct dpath path;
};

static void push(struct conv *c, int32_t a, int32_t b)
{
	if (c->path.n + 2 <= sizeof(c->path.p) / sizeof(c->path.p[0])) {
		c->path.p[c->path.n++] = a;
		c->path.p[c->path.n++] = b;
	} else {
		c->path.n += 2; /* deeper than we track: no location */
	}
}

static void pop(struct conv *c)
{
	c->path.n -= 2;
}

/* the location of the current path (+ one more field number when sub >= 0) */
static struct gen_loc loc_of(struct conv *c, int32_t sub)
{
	struct gen_loc l = {c->f->path, 1, 1};
	const Google__Protobuf__SourceCodeInfo *sci = c->fd->source_code_info;
	size_t want = c->path.n + (sub >= 0 ? 1 : 0), i;
	if (!sci || c->path.n > sizeof(c->path.p) / sizeof(c->path.p[0]))
		return l;
	for (i = 0; i < sci->n_location; i++) {
		const Google__Protobuf__SourceCodeInfo__Location *lo = sci->location[i];
		if (lo->n_path != want || lo->n_span < 3)
			continue;
		if (memcmp(lo->path, c->path.p, c->path.n * sizeof(int32_t)) != 0)
			continue;
		if (sub >= 0 && lo->path[c->path.n] != sub)
			continue;
		l.line = lo->span[0] + 1;
		l.col = lo->span[1] + 1;
		return l;
	}
	return l;
}

static enum gen_type scalar(Google__Protobuf__FieldDescriptorProto__Type t)
{
	switch (t) {
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_DOUBLE:
		return GT_DOUBLE;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_FLOAT:
		return GT_FLOAT;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_INT64:
		return GT_INT64;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_UINT64:
		return GT_UINT64;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_INT32:
		return GT_INT32;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_FIXED64:
		return GT_FIXED64;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_FIXED32:
		return GT_FIXED32;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_BOOL:
		return GT_BOOL;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_STRING:
		return GT_STRING;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_BYTES:
		return GT_BYTES;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_UINT32:
		return GT_UINT32;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_SFIXED32:
		return GT_SFIXED32;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_SFIXED64:
		return GT_SFIXED64;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_SINT32:
		return GT_SINT32;
	case GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_SINT64:
		return GT_SINT64;
	default:
		return GT_NAMED; /* message, group (a message field), enum */
	}
}

static const MessageDP *nested_by_name(const MessageDP *m, const char *type_name)
{
	const char *last = strrchr(type_name, '.');
	size_t i;
	last = last ? last + 1 : type_name;
	for (i = 0; i < m->n_nested_type; i++)
		if (strcmp(m->nested_type[i]->name, last) == 0)
			return m->nested_type[i];
	return NULL;
}

static bool is_map_entry(const MessageDP *m)
{
	return m && m->options && m->options->has_map_entry && m->options->map_entry;
}

static void conv_enum(struct conv *c, const EnumDP *ed, struct gen_message *parent,
                      struct gen_vec *into)
{
	struct gen_enum *e = gen_alloc(&c->ctx->pool, sizeof(*e));
	size_t i;
	e->name = gen_strdup(&c->ctx->pool, ed->name);
	e->loc = loc_of(c, 1);
	e->parent = parent;
	e->file = c->f;
	if (ed->options) {
		e->allow_alias = ed->options->has_allow_alias && ed->options->allow_alias;
		e->deprecated = ed->options->has_deprecated && ed->options->deprecated;
	}
	for (i = 0; i < ed->n_value; i++) {
		struct gen_enum_value *v = gen_alloc(&c->ctx->pool, sizeof(*v));
		const Google__Protobuf__EnumValueDescriptorProto *vd = ed->value[i];
		push(c, 2, (int32_t)i);
		v->name = gen_strdup(&c->ctx->pool, vd->name);
		v->number = vd->number;
		v->loc = loc_of(c, 1);
		v->deprecated =
		    vd->options && vd->options->has_deprecated && vd->options->deprecated;
		gen_vec_push(&c->ctx->pool, &e->values, v);
		pop(c);
	}
	for (i = 0; i < ed->n_reserved_range; i++) {
		struct gen_range *r = gen_alloc(&c->ctx->pool, sizeof(*r));
		r->lo = ed->reserved_range[i]->start;
		r->hi = ed->reserved_range[i]->end; /* inclusive for enums */
		r->loc = e->loc;
		gen_vec_push(&c->ctx->pool, &e->reserved, r);
	}
	for (i = 0; i < ed->n_reserved_name; i++) {
		struct gen_name *n = gen_alloc(&c->ctx->pool, sizeof(*n));
		n->name = gen_strdup(&c->ctx->pool, ed->reserved_name[i]);
		n->loc = e->loc;
		gen_vec_push(&c->ctx->pool, &e->rnames, n);
	}
	gen_vec_push(&c->ctx->pool, into, e);
}

static void conv_ext(struct conv *c, const FieldDP *xd, struct gen_message *parent)
{
	struct gen_ext *x = gen_alloc(&c->ctx->pool, sizeof(*x));
	x->name = gen_strdup(&c->ctx->pool, xd->name);
	x->extendee = gen_strdup(&c->ctx->pool, xd->extendee ? xd->extendee : "");
	x->parent = parent;
	x->file = c->f;
	x->loc = x->extendee_loc = loc_of(c, 1);
	gen_vec_push(&c->ctx->pool, &c->f->exts, x);
}

static int octal(int ch)
{
	return ch >= '0' && ch <= '7' ? ch - '0' : -1;
}

/* protoc's default_value as rdmx-gen's parser keeps it: numbers, bools and
 * enum value names as text; a string's bytes (protoc sends a bytes default
 * C-escaped, a string default as is) */
static struct gen_default *conv_default(struct conv *c, const FieldDP *fdp)
{
	struct gen_default *d = gen_alloc(&c->ctx->pool, sizeof(*d));
	const char *s = fdp->default_value;
	bool bytes = fdp->type == GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_BYTES;
	size_t i;
	d->loc = loc_of(c, 7);
	d->text = gen_strdup(&c->ctx->pool, s);
	d->len = strlen(s);
	for (i = 0; i < fdp->base.n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &fdp->base.unknown_fields[i];
		size_t k = 0;
		if (u->tag != RDMX_PLUGIN_DEFAULT_BYTES || bytes)
			continue;
		/* the whole string, which holds a NUL (wire.c), after the
		 * varint of its length (protobuf-c keeps both) */
		while (k < u->len && (u->data[k] & 0x80))
			k++;
		if (k < u->len) {
			k++;
			d->text = gen_strndup(&c->ctx->pool, (const char *)u->data + k, u->len - k);
			d->len = u->len - k;
		}
	}
	d->string =
	    bytes || fdp->type == GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_STRING;
	if (bytes) {
		size_t n = 0;
		while (*s) {
			int v = 0, k;
			if (*s != '\\' || !s[1]) {
				d->text[n++] = *s++;
				continue;
			}
			s++;
			switch (*s) {
			case 'n':
				v = '\n';
				break;
			case 'r':
				v = '\r';
				break;
			case 't':
				v = '\t';
				break;
			default:
				if (octal(*s) < 0) {
					v = (unsigned char)*s; /* \\ \' \" */
					break;
				}
				for (k = 0; k < 3 && octal(*s) >= 0; k++)
					v = v * 8 + octal(*s++);
				d->text[n++] = (char)v;
				continue;
			}
			d->text[n++] = (char)v;
			s++;
		}
		d->len = n;
	}
	return d;
}

static bool conv_message(struct conv *c, const MessageDP *md, struct gen_message *parent,
                         struct gen_vec *into, bool map_entry)
{
	struct gen_message *m = gen_alloc(&c->ctx->pool, sizeof(*m));
	size_t i;
	int real_oneofs = 0;
	m->name = gen_strdup(&c->ctx->pool, md->name);
	m->loc = loc_of(c, 1);
	m->parent = parent;
	m->file = c->f;
	m->map_entry = map_entry;
	m->deprecated = md->options && md->options->has_deprecated && md->options->deprecated;
	gen_vec_push(&c->ctx->pool, into, m);
	/* oneofs: the synthetic ones of proto3 `optional` fields are not oneofs
	 * in rdmx-gen's model */
	for (i = 0; i < md->n_oneof_decl; i++) {
		size_t k;
		bool synthetic = false;
		for (k = 0; k < md->n_field; k++)
			if (md->field[k]->has_oneof_index && md->field[k]->oneof_index == (int)i &&
			    md->field[k]->proto3_optional)
				synthetic = true;
		if (synthetic)
			break; /* protoc puts them after the real ones */
		real_oneofs++;
	}
	for (i = 0; i < (size_t)real_oneofs; i++) {
		struct gen_oneof *o = gen_alloc(&c->ctx->pool, sizeof(*o));
		push(c, 8, (int32_t)i);
		o->name = gen_strdup(&c->ctx->pool, md->oneof_decl[i]->name);
		o->loc = loc_of(c, 1);
		pop(c);
		gen_vec_push(&c->ctx->pool, &m->oneofs, o);
	}
	for (i = 0; i < md->n_field; i++) {
		const FieldDP *fdp = md->field[i];
		struct gen_field *fd = gen_alloc(&c->ctx->pool, sizeof(*fd));
		push(c, 2, (int32_t)i);
		if (fdp->type == GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_GROUP &&
		    !c->f->proto2) {
			struct gen_loc l = loc_of(c, -1);
			gen_error(c->ctx, &l,
			          "groups are not allowed in proto3: use a nested message and a "
			          "field of its type");
			return false;
		}
		fd->name = gen_strdup(&c->ctx->pool, fdp->name);
		fd->number = fdp->number;
		fd->loc = loc_of(c, 1);
		fd->type_loc = loc_of(c, fdp->type_name ? 6 : 5);
		fd->number_loc = loc_of(c, 3);
		fd->oneof = -1;
		if (fdp->has_oneof_index && fdp->oneof_index < real_oneofs) {
			fd->oneof = fdp->oneof_index;
			((struct gen_oneof *)m->oneofs.items[fd->oneof])->nfields++;
		}
		if (fdp->label == GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__LABEL__LABEL_REPEATED)
			fd->label = GL_REPEATED;
		else if (fdp->proto3_optional ||
		         (c->f->proto2 && !map_entry &&
		          fdp->label ==
		              GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__LABEL__LABEL_OPTIONAL &&
		          !(fdp->has_oneof_index)))
			fd->label = GL_OPTIONAL;
		fd->required =
		    fdp->label == GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__LABEL__LABEL_REQUIRED;
		fd->type = scalar(fdp->type);
		if (fd->type == GT_NAMED)
			fd->type_name = gen_strdup(&c->ctx->pool, fdp->type_name);
		if (fdp->json_name)
			fd->json_name = gen_strdup(&c->ctx->pool, fdp->json_name);
		if (fdp->default_value)
			fd->def = conv_default(c, fdp);
		fd->deprecated =
		    fdp->options && fdp->options->has_deprecated && fdp->options->deprecated;
		if (fdp->type == GOOGLE__PROTOBUF__FIELD_DESCRIPTOR_PROTO__TYPE__TYPE_MESSAGE &&
		    fd->label == GL_REPEATED && is_map_entry(nested_by_name(md, fdp->type_name)))
			fd->is_map = true;
		gen_vec_push(&c->ctx->pool, &m->fields, fd);
		pop(c);
	}
	/* a proto2 group's type is a nested message like the others, as in
	 * rdmx-gen's parser */
	for (i = 0; i < md->n_nested_type; i++) {
		push(c, 3, (int32_t)i);
		if (!conv_message(c, md->nested_type[i], m, &m->messages,
		                  is_map_entry(md->nested_type[i])))
			return false;
		pop(c);
	}
	for (i = 0; i < md->n_enum_type; i++) {
		push(c, 4, (int32_t)i);
		conv_enum(c, md->enum_type[i], m, &m->enums);
		pop(c);
	}
	for (i = 0; i < md->n_extension; i++) {
		push(c, 6, (int32_t)i);
		conv_ext(c, md->extension[i], m);
		pop(c);
	}
	for (i = 0; i < md->n_reserved_range; i++) {
		struct gen_range *r = gen_alloc(&c->ctx->pool, sizeof(*r));
		r->lo = md->reserved_range[i]->start;
		r->hi = (int64_t)md->reserved_range[i]->end - 1; /* exclusive for messages */
		r->loc = m->loc;
		gen_vec_push(&c->ctx->pool, &m->reserved, r);
	}
	for (i = 0; i < md->n_reserved_name; i++) {
		struct gen_name *n = gen_alloc(&c->ctx->pool, sizeof(*n));
		n->name = gen_strdup(&c->ctx->pool, md->reserved_name[i]);
		n->loc = m->loc;
		gen_vec_push(&c->ctx->pool, &m->rnames, n);
	}
	return true;
}

/* map fields point at their entry message, as the parser leaves them */
static void link_maps(struct gen_message *m)
{
	int i, j;
	for (i = 0; i < m->fields.n; i++) {
		struct gen_field *fd = m->fields.items[i];
		if (!fd->is_map)
			continue;
		for (j = 0; j < m->messages.n; j++) {
			struct gen_message *e = m->messages.items[j];
			const char *last = strrchr(fd->type_name, '.');
			if (e->map_entry && strcmp(e->name, last ? last + 1 : fd->type_name) == 0) {
				fd->msg = e;
				fd->type = GT_MESSAGE;
				fd->type_name = NULL;
				break;
			}
		}
	}
	for (i = 0; i < m->messages.n; i++)
		link_maps(m->messages.items[i]);
}

struct gen_file *rdmx_plugin_file(struct gen_ctx *ctx, const FileDP *fd, bool input)
{
	struct conv c;
	struct gen_file *f = gen_alloc(&ctx->pool, sizeof(*f));
	size_t i, k;
	const char *slash, *dot;
	memset(&c, 0, sizeof(c));
	c.ctx = ctx;
	c.fd = fd;
	c.f = f;
	f->name = gen_strdup(&ctx->pool, fd->name);
	f->path = f->name;
	f->real = gen_printf(&ctx->pool, "<protoc>/%s", fd->name);
	slash = strrchr(f->name, '/');
	f->dir = slash ? gen_strndup(&ctx->pool, f->name, (size_t)(slash - f->name)) : ".";
	f->basename = gen_strdup(&ctx->pool, slash ? slash + 1 : f->name);
	dot = strrchr(f->basename, '.');
	if (dot && dot != f->basename)
		f->basename[dot - f->basename] = 0;
	f->package = gen_strdup(&ctx->pool, fd->package ? fd->package : "");
	{
		size_t n;
		f->builtin = gen_wkt_text(f->name, &n) != NULL;
	}
	if (fd->options) {
		f->lite = fd->options->has_optimize_for &&
		          fd->options->optimize_for ==
		              GOOGLE__PROTOBUF__FILE_OPTIONS__OPTIMIZE_MODE__LITE_RUNTIME;
		f->generic_services =
		    (fd->options->has_cc_generic_services && fd->options->cc_generic_services) ||
		    (fd->options->has_java_generic_services && fd->options->java_generic_services);
	}
	f->input = input;
	f->state = 2;
	f->parsed = true;
	push(&c, 12, 0);
	c.path.n = 1; /* syntax is a single field: path [12] */
	f->syntax_loc = loc_of(&c, -1);
	c.path.n = 0;
	f->package_loc = loc_of(&c, 2);
	if (!fd->syntax || strcmp(fd->syntax, "proto2") == 0) {
		f->proto2 = true;
	} else if (strcmp(fd->syntax, "proto3") != 0) {
		gen_error(ctx, &f->syntax_loc,
		          "editions (\"edition = ...\") are not supported: "
		          "write syntax = \"proto3\"");
		return NULL;
	}
	for (i = 0; i < fd->n_dependency; i++) {
		struct gen_import *im = gen_alloc(&ctx->pool, sizeof(*im));
		im->name = gen_strdup(&ctx->pool, fd->dependency[i]);
		for (k = 0; k < fd->n_public_dependency; k++)
			if (fd->public_dependency[k] == (int32_t)i)
				im->is_public = true;
		for (k = 0; k < fd->n_weak_dependency; k++)
			if (fd->weak_dependency[k] == (int32_t)i)
				im->is_weak = true;
		push(&c, 3, (int32_t)i);
		c.path.n = 2;
		im->loc = im->stmt_loc = loc_of(&c, -1); /* the statement's span */
		c.path.n = 0;
		gen_vec_push(&ctx->pool, &f->imports, im);
	}
	for (i = 0; i < fd->n_message_type; i++) {
		push(&c, 4, (int32_t)i);
		if (!conv_message(&c, fd->message_type[i], NULL, &f->messages, false))
			return NULL;
		pop(&c);
	}
	for (i = 0; i < fd->n_enum_type; i++) {
		push(&c, 5, (int32_t)i);
		conv_enum(&c, fd->enum_type[i], NULL, &f->enums);
		pop(&c);
	}
	for (i = 0; i < fd->n_service; i++) {
		const Google__Protobuf__ServiceDescriptorProto *sd = fd->service[i];
		struct gen_service *s = gen_alloc(&ctx->pool, sizeof(*s));
		push(&c, 6, (int32_t)i);
		s->name = gen_strdup(&ctx->pool, sd->name);
		s->loc = loc_of(&c, 1);
		s->deprecated =
		    sd->options && sd->options->has_deprecated && sd->options->deprecated;
		for (k = 0; k < sd->n_method; k++) {
			const Google__Protobuf__MethodDescriptorProto *md = sd->method[k];
			struct gen_method *m = gen_alloc(&ctx->pool, sizeof(*m));
			push(&c, 2, (int32_t)k);
			m->name = gen_strdup(&ctx->pool, md->name);
			m->loc = loc_of(&c, 1);
			m->in_name = gen_strdup(&ctx->pool, md->input_type);
			m->out_name = gen_strdup(&ctx->pool, md->output_type);
			m->in_loc = loc_of(&c, 2);
			m->out_loc = loc_of(&c, 3);
			m->client_streaming = md->has_client_streaming && md->client_streaming;
			m->server_streaming = md->has_server_streaming && md->server_streaming;
			m->deprecated =
			    md->options && md->options->has_deprecated && md->options->deprecated;
			m->idempotent =
			    md->options && md->options->has_idempotency_level &&
			    md->options->idempotency_level !=
			        GOOGLE__PROTOBUF__METHOD_OPTIONS__IDEMPOTENCY_LEVEL__IDEMPOTENCY_UNKNOWN;
			gen_vec_push(&ctx->pool, &s->methods, m);
			pop(&c);
		}
		gen_vec_push(&ctx->pool, &f->services, s);
		pop(&c);
	}
	for (i = 0; i < fd->n_extension; i++) {
		push(&c, 7, (int32_t)i);
		conv_ext(&c, fd->extension[i], NULL);
		pop(&c);
	}
	for (i = 0; i < (size_t)f->messages.n; i++)
		link_maps(f->messages.items[i]);
	return f;
}
