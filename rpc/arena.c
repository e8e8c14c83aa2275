/* Bump allocator behind decoded messages (include/rdmx/codec.h). */
#include <stdlib.h>
#include <string.h>

#include <rdmx/codec.h>

#define ARENA_ALIGN 8u
#define ARENA_FIRST_CHUNK 256u
#define ARENA_MAX_CHUNK (1u << 20)

struct rdmx_arena_chunk {
	struct rdmx_arena_chunk *next;
	size_t size; /* usable bytes after the header */
};

/* The header is 16 bytes on LP64 and 8 on ILP32: data stays 8-aligned. */
static unsigned char *chunk_data(struct rdmx_arena_chunk *c)
{
	return (unsigned char *)(c + 1);
}

void rdmx_arena_init(struct rdmx_arena *a, void *buf, size_t size, size_t limit)
{
	uintptr_t start = (uintptr_t)buf, aligned;
	memset(a, 0, sizeof(*a));
	a->limit = limit;
	a->next_chunk = ARENA_FIRST_CHUNK;
	if (buf && size > ARENA_ALIGN) {
		aligned = (start + ARENA_ALIGN - 1) & ~(uintptr_t)(ARENA_ALIGN - 1);
		a->buf = buf;
		a->buf_size = size;
		a->cur = (unsigned char *)aligned;
		a->end = (unsigned char *)buf + size;
	}
}

void rdmx_arena_fini(struct rdmx_arena *a)
{
	struct rdmx_arena_chunk *c, *next;
	if (!a)
		return;
	for (c = a->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	memset(a, 0, sizeof(*a));
}

void rdmx_arena_reset(struct rdmx_arena *a)
{
	struct rdmx_arena_chunk *c, *next, *keep = NULL;
	for (c = a->chunks; c; c = c->next)
		if (!keep || c->size > keep->size)
			keep = c;
	for (c = a->chunks; c; c = next) {
		next = c->next;
		if (c != keep) {
			a->heap -= sizeof(*c) + c->size;
			free(c);
		}
	}
	a->used = 0;
	a->chunks = keep;
	if (keep) {
		keep->next = NULL;
		a->cur = chunk_data(keep);
		a->end = a->cur + keep->size;
	} else if (a->buf) {
		uintptr_t s = ((uintptr_t)a->buf + ARENA_ALIGN - 1) & ~(uintptr_t)(ARENA_ALIGN - 1);
		a->cur = (unsigned char *)s;
		a->end = (unsigned char *)a->buf + a->buf_size;
	} else {
		a->cur = a->end = NULL;
	}
}

static void *arena_grow(struct rdmx_arena *a, size_t size)
{
	struct rdmx_arena_chunk *c;
	size_t csize = a->next_chunk > size ? a->next_chunk : size;
	if (csize > SIZE_MAX - sizeof(*c))
		return NULL;
	c = malloc(sizeof(*c) + csize);
	if (!c)
		return NULL;
	c->size = csize;
	c->next = a->chunks;
	a->chunks = c;
	a->heap += sizeof(*c) + csize;
	if (a->next_chunk < ARENA_MAX_CHUNK)
		a->next_chunk *= 2;
	a->cur = chunk_data(c) + size;
	a->end = chunk_data(c) + csize;
	a->used += size;
	return chunk_data(c);
}

void *rdmx_arena_alloc(struct rdmx_arena *a, size_t size)
{
	void *p;
	if (size > SIZE_MAX - ARENA_ALIGN)
		return NULL;
	size = size ? (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1) : ARENA_ALIGN;
	if (a->limit && (size > a->limit || a->used > a->limit - size))
		return NULL;
	if (a->cur && (size_t)(a->end - a->cur) >= size) {
		p = a->cur;
		a->cur += size;
		a->used += size;
		return p;
	}
	return arena_grow(a, size);
}
