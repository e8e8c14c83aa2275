/* rdmx-call's JSON: jansson (a maintained library) does the parsing, the
 * string escapes and the tree; this file adds the growable buffer the
 * msgpack side writes into, a strict load with a "line L col C: why" error,
 * and a printer that gives every real its own shortest text (jansson's
 * dump has one precision for a whole document). */
#ifndef RDMX_CALL_JSON_H
#define RDMX_CALL_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Parses text[0..len): one JSON value of any type, duplicate object keys
 * refused, nothing after it; "\u0000" is taken inside strings (their
 * length is json_string_length). An integer literal outside int64 (which
 * jansson cannot hold) comes as a string json_big_int recognises. On error
 * returns -1 with "line L col C: why", placed in the text as given. */
int json_parse(const char *text, size_t len, json_t **out, char *err, size_t err_len);
/* As json_parse, for the first value of text[0..len) (more may follow):
 * 0 with *out and *used, the bytes through the end of that value. */
int json_parse_first(const char *text, size_t len, json_t **out, size_t *used, char *err,
                     size_t err_len);
/* Whether j is an integer literal outside int64 as json_parse gives it
 * (and *digits its text, "-"? digits, when digits is not NULL). */
bool json_big_int(const json_t *j, const char **digits);
/* json_decref that takes NULL */
void json_free(json_t *j);

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

/* Appends j as JSON text in jansson's JSON_INDENT(2) layout, each real in
 * the fewest digits that read back as it, written as Python's repr (and so
 * protobuf's json_format) writes it: 0.1, 100.0, 1e-05, 1e+16, 5e-324.
 * 0, or -1 when out of memory. */
int json_print(const json_t *j, struct jbuf *out);
/* d in the fewest significant digits that read back as d, "[-]D[.DDD]e±XX"
 * in text[0..len) (len 40 is enough); with as_float, read back through
 * float32 and at least 6 digits, as protobuf's python (ToShortestFloat)
 * prints a float: 0.1f is "1.00000e-01", the smallest denormal
 * "1.40130e-45", not "1e-45". */
void json_shortest_text(double d, bool as_float, char *text, size_t len);

#endif
