/* text.h: `gpuleak report`, the human view of one report. */
#ifndef GPULEAK_CLI_TEXT_H
#define GPULEAK_CLI_TEXT_H

#include "load.h"

#include <stdio.h>

typedef struct {
    size_t top;          /* sites shown per list; 0: all */
    const char *kind;    /* only this kind, or NULL */
    long device;         /* only this device, or -1 */
    int full_stacks;     /* every frame instead of the first few */
} text_options_t;

/* The usual name of a signal that ends a process ("SIGTERM"), or NULL for
 * another (shown by its number alone). */
const char *text_signal_name(long sig);

/* Whether the report was written as a signal killed the program (status
 * moment "signal"): what it lists as leaks was live then, before the
 * program's own frees, not left at its exit. */
bool text_killed(const load_report_t *report);

void text_print(FILE *f, const load_report_t *report, const text_options_t *options);
void text_timeline_chart(FILE *f, const load_report_t *report, int width, int height);

#endif
