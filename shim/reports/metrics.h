/* metrics.h: live numbers for Prometheus, through node_exporter's textfile
 * collector: every GPULEAK_PROMETHEUS_INTERVAL seconds the reporter thread
 * writes this process's metrics, in the text exposition format, to
 * GPULEAK_PROMETHEUS_DIR/gpuleak-HOST-PID.prom (a temporary file renamed
 * over it, so a scrape never reads half of one); the file goes when the
 * process writes its final report. No socket, no network: the collector
 * node_exporter already runs reads the folder. */
#ifndef GPULEAK_METRICS_H
#define GPULEAK_METRICS_H

#include <stdint.h>

/* Whether metrics are asked for (GPULEAK_PROMETHEUS_DIR set). */
int metrics_enabled(void);

/* Nanoseconds between two writes. */
uint64_t metrics_interval_ns(void);

/* Writes the metrics file now (on the reporter thread). Returns 0, or -1
 * after one line on stderr the first time a write fails. */
int metrics_write(void);

/* Removes the metrics file: the process is ending. */
void metrics_end(void);

#endif
