/* fuzz_load.c: libFuzzer target for the report reader and the views that
 * consume what it accepts. Whatever the bytes, load_buffer must either
 * refuse them with one line or return a report every view can print. */
#include "check.h"
#include "frames.h"
#include "load.h"
#include "supp.h"
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The libFuzzer entry point: one input per call, no state kept between. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (sink == NULL)
        sink = fopen("/dev/null", "w");
    char *err = NULL;
    load_report_t *r = load_buffer((const char *)data, size, "fuzz.json", &err);
    if (r == NULL) {
        if (err == NULL || strchr(err, '\n') != NULL)
            abort(); /* a refusal must be exactly one line */
        free(err);
        return 0;
    }
    text_options_t o = { 0, NULL, -1, 1 };
    text_print(sink, r, &o);
    supp_set_t *supp = supp_new();
    supp_add_defaults(supp);
    check_budget_t b = { .leaked = true, .growth = r->has_growth, .peak = true,
                         .leaked_flag = "--max-leaked", .growth_flag = "--max-growth",
                         .peak_flag = "--max-peak" };
    check_report(sink, r, &b, supp, NULL);
    for (size_t i = 0; i < r->leaks.n; i++) {
        frames_id_t id;
        if (frames_id(&r->leaks.v[i], &id) == 0)
            frames_id_free(&id);
        free(frames_origin(&r->leaks.v[i]));
    }
    supp_free(supp);
    load_free(r);
    return 0;
}
