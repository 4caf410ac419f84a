/* chart.h: live GPU memory over time, drawn as text in the manner of
 * ms_print; the one chart both the shim's exit summary and `gpuleak report`
 * print, so that a run reads the same in both. */
#ifndef GPULEAK_CHART_H
#define GPULEAK_CHART_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One timeline sample: its time since the timeline's start, the live bytes
 * then, and the highest live bytes in the interval it closes. */
typedef struct chart_point {
    uint64_t t_ns, bytes, max_bytes;
} chart_point_t;

typedef struct chart {
    const chart_point_t *points;  /* oldest first */
    size_t npoints;
    uint64_t peak_bytes;          /* the exact peak; 0 when unknown */
    int64_t peak_t_ns;            /* its time since the start; -1 when unknown */
    const uint64_t *marks_t_ns;   /* the program's marks' times since the start */
    size_t nmarks;
} chart_t;

#define CHART_WIDTH 64
#define CHART_HEIGHT 12

/* Prints the chart: a column per slice of time holding the slice's highest
 * value (a slice with no sample holds what the one before it ended with),
 * the column of the exact peak drawn with '#', bytes up the side, seconds
 * along the bottom, marks as '|' on the time axis. Prints nothing without a
 * sample or a byte. */
void chart_print(FILE *f, const chart_t *chart, int width, int height);

#endif
