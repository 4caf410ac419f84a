/* guard.h: the per-thread flag that keeps the shim from recording itself,
 * and the signals a thread puts off while it is inside the shim.
 *
 * The flag is set while a wrapper records, while the shim starts, and for
 * good on a thread that must never be tracked; a call arriving with it set
 * is forwarded untouched, so a nested driver call is recorded once.
 *
 * A signal whose handler would wait for a report (reporter.h) must not
 * wait on a thread it interrupted holding a lock the report needs, and a
 * thread inside the shim's own code may hold one: the handler then only
 * notes the signal, and the thread raises it again as it leaves the shim
 * (guard_leave), holding nothing. Inside the driver a recorded call holds
 * no shim lock and may block for long, so there a signal acts at once. */
#ifndef GPULEAK_GUARD_H
#define GPULEAK_GUARD_H

#include <stdatomic.h>
#include <stdint.h>

extern __thread int guard_depth __attribute__((tls_model("initial-exec")));

/* 1 while a recorded call is inside the driver (wrappers.c's DRIVER). */
extern __thread int guard_in_driver __attribute__((tls_model("initial-exec")));

/* The signals put off, a bit each. */
extern __thread _Atomic uint64_t guard_deferred __attribute__((tls_model("initial-exec")));

/* Whether this thread runs the shim's own code now (and may hold its locks).
 * Async-signal-safe. */
static inline int guard_inside_shim(void)
{
    return guard_depth > 0 && !guard_in_driver;
}

/* Puts off sig until this thread leaves the shim. Async-signal-safe. */
static inline void guard_defer(int sig)
{
    atomic_fetch_or_explicit(&guard_deferred, 1ull << sig, memory_order_relaxed);
}

/* Raises the signals put off, errno kept. */
void guard_raise_deferred(void);

/* Leaves one level of the shim; leaving the last raises what was put off. */
static inline void guard_leave(void)
{
    if (--guard_depth == 0
        && __builtin_expect(atomic_load_explicit(&guard_deferred, memory_order_relaxed) != 0, 0))
        guard_raise_deferred();
}

#endif
