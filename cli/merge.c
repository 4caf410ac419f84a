/* merge.c: the job's view over the reports of its processes (ranks): the
 * ranks that stand out from the others, each with its line, then one row
 * per rank, then the leaking lines every rank shares. The reports are read
 * one at a time, and only what the view needs of each is kept, so a job of
 * a thousand ranks is read in bounded memory. The rule for "stands out" is
 * docs/merge.md's. */
#define _GNU_SOURCE
#include "commands.h"
#include "frames.h"
#include "load.h"
#include "outliers.h"
#include "report_keys.h"
#include "units.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* What the view keeps of one report. */
typedef struct rank_row {
    long long rank;        /* -1: the report has none (then pid orders it) */
    long long pid;
    char host[17];
    char *path;
    uint64_t value[OUTLIERS_METRICS];
    int has_growth, growth_judged;
    char *line[OUTLIERS_METRICS];   /* the line that holds the most of each, or NULL */
} rank_row_t;

/* A leaking line, over the ranks: how many have it, and its bytes summed. */
typedef struct line_total {
    char *line;            /* the origin, as every view writes it: the key */
    const char *kind;      /* its first site's kind phrase (a static string) */
    uint64_t bytes;
    size_t ranks;
    size_t last_report;    /* the report that counted last: once a report */
    UT_hash_handle hh;
} line_total_t;

typedef struct merge {
    rank_row_t *rows;
    size_t n;
    line_total_t *lines;
} merge_t;

/* The origin of the list's site holding the most bytes, or NULL. */
static char *top_line(const load_list_t *list)
{
    const load_site_t *top = NULL;
    for (size_t i = 0; i < list->n; i++)
        if (top == NULL || list->v[i].bytes > top->bytes)
            top = &list->v[i];
    return top != NULL ? frames_origin(top) : NULL;
}

/* Adds report index's leaks to the lines' totals. Returns 0, or -1 when
 * out of memory. */
static int add_lines(merge_t *m, const load_report_t *r, size_t index)
{
    for (size_t i = 0; i < r->leaks.n; i++) {
        const load_site_t *s = &r->leaks.v[i];
        char *line = frames_origin(s);
        if (line == NULL)
            return -1;
        line_total_t *t = NULL;
        HASH_FIND_STR(m->lines, line, t);
        if (t == NULL) {
            t = calloc(1, sizeof *t);
            if (t == NULL) {
                free(line);
                return -1;
            }
            t->line = line;
            t->kind = frames_site_phrase(s);
            t->last_report = (size_t)-1;
            HASH_ADD_KEYPTR(hh, m->lines, t->line, strlen(t->line), t);
        } else {
            free(line);
        }
        t->bytes = units_add(t->bytes, s->bytes);
        if (t->last_report != index)
            t->ranks++;
        t->last_report = index;
    }
    return 0;
}

/* Keeps what the view needs of r as row index. Returns 0, or -1 when out
 * of memory. */
static int keep_row(merge_t *m, const load_report_t *r, const char *path, size_t index)
{
    rank_row_t *row = &m->rows[index];
    row->rank = r->has_rank ? r->rank : -1;
    row->pid = r->pid;
    snprintf(row->host, sizeof row->host, "%s", r->host ? r->host : "-");
    for (char *p = row->host; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
    row->path = strdup(path);
    outliers_values(r, row->value);
    row->has_growth = r->has_growth;
    row->growth_judged = r->growth_judged;
    row->line[OUTLIERS_PEAK] = top_line(&r->peak_sites);
    row->line[OUTLIERS_LEAKED] = top_line(&r->leaks);
    row->line[OUTLIERS_GROWTH] = top_line(&r->growth);
    return row->path == NULL ? -1 : add_lines(m, r, index);
}

/* Reads every report, one at a time. Returns 0, or 2 after one line naming
 * the report that could not be read (a merged view missing a rank would
 * hide that rank's leaks). */
static int read_all(merge_t *m, char *const *paths, size_t n)
{
    /* What the view reads of each report: a few sections of it (the
     * timeline, the frame tables and most lists are most of its bytes). */
    const char *const needed[] = { RK(format), RK(version), RK(tool), RK(process), RK(status),
                                   RK(totals), RK(leaks), RK(growth), RK(peak), NULL };
    m->rows = calloc(n + 1, sizeof *m->rows);
    if (m->rows == NULL) {
        fputs("gpuleak merge: out of memory\n", stderr);
        return CLI_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        char *error = NULL;
        load_report_t *r = load_file_keeping(paths[i], needed, &error);
        if (r == NULL) {
            frame_text_error_line(error);
            free(error);
            return CLI_EXIT_USAGE;
        }
        int kept = keep_row(m, r, paths[i], i);
        m->n = i + 1;
        load_free(r);
        if (kept != 0) {
            fputs("gpuleak merge: out of memory\n", stderr);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

static void merge_free(merge_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->rows[i].path);
        for (int k = 0; k < OUTLIERS_METRICS; k++)
            free(m->rows[i].line[k]);
    }
    free(m->rows);
    line_total_t *t, *next;
    HASH_ITER(hh, m->lines, t, next) {
        HASH_DEL(m->lines, t);
        free(t->line);
        free(t);
    }
}

/* The bytes above which a rank stands out in metric k (outliers.h); *middle
 * gets the median. */
static uint64_t threshold(const merge_t *m, int k, uint64_t *middle)
{
    uint64_t *v = calloc(m->n + 1, sizeof *v);
    if (v == NULL)
        return UINT64_MAX;
    for (size_t i = 0; i < m->n; i++)
        v[i] = m->rows[i].value[k];
    uint64_t limit = outliers_threshold(v, m->n, middle);
    free(v);
    return limit;
}

/* Whether row i stands out in metric k. */
static int stands_out(const merge_t *m, size_t i, int k, uint64_t limit)
{
    return m->n >= 3 && m->rows[i].value[k] > limit;
}

static void print_rank_name(const rank_row_t *row)
{
    if (row->rank >= 0)
        printf("rank %lld", row->rank);
    else
        printf("pid %lld", row->pid);
}

/* "Ranks that stand out": one line each, with its line; or why none. */
static void print_outliers(const merge_t *m)
{
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    printf("\nRanks that stand out (docs/merge.md):\n");
    if (m->n < 3) {
        puts("  not judged: it takes three ranks or more");
        return;
    }
    size_t found = 0;
    for (int k = 0; k < OUTLIERS_METRICS; k++) {
        uint64_t med, limit = threshold(m, k, &med);
        for (size_t i = 0; i < m->n; i++) {
            if (!stands_out(m, i, k, limit))
                continue;
            printf("  ");
            print_rank_name(&m->rows[i]);
            printf(": %s %s", outliers_metric_names[k], units_format_size(m->rows[i].value[k], a));
            if (m->rows[i].line[k] != NULL) {
                fputs(" at ", stdout);
                frame_text_put(stdout, m->rows[i].line[k]);
            }
            printf("; %zu other rank(s) at a median of %s\n", m->n - 1, units_format_size(med, b));
            found++;
        }
    }
    if (found == 0)
        puts("  none: the ranks' peaks, leaks and growth are alike");
}

static int row_cmp(const void *a, const void *b)
{
    const rank_row_t *x = a, *y = b;
    long long rx = x->rank >= 0 ? x->rank : x->pid, ry = y->rank >= 0 ? y->rank : y->pid;
    return (rx > ry) - (rx < ry);
}

/* One row per rank, and the totals and imbalance over them. */
static void print_rows(const merge_t *m)
{
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF], c[UNITS_SIZE_BUF];
    uint64_t min_peak = UINT64_MAX, max_peak = 0, leaked = 0;
    printf("\n  %8s %8s %-16s %12s %12s %12s  %s\n", "rank", "pid", "host", "peak", "leaked",
           "growth", "file");
    for (size_t i = 0; i < m->n; i++) {
        const rank_row_t *row = &m->rows[i];
        char rank[24];
        if (row->rank >= 0)
            snprintf(rank, sizeof rank, "%lld", row->rank);
        else
            snprintf(rank, sizeof rank, "pid");
        printf("  %8s %8lld %-16s %12s %12s %12s  ", rank, row->pid, row->host,
               units_format_size(row->value[OUTLIERS_PEAK], a),
               units_format_size(row->value[OUTLIERS_LEAKED], b),
               !row->has_growth ? "-"
               : row->growth_judged ? units_format_size(row->value[OUTLIERS_GROWTH], c)
                                    : "not judged"); /* too short: not "0 B" */
        frame_text_put(stdout, row->path);
        putchar('\n');
        min_peak = row->value[OUTLIERS_PEAK] < min_peak ? row->value[OUTLIERS_PEAK] : min_peak;
        max_peak = row->value[OUTLIERS_PEAK] > max_peak ? row->value[OUTLIERS_PEAK] : max_peak;
        leaked = units_add(leaked, row->value[OUTLIERS_LEAKED]);
    }
    printf("\n  total leaked %s; peak from %s to %s", units_format_size(leaked, a),
           units_format_size(min_peak, b), units_format_size(max_peak, c));
    if (min_peak > 0)
        printf(", imbalance (max/min peak) %.2fx\n", (double)max_peak / (double)min_peak);
    else
        printf(", imbalance (max/min peak) n/a (a rank used no GPU memory)\n");
}

static int line_cmp(const line_total_t *x, const line_total_t *y)
{
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->line, y->line);
}

/* The leaking lines every rank has, largest first, bytes summed. */
static void print_common(merge_t *m)
{
    char a[UNITS_SIZE_BUF];
    HASH_SORT(m->lines, line_cmp);
    printf("\nLeaking lines common to all %zu rank(s):\n", m->n);
    size_t shown = 0;
    for (const line_total_t *t = m->lines; t != NULL; t = t->hh.next) {
        if (t->ranks != m->n)
            continue;
        printf("  %12s in all ranks, %s at ", units_format_size(t->bytes, a), t->kind);
        frame_text_put(stdout, t->line);
        putchar('\n');
        shown++;
    }
    if (shown == 0)
        puts("  (none)");
}

/* The same view as JSON, for tools. Returns 0, or -1 on a failed write. */
static int print_json(merge_t *m)
{
    json_t *root = json_object(), *ranks = json_array(), *outliers = json_array(),
           *common = json_array();
    for (size_t i = 0; i < m->n; i++) {
        const rank_row_t *row = &m->rows[i];
        json_array_append_new(ranks, json_pack("{s:o,s:I,s:s,s:s,s:I,s:I,s:o}",
            "rank", row->rank >= 0 ? json_integer(row->rank) : json_null(), "pid",
            (json_int_t)row->pid, "host", row->host, "file", row->path,
            "peak_bytes", (json_int_t)row->value[OUTLIERS_PEAK],
            "leaked_bytes", (json_int_t)row->value[OUTLIERS_LEAKED],
            "growth_bytes", row->has_growth && row->growth_judged
                                ? json_integer((json_int_t)row->value[OUTLIERS_GROWTH]) : json_null()));
    }
    for (int k = 0; m->n >= 3 && k < OUTLIERS_METRICS; k++) {
        uint64_t med, limit = threshold(m, k, &med);
        for (size_t i = 0; i < m->n; i++)
            if (stands_out(m, i, k, limit))
                json_array_append_new(outliers, json_pack("{s:o,s:I,s:s,s:I,s:I,s:o}",
                    "rank", m->rows[i].rank >= 0 ? json_integer(m->rows[i].rank) : json_null(),
                    "pid", (json_int_t)m->rows[i].pid, "metric", outliers_metric_names[k],
                    "bytes", (json_int_t)m->rows[i].value[k], "median_bytes", (json_int_t)med,
                    "line", m->rows[i].line[k] ? json_string(m->rows[i].line[k]) : json_null()));
    }
    HASH_SORT(m->lines, line_cmp);
    for (const line_total_t *t = m->lines; t != NULL; t = t->hh.next)
        if (t->ranks == m->n)
            json_array_append_new(common, json_pack("{s:s,s:s,s:I}", "line", t->line, "kind",
                                                    t->kind, "bytes", (json_int_t)t->bytes));
    json_object_set_new(root, "reports", json_integer((json_int_t)m->n));
    json_object_set_new(root, "outliers", outliers);
    json_object_set_new(root, "ranks", ranks);
    json_object_set_new(root, "common", common);
    int rc = json_dumpf(root, stdout, JSON_INDENT(1)) == 0 ? 0 : -1;
    putchar('\n');
    json_decref(root);
    return rc;
}

enum { O_FORMAT, O_ALL, O_COUNT };
static const char *const formats[] = { "text", "json", NULL };
/* Up to this many ranks, the text view lists every rank's row. */
#define ROWS_SHOWN 64

static const opt_spec_t options[] = {
    { "--format", "-f", OPT_CHOICE, 0, "text|json", formats, 0,
      "text (the default) for people; json for tools: the ranks, the ranks that stand out "
      "and the lines every rank shares." },
    { "--all", NULL, OPT_FLAG, 0, NULL, NULL, 0,
      "List every rank's row in the text view (by default only up to 64 ranks are)." },
};
_Static_assert(sizeof options / sizeof options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t exits[] = {
    { "0", "the merged view was printed" },
    { "2", "bad usage, a report that cannot be read (a merged view missing a rank would hide "
           "that rank's leaks), or a failed write to stdout" },
};

static int merge_main(const opts_t *opts)
{
    merge_t m = { 0 };
    int code = read_all(&m, opts->operands, opts->noperands);
    if (code == 0) {
        qsort(m.rows, m.n, sizeof *m.rows, row_cmp);
        if (opts->v[O_FORMAT].set && opts->v[O_FORMAT].choice == 1) {
            code = print_json(&m) == 0 ? 0 : CLI_EXIT_USAGE;
        } else {
            printf("gpuleak merge: %zu report(s)\n", m.n);
            print_outliers(&m);
            if (m.n <= ROWS_SHOWN || opts->v[O_ALL].set)
                print_rows(&m);
            else
                printf("\n  (%zu ranks: --all lists each one's row)\n", m.n);
            print_common(&m);
        }
    }
    merge_free(&m);
    return code;
}

const cmd_spec_t merge_command = {
    .name = "merge",
    .operands = "FILE...",
    .min_operands = 1,
    .max_operands = OPERANDS_ANY,
    .summary = "one view of the reports of a job's processes (ranks)",
    .description =
        "Reads the reports one at a time (memory bounded whatever their number) and prints the "
        "ranks that stand out from the others in peak, leaked bytes or growth, each with the line "
        "that holds the most (the rule: docs/merge.md); one row per rank (rank from "
        "process.rank, else pid) with its peak, leaked and growth bytes, and the imbalance "
        "between ranks (max/min peak); and the leaking lines every rank shares, their bytes "
        "summed.",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = merge_main,
};
