/* report.h: writing a report: when, where, one at a time; the content comes
 * from report_view.h, the formats from report_json.h and report_summary.h. */
#ifndef GPULEAK_REPORT_H
#define GPULEAK_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "report_view.h"


/* Writes the report file (GPULEAK_OUTPUT, or the fallback it names on
 * stderr, once, when that path cannot be written) and, at exit or on a
 * fatal signal, the summary. Serialised: one report at a time, waited for
 * at most REPORT_WAIT_S (then this one is not written). The final report
 * (exit or signal) is written once: a second final one, and any snapshot or
 * dump from the moment a final one begins, returns at once. signal names
 * the signal of a REPORT_ON_SIGNAL report. With interrupted (a report owed
 * by a thread that a signal interrupted, which may hold the driver's own
 * locks, or stderr's), the report asks the driver nothing and writes its
 * summary without stdio's lock. Never waits on a shim lock without an end
 * (bounded.h). */
#define REPORT_WAIT_S 10
void report_write(report_moment_t moment, int signal, int interrupted);

/* Waits up to ms for the final report, which another thread may be
 * writing, to be done (written, or given up). Returns 1 once done, 0 when
 * the time ran out. Async-signal-safe. */
int report_final_wait(unsigned ms);

/* 0 while this thread writes a report for a thread a signal interrupted
 * (see report_write): the driver is then not to be called. */
int report_may_call_driver(void);

/* Expands a GPULEAK_OUTPUT pattern (%p pid, %h host, %r the rank from
 * report_rank, 0 without one, %% a percent sign) into out. Returns 0, or -1
 * when the result does not fit in size bytes. */
int report_expand_path(const char *pattern, char *out, size_t size);

/* Says once, on stderr, when GPULEAK_OUTPUT has a % escape
 * report_expand_path does not know (a typo such as %P for %p): it is kept
 * as written, so the report would land where the user did not mean. Call
 * once the configuration is read. */
void report_check_pattern(void);




/* The line a site's Python frames point at by the report's origin rules
 * (GPULEAK_ORIGIN_SKIP and GPULEAK_ORIGIN_RULES included), as "file:line in
 * function", into out. Waits for a report being written. Returns 0, or -1
 * when no Python frame of the site is kept. */
int report_python_origin(uint32_t site, char *out, size_t size);

/* For each of sites[0..count) (with its kind), whether its memory is what a
 * CUDA library keeps for the process (origin_owner_keeps of its owner), in
 * answers[i] as 1 or 0. Symbolizes the sites' native frames: one batch, as a
 * report does. Waits for a report being written. */
void report_sites_kept(const uint32_t *sites, const int *kinds, size_t count, uint8_t *answers);



#endif
