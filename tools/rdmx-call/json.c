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
