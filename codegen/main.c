/* rdmx-gen: compiles .proto files (proto3 and proto2) into C.
 *   rdmx-gen [-I DIR]... --out DIR [--depfile FILE] FILE.proto...
 * writes DIR/<proto path>.rdmx.h and .rdmx.c for each input. Errors go to
 * stderr as FILE:LINE:COL: error: MESSAGE; exit status 1 when any, 2 for
 * usage errors. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmx/version.h>

#include "gen.h"

static void usage(FILE *fp)
{
	fputs("usage: rdmx-gen [-I DIR]... --out DIR [--depfile FILE] FILE.proto...\n"
	      "  -I, --proto_path DIR  a folder imports and inputs are named from, searched in\n"
	      "                        order (default: the current folder); --include is the\n"
	      "                        same option\n"
	      "  -o, --out DIR         where DIR/<proto path>.rdmx.h and .rdmx.c are written\n"
	      "                        (a/b/c.proto -> DIR/a/b/c.rdmx.h; created if needed)\n"
	      "      --depfile FILE    also write a make-style dependency file\n"
	      "  -h, --help            this text\n"
	      "      --version         the version\n",
	      fp);
}

static int mkdirs(const char *dir)
{
	char buf[PATH_MAX];
	size_t i, n = strlen(dir);
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] == '/' || buf[i] == 0) {
			char c = buf[i];
			buf[i] = 0;
			if (mkdir(buf, 0777) != 0 && errno != EEXIST)
				return -1;
			buf[i] = c;
		}
	}
	return 0;
}

static int write_file(const char *path, const struct gen_buf *b)
{
	char tmp[PATH_MAX + 16];
	FILE *fp;
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
	fp = fopen(tmp, "wb");
	if (!fp)
		goto fail;
	if (b->len && fwrite(b->data, 1, b->len, fp) != b->len) {
		fclose(fp);
		unlink(tmp);
		goto fail;
	}
	if (fclose(fp) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "rdmx-gen: error: cannot write \"%s\": %s\n", path, strerror(errno));
	return -1;
}

static void dep_path(struct gen_buf *b, const char *path)
{
	char real[PATH_MAX];
	const char *p = realpath(path, real) ? real : path;
	gen_buf_puts(b, " ");
	for (; *p; p++) {
		if (*p == ' ' || *p == '#' || *p == '\\')
			gen_buf_puts(b, "\\");
		if (*p == '$') {
			gen_buf_puts(b, "$$");
			continue;
		}
		gen_buf_printf(b, "%c", *p);
	}
}

/* the inputs and, transitively, the built-in well-known types they need */
static int usage_error(const char *fmt, const char *arg)
{
	fputs("rdmx-gen: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n", stderr);
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"proto_path", required_argument, NULL, 'I'},
	    {"include", required_argument, NULL, 'I'},
	    {"out", required_argument, NULL, 'o'},
	    {"depfile", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct gen_ctx ctx;
	const char *out = NULL, *depfile = NULL;
	bool loaded = true;
	int load_errors;
	struct gen_vec inputs = {0}, outputs = {0};
	int i, j, c, rc = 1;

	gen_ctx_init(&ctx, stderr);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":I:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'I':
			gen_vec_push(&ctx.pool, &ctx.include_dirs, optarg);
			break;
		case 'o':
			out = optarg;
			break;
		case 'd':
			depfile = optarg;
			break;
		case 'h':
			usage(stdout);
			gen_ctx_fini(&ctx);
			return 0;
		case 'V':
			printf("rdmx-gen %s\n", RDMX_VERSION_STRING);
			gen_ctx_fini(&ctx);
			return 0;
		case ':':
			gen_ctx_fini(&ctx);
			return usage_error("option '%s' requires an argument", argv[optind - 1]);
		default:
			gen_ctx_fini(&ctx);
			if (optopt && optopt != '?') {
				char o[3] = {'-', (char)optopt, 0};
				return usage_error("unknown option '%s'", o);
			}
			{
				/* --bogus=value is named without its value */
				char *eq = strchr(argv[optind - 1], '=');
				if (eq && strncmp(argv[optind - 1], "--", 2) == 0)
					*eq = 0;
			}
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	for (i = optind; i < argc; i++)
		gen_vec_push(&ctx.pool, &inputs, argv[i]);
	if (!out || !out[0]) {
		gen_ctx_fini(&ctx);
		return usage_error("%s", "error: --out DIR is required");
	}
	if (inputs.n == 0) {
		gen_ctx_fini(&ctx);
		return usage_error("%s", "error: no input files");
	}
	for (i = 0; i < ctx.include_dirs.n; i++) {
		struct stat st;
		const char *d = ctx.include_dirs.items[i];
		if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
			fprintf(stderr, "rdmx-gen: warning: proto path \"%s\" does not exist\n", d);
	}
	/* an input that cannot be read or parsed stops the run; an import
	 * with errors is dropped and reported by gen_resolve, as protoc does */
	for (i = 0; i < inputs.n; i++)
		if (!gen_load(&ctx, inputs.items[i], true))
			loaded = false;
	load_errors = ctx.errors;
	for (i = 0; i < ctx.files.n; i++) {
		struct gen_file *a = ctx.files.items[i];
		for (j = 0; j < i && a->input; j++) {
			struct gen_file *b = ctx.files.items[j];
			if (b->input && strcmp(gen_out_stem(&ctx, a), gen_out_stem(&ctx, b)) == 0)
				gen_error(&ctx, NULL,
				          "inputs \"%s\" and \"%s\" would both write %s.rdmx.h",
				          b->path, a->path, gen_out_stem(&ctx, a));
		}
	}
	if (!loaded || ctx.errors > load_errors)
		goto done;
	if (!gen_resolve(&ctx))
		goto done;
	gen_outputs(&ctx, &outputs);
	if (ctx.errors)
		goto done;
	for (i = 0; i < outputs.n; i++) {
		struct gen_file *f = outputs.items[i];
		struct gen_buf h = {0}, cc = {0};
		char *stem = gen_printf(&ctx.pool, "%s/%s", out, gen_out_stem(&ctx, f));
		char *slash = strrchr(stem, '/');
		int w;
		*slash = 0;
		if (mkdirs(stem) != 0) {
			fprintf(stderr, "rdmx-gen: error: cannot create \"%s\": %s\n", stem,
			        strerror(errno));
			goto done;
		}
		*slash = '/';
		gen_emit_h(&ctx, f, &h);
		gen_emit_c(&ctx, f, &cc);
		w = write_file(gen_printf(&ctx.pool, "%s.rdmx.h", stem), &h) |
		    write_file(gen_printf(&ctx.pool, "%s.rdmx.c", stem), &cc);
		gen_buf_free(&h);
		gen_buf_free(&cc);
		if (w)
			goto done;
	}
	if (depfile) {
		struct gen_buf d = {0};
		for (i = 0; i < outputs.n; i++) {
			struct gen_file *f = outputs.items[i];
			dep_path(&d,
			         gen_printf(&ctx.pool, "%s/%s.rdmx.h", out, gen_out_stem(&ctx, f)));
			dep_path(&d,
			         gen_printf(&ctx.pool, "%s/%s.rdmx.c", out, gen_out_stem(&ctx, f)));
		}
		gen_buf_puts(&d, ":");
		for (i = 0; i < ctx.files.n; i++) {
			struct gen_file *f = ctx.files.items[i];
			if (!f->builtin)
				dep_path(&d, f->path);
		}
		gen_buf_puts(&d, "\n");
		j = write_file(depfile, &d);
		gen_buf_free(&d);
		if (j)
			goto done;
	}
	rc = 0;
done:
	gen_ctx_fini(&ctx);
	return rc;
}
