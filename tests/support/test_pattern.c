#include "test_pattern.h"

static uint8_t pattern_byte(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u + 0x9e37u;

	x ^= x >> 13;
	return (uint8_t)(x ^ (x >> 7));
}

void pattern_fill(void *p, size_t len, uint32_t seed)
{
	uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = pattern_byte(i, seed);
}

bool pattern_check(const void *p, size_t len, uint32_t seed)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != pattern_byte(i, seed))
			return false;
	return true;
}

uint64_t checksum64(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}
