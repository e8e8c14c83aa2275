/* rdmx-gen: memory pool, growable arrays and text, diagnostics. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

struct gen_pool_block {
	struct gen_pool_block *next;
	size_t size, used; /* bytes after the header */
};

#define POOL_BLOCK (64u * 1024u)

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fputs("rdmx-gen: error: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

/* Bump allocation from 64 KiB blocks; bigger requests get their own block. */
void *gen_alloc(struct gen_pool *pool, size_t size)
{
	struct gen_pool_block *b = pool->blocks;
	void *p;
	size = (size + 15) & ~(size_t)15;
	if (!b || b->size - b->used < size) {
		size_t bsize = size > POOL_BLOCK / 4 ? size : POOL_BLOCK;
		struct gen_pool_block *nb = xmalloc(sizeof(*nb) + 16 + bsize);
		nb->size = bsize;
		nb->used = 0;
		if (b && bsize != POOL_BLOCK) {
			/* keep filling the current block: the big one goes behind it */
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			pool->blocks = nb;
		}
		b = nb;
	}
	p = (char *)b + ((sizeof(*b) + 15) & ~(size_t)15) + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

char *gen_strndup(struct gen_pool *pool, const char *s, size_t n)
{
	char *p = gen_alloc(pool, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *gen_strdup(struct gen_pool *pool, const char *s)
{
	return gen_strndup(pool, s, strlen(s));
}

char *gen_printf(struct gen_pool *pool, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = gen_alloc(pool, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void gen_pool_free(struct gen_pool *pool)
{
	struct gen_pool_block *b, *next;
	for (b = pool->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	pool->blocks = NULL;
}

void gen_vec_push(struct gen_pool *pool, struct gen_vec *v, void *item)
{
	if (v->n == v->cap) {
		int cap = v->cap ? v->cap * 2 : 8;
		void **items = gen_alloc(pool, sizeof(void *) * (size_t)cap);
		if (v->n)
			memcpy(items, v->items, sizeof(void *) * (size_t)v->n);
		v->items = items;
		v->cap = cap;
	}
	v->items[v->n++] = item;
}

static void buf_reserve(struct gen_buf *b, size_t more)
{
	size_t cap;
	char *p;
	if (b->len + more + 1 <= b->cap)
		return;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		fputs("rdmx-gen: error: out of memory\n", stderr);
		exit(1);
	}
	b->data = p;
	b->cap = cap;
}

void gen_buf_puts(struct gen_buf *b, const char *s)
{
	size_t n = strlen(s);
	buf_reserve(b, n);
	memcpy(b->data + b->len, s, n + 1);
	b->len += n;
}

void gen_buf_printf(struct gen_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

bool gen_buf_read(struct gen_buf *b, FILE *fp)
{
	size_t n;
	do {
		buf_reserve(b, 8192);
		n = fread(b->data + b->len, 1, b->cap - b->len - 1, fp);
		b->len += n;
		b->data[b->len] = 0;
	} while (n > 0);
	return !ferror(fp);
}

void gen_buf_quote(struct gen_buf *b, const char *s, size_t len, const char *escaped)
{
	size_t i;
	gen_buf_puts(b, "\"");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f)
			gen_buf_printf(b, "\\%03o", c);
		else if (strchr(escaped, c))
			gen_buf_printf(b, "\\%c", c);
		else
			gen_buf_printf(b, "%c", c);
	}
	gen_buf_puts(b, "\"");
}

void gen_buf_free(struct gen_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void gen_ctx_init(struct gen_ctx *ctx, FILE *diag)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->diag = diag;
	ctx->max_errors = 100;
}

struct diag {
	struct gen_loc loc;
	unsigned key; /* ctx->clock when reported */
	int seq;
	char *text;
};

static int diag_cmp(const void *a, const void *b)
{
	const struct diag *x = *(const struct diag *const *)a, *y = *(const struct diag *const *)b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void gen_flush(struct gen_ctx *ctx)
{
	int i;
	if (ctx->diag && ctx->diags.n) {
		qsort(ctx->diags.items, (size_t)ctx->diags.n, sizeof(void *), diag_cmp);
		for (i = 0; i < ctx->diags.n; i++) {
			const struct diag *d = ctx->diags.items[i];
			fputs(d->text, ctx->diag);
		}
		fflush(ctx->diag);
	}
	ctx->diags.n = 0;
}

void gen_ctx_fini(struct gen_ctx *ctx)
{
	gen_flush(ctx);
	gen_pool_free(&ctx->pool);
}

static void diag(struct gen_ctx *ctx, const struct gen_loc *loc, const char *kind, const char *fmt,
                 va_list ap)
{
	struct gen_buf b = {0};
	struct diag *d;
	char msg[1024];
	if (!ctx->diag)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!loc || !loc->file) {
		/* not tied to a file: now */
		fprintf(ctx->diag, "rdmx-gen: %s: %s\n", kind, msg);
		return;
	}
	if (loc->line)
		gen_buf_printf(&b, "%s:%d:%d: %s: %s\n", loc->file, loc->line, loc->col, kind, msg);
	else /* a file as a whole (protoc's "x.proto: File not found.") */
		gen_buf_printf(&b, "%s: %s: %s\n", loc->file, kind, msg);
	d = gen_alloc(&ctx->pool, sizeof(*d));
	d->loc = *loc;
	d->key = ctx->clock;
	d->seq = ctx->diags.n;
	d->text = gen_strdup(&ctx->pool, b.data);
	gen_buf_free(&b);
	gen_vec_push(&ctx->pool, &ctx->diags, d);
}

void gen_error(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
{
	va_list ap;
	ctx->errors++;
	if (ctx->errors > ctx->max_errors)
		return;
	va_start(ap, fmt);
	diag(ctx, loc, "error", fmt, ap);
	va_end(ap);
	if (ctx->errors == ctx->max_errors && ctx->diag)
		fprintf(ctx->diag, "rdmx-gen: error: too many errors, stopping the report\n");
}

void gen_warning(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag(ctx, loc, "warning", fmt, ap);
	va_end(ap);
}

uint32_t gen_fnv1a(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 16777619u;
	}
	return h;
}

bool gen_is_default_json_name(const char *name, const char *json)
{
	bool up = false;
	for (; *name; name++) {
		char c = *name;
		if (c == '_') {
			up = true;
			continue;
		}
		if (up && c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		up = false;
		if (*json++ != c)
			return false;
	}
	return *json == 0;
}

char *gen_comment_text(struct gen_ctx *ctx, const char *s)
{
	char *v = (char *)s, *c;
	while ((c = strstr(v, "*/")) != NULL)
		v = gen_printf(&ctx->pool, "%.*s*\\/%s", (int)(c - v), v, c + 2);
	while ((c = strstr(v, "/*")) != NULL)
		v = gen_printf(&ctx->pool, "%.*s/\\*%s", (int)(c - v), v, c + 2);
	return v;
}
