/* core_speed.c: the core's speed now (core_speed.h); linked into
 * bench_pairs, and built as libcore_speed.so for the Python benchmarks,
 * which call it through ctypes. */
#include "core_speed.h"

#include <stdint.h>
#include <time.h>

#define CALIBRATION_ADDS 250000

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The empty asm keeps the compiler from folding the chain. */
double core_speed_ns_per_add(void)
{
    uint64_t x = 0, t0 = now_ns();
    for (long i = 0; i < CALIBRATION_ADDS; i++) {
        __asm__ volatile("" : "+r"(x));
        x++;
    }
    return (double)(now_ns() - t0) / CALIBRATION_ADDS;
}
