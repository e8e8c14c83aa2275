/* Private helpers shared by the channel and RPC files of rpc/: logging,
 * clock, a small hash map and the worker's timers. Nothing outside rpc/ (and its
 * unit tests) includes this file. */
#ifndef RDMX_RPC_INTERNAL_H
#define RDMX_RPC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <rdmx/log.h>
#include <rdmx/pe.h>
#include <rdmx/status.h>

#define RPC_LOG(level, ...) rdmx__log(RDMX_LOG_##level, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define RPC_ERR(...) RPC_LOG(ERROR, __VA_ARGS__)
#define RPC_WARN(...) RPC_LOG(WARNING, __VA_ARGS__)
#define RPC_DBG(...) RPC_LOG(DEBUG, __VA_ARGS__)

#define RPC_LIKELY(x) __builtin_expect(!!(x), 1)
#define RPC_UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline uint64_t rdmx__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Little-endian loads and stores (wire formats). */
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

/* ---- hash map: uint64 key -> non-NULL pointer (open addressing, linear
 * probing, backward-shift deletion; no tombstones) — rpc/map.c ---- */
struct rdmx__map_slot {
	uint64_t key;
	void *val; /* NULL: empty */
};
struct rdmx__map {
	struct rdmx__map_slot *slots;
	uint32_t cap; /* power of two, 0 before the first insert */
	uint32_t len;
};
void rdmx__map_init(struct rdmx__map *m);
void rdmx__map_fini(struct rdmx__map *m);
void *rdmx__map_get(const struct rdmx__map *m, uint64_t key);
/* RDMX_E_EXISTS when the key is present, RDMX_E_NOMEM, RDMX_E_INVAL (NULL val). */
int rdmx__map_put(struct rdmx__map *m, uint64_t key, void *val);
/* Returns the removed value or NULL. */
void *rdmx__map_del(struct rdmx__map *m, uint64_t key);
/* Iteration: *pos starts at 0; returns NULL at the end. Not stable across
 * inserts or deletes (restart after changing the map). */
void *rdmx__map_next(const struct rdmx__map *m, uint32_t *pos, uint64_t *key);

/* ---- timers of the channel worker: an engine timer (rdmx/pe.h) whose
 * callback runs inside the worker's callback bracket (rpc/host.c) ---- */
struct rdmx__timer;
typedef void (*rdmx__timer_fn)(struct rdmx__timer *t);
struct rdmx__timer {
	struct rdmx_pe_timer pe_timer;
	rdmx__timer_fn fn;
};
static inline bool rdmx__timer_armed(const struct rdmx__timer *t)
{
	return rdmx_pe_timer_is_active(&t->pe_timer);
}

#endif
