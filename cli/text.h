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

void text_print(FILE *f, const load_report_t *report, const text_options_t *options);
void text_timeline_chart(FILE *f, const load_report_t *report, int width, int height);

#endif
