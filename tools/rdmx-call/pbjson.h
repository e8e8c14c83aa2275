/* JSON <-> the msgpack encoding of rdmx-gen's generated code, driven by a
 * schema parsed with rdmx-gen's own front end (codegen/gen.h).
 *
 * The JSON side follows the proto3 JSON mapping (JSON by jansson): output
 * names in lowerCamelCase or the field's json_name (the proto name is
 * accepted on input too), 64-bit integers as strings (numbers accepted on
 * input), 32-bit integers as numbers (strings accepted on input), bytes as
 * base64, enums by name (numbers accepted), floats as numbers or "NaN" /
 * "Infinity" / "-Infinity", maps as objects, null for "absent", and the
 * well-known types' forms: Timestamp as RFC 3339, Duration as "1.5s",
 * wrappers as their bare value, Struct/Value/ListValue as plain JSON,
 * FieldMask as "a.b,cD", Any as {"@type": URL, ...} (a well-known type
 * inside is {"@type": URL, "value": ...}), Empty as {}. Errors name the
 * JSON path of the bad value. The msgpack side is the wire format of
 * include/rdmx/codec.h: a map keyed by field number. */
#ifndef RDMX_CALL_PBJSON_H
#define RDMX_CALL_PBJSON_H

#include <stddef.h>

#include "gen.h"
#include "json.h"

/* Every IDL file of one schema (imports resolved). */
struct pbschema {
	struct gen_ctx ctx;
	bool loaded;
};

/* Loads `path` (and its imports, searched in its folder then include_dirs)
 * and resolves it; diagnostics (FILE:LINE:COL) go to diag. 0 or -1. */
int pbschema_load(struct pbschema *s, const char *path, const char *const *include_dirs,
                  size_t n_include, FILE *diag);
void pbschema_fini(struct pbschema *s);
/* "package.Message" -> the message, or NULL. */
const struct gen_message *pbschema_message(const struct pbschema *s, const char *full_name);
/* "package.Service/Method" (or "package.Service.Method") -> the method. */
const struct gen_method *pbschema_method(const struct pbschema *s, const char *full_name);

/* JSON object (or NULL: the empty message) -> msgpack, appended to out.
 * 0, or -1 with the reason in err (the JSON path of the bad value). */
int pbjson_encode(const struct gen_message *m, const json_t *j, struct jbuf *out, char *err,
                  size_t err_len);
/* The same from JSON text (NUL-terminated): parse, then encode. 0, or -1
 * with the parse error or the encode reason in err. */
int pbjson_encode_text(const struct gen_message *m, const char *text, struct jbuf *out, char *err,
                       size_t err_len);
/* msgpack -> JSON (two-space indentation), appended to out. 0 or -1. */
int pbjson_decode(const struct gen_message *m, const void *data, size_t len, struct jbuf *out,
                  char *err, size_t err_len);

/* base64 (RFC 4648; decoding also takes the URL-safe alphabet and missing
 * padding). */
void base64_encode(struct jbuf *out, const unsigned char *p, size_t n);
int base64_decode(const char *s, size_t n, struct jbuf *out);

#endif
