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
 * total leaves it out (selftime_read says how much). Each stack capture
 * is timed too, split into its native stack, its Python frames and its
 * interning in the stack depot, with the frames the unwinder took from
 * the thread's recent stacks (unwind.h). The report then says what the
 * run paid, which a comparison of whole runs on a noisy host cannot
 * resolve.
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

#include "counts.h"
#include "unwind.h"

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
        const uint64_t add[COUNTS_TIME_FIELDS] = {
            [COUNTS_TIME_TICKS] = selftime_ticks() - selftime_mark,
            [COUNTS_TIME_CALLS] = calls,
            [COUNTS_TIME_INTERVALS] = 1,
        };
        counts_time_add(add);
        errno = saved;
    }
}

/* A stack capture's clock readings: where the time of a call goes. */
typedef struct {
    uint64_t start, native_end, python_end;
    unwind_counts_t before;  /* the thread's unwinder counts at the start */
} selftime_capture_t;

/* A capture starts with its native stack. */
static inline void selftime_capture_begin(selftime_capture_t *c)
{
    if (__builtin_expect(selftime_on, 0)) {
        c->before = unwind_counts();
        c->start = selftime_ticks();
    }
}

/* One part of the capture is done (the native stack, then the Python
 * frames): notes when in *at. */
static inline void selftime_capture_mark(uint64_t *at)
{
    if (__builtin_expect(selftime_on, 0))
        *at = selftime_ticks();
}

/* The capture is done, its stack interned, with native_frames native
 * frames kept (the unwinder's own count is of every frame it gave, its own
 * and those past the depth included); trusted: its site came from a
 * trusted Python line, with no native walk (capture.c). */
static inline void selftime_capture_end(const selftime_capture_t *c, int native_frames, int trusted)
{
    if (__builtin_expect(selftime_on, 0)) {
        uint64_t end = selftime_ticks();
        unwind_counts_t after = unwind_counts();
        int saved = errno;
        const uint64_t add[COUNTS_TIME_FIELDS] = {
            [COUNTS_TIME_CAPTURES] = 1,
            [COUNTS_TIME_NATIVE_TICKS] = c->native_end - c->start,
            [COUNTS_TIME_PYTHON_TICKS] = c->python_end - c->native_end,
            [COUNTS_TIME_INTERN_TICKS] = end - c->python_end,
            [COUNTS_TIME_NATIVE_FRAMES] = native_frames > 0 ? (uint64_t)native_frames : 0,
            [COUNTS_TIME_UNWOUND_FRAMES] = after.frames - c->before.frames,
            [COUNTS_TIME_REUSED_FRAMES] = after.reused - c->before.reused,
            [COUNTS_TIME_TRUSTED] = trusted != 0,
        };
        counts_time_add(add);
        errno = saved;
    }
}

/* The shim's own time over the run, summed over every thread; all zero
 * when timing is off. Times are in nanoseconds with one clock read per
 * interval left out (the four reads a capture adds are left out of the
 * total too); what timing costs beyond its reads (a few loads and stores a
 * call) is not. */
typedef struct {
    uint64_t ns, calls;             /* own time, and the calls it was taken over */
    uint64_t captures;              /* stacks captured in those calls */
    uint64_t native_ns, python_ns;  /* of ns: taking native stacks, Python frames, */
    uint64_t intern_ns;             /* and finding or adding them in the stack depot */
    uint64_t native_frames;         /* native frames kept */
    uint64_t unwound_frames;        /* frames the shim's own unwinder gave */
    uint64_t reused_frames;         /* of them, taken from the thread's recent stacks */
    uint64_t trusted;               /* captures of a trusted Python line: no native walk */
    double clock_ns;                /* one read of the clock, as selftime_init measured it */
} selftime_totals_t;

void selftime_read(selftime_totals_t *out);

#endif
