/* libFuzzer target: the generated msgpack decoders (schema:
 * tests/unit/codegen/protos/all.proto). Byte 0 picks the message type, byte 1
 * the options (copy, depth), the rest is the input. Properties: no crash, no
 * leak, arena use within the decode budget, and whatever decodes re-encodes
 * to bytes that decode and re-encode to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "all.rdmx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			abort();                                                                   \
	} while (0)

#define ONE(T, ratio)                                                                              \
	do {                                                                                       \
		T m, m2;                                                                           \
		size_t n, n2;                                                                      \
		uint8_t *b, *b2;                                                                   \
		if (T##_decode(&m, in, len, &arena, &opts) != 0)                                   \
			break;                                                                     \
		CHECK(rdmx_arena_used(&arena) <= (ratio)*len + RDMX_DECODE_ALLOC_FLOOR);           \
		n = T##_encoded_size(&m);                                                          \
		b = malloc(n);                                                                     \
		CHECK(b &&T##_encode(&m, b, n) == 0);                                              \
		CHECK(T##_decode(&m2, b, n, &arena, &opts) == 0);                                  \
		n2 = T##_encoded_size(&m2);                                                        \
		CHECK(n2 == n);                                                                    \
		b2 = malloc(n2);                                                                   \
		CHECK(b2 &&T##_encode(&m2, b2, n2) == 0);                                          \
		CHECK(memcmp(b, b2, n) == 0);                                                      \
		free(b);                                                                           \
		free(b2);                                                                          \
	} while (0)

/* the largest struct of the schema bounds every type's decode budget ratio */
static size_t largest(void)
{
	const size_t sizes[] = {sizeof(rt_Scalars),  sizeof(rt_Optionals),    sizeof(rt_Repeated),
	                        sizeof(rt_Maps),     sizeof(rt_Oneofs),       sizeof(rt_Tree),
	                        sizeof(rt_BigKeys),  sizeof(rt_Wide),         sizeof(rt_Empty),
	                        sizeof(rt_Reserved), RDMX_DECODE_ALLOC_FACTOR};
	size_t i, m = 0;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (sizes[i] > m)
			m = sizes[i];
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmx_arena arena;
	struct rdmx_decode_opts opts;
	const uint8_t *in;
	size_t len;
	size_t big = largest();
	if (size < 2)
		return 0;
	memset(&opts, 0, sizeof(opts));
	opts.copy = data[1] & 1;
	opts.max_depth = (unsigned)(data[1] >> 1) % 40;
	in = data + 2;
	len = size - 2;
	rdmx_arena_init(&arena, NULL, 0, 0);
	switch (data[0] % 10) {
	case 0:
		ONE(rt_Scalars, big);
		break;
	case 1:
		ONE(rt_Optionals, big);
		break;
	case 2:
		ONE(rt_Repeated, big);
		break;
	case 3:
		ONE(rt_Maps, big);
		break;
	case 4:
		ONE(rt_Oneofs, big);
		break;
	case 5:
		ONE(rt_Tree, big);
		break;
	case 6:
		ONE(rt_BigKeys, big);
		break;
	case 7:
		ONE(rt_Wide, big);
		break;
	case 8:
		ONE(rt_Empty, big);
		break;
	default:
		ONE(rt_Reserved, big);
		break;
	}
	rdmx_arena_fini(&arena);
	return 0;
}
