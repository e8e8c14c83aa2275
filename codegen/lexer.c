/* rdmx-gen: tokens of a .proto file. Columns are 1-based byte offsets. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

struct lexer {
	struct gen_ctx *ctx;
	const char *path;
	const char *p, *end;
	int line, col;
	struct gen_tok *toks;
	int n, cap;
};

static void advance(struct lexer *lx)
{
	if (*lx->p == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->p++;
}

static struct gen_loc here(const struct lexer *lx)
{
	struct gen_loc l = {lx->path, lx->line, lx->col};
	return l;
}

static struct gen_tok *push(struct lexer *lx, enum gen_tok_kind kind, struct gen_loc loc)
{
	struct gen_tok *t;
	if (lx->n == lx->cap) {
		int cap = lx->cap ? lx->cap * 2 : 256;
		struct gen_tok *nt = gen_alloc(&lx->ctx->pool, sizeof(*nt) * (size_t)cap);
		if (lx->n)
			memcpy(nt, lx->toks, sizeof(*nt) * (size_t)lx->n);
		lx->toks = nt;
		lx->cap = cap;
	}
	t = &lx->toks[lx->n++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->loc = loc;
	return t;
}

static bool is_ident_start(int c)
{
	return isalpha(c) || c == '_';
}

static bool is_ident(int c)
{
	return isalnum(c) || c == '_';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void lex_comment(struct lexer *lx)
{
	struct gen_loc start = here(lx);
	if (lx->p[1] == '/') {
		while (lx->p < lx->end && *lx->p != '\n')
			advance(lx);
		return;
	}
	advance(lx);
	advance(lx);
	while (lx->p < lx->end) {
		if (*lx->p == '*' && lx->p + 1 < lx->end && lx->p[1] == '/') {
			advance(lx);
			advance(lx);
			return;
		}
		advance(lx);
	}
	gen_error(lx->ctx, &start, "unterminated comment");
}

static void lex_string(struct lexer *lx)
{
	struct gen_loc start = here(lx);
	char quote = *lx->p;
	char *val = gen_alloc(&lx->ctx->pool, (size_t)(lx->end - lx->p) + 1);
	size_t n = 0;
	struct gen_tok *t;
	advance(lx);
	for (;;) {
		if (lx->p >= lx->end || *lx->p == '\n') {
			gen_error(lx->ctx, &start, "unterminated string literal");
			break;
		}
		if (*lx->p == quote) {
			advance(lx);
			break;
		}
		if (*lx->p == '\0') {
			struct gen_loc l = here(lx);
			gen_error(lx->ctx, &l, "NUL byte in string literal");
			advance(lx);
			continue;
		}
		if (*lx->p != '\\') {
			val[n++] = *lx->p;
			advance(lx);
			continue;
		}
		{
			struct gen_loc esc = here(lx);
			int c, v, k;
			advance(lx);
			if (lx->p >= lx->end)
				continue;
			c = (unsigned char)*lx->p;
			switch (c) {
			case 'a':
				val[n++] = '\a';
				advance(lx);
				break;
			case 'b':
				val[n++] = '\b';
				advance(lx);
				break;
			case 'f':
				val[n++] = '\f';
				advance(lx);
				break;
			case 'n':
				val[n++] = '\n';
				advance(lx);
				break;
			case 'r':
				val[n++] = '\r';
				advance(lx);
				break;
			case 't':
				val[n++] = '\t';
				advance(lx);
				break;
			case 'v':
				val[n++] = '\v';
				advance(lx);
				break;
			case '\\':
			case '\'':
			case '"':
			case '?':
				val[n++] = (char)c;
				advance(lx);
				break;
			case 'x':
			case 'X':
				advance(lx);
				for (v = 0, k = 0; k < 2 && lx->p < lx->end && hexval(*lx->p) >= 0;
				     k++) {
					v = v * 16 + hexval(*lx->p);
					advance(lx);
				}
				if (k == 0)
					gen_error(lx->ctx, &esc,
					          "invalid escape sequence in string literal");
				val[n++] = (char)v;
				break;
			case 'u':
			case 'U': {
				/* \uXXXX, \UXXXXXXXX: the code point in UTF-8 */
				int want = c == 'u' ? 4 : 8;
				unsigned long cp = 0;
				advance(lx);
				for (k = 0; k < want && lx->p < lx->end && hexval(*lx->p) >= 0;
				     k++) {
					cp = cp * 16 + (unsigned long)hexval(*lx->p);
					advance(lx);
				}
				if (k < want || cp > 0x10ffff) {
					gen_error(lx->ctx, &esc,
					          "invalid escape sequence in string literal");
				} else if (cp < 0x80) {
					val[n++] = (char)cp;
				} else if (cp < 0x800) {
					val[n++] = (char)(0xc0 | (cp >> 6));
					val[n++] = (char)(0x80 | (cp & 0x3f));
				} else if (cp < 0x10000) {
					val[n++] = (char)(0xe0 | (cp >> 12));
					val[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
					val[n++] = (char)(0x80 | (cp & 0x3f));
				} else {
					val[n++] = (char)(0xf0 | (cp >> 18));
					val[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
					val[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
					val[n++] = (char)(0x80 | (cp & 0x3f));
				}
				break;
			}
			default:
				if (c >= '0' && c <= '7') {
					for (v = 0, k = 0; k < 3 && lx->p < lx->end &&
					                   *lx->p >= '0' && *lx->p <= '7';
					     k++) {
						v = v * 8 + (*lx->p - '0');
						advance(lx);
					}
					val[n++] = (char)v;
				} else {
					gen_error(lx->ctx, &esc,
					          "invalid escape sequence in string literal");
					if (c != '\n')
						advance(lx);
				}
			}
		}
	}
	t = push(lx, TK_STRING, start);
	t->text = val;
	t->len = n;
}

static void lex_number(struct lexer *lx)
{
	struct gen_loc start = here(lx);
	const char *s = lx->p;
	bool is_float = false, bad = false, overflow = false;
	uint64_t v = 0;
	struct gen_tok *t;
	if (s[0] == '0' && s + 1 < lx->end && (s[1] == 'x' || s[1] == 'X')) {
		advance(lx);
		advance(lx);
		if (lx->p >= lx->end || hexval(*lx->p) < 0)
			bad = true;
		while (lx->p < lx->end && hexval(*lx->p) >= 0) {
			if (v > UINT64_MAX >> 4)
				overflow = true;
			v = v * 16 + (uint64_t)hexval(*lx->p);
			advance(lx);
		}
	} else {
		bool octal = s[0] == '0';
		while (lx->p < lx->end && isdigit((unsigned char)*lx->p)) {
			unsigned d = (unsigned)(*lx->p - '0');
			if (octal) {
				if (d > 7)
					bad = true;
				if (v > UINT64_MAX >> 3)
					overflow = true;
				v = v * 8 + d;
			} else {
				if (v > (UINT64_MAX - d) / 10)
					overflow = true;
				v = v * 10 + d;
			}
			advance(lx);
		}
		if (lx->p < lx->end && *lx->p == '.') {
			is_float = true;
			advance(lx);
			while (lx->p < lx->end && isdigit((unsigned char)*lx->p))
				advance(lx);
		}
		if (lx->p < lx->end && (*lx->p == 'e' || *lx->p == 'E')) {
			is_float = true;
			advance(lx);
			if (lx->p < lx->end && (*lx->p == '+' || *lx->p == '-'))
				advance(lx);
			while (lx->p < lx->end && isdigit((unsigned char)*lx->p))
				advance(lx);
		}
	}
	while (lx->p < lx->end && is_ident(*lx->p)) {
		bad = true;
		advance(lx);
	}
	t = push(lx, is_float ? TK_FLOAT : TK_INT, start);
	t->text = gen_strndup(&lx->ctx->pool, s, (size_t)(lx->p - s));
	t->ival = v;
	t->overflow = overflow;
	if (bad)
		gen_error(lx->ctx, &start, "invalid number \"%s\"", t->text);
}

struct gen_tok *gen_lex(struct gen_ctx *ctx, const char *path, const char *text, size_t len,
                        int *ntok)
{
	struct lexer lx = {ctx, path, text, text + len, 1, 1, NULL, 0, 0};
	/* a UTF-8 byte order mark, as some editors write */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		lx.p += 3;
	while (lx.p < lx.end) {
		unsigned char c = (unsigned char)*lx.p;
		struct gen_loc l = here(&lx);
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
			advance(&lx);
		} else if (c == '/' && lx.p + 1 < lx.end && (lx.p[1] == '/' || lx.p[1] == '*')) {
			lex_comment(&lx);
		} else if (is_ident_start(c)) {
			const char *s = lx.p;
			struct gen_tok *t;
			while (lx.p < lx.end && is_ident(*lx.p))
				advance(&lx);
			t = push(&lx, TK_IDENT, l);
			t->text = gen_strndup(&ctx->pool, s, (size_t)(lx.p - s));
		} else if (isdigit(c) ||
		           (c == '.' && lx.p + 1 < lx.end && isdigit((unsigned char)lx.p[1]))) {
			lex_number(&lx);
		} else if (c == '"' || c == '\'') {
			lex_string(&lx);
		} else if (strchr("{}[]()<>;,=.-+:/", c) && c) {
			/* '/' only appears in type URLs inside aggregate option values */
			struct gen_tok *t = push(&lx, TK_SYM, l);
			t->sym = (char)c;
			t->text = gen_strndup(&ctx->pool, (const char *)&c, 1);
			advance(&lx);
		} else {
			if (c >= 0x20 && c < 0x7f)
				gen_error(ctx, &l, "invalid character '%c'", c);
			else
				gen_error(ctx, &l, "invalid byte 0x%02x", c);
			advance(&lx);
		}
	}
	{
		struct gen_loc l = here(&lx);
		struct gen_tok *t = push(&lx, TK_EOF, l);
		t->text = (char *)"end of file";
	}
	*ntok = lx.n;
	return lx.toks;
}
