/* rdmx-gen: compiles .proto files (a proto3 subset) into C.
 *   rdmx-gen [--include DIR]... --out DIR [--depfile FILE] FILE.proto...
 * writes DIR/NAME.rdmx.h and DIR/NAME.rdmx.c for each input. Errors go to
 * stderr as FILE:LINE:COL: error: MESSAGE; exit status 1 when any. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

#define RDMX_GEN_VERSION "0.1.0"

static void usage(FILE *fp)
{
	fputs(
	    "usage: rdmx-gen [--include DIR]... --out DIR [--depfile FILE] FILE.proto...\n"
	    "  -I, --include DIR  where imports are searched (after the importing file's folder)\n"
	    "  -o, --out DIR      where NAME.rdmx.h and NAME.rdmx.c are written (created if "
	    "needed)\n"
	    "  --depfile FILE     also write a make-style dependency file (outputs: inputs + "
	    "imports)\n"
	    "  -h, --help         this text;  --version  the version\n",
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

static const char *opt_value(int argc, char **argv, int *i, const char *shortf, const char *longf)
{
	const char *a = argv[*i];
	size_t ln = strlen(longf);
	if (strcmp(a, shortf) == 0 || strcmp(a, longf) == 0) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "rdmx-gen: error: %s needs a value\n", a);
			exit(1);
		}
		return argv[++*i];
	}
	if (strncmp(a, longf, ln) == 0 && a[ln] == '=')
		return a + ln + 1;
	if (shortf[0] && strncmp(a, shortf, 2) == 0 && a[2])
		return a + 2;
	return NULL;
}

int main(int argc, char **argv)
{
	struct gen_ctx ctx;
	const char *out = NULL, *depfile = NULL, *v;
	struct gen_vec inputs = {0};
	int i, j, rc = 1;
	bool dashdash = false;

	gen_ctx_init(&ctx, stderr);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!dashdash && a[0] == '-' && a[1]) {
			if (strcmp(a, "--") == 0) {
				dashdash = true;
			} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
				usage(stdout);
				gen_ctx_fini(&ctx);
				return 0;
			} else if (strcmp(a, "--version") == 0) {
				printf("rdmx-gen %s\n", RDMX_GEN_VERSION);
				gen_ctx_fini(&ctx);
				return 0;
			} else if ((v = opt_value(argc, argv, &i, "-I", "--include")) != NULL) {
				gen_vec_push(&ctx.pool, &ctx.include_dirs, (void *)v);
			} else if ((v = opt_value(argc, argv, &i, "-o", "--out")) != NULL) {
				out = v;
			} else if ((v = opt_value(argc, argv, &i, "", "--depfile")) != NULL) {
				depfile = v;
			} else {
				fprintf(stderr, "rdmx-gen: error: unknown option \"%s\"\n", a);
				usage(stderr);
				goto done;
			}
			continue;
		}
		gen_vec_push(&ctx.pool, &inputs, (void *)a);
	}
	if (!out || !out[0]) {
		fputs("rdmx-gen: error: --out DIR is required\n", stderr);
		usage(stderr);
		goto done;
	}
	if (inputs.n == 0) {
		fputs("rdmx-gen: error: no input files\n", stderr);
		usage(stderr);
		goto done;
	}
	for (i = 0; i < ctx.include_dirs.n; i++) {
		struct stat st;
		const char *d = ctx.include_dirs.items[i];
		if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
			fprintf(stderr, "rdmx-gen: warning: include folder \"%s\" does not exist\n",
			        d);
	}
	for (i = 0; i < inputs.n; i++)
		gen_load(&ctx, inputs.items[i], true);
	if (ctx.errors)
		goto done;
	for (i = 0; i < ctx.files.n; i++) {
		struct gen_file *a = ctx.files.items[i];
		for (j = 0; j < i && a->input; j++) {
			struct gen_file *b = ctx.files.items[j];
			if (b->input && strcmp(a->basename, b->basename) == 0)
				gen_error(&ctx, NULL,
				          "inputs \"%s\" and \"%s\" would both write %s.rdmx.h",
				          b->path, a->path, a->basename);
		}
	}
	if (ctx.errors || !gen_resolve(&ctx))
		goto done;
	if (mkdirs(out) != 0) {
		fprintf(stderr, "rdmx-gen: error: cannot create \"%s\": %s\n", out,
		        strerror(errno));
		goto done;
	}
	for (i = 0; i < ctx.files.n; i++) {
		struct gen_file *f = ctx.files.items[i];
		struct gen_buf h = {0}, c = {0};
		char *ph, *pc;
		int w;
		if (!f->input)
			continue;
		gen_emit_h(&ctx, f, &h);
		gen_emit_c(&ctx, f, &c);
		ph = gen_printf(&ctx.pool, "%s/%s.rdmx.h", out, f->basename);
		pc = gen_printf(&ctx.pool, "%s/%s.rdmx.c", out, f->basename);
		w = write_file(ph, &h) | write_file(pc, &c);
		gen_buf_free(&h);
		gen_buf_free(&c);
		if (w)
			goto done;
	}
	if (depfile) {
		struct gen_buf d = {0};
		for (i = 0; i < ctx.files.n; i++) {
			struct gen_file *f = ctx.files.items[i];
			if (!f->input)
				continue;
			dep_path(&d, gen_printf(&ctx.pool, "%s/%s.rdmx.h", out, f->basename));
			dep_path(&d, gen_printf(&ctx.pool, "%s/%s.rdmx.c", out, f->basename));
		}
		gen_buf_puts(&d, ":");
		for (i = 0; i < ctx.files.n; i++)
			dep_path(&d, ((struct gen_file *)ctx.files.items[i])->path);
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
