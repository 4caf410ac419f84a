/* outliers.h: docs/merge.md's rule for the ranks of a job whose numbers
 * stand out from the others', shared by `gpuleak merge` and the page of
 * `gpuleak html`, so that both name the same ranks. */
#ifndef GPULEAK_CLI_OUTLIERS_H
#define GPULEAK_CLI_OUTLIERS_H

#include "load.h"

#include <stddef.h>
#include <stdint.h>

/* The numbers the rule judges, in this order. */
enum { OUTLIERS_PEAK, OUTLIERS_LEAKED, OUTLIERS_GROWTH, OUTLIERS_METRICS };

/* Their names as the views write them: "peak", "leaked", "grew". */
extern const char *const outliers_metric_names[OUTLIERS_METRICS];

/* A report's numbers: its GPU peak, its leaked bytes and its growth (0
 * when the growth rule did not judge the run). */
void outliers_values(const load_report_t *report, uint64_t out[OUTLIERS_METRICS]);

/* The bytes above which one of n values stands out, and their median in
 * *middle: the median plus the larger of six scaled median absolute
 * deviations, a quarter of the median and 1 MiB. UINT64_MAX (nothing
 * stands out) for fewer than three values, or when out of memory. */
uint64_t outliers_threshold(const uint64_t *values, size_t n, uint64_t *middle);

#endif
