/* dump.h: a loaded report (load.h) written back out as compact JSON, as it
 * was read and with the names the load demangled demangled (demangle.h). A
 * member the load read piecewise is written again from the file's text a
 * piece at a time, so a big report is never one jansson tree here either.
 *
 * Whole (dump_report), or in two parts for a page that draws a big report's
 * largest sites before the browser has read the rest (cli/html.c): the head
 * is the document with each list of sites cut to its first entries (the
 * shim writes them largest first) and the stack table cut to the sites
 * those keep; the rest holds only what was cut. Or as a summary: the head
 * without the tables of stacks and frames and the timeline. */
#ifndef GPULEAK_CLI_DUMP_H
#define GPULEAK_CLI_DUMP_H

#include "load.h"

#include <stddef.h>

/* Where the text goes: size bytes at buf; returns 0, or -1 to stop
 * (jansson's json_dump_callback_t). */
typedef int (*dump_sink_t)(const char *buf, size_t size, void *data);

/* The whole document. Returns 0, or -1 when the sink stopped. */
int dump_report(const load_report_t *r, dump_sink_t sink, void *data);

/* Whether dump_head would cut anything: a list of more than max_sites
 * sites (a report parsed whole, not piecewise, is never cut). */
int dump_cuts(const load_report_t *r, size_t max_sites);

/* The head: the document with every list of sites (leaks, the peak's,
 * growth's and the others') cut to its first max_sites entries, and the
 * stack table cut to the sites the lists keep and the oom section names.
 * Returns 0, or -1 when the sink stopped. */
int dump_head(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data);

/* The rest: an object of only the members dump_head cut, each holding what
 * it left out ({"leaks": [...], "peak": {"sites": [...]}, "stacks":
 * {...}}), so that appending each list to the head's and adding each
 * object's members gives the document back. "{}" when nothing was cut.
 * Returns 0, or -1 when the sink stopped. */
int dump_rest(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data);

/* A summary, for a page of many reports (cli/html.c): the head cut at
 * max_sites without the stack table, the frame tables and the timeline,
 * whether or not a list is cut; the whole document for a report parsed
 * whole. What it cuts, dump_cut_totals counts. Returns 0, or -1 when the
 * sink stopped. */
int dump_summary(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data);

/* What the rest holds, for a page to count before it has read it: {"LIST":
 * {"sites": N, "bytes": B, "allocations": A}, ...} for each list cut, keyed
 * by its path in the document ("leaks", "peak.sites"): its whole length,
 * and the bytes and allocations (a failure's count) of the entries cut.
 * Returns 0, or -1 when the sink stopped. */
int dump_cut_totals(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data);

#endif
