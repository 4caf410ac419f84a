/* lifecycle.h: the state every part of the shim reads: whether tracking
 * runs (idle until the first CUDA call, then tracking, then off for good),
 * why it stopped, when it started, which PyTorch allocator the program uses.
 * start.h moves it from idle; anything may turn it off. */
#ifndef GPULEAK_LIFECYCLE_H
#define GPULEAK_LIFECYCLE_H

#include <stdatomic.h>
#include <stdint.h>

enum lifecycle_state { LIFECYCLE_IDLE, LIFECYCLE_TRACKING, LIFECYCLE_OFF };

extern _Atomic int lifecycle_state_now;

/* Notes that tracking is starting (a child forked from now on never starts
 * again) and reads the clocks lifecycle_epoch_offset_ns and
 * lifecycle_started_ns give. start.c calls it first. */
void lifecycle_begin(void);

/* Tracking runs from now, and the report is owed at exit. */
void lifecycle_tracking_on(void);

/* Whether this process owes a report at exit: tracking started here (not
 * in the parent of a forked child, nor of a vfork child). Async-signal-safe. */
int lifecycle_report_owed(void);

/* Notes that a thread has begun the process's exit; returns 1 when one had
 * already (exits.c holds such a second thread back). Async-signal-safe. */
int lifecycle_exit_begins(void);

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

/* CLOCK_REALTIME minus clock_coarse_ns() at start, in ns: adding it to a
 * tracker time gives nanoseconds since the Unix epoch. */
uint64_t lifecycle_epoch_offset_ns(void);

/* Which PyTorch allocator the run used, for the report: "native" (the
 * program's allocator untouched, the default), "cudaMallocAsync" (set by
 * gpuleak on request, GPULEAK_TORCH_ALLOCATOR=async: each tensor is one
 * driver allocation), or "user" (the program set PYTORCH_CUDA_ALLOC_CONF
 * itself, never overridden). */
const char *lifecycle_torch_mode(void);

/* clock_coarse_ns() when tracking started. */
uint64_t lifecycle_started_ns(void);

#endif
