/* clock.h: the precise monotonic clock, for durations the shim measures
 * now and then (a growth checkpoint, the clock's own cost at start). The
 * hot path reads the coarse clock instead (tracker_now_ns). */
#ifndef GPULEAK_CLOCK_H
#define GPULEAK_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
