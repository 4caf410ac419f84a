/* diff.c: what leaks more in NEW than in OLD. Sites are matched by their
 * symbolized stack (frames_key), never by site id or address, which change
 * from run to run; sites sharing a key within one run are added up. */
#define _GNU_SOURCE
#include "commands.h"
#include "frames.h"
#include "load.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *key;
    const load_site_t *site; /* the first site with this key, for display */
    uint64_t bytes, allocations;
} agg_t;

static int agg_cmp(const void *a, const void *b)
{
    return strcmp(((const agg_t *)a)->key, ((const agg_t *)b)->key);
}

/* Groups a report's leaks by key, sorted for bsearch. Returns the count, or
 * (size_t)-1 when out of memory. */
static size_t aggregate(const load_list_t *list, agg_t **out)
{
    agg_t *v = calloc(list->n + 1, sizeof *v);
    if (v == NULL)
        return (size_t)-1;
    size_t n = 0;
    for (size_t i = 0; i < list->n; i++) {
        v[n].key = frames_key(&list->v[i]);
        if (v[n].key == NULL)
            continue;
        v[n].site = &list->v[i];
        v[n].bytes = list->v[i].bytes;
        v[n].allocations = list->v[i].allocations;
        n++;
    }
    qsort(v, n, sizeof *v, agg_cmp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w > 0 && strcmp(v[w - 1].key, v[i].key) == 0) {
            v[w - 1].bytes = units_add(v[w - 1].bytes, v[i].bytes);
            v[w - 1].allocations = units_add(v[w - 1].allocations, v[i].allocations);
            free(v[i].key);
            continue;
        }
        v[w++] = v[i];
    }
    *out = v;
    return w;
}

static void agg_free(agg_t *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i].key);
    free(v);
}

static void print_line(const char *tag, uint64_t old_bytes, const agg_t *a)
{
    char *origin = frames_origin(a->site);
    printf("%-5s +%llu byte(s) (%llu -> %llu) of %s in %llu allocation(s) at ", tag,
           (unsigned long long)(a->bytes - old_bytes), (unsigned long long)old_bytes,
           (unsigned long long)a->bytes, frames_kind_phrase(a->site->kind),
           (unsigned long long)a->allocations);
    frames_put(stdout, origin ? origin : "?");
    putchar('\n');
    free(origin);
}

enum { O_THRESHOLD, O_COUNT };

static const opt_spec_t options[] = {
    { "--threshold", NULL, OPT_SIZE, 0, "SIZE", NULL, 0,
      "Fail only when a site appeared or grew by more than SIZE (default 0: any growth)." },
};
_Static_assert(sizeof options / sizeof options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t exits[] = {
    { "0", "no site appeared or grew by more than the threshold" },
    { "1", "a site appeared or grew by more than the threshold" },
    { "2", "bad usage, a report that cannot be read, or a failed write to stdout" },
};

/* Shrunk and gone sites are listed too but never fail: fixing a leak must
 * not break CI. */
static int diff_main(const opts_t *opts)
{
    const char *const *files = (const char *const *)opts->operands;
    uint64_t threshold = opts->v[O_THRESHOLD].number;
    load_set_t set;
    int code = CLI_EXIT_USAGE;
    agg_t *old = NULL, *cur = NULL;
    size_t nold = (size_t)-1, ncur = (size_t)-1;
    if (load_files(&set, opts->operands, 2) != 0 || set.bad > 0)
        goto out;
    load_report_t *const *r = set.v;
    nold = aggregate(&r[0]->leaks, &old);
    ncur = aggregate(&r[1]->leaks, &cur);
    if (nold == (size_t)-1 || ncur == (size_t)-1) {
        fputs("gpuleak diff: out of memory\n", stderr);
        goto out;
    }
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    fputs("gpuleak diff: ", stdout);
    frames_put(stdout, files[0]);
    fputs(" -> ", stdout);
    frames_put(stdout, files[1]);
    printf("\n  leaked: %s -> %s; peak: ", units_format_size(r[0]->totals.leaked_bytes, a),
           units_format_size(r[1]->totals.leaked_bytes, b));
    printf("%s -> %s\n", units_format_size(r[0]->totals.peak_bytes, a),
           units_format_size(r[1]->totals.peak_bytes, b));
    size_t worse = 0, better = 0;
    for (size_t i = 0; i < ncur; i++) {
        agg_t *o = bsearch(&cur[i], old, nold, sizeof *old, agg_cmp);
        uint64_t before = o ? o->bytes : 0;
        if (cur[i].bytes <= before || cur[i].bytes - before <= threshold)
            continue;
        print_line(o ? "GREW" : "NEW", before, &cur[i]);
        worse++;
    }
    for (size_t i = 0; i < nold; i++) {
        agg_t *c = bsearch(&old[i], cur, ncur, sizeof *cur, agg_cmp);
        if (c != NULL && c->bytes >= old[i].bytes)
            continue;
        char *origin = frames_origin(old[i].site);
        printf("%-5s -%llu byte(s) of %s at ", c ? "LESS" : "GONE",
               (unsigned long long)(old[i].bytes - (c ? c->bytes : 0)), frames_kind_phrase(old[i].site->kind));
        frames_put(stdout, origin ? origin : "?");
        putchar('\n');
        free(origin);
        better++;
    }
    if (worse == 0)
        printf("no site appeared or grew%s%s\n", threshold ? " by more than " : "",
               threshold ? units_format_size(threshold, a) : "");
    code = worse ? 1 : 0;
out:
    agg_free(old, nold == (size_t)-1 ? 0 : nold);
    agg_free(cur, ncur == (size_t)-1 ? 0 : ncur);
    load_set_free(&set);
    return code;
}

const cmd_spec_t diff_command = {
    .name = "diff",
    .operands = "OLD NEW",
    .min_operands = 2,
    .max_operands = 2,
    .summary = "leak sites that appeared or grew from one report to another",
    .description =
        "Lists the leak sites that appeared (NEW) or grew (GREW) from OLD to NEW, and those that "
        "shrank (LESS) or went (GONE), which never fail. Sites are matched by their symbolized "
        "stack, not by site id, which changes from run to run.",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = diff_main,
};
