/* start.c: tracking starts on the first call that reaches a door, and the
 * report is written at exit: the top of the shim, which sets up every other
 * part and moves lifecycle.h's state. */
#define _GNU_SOURCE
#include "start.h"
#include "capture.h"
#include "config.h"
#include "search.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "python.h"
#include "report.h"
#include "reporter.h"
#include "selftime.h"
#include "stacks.h"
#include "tracker.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static pthread_once_t start_once = PTHREAD_ONCE_INIT;

/* A return from main reaches glibc's exit unseen by exits.c: this handler
 * tells it that the exit has begun, so a thread calling exit() meanwhile
 * waits for the report. */
static void note_exit(void)
{
    lifecycle_exit_begins();
}
static start_sampler_t start_sampler;

static void start_once_now(void)
{
    guard_depth++;
    lifecycle_begin();
    config_load();
    if (!config.enabled) {
        atomic_store(&lifecycle_state_now, LIFECYCLE_OFF);
        guard_leave();
        return;
    }
    if (tracker_init(start_sampler) != 0) {
        log_line("no memory for the allocation tables; tracking is off");
        atomic_store(&lifecycle_state_now, LIFECYCLE_OFF);
        guard_leave();
        return;
    }
    report_check_pattern();
    stacks_init(config.fast_unwind);
    if (capture_init() != 0)
        log_line("no memory for the Python lines' table; every stack will be walked natively");
    python_watch_finish();
    search_watch();
    if (config.python_frames)
        python_init();
    selftime_init(config.self_time);
    atexit(note_exit);
    lifecycle_tracking_on();
    reporter_start();
    guard_leave();
}

int start_slow(start_sampler_t sampler)
{
    int entry_errno = errno;
    if (start_sampler == NULL)
        start_sampler = sampler; /* every caller passes the same one */
    pthread_once(&start_once, start_once_now);
    errno = entry_errno;
    return atomic_load_explicit(&lifecycle_state_now, memory_order_acquire) == LIFECYCLE_TRACKING;
}

/* The report is written from a destructor, after the program's atexit
 * handlers (and so after Python's shutdown has freed what it frees), with
 * tracking stopped first so frees made by other destructors do not race the
 * writer. A thread that exits from inside the shim (a signal's handler of
 * the program's own called exit() there) may hold a shim lock, or malloc's,
 * for good: it hands the report to the reporter thread. When a signal's
 * report is being written already, the exit waits for it. Both waits are
 * bounded: the process then ends as it would have, report or not. */
__attribute__((destructor)) static void write_report_at_exit(void)
{
    if (!lifecycle_report_owed())
        return;
    int saved_errno = errno;  /* for the destructors and exit handlers after this one */
    int interrupted = guard_depth > 0;
    guard_depth++;
    lifecycle_stop();
    if (!interrupted || reporter_write_exit_report() != 0)
        report_write(REPORT_AT_EXIT, 0, interrupted);
    report_final_wait(LIFECYCLE_FINAL_WAIT_MS);
    guard_leave();
    errno = saved_errno;
}
