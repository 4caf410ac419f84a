#include "selftime.h"

int selftime_on;
__thread uint64_t selftime_mark __attribute__((tls_model("initial-exec")));

static uint64_t start_ticks, start_ns;

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void selftime_init(int on)
{
    start_ticks = selftime_ticks();
    start_ns = monotonic_ns();
    selftime_on = on;
}

/* Ticks become nanoseconds at the rate the clock ran since selftime_init:
 * the TSC's rate, measured rather than assumed (it is constant on every
 * x86-64 CPU that has an invariant TSC, which is all of them in service). */
uint64_t selftime_ns(void)
{
    if (!selftime_on)
        return 0;
    uint64_t ticks = tally_time_sum(0);
    uint64_t elapsed_ticks = selftime_ticks() - start_ticks;
    uint64_t elapsed_ns = monotonic_ns() - start_ns;
    if (elapsed_ticks == 0)
        return 0;
    return (uint64_t)((long double)ticks * (long double)elapsed_ns / (long double)elapsed_ticks);
}

uint64_t selftime_calls(void)
{
    return selftime_on ? tally_time_sum(1) : 0;
}
