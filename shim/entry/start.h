/* start.h: when tracking starts, and the report at exit.
 *
 * Tracking starts on the first call that reaches a door, not at load time,
 * so processes the preload reaches that never touch CUDA (shells, compilers)
 * pay nothing, print nothing and write no report. The report at exit is
 * written from this module's destructor. */
#ifndef GPULEAK_START_H
#define GPULEAK_START_H

#include "lifecycle.h"

struct timeline_point;
typedef void (*start_sampler_t)(struct timeline_point *point);

/* Starts tracking on first use (reads GPULEAK_*, sets up the tables with
 * sampler filling the timeline's points, finds Python, starts the reporter)
 * and says whether this call should be recorded. Thread-safe: other threads
 * wait while one starts it. Leaves errno as it found it, so that a wrapper
 * need not save it on every call. Returns 1 while tracking, 0 when off. */
int start_slow(start_sampler_t sampler);

/* start_slow's fast path: 1 while tracking, 0 when off. */
static inline int start_tracking(start_sampler_t sampler)
{
    int state = atomic_load_explicit(&lifecycle_state_now, memory_order_acquire);
    if (state == LIFECYCLE_TRACKING)
        return 1;
    return state == LIFECYCLE_IDLE ? start_slow(sampler) : 0;
}

#endif
