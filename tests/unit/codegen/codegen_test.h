/* Helpers shared by the codegen tests. */
#ifndef RDMX_CODEGEN_TEST_H
#define RDMX_CODEGEN_TEST_H

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rdmx/codec.h>
#include <rdmx/status.h>

/* Encodes *in (type T) into a new heap buffer, checking size == bytes written. */
#define ENCODE_NEW(T, in, lenp) T##_encode_new_((in), (lenp))

#define DEFINE_ENCODE_NEW(T)                                                                       \
	static inline uint8_t *T##_encode_new_(const T *in, size_t *len)                           \
	{                                                                                          \
		size_t n = T##_encoded_size(in);                                                   \
		uint8_t *b = malloc(n + 16);                                                       \
		int rc;                                                                            \
		cr_assert_not_null(b);                                                             \
		memset(b, 0xee, n + 16);                                                           \
		rc = T##_encode(in, b, n);                                                         \
		cr_assert_eq(rc, 0, #T "_encode: %s", rdmx_err_name(rc));                          \
		cr_assert_eq(b[n], 0xee, #T "_encode wrote past the size");                        \
		cr_assert_neq(T##_encode(in, b, n + 1), 0, "a larger len is refused");             \
		if (n > 0)                                                                         \
			cr_assert_neq(T##_encode(in, b, n - 1), 0, "a shorter len is refused");    \
		rc = T##_encode(in, b, n);                                                         \
		cr_assert_eq(rc, 0);                                                               \
		*len = n;                                                                          \
		return b;                                                                          \
	}                                                                                          \
	/* decode(encode(in)) into *out, then re-encode: same bytes. The input buffer              \
	 * is returned (out may point into it) */                                                  \
	static inline uint8_t *T##_roundtrip_(const T *in, T *out, struct rdmx_arena *a,           \
	                                      const struct rdmx_decode_opts *o)                    \
	{                                                                                          \
		size_t n, n2;                                                                      \
		uint8_t *b = T##_encode_new_(in, &n), *c;                                          \
		int rc = T##_decode(out, b, n, a, o);                                              \
		cr_assert_eq(rc, 0, #T "_decode: %s", rdmx_err_name(rc));                          \
		c = T##_encode_new_(out, &n2);                                                     \
		cr_assert_eq(n2, n, "re-encoded size differs");                                    \
		cr_assert_eq(memcmp(b, c, n), 0, "re-encoded bytes differ");                       \
		free(c);                                                                           \
		return b;                                                                          \
	}

#define ROUNDTRIP(T, in, out, arena, opts) T##_roundtrip_((in), (out), (arena), (opts))

#endif
