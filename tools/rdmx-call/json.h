/* A small strict JSON (RFC 8259) parser and a pretty printer, for rdmx-call.
 * The parser keeps numbers as their text (so 64-bit integers stay exact),
 * strings as UTF-8 with their length (\u0000 allowed), object members in
 * order; it refuses duplicate keys, trailing commas, comments, leading zeros,
 * lone surrogates, invalid UTF-8, control characters in strings, anything
 * after the value, and nesting deeper than JSON_MAX_DEPTH. */
#ifndef RDMX_CALL_JSON_H
#define RDMX_CALL_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define JSON_MAX_DEPTH 64

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
	enum json_type type;
	bool b;     /* JSON_BOOL */
	char *s;    /* JSON_NUMBER: the text; JSON_STRING: the bytes (NUL-terminated) */
	size_t len; /* JSON_STRING: bytes */
	size_t n;   /* JSON_ARRAY / JSON_OBJECT: members */
	struct json **items;
	char **keys; /* JSON_OBJECT: NUL-terminated (a key with \u0000 is refused) */
};

/* Parses text[0..len). On error returns -1 with "line L col C: why" in err. */
int json_parse(const char *text, size_t len, struct json **out, char *err, size_t err_len);
void json_free(struct json *j);
/* The member named key, or NULL. */
const struct json *json_get(const struct json *obj, const char *key);
const char *json_type_name(enum json_type t);

/* ---- output ---- */

/* A growable buffer. */
struct jbuf {
	char *data;
	size_t len, cap;
	bool oom;
};
void jbuf_put(struct jbuf *b, const char *s, size_t n);
void jbuf_puts(struct jbuf *b, const char *s);
void jbuf_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jbuf_free(struct jbuf *b);

/* A pretty printer: two-space indentation, one member per line, "{}" and
 * "[]" when empty (grpcurl's layout). Calls must nest correctly. */
struct jwriter {
	struct jbuf *out;
	int depth;
	bool empty[JSON_MAX_DEPTH + 2]; /* nothing written yet at this level */
	bool after_key;
};
void jw_init(struct jwriter *w, struct jbuf *out);
void jw_begin_object(struct jwriter *w);
void jw_end_object(struct jwriter *w);
void jw_begin_array(struct jwriter *w);
void jw_end_array(struct jwriter *w);
void jw_key(struct jwriter *w, const char *key, size_t len);
/* a string value: escaped; invalid UTF-8 bytes become U+FFFD */
void jw_string(struct jwriter *w, const char *s, size_t len);
/* a number, true/false/null, or any literal text */
void jw_raw(struct jwriter *w, const char *text);

/* JSON string escaping into b (quotes included). */
void json_put_string(struct jbuf *b, const char *s, size_t len);

#endif
