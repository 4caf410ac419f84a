/* lifecycle.h: when tracking starts, when it stops, and the report at exit.
 *
 * Tracking starts on the first call that reaches a door, not at load time,
 * so processes the preload reaches that never touch CUDA (shells, compilers)
 * pay nothing, print nothing and write no report. */
#ifndef GPULEAK_LIFECYCLE_H
#define GPULEAK_LIFECYCLE_H

#include <stdatomic.h>
#include <stdint.h>

enum lifecycle_state { LIFECYCLE_IDLE, LIFECYCLE_TRACKING, LIFECYCLE_OFF };

extern _Atomic int lifecycle_state_now;

struct timeline_point;
typedef void (*lifecycle_sampler_t)(struct timeline_point *point);

/* Starts tracking on first use (reads GPULEAK_*, sets up the tables with
 * sampler filling the timeline's points, finds Python) and says whether
 * this call should be recorded. Thread-safe: other threads wait while one
 * starts it. Leaves errno as it found it, so that a wrapper need not save
 * it on every call. Returns 1 while tracking, 0 when off. */
int lifecycle_start_slow(lifecycle_sampler_t sampler);

/* Whether this process owes a report at exit: tracking started here (not
 * in the parent of a forked child). */
int lifecycle_report_owed(void);

static inline int lifecycle_tracking(lifecycle_sampler_t sampler)
{
    int state = atomic_load_explicit(&lifecycle_state_now, memory_order_acquire);
    if (state == LIFECYCLE_TRACKING)
        return 1;
    return state == LIFECYCLE_IDLE ? lifecycle_start_slow(sampler) : 0;
}

/* Turns tracking off for good after a failure inside the shim, with one
 * warning naming the reason; every later call is forwarded untouched and the
 * report, still written at exit, says tracking stopped and why. */
void lifecycle_disable(const char *reason);

/* How long the exit, or a signal's handler, waits for a final report
 * another thread writes before the process goes on to its end anyway. */
#define LIFECYCLE_FINAL_WAIT_MS 5000

/* Stops tracking before a final report (exit, fatal signal): later calls
 * are forwarded untouched, so the report does not race them. */
void lifecycle_stop(void);

/* Why tracking stopped, or NULL while it runs. */
const char *lifecycle_stop_reason(void);

/* CLOCK_REALTIME minus tracker_now_ns() at start, in ns: adding it to a
 * tracker time gives nanoseconds since the Unix epoch. */
uint64_t lifecycle_epoch_offset_ns(void);

/* Which PyTorch allocator the run used, for the report: "native" (the
 * program's allocator untouched, the default), "cudaMallocAsync" (set by
 * gpuleak on request, GPULEAK_TORCH_ALLOCATOR=async: each tensor is one
 * driver allocation), or "user" (the program set PYTORCH_CUDA_ALLOC_CONF
 * itself, never overridden). */
const char *lifecycle_torch_mode(void);

/* tracker_now_ns() when tracking started. */
uint64_t lifecycle_started_ns(void);

#endif
