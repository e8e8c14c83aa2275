/* The one monotonic clock: CLOCK_MONOTONIC in nanoseconds (vDSO: no system
 * call). Timer due times (rdmx_pe_now_ns), deadlines and latencies all read
 * it. */
#ifndef RDMX_COMMON_CLOCK_H
#define RDMX_COMMON_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t rdmx__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The time `us` microseconds after `start_ns` (rdmx__now_ns clock), a
 * deadline: a timeout too long to count in 64-bit nanoseconds is held at
 * about 292 years past the start instead of wrapping into the past. */
static inline uint64_t rdmx__deadline_after(uint64_t start_ns, uint64_t us)
{
	if (us > UINT64_MAX / 2000u)
		us = UINT64_MAX / 2000u;
	return start_ns + us * 1000u;
}

/* Whether `due` (rdmx__now_ns clock) has come, with no clock-source read
 * when it is far: CLOCK_MONOTONIC_COARSE is the same clock as of its last
 * tick (never ahead of it, a tick behind at most: 10 ms with the slowest
 * tick, HZ=100), read from the vDSO page alone (6 ns against 43 ns for the
 * full read on a kvm-clock guest). A due time more than RDMX__COARSE_SLACK_NS
 * past it is still to come: false, *now untouched. Otherwise the full clock
 * decides and *now gets its reading. Never true early. */
#define RDMX__COARSE_SLACK_NS 10000000u

/* The coarse reading itself: never past rdmx__now_ns(), at most
 * RDMX__COARSE_SLACK_NS behind it. */
static inline uint64_t rdmx__now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* rdmx__due with a coarse reading its caller already made. */
static inline bool rdmx__due_after(uint64_t due, uint64_t coarse, uint64_t *now)
{
	if (due > coarse + RDMX__COARSE_SLACK_NS)
		return false;
	*now = rdmx__now_ns();
	return due <= *now;
}

static inline bool rdmx__due(uint64_t due, uint64_t *now)
{
	return rdmx__due_after(due, rdmx__now_coarse_ns(), now);
}

/* A stamp that starts a timeout, from the coarse reading alone: never
 * before rdmx__now_ns(), at most RDMX__COARSE_SLACK_NS after it. A timeout
 * counted from it ends that much late at most, never early; the stamp costs
 * no clock-source read (a sign of life on every message). */
static inline uint64_t rdmx__stamp_ns(void)
{
	return rdmx__now_coarse_ns() + RDMX__COARSE_SLACK_NS;
}

static inline uint64_t rdmx__now_ms(void)
{
	return rdmx__now_ns() / 1000000u;
}

#endif
