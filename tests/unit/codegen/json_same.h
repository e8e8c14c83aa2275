/* json_same — the comparison of the pbjson tests (test_json_golden.c,
 * test_corpus_rw.c): two JSON values equal member by member, with the
 * place and the reason of the first difference. */
#ifndef RDMX_TESTS_JSON_SAME_H
#define RDMX_TESTS_JSON_SAME_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Whether a equals b (b is the expected value). Numbers compare as numbers
 * (an integer equals a real of its value) when numbers_by_value, else an
 * integer equals only the same integer. On a difference why says where
 * (path, extended in place from its current text) and what. */
bool json_same(const json_t *a, const json_t *b, bool numbers_by_value, char *path, size_t plen,
               char *why, size_t wlen);

#endif
