/* rdmx-call's JSON glue over jansson (json.h). */
#include "json.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

/* ---- integers past int64 ----
 * jansson keeps an integer in a long long and refuses a longer one, but
 * the JSON mapping takes any integer literal (a uint64 field's
 * 18446744073709551615 unquoted). Before the parse each such literal is
 * rewritten as a string that starts with BIG_MARK, two control bytes no
 * one's text starts a string with; json_big_int tells these apart (a
 * string field refuses them as the number they stand for), and errors are
 * placed in the text as it was given. */
#define BIG_MARK "\0\1int:"
#define BIG_MARK_LEN 6u
#define BIG_OPEN "\"\\u0000\\u0001int:" /* a rewrite's start: the quote and BIG_MARK */
#define BIG_OPEN_LEN (sizeof(BIG_OPEN) - 1)

struct big_mark {
	size_t at;  /* where its quote is, in the rewritten text */
	size_t len; /* the literal's length */
};

struct big_rewrite {
	struct jbuf text; /* the rewritten text; no data when nothing was */
	struct big_mark *v;
	size_t n, cap;
	bool oom;
};

/* Whether the literal p[0..n) ("-"? digits) is an integer past int64 */
static bool past_int64(const char *p, size_t n)
{
	bool neg = n && *p == '-';
	const char *lim = neg ? "9223372036854775808" : "9223372036854775807";

	p += neg;
	n -= neg;
	for (size_t i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	if (!n || (n > 1 && *p == '0'))
		return false; /* not a JSON number: jansson says why */
	return n > 19 || (n == 19 && memcmp(p, lim, 19) > 0);
}

static size_t skip(const char *t, size_t len, size_t i, int (*is)(int))
{
	while (i < len && is((unsigned char)t[i]))
		i++;
	return i;
}

/* The end of the number token whose digits start at t[i], where jansson's
 * lexer ends it: digits, then '.' digits, then [eE] [+-] digits (what comes
 * next is the next token, even in "5-1" or "5true": two values) */
static size_t number_end(const char *t, size_t len, size_t i)
{
	i = skip(t, len, i, isdigit);
	if (i < len && t[i] == '.')
		i = skip(t, len, i + 1, isdigit);
	if (i < len && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < len && (t[i] == '+' || t[i] == '-'))
			i++;
		i = skip(t, len, i, isdigit);
	}
	return i;
}

static void big_add(struct big_rewrite *r, const char *t, size_t from, size_t s, size_t e)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 8;
		struct big_mark *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			r->oom = true;
			return;
		}
		r->v = v;
		r->cap = cap;
	}
	jbuf_put(&r->text, t + from, s - from);
	r->v[r->n].at = r->text.len;
	r->v[r->n++].len = e - s;
	jbuf_put(&r->text, BIG_OPEN, BIG_OPEN_LEN);
	jbuf_put(&r->text, t + s, e - s);
	jbuf_put(&r->text, "\"", 1);
}

/* Rewrites the integers past int64 of t[0..len) into r, up to the end of
 * the first value when first_only (what follows it is not looked at). */
static void big_scan(const char *t, size_t len, bool first_only, struct big_rewrite *r)
{
	size_t i = 0, from = 0;
	int depth = 0;

	while (i < len && !r->oom) {
		char ch = t[i];

		if (ch == '"') {
			for (i++; i < len && t[i] != '"'; i++)
				i += t[i] == '\\';
			i++;
		} else if (ch == '{' || ch == '[') {
			depth++;
			i++;
			continue;
		} else if (ch == '}' || ch == ']') {
			depth--;
			i++;
		} else if (ch == '-' || isalnum((unsigned char)ch)) {
			size_t e = i + (ch == '-');

			if (isalpha((unsigned char)ch))
				e = skip(t, len, e, isalpha); /* a word: true, false, null */
			else
				e = number_end(t, len, e);
			if (past_int64(t + i, e - i)) {
				big_add(r, t, from, i, e);
				from = e;
			}
			i = e;
		} else {
			i++;
			continue;
		}
		if (first_only && depth <= 0)
			break;
	}
	if (r->n && !r->oom)
		jbuf_put(&r->text, t + from, len - from);
	r->oom = r->oom || r->text.oom;
}

/* The offset in the text as given of offset p of the rewritten text */
static size_t big_orig(const struct big_rewrite *r, size_t p)
{
	size_t shift = 0;

	for (size_t k = 0; k < r->n && r->v[k].at < p; k++) {
		size_t in = p - r->v[k].at;

		shift += in <= BIG_OPEN_LEN                 ? in
		         : in <= BIG_OPEN_LEN + r->v[k].len ? BIG_OPEN_LEN
		                                            : BIG_OPEN_LEN + 1;
	}
	return p - shift;
}

/* An error of the rewritten text as the text given would have it: the
 * column less what was added before it on its line, the quoted literal of
 * "near '...'" as written */
static void big_error(const struct big_rewrite *r, json_error_t *e)
{
	size_t p = (size_t)e->position, line = p;
	char *m;

	while (line > 0 && r->text.data[line - 1] != '\n')
		line--;
	e->column -= (int)((p - big_orig(r, p)) - (line - big_orig(r, line)));
	m = strstr(e->text, BIG_OPEN);
	if (m) {
		char *q;

		memmove(m, m + BIG_OPEN_LEN, strlen(m + BIG_OPEN_LEN) + 1);
		q = strchr(m, '"');
		if (q)
			memmove(q, q + 1, strlen(q + 1) + 1);
	}
	e->position = (int)big_orig(r, p);
}

bool json_big_int(const json_t *j, const char **digits)
{
	if (!json_is_string(j) || json_string_length(j) <= BIG_MARK_LEN ||
	    memcmp(json_string_value(j), BIG_MARK, BIG_MARK_LEN) != 0 ||
	    !past_int64(json_string_value(j) + BIG_MARK_LEN, json_string_length(j) - BIG_MARK_LEN))
		return false; /* not one of ours (a caller's text may be anything) */
	if (digits)
		*digits = json_string_value(j) + BIG_MARK_LEN;
	return true;
}

/* ---- parsing ---- */

/* "line L col C: ..." for a NUL byte at text[at], placed as jansson places
 * its errors (col: the characters of its line through it) */
static void nul_error(const char *text, size_t at, char *err, size_t err_len)
{
	size_t line = 1, col = 1;

	for (size_t i = 0; i < at; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)text[i] & 0xC0) != 0x80) {
			col++;
		}
	}
	snprintf(err, err_len, "line %zu col %zu: a NUL byte (a string holds one as \\u0000)", line,
	         col);
}

static json_t *load(const char *text, size_t len, bool first_only, size_t *used, char *err,
                    size_t err_len)
{
	const char *nul;
	size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
	struct big_rewrite r;
	json_error_t e;
	json_t *j;

	/* jansson's reader skips a raw NUL byte unseen (and counts no byte for
	 * it): the text stops there, and running out of text there (or text
	 * after the whole value) is the NUL's error */
	nul = memchr(text, '\0', len);
	if (nul)
		len = (size_t)(nul - text);
	memset(&r, 0, sizeof(r));
	big_scan(text, len, first_only, &r);
	if (r.oom) {
		snprintf(err, err_len, "out of memory");
		j = NULL;
		goto out;
	}
	if (first_only)
		flags |= JSON_DISABLE_EOF_CHECK;
	j = r.n ? json_loadb(r.text.data, r.text.len, flags, &e) : json_loadb(text, len, flags, &e);
	if (r.n && (!j || first_only))
		big_error(&r, &e); /* its position: the end of the first value */
	if (nul && (j ? !first_only : json_error_code(&e) == json_error_premature_end_of_input)) {
		json_decref(j);
		j = NULL;
		nul_error(text, len, err, err_len);
	} else if (!j) {
		snprintf(err, err_len, "line %d col %d: %s", e.line, e.column, e.text);
	} else if (used) {
		*used = (size_t)e.position;
	}
out:
	jbuf_free(&r.text);
	free(r.v);
	return j;
}

int json_parse(const char *text, size_t len, json_t **out, char *err, size_t err_len)
{
	char none[1];

	*out = load(text, len, false, NULL, err && err_len ? err : none,
	            err && err_len ? err_len : sizeof(none));
	return *out ? 0 : -1;
}

int json_parse_first(const char *text, size_t len, json_t **out, size_t *used, char *err,
                     size_t err_len)
{
	*out = load(text, len, true, used, err, err_len);
	return *out ? 0 : -1;
}

void json_free(json_t *j)
{
	if (j)
		json_decref(j);
}

void jbuf_put(struct jbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (!rdmx__grow(&b->data, &b->cap, b->len + n + 1, 256)) {
		b->oom = true;
		return;
	}
	if (n)
		memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void jbuf_puts(struct jbuf *b, const char *s)
{
	jbuf_put(b, s, strlen(s));
}

void jbuf_printf(struct jbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		jbuf_put(b, tmp, (size_t)n);
		return;
	}
	{
		char *big = malloc((size_t)n + 1);

		if (!big) {
			b->oom = true;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		jbuf_put(b, big, (size_t)n);
		free(big);
	}
}

void jbuf_free(struct jbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

/* ---- printing ---- */

void json_shortest_text(double d, bool as_float, char *text, size_t len)
{
	/* protobuf's python starts a float at 6 digits (%.6g, here %.5e) */
	for (int prec = as_float ? 5 : 0; prec < 17; prec++) {
		double back;

		snprintf(text, len, "%.*e", prec, d);
		back = strtod(text, NULL);
		if (as_float ? (float)back == (float)d : back == d)
			return;
	}
}

/* d's shortest round-trip text laid out as Python's repr (and so protobuf's
 * json_format): 0.1, 100.0, 0.0001, 1e-05, 1e+16, -0.0 */
static void put_real(struct jbuf *b, double d)
{
	char sci[40], digits[24];
	const char *p;
	int n = 0, exp, whole;

	json_shortest_text(d, false, sci, sizeof(sci));
	for (p = sci; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	digits[n] = '\0';
	exp = atoi(p + 1);
	if (sci[0] == '-')
		jbuf_put(b, "-", 1);
	if (exp < -4 || exp >= 16) {
		jbuf_printf(b, "%c%s%se%+03d", digits[0], n > 1 ? "." : "", digits + 1, exp);
	} else if (exp < 0) {
		jbuf_printf(b, "0.%.*s%s", -exp - 1, "0000", digits);
	} else {
		whole = exp + 1;
		jbuf_printf(b, "%.*s%.*s.%s", whole, digits, whole > n ? whole - n : 0,
		            "0000000000000000", n > whole ? digits + whole : "0");
	}
}

/* a string, an integer, true, false or null: jansson's own text */
static void put_scalar(struct jbuf *b, const json_t *j)
{
	char *text = json_dumps(j, JSON_ENCODE_ANY);

	if (!text) {
		b->oom = true;
		return;
	}
	jbuf_puts(b, text);
	free(text);
}

static void put_indent(struct jbuf *b, int depth)
{
	jbuf_put(b, "\n", 1);
	for (int i = 0; i < depth; i++)
		jbuf_put(b, "  ", 2);
}

static void put_value(struct jbuf *b, const json_t *j, int depth);

static void put_object(struct jbuf *b, const json_t *j, int depth)
{
	const char *key;
	json_t *v, *k;
	size_t i = 0;

	if (json_object_size(j) == 0) {
		jbuf_puts(b, "{}");
		return;
	}
	jbuf_put(b, "{", 1);
	json_object_foreach((json_t *)j, key, v)
	{
		jbuf_puts(b, i++ ? "," : "");
		put_indent(b, depth + 1);
		k = json_string(key);
		if (!k) {
			b->oom = true;
			return;
		}
		put_scalar(b, k);
		json_decref(k);
		jbuf_put(b, ": ", 2);
		put_value(b, v, depth + 1);
	}
	put_indent(b, depth);
	jbuf_put(b, "}", 1);
}

static void put_array(struct jbuf *b, const json_t *j, int depth)
{
	json_t *v;
	size_t i;

	if (json_array_size(j) == 0) {
		jbuf_puts(b, "[]");
		return;
	}
	jbuf_put(b, "[", 1);
	json_array_foreach((json_t *)j, i, v)
	{
		jbuf_puts(b, i ? "," : "");
		put_indent(b, depth + 1);
		put_value(b, v, depth + 1);
	}
	put_indent(b, depth);
	jbuf_put(b, "]", 1);
}

static void put_value(struct jbuf *b, const json_t *j, int depth)
{
	if (json_is_object(j))
		put_object(b, j, depth);
	else if (json_is_array(j))
		put_array(b, j, depth);
	else if (json_is_real(j))
		put_real(b, json_real_value(j));
	else
		put_scalar(b, j);
}

int json_print(const json_t *j, struct jbuf *out)
{
	put_value(out, j, 0);
	return out->oom ? -1 : 0;
}
