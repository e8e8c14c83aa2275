/* The one monotonic clock: CLOCK_MONOTONIC in nanoseconds (vDSO: no system
 * call). Timer due times (rdmx_pe_now_ns), deadlines and latencies all read
 * it. */
#ifndef RDMX_COMMON_CLOCK_H
#define RDMX_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t rdmx__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t rdmx__now_ms(void)
{
	return rdmx__now_ns() / 1000000u;
}

#endif
