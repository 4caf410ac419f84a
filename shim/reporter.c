#define _GNU_SOURCE
#include "reporter.h"
#include "config.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "report.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static sem_t wake;
static _Atomic pid_t running_in;     /* the process the thread runs in: not a forked child */
static _Atomic int fatal_signal;     /* the signal to die of once reported */
static _Atomic int dump_requested;
static _Atomic int exit_requested;

static const int fatal_signals[] = { SIGTERM, SIGINT, SIGHUP };

/* Whether the reporter thread runs in this process: a forked child
 * inherits the handlers, not the thread. Async-signal-safe. */
static int reporter_here(void)
{
    return atomic_load(&running_in) == getpid();
}

/* Fatal-signal handler: asks the thread for the report, waits for it (a
 * bounded time: the first signal's, when several come), then dies of the
 * signal with its default action, so the parent sees the same exit status
 * as without the shim. A thread inside the shim's own code may hold a lock
 * the report needs: the signal is put off until it leaves (guard.h). A
 * forked child, which has no reporter thread, dies at once. */
static void on_fatal_signal(int sig)
{
    int saved_errno = errno;
    if (reporter_here()) {
        if (guard_inside_shim()) {
            guard_defer(sig);
            errno = saved_errno;
            return;
        }
        int expected = 0;
        if (atomic_compare_exchange_strong(&fatal_signal, &expected, sig))
            sem_post(&wake);
        report_final_wait(LIFECYCLE_FINAL_WAIT_MS);
    }
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when this handler returns: the default action */
    errno = saved_errno;
}

static void on_dump_signal(int sig)
{
    (void)sig;
    atomic_store(&dump_requested, 1);
    sem_post(&wake);
}

/* Installs handler for sig only when the program left it at the default.
 * Returns 1 when installed. */
static int take_if_default(int sig, void (*handler)(int))
{
    struct sigaction current, ours = { 0 };
    if (sigaction(sig, NULL, &current) != 0 || (current.sa_flags & SA_SIGINFO)
        || current.sa_handler != SIG_DFL)
        return 0;
    ours.sa_handler = handler;
    sigemptyset(&ours.sa_mask);
    ours.sa_flags = SA_RESTART;
    return sigaction(sig, &ours, NULL) == 0;
}

/* The thread: never tracked, deaf to signals from its first instruction
 * (reporter_start creates it with every signal blocked: a fatal signal's
 * handler run here would wait for the report this thread is to write),
 * waking for a request or when a snapshot is due. */
static void *reporter_main(void *unused)
{
    (void)unused;
    guard_depth = 1;
    for (;;) {
        int woke;
        if (config.flush_interval_s > 0) {
            struct timespec due;
            clock_gettime(CLOCK_REALTIME, &due);
            due.tv_sec += config.flush_interval_s;
            woke = sem_timedwait(&wake, &due) == 0;
            if (!woke && errno != ETIMEDOUT)
                continue;
        } else {
            woke = sem_wait(&wake) == 0;
            if (!woke)
                continue;
        }
        if (atomic_load(&exit_requested))
            report_write(REPORT_AT_EXIT, 0, 1);  /* then a fatal signal's is not written */
        if (atomic_load(&fatal_signal) != 0) {
            lifecycle_stop();
            report_write(REPORT_ON_SIGNAL, atomic_load(&fatal_signal), 1);  /* once */
            continue;
        }
        if (atomic_exchange(&dump_requested, 0))
            report_write(REPORT_ON_REQUEST, 0, 0);
        else if (!woke && atomic_load(&lifecycle_state_now) == LIFECYCLE_TRACKING)
            report_write(REPORT_SNAPSHOT, 0, 0);
    }
    return NULL;
}

int reporter_start(void)
{
    if (sem_init(&wake, 0, 0) != 0)
        return -1;
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_BLOCK, &all, &old) == 0;  /* the thread inherits it */
    int rc = pthread_create(&thread, &attr, reporter_main, NULL);
    if (masked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        log_line("cannot start the reporter thread; only the report at exit will be written");
        return -1;
    }
    pthread_setname_np(thread, "gpuleak-report");
    atomic_store(&running_in, getpid());
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        take_if_default(fatal_signals[i], on_fatal_signal);
    if (config.dump_signal > 0)
        take_if_default(config.dump_signal, on_dump_signal);
    return 0;
}

int reporter_write_exit_report(void)
{
    if (!reporter_here())
        return -1;
    atomic_store(&exit_requested, 1);
    sem_post(&wake);
    return 0;
}
