/* timeline.h: live GPU bytes over time, in bounded memory.
 *
 * A fixed number of points, in the manner of massif: a point is taken when
 * an allocation or free happens after the current interval has passed; when
 * the buffer is full every other point is dropped and the interval doubles.
 * Each point keeps the highest value seen during its interval, so the shape
 * (and the peak, which the tracker also keeps exactly) survives decimation. */
#ifndef GPULEAK_TIMELINE_H
#define GPULEAK_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "report_format.h"

#define TIMELINE_POINTS 1024
#define TIMELINE_DEVICES 8

typedef struct timeline_point {
    uint64_t time_ns;                    /* clock_coarse_ns() */
    uint64_t bytes;                      /* live GPU bytes at time_ns */
    uint64_t max_bytes;                  /* highest live GPU bytes in the interval */
    uint64_t kind_bytes[REPORT_KIND_COUNT];     /* live bytes per kind (host included) */
    uint64_t device_bytes[TIMELINE_DEVICES];
    uint64_t pool_reserved_bytes;        /* reserved by the devices' current pools, when known */
} timeline_point_t;

/* Reader of the per-kind and per-device live bytes, supplied by the
 * tracker so the timeline needs no knowledge of its tables. */
typedef void (*timeline_sampler_t)(timeline_point_t *point);

/* Starts the timeline at start_ns with the first interval of interval_ns. */
void timeline_init(uint64_t start_ns, uint64_t interval_ns, timeline_sampler_t sampler);

/* Called after live GPU bytes changed to live at now_ns (0: a change with no
 * reading, which raises no high). Lock-free unless a point is due; then one
 * thread takes it and others go on. */
void timeline_note(uint64_t now_ns, uint64_t live);

/* The highest live bytes noted since the last point: a caller whose cheap
 * reading would raise it can read exactly first. */
uint64_t timeline_interval_high(void);

/* Copies the points, oldest first, into out (up to max), taking a last
 * point at now_ns first. Returns how many were written: none when a
 * report's bounded wait for the points' lock ended (bounded.h). */
size_t timeline_points(uint64_t now_ns, timeline_point_t *out, size_t max);

/* The interval between points now, in ns (it doubles as the run goes).
 * Takes no lock. */
uint64_t timeline_interval_ns(void);

#endif
