/* protoc-gen-rdmx: rdmx-gen as a protoc plugin.
 *   protoc --rdmx_out=DIR -I... file.proto       (or buf generate)
 * protoc runs it with a CodeGeneratorRequest on stdin; it answers a
 * CodeGeneratorResponse on stdout holding <proto path>.rdmx.h and .rdmx.c
 * for every file to generate (and the built-in well-known types they use),
 * byte for byte what rdmx-gen writes for the same files. Errors go into the
 * response (protoc prints them and fails); warnings go to stderr. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/version.h>

#include "google/protobuf/compiler/plugin.pb-c.h"
#include "plugin.h"

/* CodeGeneratorResponse.Feature.FEATURE_PROTO3_OPTIONAL */
#define FEATURE_PROTO3_OPTIONAL 1u

static void usage(FILE *fp)
{
	fputs("usage: protoc --plugin=protoc-gen-rdmx --rdmx_out=DIR [-I DIR]... FILE.proto...\n"
	      "  protoc-gen-rdmx is run by protoc: it reads a CodeGeneratorRequest on stdin\n"
	      "  and writes a CodeGeneratorResponse on stdout (the files rdmx-gen would\n"
	      "  write for the same inputs).\n"
	      "  -h, --help     this text\n"
	      "      --version  the version\n",
	      fp);
}

static struct gen_file *find(struct gen_ctx *ctx, const char *name)
{
	int i;
	for (i = 0; i < ctx->files.n; i++) {
		struct gen_file *f = ctx->files.items[i];
		if (strcmp(f->name, name) == 0)
			return f;
	}
	return NULL;
}

static Google__Protobuf__Compiler__CodeGeneratorResponse__File *
out_file(struct gen_ctx *ctx, const char *name, struct gen_buf *content)
{
	Google__Protobuf__Compiler__CodeGeneratorResponse__File *rf =
	    gen_alloc(&ctx->pool, sizeof(*rf));
	google__protobuf__compiler__code_generator_response__file__init(rf);
	rf->name = (char *)name;
	rf->content = gen_strndup(&ctx->pool, content->data ? content->data : "", content->len);
	return rf;
}

/* Builds the model, resolves it and emits; diagnostics go to diag. */
static int generate(struct gen_ctx *ctx,
                    const Google__Protobuf__Compiler__CodeGeneratorRequest *req,
                    Google__Protobuf__Compiler__CodeGeneratorResponse *resp)
{
	struct gen_vec outputs = {0};
	size_t i, k;
	int j;
	for (i = 0; i < req->n_proto_file; i++) {
		const Google__Protobuf__FileDescriptorProto *fd = req->proto_file[i];
		bool input = false;
		struct gen_file *f;
		for (k = 0; k < req->n_file_to_generate; k++)
			if (strcmp(req->file_to_generate[k], fd->name) == 0)
				input = true;
		f = rdmx_plugin_file(ctx, fd, input);
		if (!f)
			return -1;
		gen_vec_push(&ctx->pool, &ctx->files, f);
		/* protoc sends every file after what it imports */
		for (j = 0; j < f->imports.n; j++) {
			struct gen_import *im = f->imports.items[j];
			im->file = find(ctx, im->name);
			if (!im->file) {
				gen_error(ctx, &im->loc,
				          "Import \"%s\" was not found or had errors", im->name);
				return -1;
			}
		}
	}
	if (!gen_resolve(ctx))
		return -1;
	gen_outputs(ctx, &outputs);
	if (ctx->errors)
		return -1;
	resp->file = gen_alloc(&ctx->pool, sizeof(*resp->file) * (size_t)(2 * outputs.n + 1));
	for (j = 0; j < outputs.n; j++) {
		struct gen_file *f = outputs.items[j];
		struct gen_buf h = {0}, c = {0};
		char *stem = gen_out_stem(ctx, f);
		gen_emit_h(ctx, f, &h);
		gen_emit_c(ctx, f, &c);
		resp->file[resp->n_file++] =
		    out_file(ctx, gen_printf(&ctx->pool, "%s.rdmx.h", stem), &h);
		resp->file[resp->n_file++] =
		    out_file(ctx, gen_printf(&ctx->pool, "%s.rdmx.c", stem), &c);
		gen_buf_free(&h);
		gen_buf_free(&c);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	Google__Protobuf__Compiler__CodeGeneratorRequest *req;
	Google__Protobuf__Compiler__CodeGeneratorResponse resp;
	struct gen_ctx ctx;
	struct gen_buf in = {0};
	unsigned char *outb;
	char *diag_text = NULL;
	size_t diag_len = 0, olen;
	FILE *diag;
	int c, rc = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("protoc-gen-rdmx %s\n", RDMX_VERSION_STRING);
			return 0;
		default:
			if (optopt && optopt != '?')
				fprintf(stderr, "protoc-gen-rdmx: unknown option '-%c'\n", optopt);
			else
				fprintf(stderr, "protoc-gen-rdmx: unknown option '%.*s'\n",
				        (int)strcspn(argv[optind - 1], "="), argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr,
		        "protoc-gen-rdmx: unexpected argument '%s' (protoc runs this "
		        "program; see --help)\n",
		        argv[optind]);
		return 2;
	}
	if (!gen_buf_read(&in, stdin)) {
		fprintf(stderr, "protoc-gen-rdmx: cannot read the request: %s\n", strerror(errno));
		gen_buf_free(&in);
		return 1;
	}
	req = rdmx_plugin_unpack((const uint8_t *)in.data, in.len);
	gen_buf_free(&in);
	if (!req) {
		fputs("protoc-gen-rdmx: stdin is not a CodeGeneratorRequest (run it from protoc)\n",
		      stderr);
		return 1;
	}
	diag = open_memstream(&diag_text, &diag_len);
	if (!diag) {
		google__protobuf__compiler__code_generator_request__free_unpacked(req, NULL);
		return 1;
	}
	gen_ctx_init(&ctx, diag);
	google__protobuf__compiler__code_generator_response__init(&resp);
	resp.has_supported_features = 1;
	resp.supported_features = FEATURE_PROTO3_OPTIONAL;
	if (generate(&ctx, req, &resp) != 0 || ctx.errors) {
		resp.n_file = 0;
		rc = -1;
	}
	gen_flush(&ctx);
	fflush(diag);
	if (rc) {
		/* protoc prints the error text itself */
		resp.error =
		    diag_text && diag_len ? diag_text : "protoc-gen-rdmx: generation failed";
	} else if (diag_len) {
		fwrite(diag_text, 1, diag_len, stderr); /* warnings */
	}
	olen = google__protobuf__compiler__code_generator_response__get_packed_size(&resp);
	outb = malloc(olen ? olen : 1);
	rc = 1;
	if (outb) {
		google__protobuf__compiler__code_generator_response__pack(&resp, outb);
		rc = fwrite(outb, 1, olen, stdout) == olen && fflush(stdout) == 0 ? 0 : 1;
		free(outb);
	}
	gen_ctx_fini(&ctx);
	fclose(diag);
	free(diag_text);
	google__protobuf__compiler__code_generator_request__free_unpacked(req, NULL);
	return rc;
}
