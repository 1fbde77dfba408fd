/* SPDX-License-Identifier: GPL-2.0-only */
/* clock.h - the daemon's clocks in nanoseconds: monotonic for timers, real for profile times. */
#ifndef RP_CLOCK_H
#define RP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline int64_t clock_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

#endif
