/* log.h: the shim's messages on stderr, each a line starting "gpuleak: ".
 *
 * The shim's own writes never end or change the program: a write to a
 * stderr whose reader is gone raises SIGPIPE, and a report past the file
 * size limit (ulimit -f) SIGXFSZ, both on the writing thread and both
 * deadly at their default action. Around its writes the shim blocks them
 * on that thread (the write fails with EPIPE or EFBIG instead) and takes
 * back any its writes raised; one pending before is left to the program. */
#ifndef GPULEAK_LOG_H
#define GPULEAK_LOG_H

#include <signal.h>

/* Writes one line to stderr with write(2), not stdio, so it is safe inside
 * hooks and never takes the program's stdio locks. Long lines are cut. */
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The calling thread's signal state around the shim's own writes. */
typedef struct log_quiet {
    sigset_t old;
    int pipe_pending, xfsz_pending;  /* pending before: the program's */
} log_quiet_t;

/* Blocks SIGPIPE and SIGXFSZ on the calling thread. Async-signal-safe. */
void log_quiet_begin(log_quiet_t *quiet);

/* Takes back a SIGPIPE or SIGXFSZ raised since log_quiet_begin, and
 * restores the thread's mask. Async-signal-safe. */
void log_quiet_end(log_quiet_t *quiet);

#endif
