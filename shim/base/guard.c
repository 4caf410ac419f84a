/* guard.c: guard.h's per-thread state, and the signals raised again as a
 * thread leaves the shim. */
#include "guard.h"

#include <errno.h>
#include <signal.h>

__thread int guard_depth __attribute__((tls_model("initial-exec")));
__thread int guard_in_driver __attribute__((tls_model("initial-exec")));
__thread _Atomic uint64_t guard_deferred __attribute__((tls_model("initial-exec")));

/* Each signal raised again now that no shim lock is held: its handler
 * (reporter.c) acts this time. */
void guard_raise_deferred(void)
{
    int saved_errno = errno;
    uint64_t deferred = atomic_exchange_explicit(&guard_deferred, 0, memory_order_relaxed);
    for (int sig = 1; sig < 64; sig++)
        if (deferred & (1ull << sig))
            raise(sig);
    errno = saved_errno;
}
