/* The one byte-order header: little-endian loads and stores of the wire
 * formats (channel rings and control messages, RPC headers). Each is one
 * unaligned memcpy (a single move once compiled) plus a byte swap on a
 * big-endian host, so alignment and host order never matter. */
#ifndef RDMX_COMMON_BYTEORDER_H
#define RDMX_COMMON_BYTEORDER_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RDMX__LE16(v) __builtin_bswap16(v)
#define RDMX__LE32(v) __builtin_bswap32(v)
#define RDMX__LE64(v) __builtin_bswap64(v)
#else
#define RDMX__LE16(v) (v)
#define RDMX__LE32(v) (v)
#define RDMX__LE64(v) (v)
#endif

static inline void rdmx__st16(void *p, uint16_t v)
{
	v = RDMX__LE16(v);
	memcpy(p, &v, sizeof(v));
}
static inline void rdmx__st32(void *p, uint32_t v)
{
	v = RDMX__LE32(v);
	memcpy(p, &v, sizeof(v));
}
static inline void rdmx__st64(void *p, uint64_t v)
{
	v = RDMX__LE64(v);
	memcpy(p, &v, sizeof(v));
}
static inline uint16_t rdmx__ld16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return RDMX__LE16(v);
}
static inline uint32_t rdmx__ld32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return RDMX__LE32(v);
}
static inline uint64_t rdmx__ld64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return RDMX__LE64(v);
}

#endif
