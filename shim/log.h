/* log.h: the shim's messages on stderr, each a line starting "gpuleak: ". */
#ifndef GPULEAK_LOG_H
#define GPULEAK_LOG_H

/* Writes one line to stderr with write(2), not stdio, so it is safe inside
 * hooks and never takes the program's stdio locks. Long lines are cut. */
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
