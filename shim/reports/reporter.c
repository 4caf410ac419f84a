#define _GNU_SOURCE
#include "reporter.h"
#include "config.h"
#include "search.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static sem_t wake;
static int wake_ready;               /* sem_init succeeded, at load */
static _Atomic int main_gone;        /* main left through pthread_exit */
static _Atomic pid_t running_in;     /* the process the thread runs in: not a forked child */
static _Atomic int fatal_signal;     /* the signal to die of once reported */
static _Atomic int dump_requested;
static _Atomic int exit_requested;

/* The signals whose default action ends the process and that get a report
 * first: those sent to end it, and the faults (a crash, a failed assert),
 * which keep their core dump. */
static const int fatal_signals[] = { SIGTERM, SIGINT, SIGHUP,
                                     SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

/* A fault is raised by the instruction the thread runs (or by abort()):
 * never put off, since the thread cannot go on. */
static int is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT;
}

/* A fault of the thread's own: raised by the kernel for its instruction
 * (si_code > 0) or by its own abort() or raise() (SI_TKILL). One sent to
 * the process with kill or sigqueue (`kill -ABRT PID`) is no fault of the
 * thread it lands on: it can wait, as SIGTERM does, while that thread
 * writes a report. */
static int own_fault(int sig, const siginfo_t *info)
{
    return is_fault(sig) && (info == NULL || info->si_code > 0 || info->si_code == SI_TKILL);
}

/* Whether the reporter thread runs in this process: a forked child
 * inherits the handlers, not the thread. Async-signal-safe. */
static int reporter_here(void)
{
    return atomic_load(&running_in) == getpid();
}

/* Hands sig on as if the shim had never taken it, to its default action: a
 * fault the kernel raised comes again as its instruction runs again; a
 * signal that was sent (kill, raise, abort) is raised again here, and
 * delivered as the handler returns. */
static void pass_on(int sig, const siginfo_t *info)
{
    signal(sig, SIG_DFL);
    if (!is_fault(sig) || info == NULL || info->si_code <= 0)
        raise(sig);
}

/* Fatal-signal handler: asks the thread for the report, waits for it (a
 * bounded time: the first signal's, when several come), then hands the
 * signal on to its default action, so the parent sees the same end (exit
 * status, core dump) as without the shim. A thread inside the shim's own
 * code may hold a lock the report needs: a signal sent to end the process
 * is put off until it leaves (guard.h), and a fault there (the shim's own,
 * or a heap it found broken) gets no report, which could fault again or
 * wait for that lock. A forked child, which has no reporter thread, and a
 * process whose reporter has left end at once. */
static void on_fatal_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    int saved_errno = errno;
    if (reporter_here()) {
        if (!guard_inside_shim()) {
            int expected = 0;
            if (atomic_compare_exchange_strong(&fatal_signal, &expected, sig))
                sem_post(&wake);
            report_final_wait(LIFECYCLE_FINAL_WAIT_MS);
        } else if (!own_fault(sig, info)) {
            guard_defer(sig);
            errno = saved_errno;
            return;
        }
    }
    pass_on(sig, info);
    errno = saved_errno;
}

/* Dump handler: asks the thread for a report; the program runs on. A
 * forked child has no thread to write it: there the signal does what it
 * would without the shim (SIGUSR2 kills). */
static void on_dump_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    int saved_errno = errno;
    if (reporter_here()) {
        atomic_store(&dump_requested, 1);
        sem_post(&wake);
    } else {
        pass_on(sig, info);
    }
    errno = saved_errno;
}

/* Installs handler for sig only when the program left it at the default.
 * On the thread's alternate stack, where the program set one: a stack
 * overflow's SIGSEGV can be reported there (without one the kernel ends
 * the process as it would have, with no report). Returns 1 when
 * installed. */
static int take_if_default(int sig, void (*handler)(int, siginfo_t *, void *))
{
    struct sigaction current, ours = { 0 };
    if (sigaction(sig, NULL, &current) != 0 || (current.sa_flags & SA_SIGINFO)
        || current.sa_handler != SIG_DFL)
        return 0;
    ours.sa_sigaction = handler;
    sigemptyset(&ours.sa_mask);
    ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    return sigaction(sig, &ours, NULL) == 0;
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether every other thread of the process is gone (a zombie main thread
 * left by pthread_exit included): 1, 0, or -1 when /proc cannot tell. Once
 * none is left none can come, so a 1 stays true. */
static int alone(void)
{
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL)
        return -1;
    int alone = 1;
    pid_t me = gettid();
    for (struct dirent *e; alone == 1 && (e = readdir(tasks)) != NULL;) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == me)
            continue;
        char path[64], stat[512];
        snprintf(path, sizeof path, "/proc/self/task/%.32s/stat", e->d_name);  /* a number */
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            continue;  /* gone meanwhile */
        stat[n] = '\0';
        const char *state = strrchr(stat, ')');  /* after the name, which may hold ')' */
        alone = state != NULL && (state[2] == 'Z' || state[2] == 'X');
    }
    closedir(tasks);
    return alone;
}

/* The thread: never tracked, deaf to signals from its first instruction
 * (reporter_start creates it with every signal blocked: a fatal signal's
 * handler run here would wait for the report this thread is to write),
 * waking for a request or when a snapshot is due.
 *
 * glibc ends a process when its last thread exits, and this thread is one:
 * once main has left through pthread_exit, it looks every ALONE_POLL_NS
 * whether it is the last, and then returns, so that its exit ends the
 * process (exit(0), with the report at exit) as the program's last thread
 * would have. Where /proc cannot tell, it returns at once: the program's
 * threads then run on without it (no snapshot or signal report). */
#define ALONE_POLL_NS (50ull * 1000 * 1000)

/* Writes the final report a handler or the exit asked for (the exit's
 * first: a fatal signal's is then not written). */
static void serve_final(void)
{
    if (atomic_load(&exit_requested))
        report_write(REPORT_AT_EXIT, 0, 1);
    if (atomic_load(&fatal_signal) != 0) {
        lifecycle_stop();
        report_write(REPORT_ON_SIGNAL, atomic_load(&fatal_signal), 1);  /* once */
    }
}

/* Asks Python who holds the live memory before a report on request
 * (search_on_request), waiting at most the search's budget and a second.
 * The search stops the program's main thread while it runs (0.4 s for
 * 2M objects): asked for, that is the user's choice; at every periodic
 * snapshot it would be a cost nobody asked for, and in a job of many
 * ranks each rank's pause would stall them all. So snapshots carry no
 * search of their own. */
static void ask_holders(void)
{
    search_on_request((uint64_t)config.holders_ms * 1000000ull + 1000000000ull);
}

static void *reporter_main(void *unused)
{
    (void)unused;
    guard_depth = 1;
    pthread_setname_np(pthread_self(), "gpuleak-report");  /* here: detached, it may be gone
                                                               before its creator could */
    uint64_t interval_ns = (uint64_t)config.flush_interval_s * 1000000000ull;
    uint64_t snapshot_ns = interval_ns > 0 ? monotonic_ns() + interval_ns : UINT64_MAX;
    uint64_t metrics_ns = metrics_enabled() ? monotonic_ns() : UINT64_MAX;
    uint64_t pools_ns = monotonic_ns() + SEARCH_POOLS_IDLE_NS;
    for (;;) {
        uint64_t until = snapshot_ns < metrics_ns ? snapshot_ns : metrics_ns;
        until = pools_ns < until ? pools_ns : until;
        if (atomic_load(&main_gone)) {
            if (alone() != 0)
                break;
            uint64_t now = monotonic_ns();
            if (until > now + ALONE_POLL_NS)
                until = now + ALONE_POLL_NS;
        }
        if (until == UINT64_MAX) {
            sem_wait(&wake);
        } else {
            struct timespec ts = { (time_t)(until / 1000000000ull), (long)(until % 1000000000ull) };
            sem_clockwait(&wake, CLOCK_MONOTONIC, &ts);
        }
        serve_final();
        if (atomic_exchange(&dump_requested, 0)) {
            ask_holders();
            report_write(REPORT_ON_REQUEST, 0, 0);
        }
        if (monotonic_ns() >= metrics_ns) {
            if (atomic_load(&lifecycle_state_now) == LIFECYCLE_TRACKING)
                metrics_write();
            metrics_ns = monotonic_ns() + metrics_interval_ns();
        }
        if (monotonic_ns() >= pools_ns)
            pools_ns = atomic_load(&lifecycle_state_now) == LIFECYCLE_TRACKING
                           ? search_pools_tick(monotonic_ns())
                           : monotonic_ns() + SEARCH_POOLS_IDLE_NS;
        if (monotonic_ns() >= snapshot_ns) {
            if (atomic_load(&lifecycle_state_now) == LIFECYCLE_TRACKING)
                report_write(REPORT_SNAPSHOT, 0, 0);
            snapshot_ns = monotonic_ns() + interval_ns;
        }
    }
    /* No handler is to wait for this thread from now; one that asked just
     * before is served. The exit this return may make (the process's last
     * thread) is an ordinary one. */
    atomic_store(&running_in, 0);
    serve_final();
    guard_depth = 0;
    return NULL;
}

/* Main's exit through pthread_exit (or a cancel) runs this key's
 * destructor on it; a return from main calls exit(), which runs none. */
static pthread_key_t main_key;

static void main_thread_left(void *unused)
{
    (void)unused;
    atomic_store(&main_gone, 1);
    sem_post(&wake);
}

/* At load, on the main thread (a later dlopen from another thread cannot
 * watch it), before tracking may start on any thread. */
__attribute__((constructor)) static void watch_main_thread(void)
{
    if (!config_enabled_at_load(config_getenv("GPULEAK_ENABLE")))
        return;
    wake_ready = sem_init(&wake, 0, 0) == 0;
    if (wake_ready && gettid() == getpid() && pthread_key_create(&main_key, main_thread_left) == 0)
        pthread_setspecific(main_key, &main_key);
}

int reporter_start(void)
{
    if (!wake_ready)
        return -1;
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_BLOCK, &all, &old) == 0;  /* the thread inherits it */
    atomic_store(&running_in, getpid());  /* before it runs: it may leave at once */
    int rc = pthread_create(&thread, &attr, reporter_main, NULL);
    if (masked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        atomic_store(&running_in, 0);
        log_line("cannot start the reporter thread; only the report at exit will be written");
        return -1;
    }
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
