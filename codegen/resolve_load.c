/* rdmx-gen: loading files and imports (the proto paths, the built-in
 * well-known types, import cycles) and the files a run generates. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "resolve.h"

/* ---- loading ---- */

static char *read_file(struct gen_ctx *ctx, const char *path, size_t *len, int *err)
{
	FILE *fp = fopen(path, "rb");
	struct gen_buf b = {0};
	char *r = NULL;
	if (!fp) {
		*err = errno;
		return NULL;
	}
	if (gen_buf_read(&b, fp)) {
		r = gen_strndup(&ctx->pool, b.data, b.len);
		*len = b.len;
	} else {
		*err = EIO;
	}
	fclose(fp);
	gen_buf_free(&b);
	return r;
}

static char *dir_of(struct gen_ctx *ctx, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ".";
	if (slash == path)
		return "/";
	return gen_strndup(&ctx->pool, path, (size_t)(slash - path));
}

static char *base_of(struct gen_ctx *ctx, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *b = slash ? slash + 1 : path;
	const char *dot = strrchr(b, '.');
	return gen_strndup(&ctx->pool, b, dot && dot != b ? (size_t)(dot - b) : strlen(b));
}

static char *join(struct gen_ctx *ctx, const char *dir, const char *name)
{
	if (name[0] == '/')
		return gen_strdup(&ctx->pool, name);
	if (strcmp(dir, ".") == 0)
		return gen_strdup(&ctx->pool, name);
	return gen_printf(&ctx->pool, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
}

static bool is_regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static struct gen_file *find_loaded(struct gen_ctx *ctx, const char *real)
{
	int i;
	for (i = 0; i < ctx->files.n; i++) {
		struct gen_file *f = ctx->files.items[i];
		if (strcmp(f->real, real) == 0)
			return f;
	}
	return NULL;
}

/* where f imports to (protoc's place for an import cycle): its `import` */
static const struct gen_loc *import_loc(const struct gen_file *f, const struct gen_file *to,
                                        const struct gen_loc *dflt)
{
	int i;
	for (i = 0; i < f->imports.n; i++) {
		const struct gen_import *im = f->imports.items[i];
		if (strcmp(im->name, to->name) == 0)
			return &im->stmt_loc;
	}
	return dflt;
}

/* as protoc: at the import of the cycle's first file that starts it */
static void report_cycle(struct gen_ctx *ctx, struct gen_file *target, const struct gen_loc *loc)
{
	struct resolver *r = gen_resolver(ctx);
	struct gen_buf b = {0};
	struct gen_file *next;
	int i, start = 0;
	for (i = 0; i < r->stack.n; i++)
		if (r->stack.items[i] == target)
			start = i;
	for (i = start; i < r->stack.n; i++) {
		struct gen_file *f = r->stack.items[i];
		gen_buf_printf(&b, "%s -> ", f->path);
	}
	gen_buf_puts(&b, target->path);
	next = start + 1 < r->stack.n ? r->stack.items[start + 1] : target;
	gen_error(ctx, import_loc(target, next, loc), "File recursively imports itself: %s",
	          b.data);
	gen_buf_free(&b);
}

static struct gen_file *load(struct gen_ctx *ctx, const char *path, const char *name, bool input,
                             const struct gen_loc *from);

/* the proto paths: -I folders in order, or the current folder (as protoc) */
static int nroots(struct gen_ctx *ctx)
{
	return ctx->include_dirs.n ? ctx->include_dirs.n : 1;
}

static const char *root(struct gen_ctx *ctx, int i)
{
	return ctx->include_dirs.n ? ctx->include_dirs.items[i] : ".";
}

#define BUILTIN_PREFIX "<built-in>/"

static void load_imports(struct gen_ctx *ctx, struct gen_file *f)
{
	int i, j;
	for (i = 0; i < f->imports.n; i++) {
		struct gen_import *im = f->imports.items[i];
		char *found = NULL;
		size_t wlen;
		struct gen_file *same = NULL;
		for (j = 0; j < ctx->files.n && !same; j++) {
			struct gen_file *g = ctx->files.items[j];
			if (g->name && strcmp(g->name, im->name) == 0)
				same = g;
		}
		if (same) {
			/* already loaded under this name (an input of the run, say
			 * google/protobuf/timestamp.proto itself) */
			found = same->path;
			if (same->builtin)
				found = gen_printf(&ctx->pool, BUILTIN_PREFIX "%s", im->name);
		} else if (gen_wkt_text(im->name, &wlen)) {
			/* ours win over any copy on the proto path: the real
			 * descriptor.proto is proto2 */
			found = gen_printf(&ctx->pool, BUILTIN_PREFIX "%s", im->name);
		} else if (!ctx->mem_path) {
			char *c;
			for (j = 0; !found && j < nroots(ctx); j++) {
				c = join(ctx, root(ctx, j), im->name);
				if (is_regular(c))
					found = c;
			}
			c = join(ctx, f->dir, im->name);
			if (!found && !f->builtin && is_regular(c))
				found = c;
		}
		if (!found) {
			/* protoc's source tree says so, with no line */
			struct gen_loc nowhere = {im->name, 0, 0};
			gen_error(ctx, &nowhere, "File not found.");
			im->failed = f->failed = true;
			continue;
		}
		for (j = 0; j < i; j++) {
			struct gen_import *prev = f->imports.items[j];
			if (strcmp(prev->name, im->name) == 0) {
				im->twice = f->failed = true;
				break;
			}
		}
		im->file = load(ctx, found, im->name, false, &im->loc);
		/* unreadable, or a file still loading: the import cycle is
		 * reported; f is built without it, and says so as protoc
		 * does but for an import of itself */
		if (!im->file || im->file->state == 1) {
			im->failed = im->file != f;
			im->file = NULL;
			f->failed = true;
		}
	}
}

/* protoc's name of an input: relative to the first proto path it is under;
 * outside all of them, its file name (the output is then flat) */
static char *input_name(struct gen_ctx *ctx, const char *path, const char *real)
{
	int i;
	const char *slash;
	for (i = 0; i < nroots(ctx); i++) {
		const char *r = root(ctx, i);
		char rr[PATH_MAX];
		size_t n = strlen(r);
		while (n > 1 && r[n - 1] == '/')
			n--;
		if (strcmp(r, ".") == 0 && path[0] != '/') {
			const char *q = path;
			while (q[0] == '.' && q[1] == '/')
				q += 2;
			if (!strstr(q, "../"))
				return gen_strdup(&ctx->pool, q);
		}
		if (strncmp(path, r, n) == 0 && path[n] == '/' && !strstr(path + n, "/../"))
			return gen_strdup(&ctx->pool, path + n + 1);
		if (realpath(r, rr)) {
			size_t m = strlen(rr);
			if (strncmp(real, rr, m) == 0 && real[m] == '/')
				return gen_strdup(&ctx->pool, real + m + 1);
		}
	}
	slash = strrchr(path, '/');
	return gen_strdup(&ctx->pool, slash ? slash + 1 : path);
}

static struct gen_file *load(struct gen_ctx *ctx, const char *path, const char *name, bool input,
                             const struct gen_loc *from)
{
	struct resolver *r = gen_resolver(ctx);
	struct gen_file *f;
	char realbuf[PATH_MAX];
	const char *text;
	size_t len = 0;
	int err = 0;
	bool builtin = strncmp(path, BUILTIN_PREFIX, strlen(BUILTIN_PREFIX)) == 0;
	if (builtin || (ctx->mem_path && strcmp(path, ctx->mem_path) == 0)) {
		strncpy(realbuf, path, sizeof(realbuf) - 1);
		realbuf[sizeof(realbuf) - 1] = 0;
	} else if (!realpath(path, realbuf)) {
		gen_error(ctx, from, "cannot open \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	f = find_loaded(ctx, realbuf);
	if (!f && !name) {
		/* an input named like a file already loaded (a built-in type, say)
		 * is that file: one definition of its names */
		char *nm = input_name(ctx, path, realbuf);
		int i;
		for (i = 0; i < ctx->files.n && !f; i++) {
			struct gen_file *g = ctx->files.items[i];
			if (g->builtin && strcmp(g->name, nm) == 0)
				f = g;
		}
	}
	if (f) {
		if (f->state == 1)
			report_cycle(ctx, f, from);
		f->input |= input;
		return f;
	}
	f = gen_alloc(&ctx->pool, sizeof(*f));
	f->path = gen_strdup(&ctx->pool, builtin ? path + strlen(BUILTIN_PREFIX) : path);
	f->real = gen_strdup(&ctx->pool, realbuf);
	f->dir = dir_of(ctx, f->path);
	f->basename = base_of(ctx, f->path);
	f->name = name ? gen_strdup(&ctx->pool, name) : input_name(ctx, path, realbuf);
	f->builtin = builtin;
	f->input = input;
	f->state = 1;
	gen_vec_push(&ctx->pool, &ctx->files, f);
	if (builtin) {
		text = gen_wkt_text(f->path, &len);
	} else if (ctx->mem_path && strcmp(path, ctx->mem_path) == 0) {
		text = ctx->mem_text;
		len = ctx->mem_len;
	} else {
		text = read_file(ctx, path, &len, &err);
		if (!text) {
			gen_error(ctx, from, "cannot read \"%s\": %s", path, strerror(err));
			f->state = 2;
			return NULL;
		}
	}
	f->text = text;
	f->text_len = len;
	ctx->clock++; /* protoc parses f before it loads f's imports */
	f->parsed = gen_parse(ctx, f, text, len);
	f->failed = !f->parsed;
	if (f->parsed) {
		gen_vec_push(&ctx->pool, &r->stack, f);
		load_imports(ctx, f);
		r->stack.n--;
	}
	/* and builds it after them, before it goes on with the next import
	 * of the file importing it */
	f->build_key = ++ctx->clock;
	ctx->clock++;
	f->state = 2;
	return f;
}

struct gen_file *gen_load(struct gen_ctx *ctx, const char *path, bool input)
{
	size_t n;
	struct gen_file *f;
	/* `rdmx-gen google/protobuf/timestamp.proto` generates our own copy */
	if (!ctx->mem_path && !is_regular(path) && gen_wkt_text(path, &n))
		f = load(ctx, gen_printf(&ctx->pool, BUILTIN_PREFIX "%s", path), path, input, NULL);
	else
		f = load(ctx, path, NULL, input, NULL);
	return f && f->parsed ? f : NULL;
}

/* proto2 extensions of data messages (not of google.protobuf.*Options, which
 * define custom options) have no place in the generated structs */
static void warn_extensions(struct gen_ctx *ctx, const struct gen_file *f)
{
	int i;
	for (i = 0; i < f->exts.n; i++) {
		const struct gen_ext *x = f->exts.items[i];
		const char *e = x->extendee_full;
		size_t n = e ? strlen(e) : 0;
		if (!e || (strncmp(e, "google.protobuf.", 16) == 0 && n > 7 &&
		           strcmp(e + n - 7, "Options") == 0))
			continue;
		gen_warning(ctx, &x->loc,
		            "extension \"%s\" of \"%s\" is not generated: the C struct of "
		            "\"%s\" has no member for it (its decoder skips it as an unknown "
		            "field)",
		            x->full_name, e, e);
	}
}

static void mark_outputs(struct gen_ctx *ctx, struct gen_file *f, struct gen_vec *out)
{
	int i;
	for (i = 0; i < out->n; i++)
		if (out->items[i] == f)
			return;
	gen_vec_push(&ctx->pool, out, f);
	warn_extensions(ctx, f);
	for (i = 0; i < f->imports.n; i++) {
		struct gen_import *im = f->imports.items[i];
		if (!gen_import_needed(f, im) || !(im->file->builtin || im->file->proto2))
			continue;
		if (im->file->proto2 && !im->file->input)
			gen_warning(ctx, &im->loc,
			            "\"%s\" is proto2: generated too, for the types used here",
			            im->name);
		mark_outputs(ctx, im->file, out);
	}
}

void gen_outputs(struct gen_ctx *ctx, struct gen_vec *out)
{
	struct resolver *r = gen_resolver(ctx);
	int i, j;
	for (i = 0; i < ctx->files.n; i++) {
		struct gen_file *f = ctx->files.items[i];
		if (f->input)
			mark_outputs(ctx, f, out);
	}
	/* descriptor types of imports that are generated after all */
	for (i = 0; i < r->deferred.n; i++) {
		const struct deferred *d = r->deferred.items[i];
		for (j = 0; j < out->n; j++)
			if (out->items[j] == d->f)
				gen_descriptor_error(ctx, &d->fd->type_loc, d->fd->type_name);
	}
}

char *gen_out_stem(struct gen_ctx *ctx, const struct gen_file *f)
{
	size_t n = strlen(f->name);
	if (n > 6 && strcmp(f->name + n - 6, ".proto") == 0)
		n -= 6;
	return gen_strndup(&ctx->pool, f->name, n);
}
