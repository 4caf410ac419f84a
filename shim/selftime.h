/* selftime.h: the shim's own time in each call, when GPULEAK_SELF_TIME=1.
 *
 * What gpuleak adds to a program is the time its wrappers spend outside the
 * driver calls they forward. With GPULEAK_SELF_TIME=1 each wrapper reads a
 * clock when it starts, before and after the driver call, and when it ends,
 * and adds the difference to a per-thread tally (no shared write): four
 * reads of the TSC on x86-64 (CLOCK_MONOTONIC elsewhere), converted to
 * nanoseconds when read. Each interval between two reads holds about one
 * read's own cost, which is 10 ns on bare metal but can be hundreds in a
 * virtual machine that traps the TSC; selftime_init measures it and the
 * total leaves it out (selftime_clock_ns says how much). The report then says what the run
 * paid, which a comparison of whole runs on a noisy host cannot resolve.
 * Off (the default), each point is a load and a branch. Not counted: the
 * shim's start, the report at exit, and what its memory traffic costs the
 * program's own caches. */
#ifndef GPULEAK_SELFTIME_H
#define GPULEAK_SELFTIME_H

#include <errno.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "tally.h"

extern int selftime_on;
extern __thread uint64_t selftime_mark __attribute__((tls_model("initial-exec")));

/* Turns timing on when config asks for it and notes the clock's start, for
 * the conversion to nanoseconds. Called once when tracking starts. */
void selftime_init(int on);

/* Ticks of the clock the timing uses. */
static inline uint64_t selftime_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* The shim starts (or resumes, after the driver call) its own work. */
static inline void selftime_resume(void)
{
    if (__builtin_expect(selftime_on, 0))
        selftime_mark = selftime_ticks();
}

/* The shim's work stops: for the driver call (calls 0), or at the end of
 * the wrapper (calls 1). */
static inline void selftime_pause(uint64_t calls)
{
    if (__builtin_expect(selftime_on, 0)) {
        int saved = errno;  /* a thread's first count may allocate its block */
        tally_time_add(selftime_ticks() - selftime_mark, calls);
        errno = saved;
    }
}

/* The shim's own time so far in nanoseconds, less one clock read per
 * interval, and the calls it was taken over; both 0 when timing is off. */
uint64_t selftime_ns(void);
uint64_t selftime_calls(void);

/* What one read of the clock costs, in nanoseconds, as selftime_init
 * measured it: what selftime_ns left out for each interval. */
double selftime_clock_ns(void);

#endif
