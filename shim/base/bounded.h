/* bounded.h: lock waits with an end, for the thread writing a report.
 *
 * A report is written while other threads run on, and at a signal or an
 * exit the holder of a lock the report wants may never release it: the
 * thread the signal interrupted (whose handler then called exit(), or waits
 * for the report), or a thread that is gone. So while a thread writes a
 * report (bounded_begin to bounded_end), each shim lock it takes through
 * these calls is waited for at most BOUNDED_LOCK_NS, and all of them
 * together at most BOUNDED_TOTAL_NS; a lock not had in time is given up and
 * counted, and the caller reads what it can without it or leaves that part
 * out (the report's status.locks_skipped says how many). Every other thread
 * waits as long as it takes, as with spin_lock: the tracking stays exact,
 * only a report can be approximate. The checks cost nothing until a lock
 * is found held. */
#ifndef GPULEAK_PATIENCE_H
#define GPULEAK_PATIENCE_H

#include <pthread.h>
#include <stdatomic.h>

#include "spin.h"

#define BOUNDED_LOCK_NS (10ull * 1000 * 1000)    /* one lock */
#define BOUNDED_TOTAL_NS (100ull * 1000 * 1000)  /* all of one report's */

extern __thread int bounded_on __attribute__((tls_model("initial-exec")));

/* The calling thread's waits are bounded from now, with the whole budget. */
void bounded_begin(void);

/* Ends the bounded waits; returns how many locks were given up since
 * bounded_begin. */
unsigned bounded_end(void);

/* Locks given up since bounded_begin, so far. */
unsigned bounded_given_up(void);

/* The slow paths: lock is held. Return 1 once taken, 0 when given up. */
int bounded_spin_wait(_Atomic int *lock);
int bounded_mutex_wait(pthread_mutex_t *mutex);

/* Takes a spin lock (release it with spin_unlock). Returns 1 when taken;
 * 0 only in a bounded thread that gave it up. */
static inline int bounded_spin_lock(_Atomic int *lock)
{
    if (atomic_exchange_explicit(lock, 1, memory_order_acquire) == 0)
        return 1;
    if (!bounded_on) {
        spin_lock(lock);
        return 1;
    }
    return bounded_spin_wait(lock);
}

/* Takes a mutex, as bounded_spin_lock takes a spin lock. */
static inline int bounded_mutex_lock(pthread_mutex_t *mutex)
{
    if (!bounded_on) {
        pthread_mutex_lock(mutex);
        return 1;
    }
    return pthread_mutex_trylock(mutex) == 0 || bounded_mutex_wait(mutex);
}

#endif
