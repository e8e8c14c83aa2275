/* rdmx-call describe (grpcurl-like) */
#include <stdio.h>
#include <string.h>

#include "describe.h"
#include "schema.h"

static const struct gen_service *find_service(const struct pbschema *schema, const char *name)
{
	for (int i = 0; i < schema->ctx.files.n; i++) {
		const struct gen_file *f = schema->ctx.files.items[i];

		for (int k = 0; k < f->services.n; k++) {
			const struct gen_service *sv = f->services.items[k];

			if (strcmp(sv->full_name, name) == 0)
				return sv;
		}
	}
	return NULL;
}

static void print_rpc(const char *indent, const struct gen_method *m)
{
	printf("%srpc %s ( %s.%s ) returns ( %s.%s );\n", indent, m->name,
	       m->client_streaming ? "stream " : "", m->in->full_name,
	       m->server_streaming ? "stream " : "", m->out->full_name);
}

static void print_service(const struct gen_service *sv)
{
	printf("%s is a service:\n", sv->full_name);
	printf("service %s {\n", sv->name);
	for (int i = 0; i < sv->methods.n; i++)
		print_rpc("  ", sv->methods.items[i]);
	printf("}\n");
}

/* name is "package.Service/Method" or "package.Service.Method" */
static void print_method(char *name, const struct gen_method *m)
{
	char *slash = strchr(name, '/');

	if (slash)
		*slash = '.';
	printf("%s is a method:\n", name);
	print_rpc("", m);
}

int cmd_describe(struct calltarget *t, const struct callopts *o)
{
	const struct gen_service *sv;
	const struct gen_method *m;
	struct pbschema schema;
	char name[512];
	int ret = 1;

	memset(&schema, 0, sizeof(schema));
	snprintf(name, sizeof(name), "%s", o->data);
	if (callschema_load(t, o, name, &schema))
		goto out;
	sv = find_service(&schema, name);
	m = sv ? NULL : pbschema_method(&schema, name);
	if (sv)
		print_service(sv);
	else if (m)
		print_method(name, m);
	else
		fprintf(stderr, "rdmx-call: Symbol not found: %s\n", o->data);
	ret = sv || m ? 0 : 1;
out:
	fflush(stdout);
	pbschema_fini(&schema);
	return ret;
}
