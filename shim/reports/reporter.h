/* reporter.h: reports written while the program runs.
 *
 * One helper thread, never tracked, writes snapshot reports every
 * GPULEAK_FLUSH_INTERVAL seconds (so a SIGKILL or the OOM killer loses at
 * most one interval), a report on GPULEAK_DUMP_SIGNAL, and the report of a
 * signal that ends the process at its default action (SIGTERM, SIGINT,
 * SIGHUP; SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT), after which the signal
 * ends the process as it would have (exit status, core dump). Signal
 * handlers only post a semaphore and wait a bounded time: writing a report
 * is not async-signal-safe, so the thread does it. Handlers are installed
 * only where the program left the default; a handler the program installs
 * later replaces ours, never the reverse. In a forked child, which has no
 * such thread, each signal does what it would without the shim. The thread
 * never keeps the process alive: once main has left through pthread_exit it
 * ends when it is the last thread, and glibc's exit follows. */
#ifndef GPULEAK_REPORTER_H
#define GPULEAK_REPORTER_H

/* Starts the thread and installs the handlers. Returns 0, or -1 when the
 * thread cannot start (then only the report at exit is written). */
int reporter_start(void);

/* Asks the thread to write the report at exit, for a thread that may hold
 * a lock the report needs (report_final_wait waits for it). Returns 0, or
 * -1 when no reporter thread runs in this process. */
int reporter_write_exit_report(void);

#endif
