/* The one byte-order header: little-endian loads and stores of the wire
 * formats (channel rings and control messages, RPC headers), byte by byte,
 * so alignment and host order never matter. */
#ifndef RDMX_COMMON_BYTEORDER_H
#define RDMX_COMMON_BYTEORDER_H

#include <stdint.h>

static inline void rdmx__st16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}
static inline void rdmx__st32(void *p, uint32_t v)
{
	uint8_t *b = p;
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}
static inline void rdmx__st64(void *p, uint64_t v)
{
	uint8_t *b = p;
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rdmx__ld16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | (b[1] << 8));
}
static inline uint32_t rdmx__ld32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
	       ((uint32_t)b[3] << 24);
}
static inline uint64_t rdmx__ld64(const void *p)
{
	return (uint64_t)rdmx__ld32(p) | ((uint64_t)rdmx__ld32((const uint8_t *)p + 4) << 32);
}

#endif
