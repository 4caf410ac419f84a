/* exits.c: threads that call exit() together.
 *
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
 * registered later run before it). */
#define _GNU_SOURCE
#include "lifecycle.h"
#include "report.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
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
