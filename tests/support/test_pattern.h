/* Deterministic payloads and checksums for the batteries: the bytes of a
 * (length, seed) pair are always the same, so a receiver checks what it got
 * without a copy of what was sent. */
#ifndef RDMX_TEST_PATTERN_H
#define RDMX_TEST_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void pattern_fill(void *p, size_t len, uint32_t seed);
bool pattern_check(const void *p, size_t len, uint32_t seed);
/* FNV-1a, 64-bit */
uint64_t checksum64(const void *p, size_t len);

#endif
