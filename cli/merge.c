/* merge.c: one line per rank (peak, leaked, growth), how unbalanced the
 * ranks are, and the leaking sites every rank shares: a leak in all ranks
 * is in the training code, a leak in one rank is in that rank's role. */
#define _GNU_SOURCE
#include "commands.h"
#include "frames.h"
#include "load.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A leak site of one rank, by its identity (frames_id: the ranks run one
 * build, so name and lines both must agree). */
typedef struct {
    frames_id_t id;
    size_t report;
    const load_site_t *site;
} entry_t;

static int entry_cmp(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    int c = frames_id_cmp(&x->id, &y->id);
    return c ? c : (x->report > y->report) - (x->report < y->report);
}

/* A site every rank has, with its bytes summed over them; order keeps
 * equal sizes in the order of their identity. */
typedef struct {
    const load_site_t *site;
    uint64_t bytes;
    size_t order;
} common_t;

static int common_cmp(const void *a, const void *b)
{
    const common_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return (x->order > y->order) - (x->order < y->order);
}

static int rank_cmp(const void *a, const void *b)
{
    const load_report_t *x = *(load_report_t *const *)a, *y = *(load_report_t *const *)b;
    long long rx = x->has_rank ? x->rank : x->pid, ry = y->has_rank ? y->rank : y->pid;
    return (rx > ry) - (rx < ry);
}

/* Prints the leak sites present in every report, with bytes summed over
 * the ranks; an id seen twice in one report counts once toward "every".
 * Returns -1 when out of memory. */
static int print_common(load_report_t **r, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += r[i]->leaks.n;
    entry_t *e = calloc(total + 1, sizeof *e);
    if (e == NULL)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < r[i]->leaks.n; k++, m++) {
            if (frames_id(&r[i]->leaks.v[k], &e[m].id) != 0) {
                for (size_t j = 0; j < m; j++)
                    frames_id_free(&e[j].id);
                free(e);
                return -1;
            }
            e[m].report = i;
            e[m].site = &r[i]->leaks.v[k];
        }
    qsort(e, m, sizeof *e, entry_cmp);
    /* The common sites, each as its first entry and its bytes summed, are
     * listed largest first, as every other list of sites is. */
    common_t *c = calloc(m + 1, sizeof *c);
    if (c == NULL) {
        for (size_t i = 0; i < m; i++)
            frames_id_free(&e[i].id);
        free(e);
        return -1;
    }
    size_t common = 0;
    char a[UNITS_SIZE_BUF];
    for (size_t i = 0; i < m;) {
        size_t end = i, ranks = 0;
        uint64_t bytes = 0;
        while (end < m && frames_id_cmp(&e[end].id, &e[i].id) == 0) {
            if (end == i || e[end].report != e[end - 1].report)
                ranks++;
            bytes = units_add(bytes, e[end].site->bytes);
            end++;
        }
        if (ranks == n)
            c[common++] = (common_t){ e[i].site, bytes, common };
        i = end;
    }
    qsort(c, common, sizeof *c, common_cmp);
    printf("\nLeaking sites common to all %zu rank(s):\n", n);
    for (size_t i = 0; i < common; i++) {
        char *origin = frames_origin(c[i].site);
        printf("  %12s in all ranks, %s at ", units_format_size(c[i].bytes, a), frames_kind_phrase(c[i].site->kind));
        frame_text_put(stdout, origin ? origin : "?");
        putchar('\n');
        free(origin);
    }
    if (common == 0)
        puts("  (none)");
    free(c);
    for (size_t i = 0; i < m; i++)
        frames_id_free(&e[i].id);
    free(e);
    return 0;
}

static const cmd_exit_t exits[] = {
    { "0", "the merged view was printed" },
    { "2", "bad usage, a report that cannot be read (a merged view missing a rank would hide "
           "that rank's leaks), or a failed write to stdout" },
};

static int merge_main(const opts_t *opts)
{
    load_set_t set;
    int code = CLI_EXIT_USAGE;
    if (load_files(&set, opts->operands, opts->noperands) == 0 && set.bad == 0) {
        /* Sorted in place: no errors to keep in step with, none being bad. */
        load_report_t **r = set.v;
        size_t n = set.n;
        qsort(r, n, sizeof *r, rank_cmp);
        char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF], c[UNITS_SIZE_BUF];
        uint64_t min_peak = UINT64_MAX, max_peak = 0, leaked = 0;
        printf("gpuleak merge: %zu report(s)\n\n  %8s %8s %-16s %12s %12s %12s  %s\n", n, "rank", "pid", "host",
               "peak", "leaked", "growth", "file");
        for (size_t i = 0; i < n; i++) {
            char rank[24], host[17];
            if (r[i]->has_rank)
                snprintf(rank, sizeof rank, "%lld", r[i]->rank);
            else
                snprintf(rank, sizeof rank, "pid");
            snprintf(host, sizeof host, "%s", r[i]->host ? r[i]->host : "-");
            for (char *p = host; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                    *p = '?';
            printf("  %8s %8lld %-16s %12s %12s %12s  ", rank, r[i]->pid, host,
                   units_format_size(r[i]->totals.peak_bytes, a), units_format_size(r[i]->totals.leaked_bytes, b),
                   !r[i]->has_growth ? "-"
                   : r[i]->growth_judged ? units_format_size(r[i]->growth_bytes, c)
                                         : "not judged"); /* too short: not "0 B" */
            frame_text_put(stdout, r[i]->path);
            putchar('\n');
            min_peak = r[i]->totals.peak_bytes < min_peak ? r[i]->totals.peak_bytes : min_peak;
            max_peak = r[i]->totals.peak_bytes > max_peak ? r[i]->totals.peak_bytes : max_peak;
            leaked = units_add(leaked, r[i]->totals.leaked_bytes);
        }
        printf("\n  total leaked %s; peak from %s to %s", units_format_size(leaked, a),
               units_format_size(min_peak, b), units_format_size(max_peak, c));
        if (min_peak > 0)
            printf(", imbalance (max/min peak) %.2fx\n", (double)max_peak / (double)min_peak);
        else
            printf(", imbalance (max/min peak) n/a (a rank used no GPU memory)\n");
        code = 0;
        if (print_common(r, n) != 0) {
            fputs("gpuleak merge: out of memory\n", stderr);
            code = CLI_EXIT_USAGE;
        }
    }
    load_set_free(&set);
    return code;
}

const cmd_spec_t merge_command = {
    .name = "merge",
    .operands = "FILE...",
    .min_operands = 1,
    .max_operands = OPERANDS_ANY,
    .summary = "one view of the reports of several processes (ranks)",
    .description =
        "Prints one row per process (rank from process.rank, else pid) with its peak, leaked and "
        "growth bytes; the imbalance between ranks (max/min peak); and the leak sites common "
        "to every rank with their bytes summed.",
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = merge_main,
};
