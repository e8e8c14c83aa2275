/* rdmx-gen: a resolved file printed back as .proto text in one canonical
 * form (no comments, options only where they change the schema, types fully
 * qualified). The generated code embeds this text for the reflection
 * service, so rdmx-gen and protoc-gen-rdmx, whose front ends differ, embed
 * the same bytes. */
#include <stdbool.h>
#include <string.h>

#include "gen.h"

static void indent(struct gen_buf *o, int depth)
{
	int i;
	for (i = 0; i < depth; i++)
		gen_buf_puts(o, "  ");
}

static void type_ref(struct gen_buf *o, const struct gen_field *fd)
{
	if (fd->type == GT_MESSAGE)
		gen_buf_printf(o, ".%s", fd->msg->full_name);
	else if (fd->type == GT_ENUM)
		gen_buf_printf(o, ".%s", fd->en->full_name);
	else
		gen_buf_puts(o, gen_type_name(fd->type));
}

static void print_string(struct gen_buf *o, const char *s)
{
	gen_buf_quote(o, s, strlen(s), "\"\\");
}

static void print_field(struct gen_buf *o, const struct gen_field *fd, bool proto2, int depth)
{
	indent(o, depth);
	if (fd->is_map) {
		const struct gen_field *k = fd->msg->fields.items[0], *v = fd->msg->fields.items[1];
		gen_buf_printf(o, "map<%s, ", gen_type_name(k->type));
		type_ref(o, v);
		gen_buf_puts(o, ">");
	} else {
		if (fd->label == GL_OPTIONAL)
			gen_buf_puts(o, "optional ");
		else if (fd->label == GL_REPEATED)
			gen_buf_puts(o, "repeated ");
		else if (proto2 && fd->oneof < 0)
			gen_buf_puts(o, "required "); /* proto2 has no unlabeled fields */
		type_ref(o, fd);
	}
	gen_buf_printf(o, " %s = %lld", fd->name, (long long)fd->number);
	bool json = fd->json_name && !gen_is_default_json_name(fd->name, fd->json_name);
	if (json || fd->deprecated) {
		gen_buf_puts(o, " [");
		if (json) {
			gen_buf_puts(o, "json_name = ");
			print_string(o, fd->json_name);
		}
		if (fd->deprecated)
			gen_buf_printf(o, "%sdeprecated = true", json ? ", " : "");
		gen_buf_puts(o, "]");
	}
	gen_buf_puts(o, ";\n");
}

static void print_enum(struct gen_buf *o, const struct gen_enum *e, int depth)
{
	int i;
	indent(o, depth);
	gen_buf_printf(o, "enum %s {\n", e->name);
	if (e->allow_alias) {
		indent(o, depth + 1);
		gen_buf_puts(o, "option allow_alias = true;\n");
	}
	for (i = 0; i < e->values.n; i++) {
		const struct gen_enum_value *v = e->values.items[i];
		indent(o, depth + 1);
		gen_buf_printf(o, "%s = %lld;\n", v->name, (long long)v->number);
	}
	indent(o, depth);
	gen_buf_puts(o, "}\n");
}

static void print_message(struct gen_buf *o, const struct gen_message *m, int depth)
{
	int i, j;
	indent(o, depth);
	gen_buf_printf(o, "message %s {\n", m->name);
	for (i = 0; i < m->fields.n; i++) {
		const struct gen_field *fd = m->fields.items[i];
		const struct gen_oneof *of;
		if (fd->oneof < 0) {
			print_field(o, fd, m->file->proto2, depth + 1);
			continue;
		}
		for (j = 0; j < i; j++)
			if (((const struct gen_field *)m->fields.items[j])->oneof == fd->oneof)
				break;
		if (j < i)
			continue;
		of = m->oneofs.items[fd->oneof];
		indent(o, depth + 1);
		gen_buf_printf(o, "oneof %s {\n", of->name);
		for (j = i; j < m->fields.n; j++) {
			const struct gen_field *mem = m->fields.items[j];
			if (mem->oneof == fd->oneof)
				print_field(o, mem, m->file->proto2, depth + 2);
		}
		indent(o, depth + 1);
		gen_buf_puts(o, "}\n");
	}
	for (i = 0; i < m->messages.n; i++) {
		const struct gen_message *sub = m->messages.items[i];
		if (!sub->map_entry)
			print_message(o, sub, depth + 1);
	}
	for (i = 0; i < m->enums.n; i++)
		print_enum(o, m->enums.items[i], depth + 1);
	indent(o, depth);
	gen_buf_puts(o, "}\n");
}

void gen_print_proto(struct gen_ctx *ctx, const struct gen_file *f, struct gen_buf *o)
{
	int i, j;
	(void)ctx;
	gen_buf_printf(o, "syntax = \"%s\";\n", f->proto2 ? "proto2" : "proto3");
	if (f->package[0])
		gen_buf_printf(o, "package %s;\n", f->package);
	for (i = 0; i < f->imports.n; i++) {
		const struct gen_import *im = f->imports.items[i];
		if (gen_import_needed(f, im))
			gen_buf_printf(o, "import %s\"%s\";\n", im->is_public ? "public " : "",
			               im->name);
	}
	for (i = 0; i < f->enums.n; i++)
		print_enum(o, f->enums.items[i], 0);
	for (i = 0; i < f->messages.n; i++)
		print_message(o, f->messages.items[i], 0);
	for (i = 0; i < f->services.n; i++) {
		const struct gen_service *s = f->services.items[i];
		gen_buf_printf(o, "service %s {\n", s->name);
		for (j = 0; j < s->methods.n; j++) {
			const struct gen_method *m = s->methods.items[j];
			gen_buf_printf(o, "  rpc %s(%s.%s) returns (%s.%s);\n", m->name,
			               m->client_streaming ? "stream " : "", m->in->full_name,
			               m->server_streaming ? "stream " : "", m->out->full_name);
		}
		gen_buf_puts(o, "}\n");
	}
}
