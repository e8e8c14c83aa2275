/* Strict JSON parser and pretty printer (json.h). */
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffer ---- */

void jbuf_put(struct jbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *d;

		while (cap < b->len + n + 1)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d) {
			b->oom = true;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
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
	memset(b, 0, sizeof(*b));
}

/* ---- parser ---- */

struct parser {
	const char *p, *start, *end;
	char *err;
	size_t err_len;
	bool failed;
};

static void perr(struct parser *ps, const char *why)
{
	int line = 1, col = 1;

	if (ps->failed)
		return;
	ps->failed = true;
	for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
		if (*q == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	if (ps->err && ps->err_len)
		snprintf(ps->err, ps->err_len, "line %d col %d: %s", line, col, why);
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static struct json *node(struct parser *ps, enum json_type t)
{
	struct json *j = calloc(1, sizeof(*j));

	if (!j)
		perr(ps, "out of memory");
	else
		j->type = t;
	return j;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

static void put_utf8(struct jbuf *b, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	jbuf_put(b, u, n);
}

/* Length of the valid UTF-8 sequence at p (1..4), 0 when invalid. */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
	unsigned cp;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1fu;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0fu;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07u;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static char *parse_string_raw(struct parser *ps, size_t *len)
{
	struct jbuf b = {0};

	ps->p++; /* opening quote */
	while (ps->p < ps->end && *ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p;

		if (c < 0x20) {
			perr(ps, "control character in a string");
			goto fail;
		}
		if (c == '\\') {
			unsigned cp, lo;

			if (ps->end - ps->p < 2) {
				perr(ps, "unterminated escape");
				goto fail;
			}
			switch (ps->p[1]) {
			case '"':
				jbuf_put(&b, "\"", 1);
				break;
			case '\\':
				jbuf_put(&b, "\\", 1);
				break;
			case '/':
				jbuf_put(&b, "/", 1);
				break;
			case 'b':
				jbuf_put(&b, "\b", 1);
				break;
			case 'f':
				jbuf_put(&b, "\f", 1);
				break;
			case 'n':
				jbuf_put(&b, "\n", 1);
				break;
			case 'r':
				jbuf_put(&b, "\r", 1);
				break;
			case 't':
				jbuf_put(&b, "\t", 1);
				break;
			case 'u':
				if (ps->end - ps->p < 6 || hex4(ps->p + 2, &cp)) {
					perr(ps, "bad \\u escape");
					goto fail;
				}
				if (cp >= 0xdc00 && cp <= 0xdfff) {
					perr(ps, "lone low surrogate");
					goto fail;
				}
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (ps->end - ps->p < 12 || ps->p[6] != '\\' ||
					    ps->p[7] != 'u' || hex4(ps->p + 8, &lo) ||
					    lo < 0xdc00 || lo > 0xdfff) {
						perr(ps, "lone high surrogate");
						goto fail;
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					ps->p += 6;
				}
				put_utf8(&b, cp);
				ps->p += 4;
				break;
			default:
				perr(ps, "bad escape");
				goto fail;
			}
			ps->p += 2;
			continue;
		}
		{
			size_t n =
			    utf8_seq((const unsigned char *)ps->p, (size_t)(ps->end - ps->p));

			if (!n) {
				perr(ps, "invalid UTF-8 in a string");
				goto fail;
			}
			jbuf_put(&b, ps->p, n);
			ps->p += n;
		}
	}
	if (ps->p >= ps->end) {
		perr(ps, "unterminated string");
		goto fail;
	}
	ps->p++;
	if (b.oom) {
		perr(ps, "out of memory");
		goto fail;
	}
	if (!b.data) {
		b.data = calloc(1, 1);
		if (!b.data) {
			perr(ps, "out of memory");
			return NULL;
		}
	}
	*len = b.len;
	return b.data;
fail:
	jbuf_free(&b);
	return NULL;
}

static struct json *parse_value(struct parser *ps, int depth);

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static struct json *parse_number(struct parser *ps)
{
	const char *s = ps->p;
	struct json *j;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end || !is_digit(*ps->p)) {
		perr(ps, "bad number");
		return NULL;
	}
	if (*ps->p == '0') {
		ps->p++;
		if (ps->p < ps->end && is_digit(*ps->p)) {
			perr(ps, "leading zero in a number");
			return NULL;
		}
	} else {
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	}
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (ps->p >= ps->end || !is_digit(*ps->p)) {
			perr(ps, "bad fraction");
			return NULL;
		}
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || !is_digit(*ps->p)) {
			perr(ps, "bad exponent");
			return NULL;
		}
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	}
	j = node(ps, JSON_NUMBER);
	if (j && !(j->s = strndup(s, (size_t)(ps->p - s)))) {
		perr(ps, "out of memory");
		free(j);
		return NULL;
	}
	return j;
}

static int push_member(struct parser *ps, struct json *c, struct json *v, char *key)
{
	struct json **items = realloc(c->items, (c->n + 1) * sizeof(*items));
	char **keys;

	if (!items) {
		perr(ps, "out of memory");
		return -1;
	}
	c->items = items;
	if (c->type == JSON_OBJECT) {
		keys = realloc(c->keys, (c->n + 1) * sizeof(*keys));
		if (!keys) {
			perr(ps, "out of memory");
			return -1;
		}
		c->keys = keys;
		c->keys[c->n] = key;
	}
	c->items[c->n++] = v;
	return 0;
}

static struct json *parse_container(struct parser *ps, int depth, bool object)
{
	struct json *c = node(ps, object ? JSON_OBJECT : JSON_ARRAY);
	char close = object ? '}' : ']';

	if (!c)
		return NULL;
	if (depth >= JSON_MAX_DEPTH) {
		perr(ps, "nested too deep");
		goto fail;
	}
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return c;
	}
	for (;;) {
		char *key = NULL;
		size_t klen = 0;
		struct json *v;

		skip_ws(ps);
		if (object) {
			if (ps->p >= ps->end || *ps->p != '"') {
				perr(ps, "expected a member name");
				goto fail;
			}
			key = parse_string_raw(ps, &klen);
			if (!key)
				goto fail;
			if (strlen(key) != klen || json_get(c, key)) {
				perr(ps, strlen(key) != klen ? "NUL in a member name"
				                             : "duplicate member name");
				free(key);
				goto fail;
			}
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				perr(ps, "expected ':'");
				free(key);
				goto fail;
			}
			ps->p++;
		}
		v = parse_value(ps, depth + 1);
		if (!v || push_member(ps, c, v, key)) {
			json_free(v);
			free(key);
			goto fail;
		}
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return c;
		}
		perr(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
		goto fail;
	}
fail:
	json_free(c);
	return NULL;
}

static bool literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0) {
		ps->p += n;
		return true;
	}
	return false;
}

static struct json *parse_value(struct parser *ps, int depth)
{
	struct json *j;

	skip_ws(ps);
	if (ps->p >= ps->end) {
		perr(ps, "unexpected end of input");
		return NULL;
	}
	switch (*ps->p) {
	case '{':
		return parse_container(ps, depth, true);
	case '[':
		return parse_container(ps, depth, false);
	case '"':
		j = node(ps, JSON_STRING);
		if (j && !(j->s = parse_string_raw(ps, &j->len))) {
			free(j);
			return NULL;
		}
		return j;
	case 't':
	case 'f':
	case 'n':
		if (literal(ps, "true") || literal(ps, "false")) {
			j = node(ps, JSON_BOOL);
			if (j)
				j->b = ps->p[-1] == 'e' && ps->p[-2] == 'u';
			return j;
		}
		if (literal(ps, "null"))
			return node(ps, JSON_NULL);
		perr(ps, "unknown literal");
		return NULL;
	default:
		if (*ps->p == '-' || is_digit(*ps->p))
			return parse_number(ps);
		perr(ps, "unexpected character");
		return NULL;
	}
}

int json_parse(const char *text, size_t len, struct json **out, char *err, size_t err_len)
{
	struct parser ps = {text, text, text + len, err, err_len, false};
	struct json *j = parse_value(&ps, 0);

	if (j) {
		skip_ws(&ps);
		if (ps.p != ps.end) {
			perr(&ps, "text after the value");
			json_free(j);
			j = NULL;
		}
	}
	if (!j)
		return -1;
	*out = j;
	return 0;
}

void json_free(struct json *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++) {
		json_free(j->items[i]);
		if (j->keys)
			free(j->keys[i]);
	}
	free(j->items);
	free(j->keys);
	free(j->s);
	free(j);
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0)
			return obj->items[i];
	return NULL;
}

const char *json_type_name(enum json_type t)
{
	switch (t) {
	case JSON_NULL:
		return "null";
	case JSON_BOOL:
		return "a boolean";
	case JSON_NUMBER:
		return "a number";
	case JSON_STRING:
		return "a string";
	case JSON_ARRAY:
		return "an array";
	default:
		return "an object";
	}
}

/* ---- printer ---- */

void json_put_string(struct jbuf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;

	jbuf_put(b, "\"", 1);
	while (i < len) {
		unsigned char c = p[i];
		size_t n;
		const char *esc = NULL;
		char u[8];

		switch (c) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(u, sizeof(u), "\\u%04x", c);
				esc = u;
			}
		}
		if (esc) {
			jbuf_put(b, s + i - run, run);
			run = 0;
			jbuf_puts(b, esc);
			i++;
			continue;
		}
		n = utf8_seq(p + i, len - i);
		if (!n) {
			jbuf_put(b, s + i - run, run);
			run = 0;
			jbuf_puts(b, "\xef\xbf\xbd"); /* U+FFFD */
			i++;
			continue;
		}
		run += n;
		i += n;
	}
	jbuf_put(b, s + i - run, run);
	jbuf_put(b, "\"", 1);
}

void jw_init(struct jwriter *w, struct jbuf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
}

static void indent(struct jwriter *w)
{
	jbuf_put(w->out, "\n", 1);
	for (int i = 0; i < w->depth; i++)
		jbuf_put(w->out, "  ", 2);
}

/* before a value (or a key): the comma and the line break */
static void before(struct jwriter *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth == 0)
		return;
	if (!w->empty[w->depth])
		jbuf_put(w->out, ",", 1);
	w->empty[w->depth] = false;
	indent(w);
}

static void jw_open(struct jwriter *w, const char *c)
{
	before(w);
	jbuf_puts(w->out, c);
	if (w->depth < JSON_MAX_DEPTH)
		w->depth++;
	w->empty[w->depth] = true;
}

static void jw_close(struct jwriter *w, const char *c)
{
	bool empty = w->empty[w->depth];

	if (w->depth > 0)
		w->depth--;
	if (!empty)
		indent(w);
	jbuf_puts(w->out, c);
}

void jw_begin_object(struct jwriter *w)
{
	jw_open(w, "{");
}

void jw_end_object(struct jwriter *w)
{
	jw_close(w, "}");
}

void jw_begin_array(struct jwriter *w)
{
	jw_open(w, "[");
}

void jw_end_array(struct jwriter *w)
{
	jw_close(w, "]");
}

void jw_key(struct jwriter *w, const char *key, size_t len)
{
	before(w);
	json_put_string(w->out, key, len);
	jbuf_put(w->out, ": ", 2);
	w->after_key = true;
}

void jw_string(struct jwriter *w, const char *s, size_t len)
{
	before(w);
	json_put_string(w->out, s, len);
}

void jw_raw(struct jwriter *w, const char *text)
{
	before(w);
	jbuf_puts(w->out, text);
}
