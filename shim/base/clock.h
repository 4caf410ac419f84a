/* clock.h: the shim's two monotonic clocks. The coarse one is the
 * tracker's time of every event; the precise one is for durations measured
 * now and then (a growth checkpoint, the clock's own cost at start). */
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

/* The coarse clock (a tick, 1 to 4 ms, of resolution) costs a few ns where
 * the precise one costs about 25: it is read on every allocation and free,
 * and timeline points, growth checkpoints and the peak's time need no more
 * than millisecond resolution. */
static inline uint64_t clock_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's own CPU time: what a piece of work cost it, without
 * the time it spent descheduled (on a loaded machine that can be
 * milliseconds in the middle of microseconds of work). A system call:
 * for measurements now and then only. */
static inline uint64_t clock_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
