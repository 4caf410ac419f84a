#include "selftime.h"
#include "clock.h"

#include <stdlib.h>

int selftime_on;
__thread uint64_t selftime_mark __attribute__((tls_model("initial-exec")));

static uint64_t start_ticks, start_ns;
static uint64_t read_ticks;  /* what one read of the clock costs, in ticks */

#define CALIBRATION_READS 63

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The median gap between two back-to-back reads: an interval the shim
 * times holds about that much of the clock's own cost. The median, so an
 * interrupt during one pair does not count. */
static uint64_t measure_read_ticks(void)
{
    uint64_t gaps[CALIBRATION_READS];
    for (int i = 0; i < CALIBRATION_READS; i++) {
        uint64_t t0 = selftime_ticks();
        gaps[i] = selftime_ticks() - t0;
    }
    qsort(gaps, CALIBRATION_READS, sizeof gaps[0], compare_u64);
    return gaps[CALIBRATION_READS / 2];
}

void selftime_init(int on)
{
    read_ticks = on ? measure_read_ticks() : 0;
    start_ticks = selftime_ticks();
    start_ns = clock_monotonic_ns();
    selftime_on = on;
}

/* Ticks as nanoseconds, at the rate the clock ran since selftime_init: the
 * TSC's rate, measured rather than assumed (it is constant on every x86-64
 * CPU that has an invariant TSC, which is all of them in service). */
static long double ticks_to_ns(long double ticks)
{
    uint64_t elapsed_ticks = selftime_ticks() - start_ticks;
    uint64_t elapsed_ns = clock_monotonic_ns() - start_ns;
    return elapsed_ticks == 0 ? 0 : ticks * (long double)elapsed_ns / (long double)elapsed_ticks;
}

/* ticks less reads clock reads, as nanoseconds; 0 when the reads cover it. */
static uint64_t clock_free_ns(uint64_t ticks, uint64_t reads)
{
    uint64_t clock = reads * read_ticks;
    return ticks > clock ? (uint64_t)ticks_to_ns((long double)(ticks - clock)) : 0;
}

void selftime_read(selftime_totals_t *out)
{
    *out = (selftime_totals_t){ 0 };
    if (!selftime_on)
        return;
    uint64_t sums[COUNTS_TIME_FIELDS];
    for (int i = 0; i < COUNTS_TIME_FIELDS; i++)
        sums[i] = counts_time_sum((counts_time_t)i);
    uint64_t captures = sums[COUNTS_TIME_CAPTURES];
    out->ns = clock_free_ns(sums[COUNTS_TIME_TICKS], sums[COUNTS_TIME_INTERVALS] + 4 * captures);
    out->calls = sums[COUNTS_TIME_CALLS];
    out->captures = captures;
    out->native_ns = clock_free_ns(sums[COUNTS_TIME_NATIVE_TICKS], captures);
    out->python_ns = clock_free_ns(sums[COUNTS_TIME_PYTHON_TICKS], captures);
    out->intern_ns = clock_free_ns(sums[COUNTS_TIME_INTERN_TICKS], captures);
    out->native_frames = sums[COUNTS_TIME_NATIVE_FRAMES];
    out->unwound_frames = sums[COUNTS_TIME_UNWOUND_FRAMES];
    out->reused_frames = sums[COUNTS_TIME_REUSED_FRAMES];
    out->trusted = sums[COUNTS_TIME_TRUSTED];
    out->clock_ns = (double)ticks_to_ns((long double)read_ticks);
}
