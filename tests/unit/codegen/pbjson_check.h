/* pbjson_check — what the pbjson tests (test_json_golden.c,
 * test_corpus_rw.c) share: a JSON text's round trip through pbjson and the
 * generated codecs, and a comparison of two JSON values that says where
 * and how they differ. */
#ifndef RDMX_TESTS_PBJSON_CHECK_H
#define RDMX_TESTS_PBJSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <rdmx/codec.h>

#include "json.h"
#include "pbjson.h"

/* The generated codecs of one message type, behind one signature. */
struct type_ops {
	const char *name;
	size_t size;
	int (*dec)(void *m, const void *src, size_t n, struct rdmx_arena *a);
	size_t (*enc_size)(const void *m);
	int (*enc)(const void *m, void *dst, size_t n);
};

/* input -> pbjson -> generated decoder -> generated encoder -> pbjson: 0
 * with the printed JSON text in *out (jbuf_free it), or -1 with the reason
 * in why. */
int pbjson_round_trip(const struct gen_message *m, const struct type_ops *ops, const char *input,
                      struct jbuf *out, char *why, size_t wlen);

/* Whether a equals b (b is the expected value). Numbers compare as numbers
 * (an integer equals a real of its value) when numbers_by_value, else an
 * integer equals only the same integer. On a difference why says where
 * (path, extended in place from its current text) and what. */
bool json_same(const json_t *a, const json_t *b, bool numbers_by_value, char *path, size_t plen,
               char *why, size_t wlen);

#endif
