/* A walk over untrusted msgpack bytes before msgpack-c sees them: msgpack-c
 * allocates for a container as soon as it reads its header, so a 5-byte
 * "array of 4 billion elements" would make it try. Here every element must
 * take at least one of the bytes left, and nesting stays within 8 levels. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stddef.h>
#include <stdint.h>

#include <rdmx/status.h>

#include "registry_proto.h"

#define MAX_DEPTH 8

static int rd_be(const uint8_t *p, size_t len, size_t *off, unsigned bytes, uint64_t *v)
{
	if (len - *off < bytes)
		return -1;
	*v = 0;
	for (unsigned i = 0; i < bytes; i++)
		*v = *v << 8 | p[(*off)++];
	return 0;
}

/* Skips one object. Every element of a container takes at least one byte,
 * so a count larger than the bytes left is a lie we refuse before
 * msgpack-c would allocate for it. */
static int walk(const uint8_t *p, size_t len, size_t *off, int depth)
{
	uint64_t n = 0;
	int container = 0;
	uint8_t b;

	if (depth > MAX_DEPTH || *off >= len)
		return -1;
	b = p[(*off)++];
	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
		return 0;
	if ((b & 0xf0) == 0x80) {
		n = (uint64_t)(b & 0x0f) * 2;
		container = 1;
	} else if ((b & 0xf0) == 0x90) {
		n = b & 0x0f;
		container = 1;
	} else if ((b & 0xe0) == 0xa0) {
		n = b & 0x1f;
	} else {
		switch (b) {
		case 0xc4:
		case 0xd9:
			if (rd_be(p, len, off, 1, &n))
				return -1;
			break;
		case 0xc5:
		case 0xda:
			if (rd_be(p, len, off, 2, &n))
				return -1;
			break;
		case 0xc6:
		case 0xdb:
			if (rd_be(p, len, off, 4, &n))
				return -1;
			break;
		case 0xc7:
			if (rd_be(p, len, off, 1, &n))
				return -1;
			n += 1;
			break;
		case 0xc8:
			if (rd_be(p, len, off, 2, &n))
				return -1;
			n += 1;
			break;
		case 0xc9:
			if (rd_be(p, len, off, 4, &n))
				return -1;
			n += 1;
			break;
		case 0xca:
			n = 4;
			break;
		case 0xcb:
			n = 8;
			break;
		case 0xcc:
		case 0xd0:
			n = 1;
			break;
		case 0xcd:
		case 0xd1:
			n = 2;
			break;
		case 0xce:
		case 0xd2:
			n = 4;
			break;
		case 0xcf:
		case 0xd3:
			n = 8;
			break;
		case 0xd4:
			n = 2;
			break;
		case 0xd5:
			n = 3;
			break;
		case 0xd6:
			n = 5;
			break;
		case 0xd7:
			n = 9;
			break;
		case 0xd8:
			n = 17;
			break;
		case 0xdc:
			if (rd_be(p, len, off, 2, &n))
				return -1;
			container = 1;
			break;
		case 0xdd:
			if (rd_be(p, len, off, 4, &n))
				return -1;
			container = 1;
			break;
		case 0xde:
			if (rd_be(p, len, off, 2, &n))
				return -1;
			n *= 2;
			container = 1;
			break;
		case 0xdf:
			if (rd_be(p, len, off, 4, &n))
				return -1;
			n *= 2;
			container = 1;
			break;
		default:
			return -1; /* 0xc1: never used */
		}
	}
	if (n > len - *off)
		return -1;
	if (!container) {
		*off += n;
		return 0;
	}
	for (uint64_t i = 0; i < n; i++)
		if (walk(p, len, off, depth + 1))
			return -1;
	return 0;
}

int rdmx__msgpack_precheck(const void *buf, size_t len)
{
	size_t off = 0;

	return walk(buf, len, &off, 0) == 0 && off == len ? RDMX_OK : RDMX_E_PROTOCOL;
}
