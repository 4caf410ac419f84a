/* reporter.h: reports written while the program runs.
 *
 * One helper thread, never tracked, writes snapshot reports every
 * GPULEAK_FLUSH_INTERVAL seconds (so a SIGKILL or the OOM killer loses at
 * most one interval), a report on GPULEAK_DUMP_SIGNAL, and the report of a
 * SIGTERM, SIGINT or SIGHUP left at its default action, after which the
 * signal kills the process as it would have. Signal handlers only post a
 * semaphore: writing a report is not async-signal-safe, so the thread does
 * it. Handlers are installed only where the program left the default; a
 * handler the program installs later replaces ours, never the reverse. */
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
