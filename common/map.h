/* The one hash map (common/map.c): uint64 key -> non-NULL pointer. */
#ifndef RDMX_COMMON_MAP_H
#define RDMX_COMMON_MAP_H

#include <stdint.h>

#include <rdmx/status.h>

/* ---- hash map: uint64 key -> non-NULL pointer (open addressing, linear
 * probing, backward-shift deletion; no tombstones) — common/map.c ---- */
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

#endif
