/* fuzz_load.c: libFuzzer target for the report reader and the views that
 * consume what it accepts. Whatever the bytes, load_buffer must either
 * refuse them with one line or return a report every view can print,
 * whose page parts (dump.h), cut after one site, make the whole again,
 * and which reads back as itself once written out (the text view). And
 * what the plain parser (json_plain.h) reads anywhere in them, jansson
 * must read as the same value. */
#include "check.h"
#include "dump.h"
#include "dump_text.h"
#include "frames.h"
#include "json_plain.h"
#include "load.h"
#include "supp.h"
#include "text.h"

#include <jansson.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a part of r says, parsed; aborts when it is not JSON. */
static json_t *part(const load_report_t *r, int (*dump)(const load_report_t *, size_t, dump_sink_t, void *))
{
    char *text = calloc(1, 1);
    if (text == NULL || dump(r, 1, dump_to_text, &text) != 0)
        abort();
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (v == NULL)
        abort();
    free(text);
    return v;
}

static int whole(const load_report_t *r, size_t max_sites, dump_sink_t sink, void *data)
{
    (void)max_sites;
    return dump_report(r, sink, data);
}

/* The head and the rest, merged, are the whole; a summary is JSON without
 * the stack and frame tables and the timeline. */
static void check_parts(const load_report_t *r)
{
    json_t *all = part(r, whole), *head = part(r, dump_head), *rest = part(r, dump_rest);
    dump_extend(head, rest);
    if (!json_equal(head, all))
        abort();
    json_t *summary = part(r, dump_summary);
    if (r->whole == NULL && (json_object_get(summary, "stacks") || json_object_get(summary, "frames")
                             || json_object_get(summary, "python_frames") || json_object_get(summary, "timeline")))
        abort();
    json_decref(summary);
    json_decref(all);
    json_decref(head);
    json_decref(rest);
}

/* The text view of r, malloc'd. */
static char *view(const load_report_t *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        abort();
    text_options_t o = { 0, NULL, -1, 1 };
    text_print(f, r, &o);
    fclose(f);
    return text;
}

/* What html writes of r reads back as r: the same text view. */
static void check_round_trip(const load_report_t *r)
{
    char *text = calloc(1, 1), *err = NULL;
    if (text == NULL || dump_report(r, dump_to_text, &text) != 0)
        abort();
    load_report_t *again = load_buffer(text, strlen(text), "fuzz.json", &err);
    if (again == NULL)
        abort();
    char *before = view(r), *after = view(again);
    if (strcmp(before, after) != 0)
        abort();
    free(before);
    free(after);
    load_free(again);
    free(text);
}

/* The value plain_parse reads at p, if any, is what jansson reads of the
 * same text. */
static void check_plain_at(const char *p, const char *end)
{
    const char *q = p;
    json_t *mine = plain_parse(&q, end);
    if (mine == NULL) {
        if (q != p)
            abort();
        return;
    }
    json_t *theirs = json_loadb(p, (size_t)(q - p), JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    char *a = json_dumps(mine, JSON_ENCODE_ANY | JSON_COMPACT);
    char *b = theirs ? json_dumps(theirs, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (a == NULL || b == NULL || strcmp(a, b) != 0)
        abort();
    free(a);
    free(b);
    json_decref(mine);
    json_decref(theirs);
}

/* check_plain_at where a value may start: the first 64 such places, so
 * that a big input stays linear. */
static void check_plain(const char *data, size_t size)
{
    int tried = 0;
    for (size_t i = 0; i < size && tried < 64; i++)
        if (strchr("{[\"-0123456789tfn", data[i]) != NULL && data[i] != '\0') {
            check_plain_at(data + i, data + size);
            tried++;
        }
}

/* The libFuzzer entry point: one input per call, no state kept between. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (sink == NULL)
        sink = fopen("/dev/null", "w");
    check_plain((const char *)data, size);
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
    check_parts(r);
    check_round_trip(r);
    supp_free(supp);
    load_free(r);
    return 0;
}
