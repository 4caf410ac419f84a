/* report_summary.h: the LeakSanitizer-style summary on stderr, formatted
 * from a gathered view. */
#ifndef GPULEAK_REPORT_SUMMARY_H
#define GPULEAK_REPORT_SUMMARY_H

#include <stdio.h>

#include "report_view.h"

/* Prints the LeakSanitizer-style summary to f; path is where the report
 * went (NULL when it could not be written). */
void report_summary_print(FILE *f, const report_view_t *view, const char *path);

#endif
