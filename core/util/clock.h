/* SPDX-License-Identifier: MIT */
/* Monotonic time in nanoseconds, the one time base of the queue, the controller and stats. */
#ifndef PLUGDISK_CLOCK_H
#define PLUGDISK_CLOCK_H

#include <stdint.h>
#include <time.h>

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC 1000000000ull

static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* A clock source; unit tests substitute a fake one. */
typedef uint64_t (*clock_fn)(void *arg);

#endif
