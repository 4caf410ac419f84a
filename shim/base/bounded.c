#define _GNU_SOURCE
#include "bounded.h"

#include <sched.h>
#include <stdint.h>
#include <time.h>

__thread int bounded_on __attribute__((tls_model("initial-exec")));
static __thread uint64_t spent_ns __attribute__((tls_model("initial-exec")));
static __thread unsigned given_up __attribute__((tls_model("initial-exec")));

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bounded_begin(void)
{
    spent_ns = 0;
    given_up = 0;
    bounded_on = 1;
}

unsigned bounded_end(void)
{
    bounded_on = 0;
    return given_up;
}

unsigned bounded_given_up(void)
{
    return given_up;
}

/* The end of the wait that starts at start: a lock's share, or what is left
 * of the budget when less (none once it is spent: one more try only). */
static uint64_t deadline(uint64_t start)
{
    uint64_t left = spent_ns < BOUNDED_TOTAL_NS ? BOUNDED_TOTAL_NS - spent_ns : 0;
    return start + (left < BOUNDED_LOCK_NS ? left : BOUNDED_LOCK_NS);
}

/* Charges a wait to the budget; returns taken, counting a lock given up. */
static int charge(uint64_t start, int taken)
{
    spent_ns += now_ns() - start;
    if (!taken)
        given_up++;
    return taken;
}

/* Waits as spin_lock does (the holder may be descheduled: yield, then
 * sleep), watching the clock. */
int bounded_spin_wait(_Atomic int *lock)
{
    uint64_t start = now_ns(), end = deadline(start);
    for (unsigned spins = 0;; spins++) {
        if (atomic_load_explicit(lock, memory_order_relaxed) == 0
            && atomic_exchange_explicit(lock, 1, memory_order_acquire) == 0)
            return charge(start, 1);
        if (spins >= 100 && now_ns() >= end)
            return charge(start, 0);
        spin_backoff(spins);
    }
}

int bounded_mutex_wait(pthread_mutex_t *mutex)
{
    uint64_t start = now_ns(), end = deadline(start);
    struct timespec until = { (time_t)(end / 1000000000ull), (long)(end % 1000000000ull) };
    return charge(start, pthread_mutex_clocklock(mutex, CLOCK_MONOTONIC, &until) == 0);
}
