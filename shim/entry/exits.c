/* exits.c: the ways out of a process that skip the report at exit.
 *
 * Threads that call exit() together:
 * glibc before 2.38 lets several threads run exit() at once: the first
 * runs the exit handlers (the shim's report at exit among the destructors
 * _dl_fini calls), and another, finding the handlers taken, ends the
 * process with _exit in the middle of that report, which is lost without a
 * word. So the shim exports exit: the first thread through it goes on at
 * once; a later one, while tracking owes a report, waits for the report at
 * exit (at most LIFECYCLE_FINAL_WAIT_MS), then exits as it asked. A return
 * from main calls glibc's exit directly, unseen here: the threads that call
 * exit while it runs are held once it has run the shim's atexit handler
 * (start.c registers it when tracking starts: the program's handlers
 * registered later run before it).
 *
 * _exit() and _Exit() end the process at once, with no exit handler and no
 * destructor: a training script's closing os._exit(0), a server's handler
 * ending with _exit. And daemon() ends its caller inside glibc, whose own
 * _exit is out of reach. While this process owes a report, each writes it
 * first. */
#define _GNU_SOURCE
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "real_dl.h"
#include "report.h"
#include "reporter.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*exit_fn)(int status);

EXPORT void exit(int status)
{
    static _Atomic(exit_fn) real;
    exit_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (fn == NULL) {
        fn = (exit_fn)dlvsym(RTLD_NEXT, "exit", "GLIBC_2.2.5");
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    if (fn == NULL)
        _exit(status);
    if (lifecycle_exit_begins() && lifecycle_report_owed())
        report_final_wait(LIFECYCLE_FINAL_WAIT_MS);
    fn(status);
    __builtin_unreachable();
}

/* The report at exit, written before a way out that runs no exit handler,
 * by the reporter thread (this thread may hold a lock the report needs:
 * inside the shim, in a signal's handler, in malloc; the wait is bounded),
 * or here when there is none. Written once: when an exit (or a signal) is
 * writing it already, this waits for it. A vfork child, a forked child and
 * a process that never tracked owe none: nothing is touched. errno is the
 * caller's again after. */
static void report_before_leaving(void)
{
    if (!lifecycle_report_owed())
        return;
    int saved_errno = errno;
    (void)lifecycle_exit_begins();  /* threads calling exit() from now wait for it */
    int interrupted = guard_depth > 0;
    guard_depth++;
    lifecycle_stop();
    if (reporter_write_exit_report() != 0)
        report_write(REPORT_AT_EXIT, 0, interrupted);
    report_final_wait(LIFECYCLE_FINAL_WAIT_MS);
    guard_depth--;
    errno = saved_errno;
}

/* Ends the process as glibc's _exit does, with no lookup to fail. */
static _Noreturn void leave_now(int status)
{
    for (;;)
        syscall(SYS_exit_group, status);
}

EXPORT void _exit(int status)
{
    report_before_leaving();
    leave_now(status);
}

EXPORT void _Exit(int status)
{
    report_before_leaving();
    leave_now(status);
}

typedef int (*daemon_fn)(int nochdir, int noclose);

/* The daemon daemon() starts is a forked child, which tracking never
 * follows (CUDA does not carry over a fork), and its caller ends in it:
 * so the report is written now, and says why there will be no later one. */
EXPORT int daemon(int nochdir, int noclose)
{
    daemon_fn real = (daemon_fn)real_dl_lookup(RTLD_NEXT, "daemon");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    if (lifecycle_report_owed()) {
        log_line("daemon() called after the first CUDA call: the report is written now, as "
                 "its caller ends; the daemon it starts is a forked child, not tracked");
        report_before_leaving();
    }
    return real(nochdir, noclose);
}
