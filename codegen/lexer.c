/* rdmx-gen: tokens of a .proto file, cut and checked as protoc 3.21's
 * tokenizer (io/tokenizer.cc) cuts and checks them, with its words at its
 * places. An error is kept on the token being read when it was met (the
 * blanks and comments before a token belong to it), so the parser reports
 * it when it reaches that token, as protoc reads its tokens one at a time.
 * Columns are 1-based byte offsets. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
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
	struct gen_lexerr *errs, **errs_tail; /* met since the last token */
};

/* the byte at hand, 0 at the end (as protoc's current_char_: a NUL byte
 * and the end look alike to most of its checks) */
static int ch(const struct lexer *lx)
{
	return lx->p < lx->end ? (unsigned char)*lx->p : 0;
}

static int ch_at(const struct lexer *lx, int k)
{
	return lx->p + k < lx->end ? (unsigned char)lx->p[k] : 0;
}

/* columns as protoc's tokenizer counts them: a tab moves to the next
 * multiple of 8 (0-based) */
static void advance(struct lexer *lx)
{
	if (*lx->p == '\n') {
		lx->line++;
		lx->col = 1;
	} else if (*lx->p == '\t') {
		lx->col += 8 - (lx->col - 1) % 8;
	} else {
		lx->col++;
	}
	lx->p++;
}

static bool accept(struct lexer *lx, int c)
{
	if (lx->p >= lx->end || ch(lx) != c)
		return false;
	advance(lx);
	return true;
}

static struct gen_loc here(const struct lexer *lx)
{
	struct gen_loc l = {lx->path, lx->line, lx->col};
	return l;
}

static void lex_error(struct lexer *lx, struct gen_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lex_error(struct lexer *lx, struct gen_loc loc, const char *fmt, ...)
{
	struct gen_lexerr *e = gen_alloc(&lx->ctx->pool, sizeof(*e));
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e->loc = loc;
	e->msg = gen_strdup(&lx->ctx->pool, msg);
	*lx->errs_tail = e;
	lx->errs_tail = &e->next;
}

/* an error at the byte at hand */
static void lex_error_here(struct lexer *lx, const char *msg)
{
	lex_error(lx, here(lx), "%s", msg);
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
	t->errs = lx->errs;
	lx->errs = NULL;
	lx->errs_tail = &lx->errs;
	return t;
}

static bool is_letter(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(int c)
{
	return is_letter(c) || is_digit(c);
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

/* after the leading slash and star (ConsumeBlockComment) */
static void lex_block_comment(struct lexer *lx, struct gen_loc start)
{
	for (;;) {
		while (ch(lx) && ch(lx) != '*' && ch(lx) != '/' && ch(lx) != '\n')
			advance(lx);
		if (accept(lx, '\n')) {
			while (ch(lx) == ' ' || ch(lx) == '\t' || ch(lx) == '\r' ||
			       ch(lx) == '\v' || ch(lx) == '\f')
				advance(lx);
			if (accept(lx, '*') && accept(lx, '/'))
				return;
		} else if (accept(lx, '*') && accept(lx, '/')) {
			return;
		} else if (accept(lx, '/') && ch(lx) == '*') {
			lex_error_here(lx, "\"/*\" inside block comment.  Block comments cannot be "
			                   "nested.");
		} else if (!ch(lx)) {
			lex_error_here(lx, "End-of-file inside block comment.");
			lex_error(lx, start, "  Comment started here.");
			return;
		}
	}
}

static void put_utf8(char *val, size_t *n, unsigned long cp)
{
	if (cp < 0x80) {
		val[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		val[(*n)++] = (char)(0xc0 | (cp >> 6));
		val[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		val[(*n)++] = (char)(0xe0 | (cp >> 12));
		val[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		val[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		val[(*n)++] = (char)(0xf0 | (cp >> 18));
		val[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		val[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		val[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/* up to max hex digits into *v; how many */
static int hex_digits(struct lexer *lx, int max, unsigned long *v)
{
	int k;
	for (*v = 0, k = 0; k < max && hexval(ch(lx)) >= 0; k++) {
		*v = *v * 16 + (unsigned long)hexval(ch(lx));
		advance(lx);
	}
	return k;
}

/* \u and \U: 4 hex digits, or 8 up to 001fffff (protoc's tokenizer
 * checks the first three of those, its parser encodes the code point in
 * UTF-8); the error at the first byte that does not fit */
static bool lex_unicode(struct lexer *lx, int u, unsigned long *cp)
{
	int k;
	*cp = 0;
	for (k = 0; k < (u == 'u' ? 4 : 8); k++) {
		int c = ch(lx);
		bool ok = hexval(c) >= 0;
		if (u == 'U' && k < 3)
			ok = c == '0' || (k == 2 && c == '1');
		if (!ok) {
			lex_error_here(lx, u == 'u' ? "Expected four hex digits for \\u escape "
			                              "sequence."
			                            : "Expected eight hex digits up to 10ffff for "
			                              "\\U escape sequence");
			return false;
		}
		*cp = *cp * 16 + (unsigned long)hexval(c);
		advance(lx);
	}
	return true;
}

/* after a head surrogate *cp, a \u trail surrogate makes one code point
 * with it, as protoc's FetchUnicodePoint reads the UTF-16 pair; a lone
 * surrogate stays as it is (encoded as is, as protoc does) */
static void trail_surrogate(struct lexer *lx, unsigned long *cp)
{
	unsigned long t = 0;
	int k;
	if (*cp < 0xd800 || *cp > 0xdbff || ch(lx) != '\\' || ch_at(lx, 1) != 'u')
		return;
	for (k = 2; k < 6; k++) {
		if (hexval(ch_at(lx, k)) < 0)
			return;
		t = t * 16 + (unsigned long)hexval(ch_at(lx, k));
	}
	if (t < 0xdc00 || t > 0xdfff)
		return;
	*cp = 0x10000 + ((*cp - 0xd800) << 10) + (t - 0xdc00);
	for (k = 0; k < 6; k++)
		advance(lx);
}

/* one escape sequence after its backslash, decoded into val (nothing when
 * it is wrong: the file fails) */
static void lex_escape(struct lexer *lx, char *val, size_t *n)
{
	static const char from[] = "abfnrtv\\?'\"", to[] = "\a\b\f\n\r\t\v\\?'\"";
	const char *e;
	unsigned long v;
	int c = ch(lx), k;
	if (c && (e = strchr(from, c)) != NULL) {
		val[(*n)++] = to[e - from];
		advance(lx);
	} else if (c >= '0' && c <= '7') {
		for (v = 0, k = 0; k < 3 && ch(lx) >= '0' && ch(lx) <= '7'; k++) {
			v = v * 8 + (unsigned long)(ch(lx) - '0');
			advance(lx);
		}
		val[(*n)++] = (char)v;
	} else if (c == 'x') {
		advance(lx);
		if (hex_digits(lx, 2, &v) == 0)
			lex_error_here(lx, "Expected hex digits for escape sequence.");
		else
			val[(*n)++] = (char)v;
	} else if (c == 'u' || c == 'U') {
		advance(lx);
		if (lex_unicode(lx, c, &v)) {
			trail_surrogate(lx, &v);
			put_utf8(val, n, v);
		}
	} else {
		/* the byte is not consumed: it is read again as part of the string */
		lex_error_here(lx, "Invalid escape sequence in string literal.");
	}
}

/* after its opening quote (ConsumeString) */
static void lex_string(struct lexer *lx, struct gen_loc start, int quote)
{
	char *val = gen_alloc(&lx->ctx->pool, (size_t)(lx->end - lx->p) * 2 + 1);
	size_t n = 0;
	struct gen_tok *t;
	for (;;) {
		int c = ch(lx);
		if (!c) {
			lex_error_here(lx, "Unexpected end of string.");
			break;
		}
		if (c == '\n') {
			lex_error_here(lx, "String literals cannot cross line boundaries.");
			break;
		}
		advance(lx);
		if (c == quote)
			break;
		if (c == '\\')
			lex_escape(lx, val, &n);
		else
			val[n++] = (char)c;
	}
	t = push(lx, TK_STRING, start);
	t->text = val;
	t->len = n;
}

/* protoc's Tokenizer::ParseInteger: false for a spelling that is no
 * integer ("08") or one above 2^64-1 */
static bool int_value(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == '0') {
		base = 8;
	}
	for (; *s; s++) {
		int d = hexval(*s);
		if (d < 0 || (unsigned)d >= base)
			return false;
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return false;
		v = v * base + (unsigned)d;
	}
	*out = v;
	return true;
}

/* after its first byte, a digit or a '.' before one (ConsumeNumber) */
static void lex_number(struct lexer *lx, const char *s, struct gen_loc start)
{
	bool is_float = false, zero = s[0] == '0';
	struct gen_tok *t;
	if (zero && (accept(lx, 'x') || accept(lx, 'X'))) {
		if (hexval(ch(lx)) < 0)
			lex_error_here(lx, "\"0x\" must be followed by hex digits.");
		while (hexval(ch(lx)) >= 0)
			advance(lx);
	} else if (zero && is_digit(ch(lx))) {
		while (ch(lx) >= '0' && ch(lx) <= '7')
			advance(lx);
		if (is_digit(ch(lx))) {
			lex_error_here(lx, "Numbers starting with leading zero must be in octal.");
			while (is_digit(ch(lx)))
				advance(lx);
		}
	} else {
		is_float = s[0] == '.';
		while (is_digit(ch(lx)))
			advance(lx);
		if (!is_float && accept(lx, '.')) {
			is_float = true;
			while (is_digit(ch(lx)))
				advance(lx);
		}
		if (accept(lx, 'e') || accept(lx, 'E')) {
			is_float = true;
			if (!accept(lx, '-'))
				accept(lx, '+');
			if (!is_digit(ch(lx)))
				lex_error_here(lx, "\"e\" must be followed by exponent.");
			while (is_digit(ch(lx)))
				advance(lx);
		}
	}
	if (is_letter(ch(lx)))
		lex_error_here(lx, "Need space between number and identifier.");
	else if (ch(lx) == '.')
		lex_error_here(lx, is_float ? "Already saw decimal point or exponent; can't have "
		                              "another one."
		                            : "Hex and octal numbers must be integers.");
	t = push(lx, is_float ? TK_FLOAT : TK_INT, start);
	t->text = gen_strndup(&lx->ctx->pool, s, (size_t)(lx->p - s));
	if (!is_float)
		t->overflow = !int_value(t->text, &t->ival);
}

static bool is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* a control byte protoc refuses (a NUL byte too: not the end) */
static bool is_unprintable(const struct lexer *lx)
{
	return lx->p < lx->end && ch(lx) < ' ' && !is_blank(ch(lx));
}

/* one token (Tokenizer::Next), or false at the end */
static bool lex_token(struct lexer *lx)
{
	struct gen_loc l;
	const char *s;
	int c;
	for (;;) {
		while (is_blank(ch(lx)))
			advance(lx);
		if (ch(lx) == '/' && ch_at(lx, 1) == '/') {
			while (ch(lx) && ch(lx) != '\n')
				advance(lx);
			continue;
		}
		if (ch(lx) == '/' && ch_at(lx, 1) == '*') {
			l = here(lx);
			advance(lx);
			advance(lx);
			lex_block_comment(lx, l);
			continue;
		}
		if (!is_unprintable(lx))
			break;
		lex_error_here(lx, "Invalid control characters encountered in text.");
		while (is_unprintable(lx))
			advance(lx);
	}
	if (lx->p >= lx->end)
		return false;
	l = here(lx);
	s = lx->p;
	c = ch(lx);
	advance(lx);
	if (is_letter(c)) {
		struct gen_tok *t;
		while (is_alnum(ch(lx)))
			advance(lx);
		t = push(lx, TK_IDENT, l);
		t->text = gen_strndup(&lx->ctx->pool, s, (size_t)(lx->p - s));
	} else if (is_digit(c)) {
		lex_number(lx, s, l);
	} else if (c == '.' && is_digit(ch(lx))) {
		const struct gen_tok *prev = lx->n ? &lx->toks[lx->n - 1] : NULL;
		if (prev && prev->kind == TK_IDENT && prev->loc.line == l.line &&
		    prev->loc.col + (int)strlen(prev->text) == l.col)
			lex_error(lx, l, "Need space between identifier and decimal point.");
		lex_number(lx, s, l);
	} else if (c == '"' || c == '\'') {
		lex_string(lx, l, c);
	} else {
		struct gen_tok *t;
		if (c & 0x80)
			lex_error(lx, l, "Interpreting non ascii codepoint %d.", c);
		t = push(lx, TK_SYM, l);
		t->sym = (char)c;
		t->text = gen_strndup(&lx->ctx->pool, s, 1);
	}
	return true;
}

struct gen_tok *gen_lex(struct gen_ctx *ctx, const char *path, const char *text, size_t len,
                        int *ntok)
{
	struct lexer lx = {ctx, path, text, text + len, 1, 1, NULL, 0, 0, NULL, NULL};
	struct gen_tok *t;
	lx.errs_tail = &lx.errs;
	/* a UTF-8 byte order mark, as some editors write */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		lx.p += 3;
	while (lex_token(&lx))
		;
	t = push(&lx, TK_EOF, here(&lx));
	t->text = (char *)"end of file";
	*ntok = lx.n;
	return lx.toks;
}
