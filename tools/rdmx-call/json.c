/* rdmx-call's JSON glue over jansson (json.h). */
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

int json_parse(const char *text, size_t len, json_t **out, char *err, size_t err_len)
{
	json_error_t e;
	json_t *j =
	    json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);

	if (!j) {
		if (err && err_len)
			snprintf(err, err_len, "line %d col %d: %s", e.line, e.column, e.text);
		return -1;
	}
	*out = j;
	return 0;
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
