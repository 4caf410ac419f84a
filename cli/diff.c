/* diff.c: what leaks more in NEW than in OLD. Sites are matched by what
 * survives a rebuild (frames_id: the functions of their stack, not its
 * offsets or lines), never by site id or address, which change from run to
 * run; sites of one run sharing name and lines are added up. */
#define _GNU_SOURCE
#include "commands.h"
#include "frames.h"
#include "load.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNMATCHED SIZE_MAX

/* Past this many candidate pairs among the sites of one name, the lines
 * are paired in order instead of nearest first (n log n instead of n^2). */
#define NEAREST_MAX_PAIRS (1u << 20)

typedef struct {
    frames_id_t id;
    const load_site_t *site; /* the first site with this id, for display */
    uint64_t bytes, allocations;
    size_t match;            /* its site in the other report, or UNMATCHED */
} agg_t;

static int agg_cmp(const void *a, const void *b)
{
    return frames_id_cmp(&((const agg_t *)a)->id, &((const agg_t *)b)->id);
}

static void agg_free(agg_t *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        frames_id_free(&v[i].id);
    free(v);
}

/* Groups a report's leaks by id, sorted by name then lines. Returns the
 * count, or (size_t)-1 when out of memory. */
static size_t aggregate(const load_list_t *list, agg_t **out)
{
    agg_t *v = calloc(list->n + 1, sizeof *v);
    if (v == NULL)
        return (size_t)-1;
    for (size_t i = 0; i < list->n; i++) {
        if (frames_id(&list->v[i], &v[i].id) != 0) {
            agg_free(v, i);
            return (size_t)-1;
        }
        v[i].site = &list->v[i];
        v[i].bytes = list->v[i].bytes;
        v[i].allocations = list->v[i].allocations;
        v[i].match = UNMATCHED;
    }
    qsort(v, list->n, sizeof *v, agg_cmp);
    size_t w = 0;
    for (size_t i = 0; i < list->n; i++) {
        if (w > 0 && frames_id_cmp(&v[w - 1].id, &v[i].id) == 0) {
            v[w - 1].bytes = units_add(v[w - 1].bytes, v[i].bytes);
            v[w - 1].allocations = units_add(v[w - 1].allocations, v[i].allocations);
            frames_id_free(&v[i].id);
            continue;
        }
        v[w++] = v[i];
    }
    *out = v;
    return w;
}

static void pair(agg_t *old, size_t i, agg_t *cur, size_t j)
{
    old[i].match = j;
    cur[j].match = i;
}

/* How far apart two sites of one name are: their lines' differences
 * summed (the same frames, so as many lines). */
static uint64_t line_distance(const agg_t *a, const agg_t *b)
{
    uint64_t d = 0;
    for (size_t i = 0; i < a->id.nlines && i < b->id.nlines; i++) {
        long x = a->id.lines[i], y = b->id.lines[i];
        d = units_add(d, (uint64_t)(x > y ? x - y : y - x));
    }
    return d;
}

typedef struct {
    uint64_t distance;
    size_t old, cur;
} candidate_t;

static int by_distance(const void *a, const void *b)
{
    const candidate_t *x = a, *y = b;
    if (x->distance != y->distance)
        return x->distance < y->distance ? -1 : 1;
    if (x->old != y->old)
        return x->old < y->old ? -1 : 1;
    return (x->cur > y->cur) - (x->cur < y->cur);
}

/* Pairs the sites of one name, old[o0..o1) with cur[c0..c1), both sorted
 * by lines: equal lines first; then, since an edit shifts the lines of the
 * code after it, the nearest lines first, so that a comment added above
 * two calls in one function still pairs each call with itself and a call
 * added between them is the new one. Returns -1 when out of memory. */
static int pair_name(agg_t *old, size_t o0, size_t o1, agg_t *cur, size_t c0, size_t c1)
{
    for (size_t i = o0, j = c0; i < o1 && j < c1;) {
        int c = frames_id_cmp_lines(&old[i].id, &cur[j].id);
        if (c == 0)
            pair(old, i++, cur, j++);
        else if (c < 0)
            i++;
        else
            j++;
    }
    size_t n = 0, max = (o1 - o0) * (c1 - c0);
    if (max > NEAREST_MAX_PAIRS) {
        for (size_t i = o0, j = c0; i < o1 && j < c1;) {
            if (old[i].match != UNMATCHED)
                i++;
            else if (cur[j].match != UNMATCHED)
                j++;
            else
                pair(old, i++, cur, j++);
        }
        return 0;
    }
    candidate_t *cand = malloc((max ? max : 1) * sizeof *cand);
    if (cand == NULL)
        return -1;
    for (size_t i = o0; i < o1; i++)
        for (size_t j = c0; j < c1; j++)
            if (old[i].match == UNMATCHED && cur[j].match == UNMATCHED)
                cand[n++] = (candidate_t){ line_distance(&old[i], &cur[j]), i, j };
    qsort(cand, n, sizeof *cand, by_distance);
    for (size_t k = 0; k < n; k++)
        if (old[cand[k].old].match == UNMATCHED && cur[cand[k].cur].match == UNMATCHED)
            pair(old, cand[k].old, cur, cand[k].cur);
    free(cand);
    return 0;
}

/* Pairs the sites of OLD and NEW that share a name (both sorted by
 * aggregate). Returns -1 when out of memory. */
static int pair_all(agg_t *old, size_t nold, agg_t *cur, size_t ncur)
{
    size_t i = 0, j = 0;
    while (i < nold && j < ncur) {
        int c = strcmp(old[i].id.name, cur[j].id.name);
        size_t i1 = i, j1 = j;
        while (c <= 0 && i1 < nold && strcmp(old[i1].id.name, old[i].id.name) == 0)
            i1++;
        while (c >= 0 && j1 < ncur && strcmp(cur[j1].id.name, cur[j].id.name) == 0)
            j1++;
        if (c == 0 && pair_name(old, i, i1, cur, j, j1) != 0)
            return -1;
        i = i1;
        j = j1;
    }
    return 0;
}

static void print_line(const char *tag, uint64_t old_bytes, const agg_t *a)
{
    char *origin = frames_origin(a->site);
    printf("%-5s +%llu byte(s) (%llu -> %llu) of %s in %llu allocation(s) at ", tag,
           (unsigned long long)(a->bytes - old_bytes), (unsigned long long)old_bytes,
           (unsigned long long)a->bytes, frames_site_phrase(a->site),
           (unsigned long long)a->allocations);
    frame_text_put(stdout, origin ? origin : "?");
    putchar('\n');
    free(origin);
}

enum { O_THRESHOLD, O_COUNT };

static const opt_spec_t options[] = {
    { "--threshold", NULL, OPT_SIZE, 0, "SIZE", NULL, 0,
      "Fail only when a site appeared or grew by more than SIZE, or all of them together did "
      "(default 0: any growth); the sites let by are counted in the last line." },
};
_Static_assert(sizeof options / sizeof options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t exits[] = {
    { "0", "no site appeared or grew by more than the threshold, nor all of them together" },
    { "1", "a site, or all of them together, appeared or grew by more than the threshold" },
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
    if (nold == (size_t)-1 || ncur == (size_t)-1 || pair_all(old, nold, cur, ncur) != 0) {
        fputs("gpuleak diff: out of memory\n", stderr);
        goto out;
    }
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    fputs("gpuleak diff: ", stdout);
    frame_text_put(stdout, files[0]);
    fputs(" -> ", stdout);
    frame_text_put(stdout, files[1]);
    printf("\n  leaked: %s -> %s; peak: ", units_format_size(r[0]->totals.leaked_bytes, a),
           units_format_size(r[1]->totals.leaked_bytes, b));
    printf("%s -> %s\n", units_format_size(r[0]->totals.peak_bytes, a),
           units_format_size(r[1]->totals.peak_bytes, b));
    size_t worse = 0, hidden = 0;
    uint64_t grown = 0, hidden_bytes = 0;  /* what appeared or grew, and of it under the threshold */
    for (size_t i = 0; i < ncur; i++) {
        const agg_t *o = cur[i].match != UNMATCHED ? &old[cur[i].match] : NULL;
        uint64_t before = o ? o->bytes : 0;
        if (cur[i].bytes <= before)
            continue;
        grown = units_add(grown, cur[i].bytes - before);
        if (cur[i].bytes - before <= threshold) {
            hidden++;
            hidden_bytes = units_add(hidden_bytes, cur[i].bytes - before);
            continue;
        }
        print_line(o ? "GREW" : "NEW", before, &cur[i]);
        worse++;
    }
    /* Many sites each under the threshold can add up to more than it:
     * the threshold holds for the total too. */
    int total_over = threshold > 0 && grown > threshold && hidden > 0;
    if (total_over)
        printf("TOTAL +%llu byte(s) appeared or grew over %zu site(s), more than the threshold "
               "%s, %zu of them (%s) each within it\n", (unsigned long long)grown, worse + hidden,
               units_format_size(threshold, a), hidden, units_format_size(hidden_bytes, b));
    for (size_t i = 0; i < nold; i++) {
        const agg_t *c = old[i].match != UNMATCHED ? &cur[old[i].match] : NULL;
        if (c != NULL && c->bytes >= old[i].bytes)
            continue;
        char *origin = frames_origin(old[i].site);
        printf("%-5s -%llu byte(s) of %s at ", c ? "LESS" : "GONE",
               (unsigned long long)(old[i].bytes - (c ? c->bytes : 0)), frames_site_phrase(old[i].site));
        frame_text_put(stdout, origin ? origin : "?");
        putchar('\n');
        free(origin);
    }
    if (worse == 0 && !total_over) {
        printf("no site appeared or grew%s%s", threshold ? " by more than " : "",
               threshold ? units_format_size(threshold, a) : "");
        if (hidden > 0)  /* said, not hidden: the threshold let them by */
            printf(" (%zu site(s) grew by %s in all, each within it)", hidden,
                   units_format_size(hidden_bytes, b));
        putchar('\n');
    }
    code = worse || total_over ? 1 : 0;
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
        "shrank (LESS) or went (GONE), which never fail. Sites are matched by what survives a "
        "rebuild: their kind and the functions of their stack (Python frames by function and "
        "file name), not by site id, address, offset or line, which change from run to run or "
        "with an edit; a frame without a function name is matched by module and offset. Where "
        "sites share those, their lines tell them apart, the nearest paired first.",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = diff_main,
};
