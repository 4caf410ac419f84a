/* spin.h: the short lock the tracker's shards and the live rows use.
 *
 * It guards a few loads and stores, so taking it is one exchange and
 * releasing it a plain store, where a mutex costs a locked instruction each
 * way. A holder that is descheduled (or a walk of a whole shard) makes the
 * others yield rather than burn their time slice, and then sleep: under
 * SCHED_FIFO a yield never lets a lower-priority holder on the same core
 * run, a sleep does. */
#ifndef GPULEAK_SPIN_H
#define GPULEAK_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

/* One step of waiting for a held lock, the spins-th: pause, then yield,
 * then sleep (bounded.c waits the same way, with a clock). */
static inline void spin_backoff(unsigned spins)
{
    if (spins < 100) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (spins < 200) {
        sched_yield();
    } else {
        nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
    }
}

/* The wait for a held lock, out of line and apart from the hot code (a
 * lock is nearly always free): inlined, it took cache lines of every
 * event's code. */
static __attribute__((cold, noinline, unused)) void spin_lock_held(_Atomic int *lock)
{
    for (unsigned spins = 0;
         atomic_exchange_explicit(lock, 1, memory_order_acquire) != 0;)
        while (atomic_load_explicit(lock, memory_order_relaxed) != 0)
            spin_backoff(++spins);
}

static inline void spin_lock(_Atomic int *lock)
{
    if (__builtin_expect(atomic_exchange_explicit(lock, 1, memory_order_acquire) != 0, 0))
        spin_lock_held(lock);
}

static inline void spin_unlock(_Atomic int *lock)
{
    atomic_store_explicit(lock, 0, memory_order_release);
}

#endif
