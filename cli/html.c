/* html.c: `gpuleak html FILE... -o OUT.html`. The page is the template
 * cli/html/page.html with its markers replaced: the style (the
 * libraries' and cli/html/page.css), each report as JSON data, and the
 * scripts (the libraries, then cli/html/page.js, which draws the page
 * from that data). All of it comes from html_assets.S, inside the binary.
 * The command checks each report as every command does, then writes the
 * parsed document back out (dump.h) rather than the file's bytes, so
 * what the page reads is well-formed JSON whatever the file held. A big
 * report is written in two parts, its largest sites before the scripts and
 * the rest after them; a page of many reports holds most of them as
 * summaries (put_reports). */
#define _GNU_SOURCE
#include "commands.h"
#include "dump.h"
#include "frames.h"
#include "load.h"
#include "opts.h"
#include "outliers.h"
#include "report_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HTML_ASSET(name) extern const char html_asset_##name[], html_asset_##name##_end[];
HTML_ASSET(page_html)
HTML_ASSET(page_css)
HTML_ASSET(page_js)
HTML_ASSET(uplot_css)
HTML_ASSET(uplot_js)
HTML_ASSET(d3_js)
HTML_ASSET(flame_css)
HTML_ASSET(flame_js)

typedef struct {
    const char *start, *end;
} asset_t;

#define ASSET(name) ((asset_t){ html_asset_##name, html_asset_##name##_end })

/* Where the page goes: a temporary file beside OUT, renamed over it once
 * complete, so a failed run (a bad third report, a full disk) leaves OUT as
 * it was; or stdout for "-o -". */
typedef struct {
    FILE *f;
    char *tmp; /* NULL when writing stdout */
    const char *path;
} out_t;

static int put(FILE *f, const char *s, size_t n)
{
    return n == 0 || fwrite(s, 1, n, f) == n ? 0 : -1;
}

static int put_asset(FILE *f, asset_t a)
{
    return put(f, a.start, (size_t)(a.end - a.start));
}

/* dump.h's sink: the document as jansson writes it, with every
 * '<' written as the escape \u003c. In JSON text '<' can only stand inside
 * a string, where the escape means the same character, so the data reads
 * the same, and no "</script" or "<!--" in a function or file name can end
 * or change the <script> element that holds it. */
static int put_escaped(const char *buf, size_t size, void *data)
{
    FILE *f = data;
    const char *p = buf, *end = buf + size;
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        size_t n = lt ? (size_t)(lt - p) : (size_t)(end - p);
        if (put(f, p, n) != 0)
            return -1;
        if (lt == NULL)
            break;
        if (put(f, "\\u003c", 6) != 0)
            return -1;
        p = lt + 1;
    }
    return 0;
}

/* A path as a JSON string by the same rule. Bytes above 0x7f go out as
 * they are: the page is UTF-8, and the browser decodes a malformed sequence
 * as U+FFFD, which a JSON string may hold. */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f || *p == '<')
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Each metric's limit and median over the reports' values (outliers.h,
 * the rule merge names ranks by); no limit (UINT64_MAX) for fewer than
 * three reports. */
typedef struct {
    uint64_t limit[OUTLIERS_METRICS], median[OUTLIERS_METRICS];
} standing_t;

static int standing_of(const uint64_t (*values)[OUTLIERS_METRICS], int nfiles, standing_t *s)
{
    uint64_t *column = malloc(((size_t)nfiles + 1) * sizeof *column);
    if (column == NULL)
        return -1;
    for (int k = 0; k < OUTLIERS_METRICS; k++) {
        for (int i = 0; i < nfiles; i++)
            column[i] = values[i][k];
        s->limit[k] = nfiles < 3 ? UINT64_MAX : outliers_threshold(column, (size_t)nfiles, &s->median[k]);
    }
    free(column);
    return 0;
}

static int stands_out(const uint64_t values[OUTLIERS_METRICS], const standing_t *s)
{
    for (int k = 0; k < OUTLIERS_METRICS; k++)
        if (values[k] > s->limit[k])
            return 1;
    return 0;
}

/* The reports that stand out, as <script type="application/json"
 * class="gpuleak-outliers">[{"report": INDEX, "metric": NAME, "bytes": N,
 * "median_bytes": M}...]</script>, for the page's overview to name and show
 * first. Nothing for fewer than three reports. */
static void put_outliers(FILE *f, const uint64_t (*values)[OUTLIERS_METRICS], int nfiles,
                         const standing_t *s)
{
    if (nfiles < 3)
        return;
    fputs("<script type=\"application/json\" class=\"gpuleak-outliers\">[", f);
    int any = 0;
    for (int k = 0; k < OUTLIERS_METRICS; k++)
        for (int i = 0; i < nfiles; i++)
            if (values[i][k] > s->limit[k])
                fprintf(f, "%s{\"report\":%d,\"metric\":\"%s\",\"bytes\":%llu,\"median_bytes\":%llu}",
                        any++ ? "," : "", i, outliers_metric_names[k],
                        (unsigned long long)values[i][k], (unsigned long long)s->median[k]);
    fputs("]</script>\n", f);
}

/* A report of more sites than this in a list is written in two parts: the
 * page draws its largest sites from the first while the browser reads the
 * rest. The browser reads a page's text at about 30 MB/s: the 67 MB page
 * of 100,000 sites took 2.1-2.6 s before its script could run. */
#define PAGE_HEAD_SITES 5000

/* How a page holds its reports: each whole; or whole only the ones that
 * stand out, and of every other one a summary (dump_summary: its totals
 * and each list's PAGE_SUMMARY_SITES largest sites, without stacks or
 * timeline), its whole left in its file; or (auto) summaries for a page of
 * more than PAGE_WHOLE_REPORTS reports of more than PAGE_WHOLE_BYTES in
 * all, which would be slow to open whole: 1,000 reports of 467 KB made a
 * 468 MB page that headless Chromium first drew after 11.7 s. */
typedef enum { HOLD_AUTO, HOLD_WHOLE, HOLD_SUMMARIES } hold_t;
#define PAGE_WHOLE_REPORTS 16
#define PAGE_WHOLE_BYTES (64ull << 20)
#define PAGE_SUMMARY_SITES 20

/* The one line for a report that cannot be read; err is freed. */
static void report_error(char *err)
{
    frame_text_error_line(err);
    free(err);
}

/* Whether the page holds summaries: by hold, or (auto) by the reports'
 * count and their files' sizes (one that cannot be read counts nothing:
 * its load says why). */
static int summarizes(char **files, int nfiles, hold_t hold)
{
    if (hold != HOLD_AUTO)
        return hold == HOLD_SUMMARIES;
    if (nfiles <= PAGE_WHOLE_REPORTS)
        return 0;
    uint64_t bytes = 0;
    struct stat st;
    for (int i = 0; i < nfiles && bytes <= PAGE_WHOLE_BYTES; i++)
        if (stat(files[i], &st) == 0 && S_ISREG(st.st_mode))
            bytes += (uint64_t)st.st_size;
    return bytes > PAGE_WHOLE_BYTES;
}

/* Each report's numbers (outliers_values) from the few sections they come
 * from, one report at a time, into values. Returns 0, or -1 after one
 * line on stderr. */
static int read_values(char **files, int nfiles, uint64_t (*values)[OUTLIERS_METRICS])
{
    const char *const needed[] = { RK(format), RK(version), RK(tool), RK(process), RK(status),
                                   RK(totals), RK(growth), NULL };
    for (int i = 0; i < nfiles; i++) {
        char *err = NULL;
        load_report_t *r = load_file_keeping(files[i], needed, &err);
        if (r == NULL) {
            report_error(err);
            return -1;
        }
        outliers_values(r, values[i]);
        load_free(r);
    }
    return 0;
}

/* Writes report i of files, loaded as r, as <script
 * type="application/json" class="gpuleak-report">{"file": PATH, "report":
 * DOCUMENT}</script>: whole; or, with a list of more than PAGE_HEAD_SITES
 * sites, its head with "cut" (what its rest holds) and the rest to *rest (a
 * temporary file, made on first need) as <script type="application/json"
 * class="gpuleak-rest" data-report="INDEX">, for put_page to write after
 * the page's scripts; or (summary) its summary with "cut" and "elsewhere":
 * true. Returns 0, or -1 when writing failed. */
static int put_report(FILE *f, const char *file, int i, const load_report_t *r, int summary, FILE **rest)
{
    size_t max_sites = summary ? PAGE_SUMMARY_SITES : PAGE_HEAD_SITES;
    /* Without a temporary file the page holds the report whole, as
     * before the split: slower to open, never wrong. */
    int cut = !summary && dump_cuts(r, max_sites) && (*rest != NULL || (*rest = tmpfile()) != NULL);
    fputs("<script type=\"application/json\" class=\"gpuleak-report\">{\"file\":", f);
    put_json_string(f, file);
    fputs(",\"report\":", f);
    int rc = summary ? dump_summary(r, max_sites, put_escaped, f)
           : cut ? dump_head(r, max_sites, put_escaped, f) : dump_report(r, put_escaped, f);
    if (summary || cut) {
        fputs(",\"cut\":", f);
        rc |= dump_cut_totals(r, max_sites, put_escaped, f);
    }
    if (summary)
        fputs(",\"elsewhere\":true", f);
    if (cut) {
        fprintf(*rest, "<script type=\"application/json\" class=\"gpuleak-rest\" data-report=\"%d\">", i);
        rc |= dump_rest(r, max_sites, put_escaped, *rest);
        fputs("</script>\n", *rest);
    }
    fputs("}</script>\n", f);
    return rc != 0 || ferror(f) || (cut && ferror(*rest)) ? -1 : 0;
}

/* A write of the page to f failed: one line, but for stdout, whose
 * failure main says once, as for every command. */
static void say_write_failed(FILE *f)
{
    if (f != stdout)
        fputs("gpuleak html: writing the page failed\n", stderr);
}
/* Loads each report in turn and writes it (put_report), freeing it before
 * the next, so a page of many ranks needs the memory of one; then the ones
 * that stand out (put_outliers). A page of summaries (hold_t) reads each
 * report's numbers first, to know which stand out; with fewer than three
 * reports, none does and each is a summary. Returns 0, or
 * -1 after one line on stderr when a report cannot be read or the page
 * cannot be written. */
static int put_reports(FILE *f, char **files, int nfiles, hold_t hold, FILE **rest)
{
    /* What a summary holds: every section but those dump_summary leaves
     * out, which are then not read at all. */
    const char *const summarized[] = { RK(format), RK(version), RK(tool), RK(process), RK(status),
                                       RK(totals), RK(kinds), RK(devices), RK(leaks),
                                       RK(kept_by_libraries), RK(reachable_at_exit), RK(teardown_leaks),
                                       RK(failures), RK(sites), RK(peak), RK(growth), RK(held_at_finish),
                                       RK(python_layout), RK(oom), RK(torch_allocator), RK(frameworks),
                                       NULL };
    static const char out_of_memory[] = "gpuleak html: out of memory\n";
    uint64_t (*values)[OUTLIERS_METRICS] = calloc((size_t)nfiles + 1, sizeof *values);
    const uint64_t (*known)[OUTLIERS_METRICS] = (const uint64_t (*)[OUTLIERS_METRICS])values;
    if (values == NULL) {
        fputs(out_of_memory, stderr);
        return -1;
    }
    /* A page of summaries knows first which reports stand out; another
     * learns each report's numbers as it writes it. */
    standing_t standing;
    int many = summarizes(files, nfiles, hold);
    int rc = many ? read_values(files, nfiles, values) : 0;  /* its line says which report */
    if (rc == 0 && many && (rc = standing_of(known, nfiles, &standing)) != 0)
        fputs(out_of_memory, stderr);
    for (int i = 0; rc == 0 && i < nfiles; i++) {
        char *err = NULL;
        int summary = many && !stands_out(values[i], &standing);
        load_report_t *r = summary ? load_file_keeping(files[i], summarized, &err) : load_file(files[i], &err);
        if (r == NULL) {
            report_error(err);
            rc = -1;
            break;
        }
        if (!many)
            outliers_values(r, values[i]);
        if ((rc = put_report(f, files[i], i, r, summary, rest)) != 0)
            say_write_failed(f);
        load_free(r);
    }
    if (rc == 0 && !many && (rc = standing_of(known, nfiles, &standing)) != 0)
        fputs(out_of_memory, stderr);
    if (rc == 0) {
        put_outliers(f, known, nfiles, &standing);
        if (ferror(f)) {
            say_write_failed(f);
            rc = -1;
        }
    }
    free(values);
    return rc;
}

/* The reports' rests (put_reports), copied into the page. */
static int put_rest(FILE *f, FILE *rest)
{
    if (rest == NULL)
        return 0;
    char buf[1 << 16];
    size_t n;
    if (fflush(rest) != 0 || fseek(rest, 0, SEEK_SET) != 0)
        return -1;
    while ((n = fread(buf, 1, sizeof buf, rest)) > 0)
        if (put(f, buf, n) != 0)
            return -1;
    return ferror(rest) ? -1 : 0;
}

/* The template with its markers ("<!-- gpuleak:NAME -->") replaced.
 * Returns 0, or -1 after one line on stderr. */
static int put_page(FILE *f, char **files, int nfiles, hold_t hold)
{
    static const char mark[] = "<!-- gpuleak:";
    const size_t mark_len = sizeof mark - 1;
    asset_t page = ASSET(page_html);
    FILE *rest = NULL;
    int rc = 0;
    const char *p = page.start;
    while (rc == 0 && p < page.end) {
        const char *m = memmem(p, (size_t)(page.end - p), mark, mark_len);
        if (m == NULL)
            break;
        put(f, p, (size_t)(m - p));
        const char *name = m + mark_len;
        const char *close = memmem(name, (size_t)(page.end - name), " -->", 4);
        size_t n = close ? (size_t)(close - name) : 0;
        if (n == 5 && memcmp(name, "style", 5) == 0) {
            fputs("<style>\n", f);
            put_asset(f, ASSET(uplot_css));
            put_asset(f, ASSET(flame_css));
            put_asset(f, ASSET(page_css));
            fputs("</style>", f);
        } else if (n == 7 && memcmp(name, "reports", 7) == 0) {
            rc = put_reports(f, files, nfiles, hold, &rest);
        } else if (n == 6 && memcmp(name, "script", 6) == 0) {
            /* One element per library, so an error in one is reported
             * as its own and the page's script still says what failed. */
            const asset_t scripts[] = { ASSET(d3_js), ASSET(flame_js), ASSET(uplot_js), ASSET(page_js) };
            for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
                fputs("<script>", f);
                put_asset(f, scripts[i]);
                fputs("</script>\n", f);
            }
        } else if (n == 4 && memcmp(name, "rest", 4) == 0) {
            if ((rc = put_rest(f, rest)) != 0)
                say_write_failed(f);
        } else {
            /* Only a broken build gets here: the template is in the binary. */
            fputs("gpuleak html: the built-in page template has an unknown marker\n", stderr);
            rc = -1;
        }
        p = close + 4;
    }
    if (rest != NULL)
        fclose(rest);
    if (rc == 0)
        put(f, p, (size_t)(page.end - p));
    return rc;
}

/* Opens o for path; returns 0, or -1 after one line on stderr. */
static int out_open(out_t *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    if (asprintf(&o->tmp, "%s.XXXXXX", path) < 0) {
        o->tmp = NULL;
        fputs("gpuleak html: out of memory\n", stderr);
        return -1;
    }
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "gpuleak html: cannot write %s: %s\n", path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    /* mkstemp makes the file 0600; a page is as readable as any file the
     * user writes, so it gets the umask's mode like fopen's would. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || (o->f = fdopen(fd, "w")) == NULL) {
        fprintf(stderr, "gpuleak html: cannot write %s: %s\n", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    return 0;
}

/* Completes the page (ok) or throws it away. Returns 0 when the page is
 * in place; -1, after one line on stderr when writing failed. Writes to
 * stdout are checked by main, as for every command. */
static int out_close(out_t *o, int ok)
{
    if (o->tmp == NULL)
        return ok ? 0 : -1;
    int failed = ferror(o->f);
    failed |= fclose(o->f) != 0;
    if (ok && failed)
        fprintf(stderr, "gpuleak html: writing %s failed\n", o->path);
    else if (ok && rename(o->tmp, o->path) != 0) {
        fprintf(stderr, "gpuleak html: cannot write %s: %s\n", o->path, strerror(errno));
        failed = 1;
    }
    if (!ok || failed)
        unlink(o->tmp);
    free(o->tmp);
    return ok && !failed ? 0 : -1;
}

/* 1 when path names the same file as one of the reports. */
static int is_input(const char *path, char **files, int nfiles)
{
    struct stat out_st, in_st;
    if (stat(path, &out_st) != 0)
        return 0;
    for (int i = 0; i < nfiles; i++)
        if (stat(files[i], &in_st) == 0 && in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino)
            return 1;
    return 0;
}

enum { O_OUTPUT, O_REPORTS, O_COUNT };

static const char *const holds[] = { "auto", "whole", "summaries", NULL };

static const opt_spec_t options[] = {
    { "--output", "-o", OPT_STRING, 0, "OUT.html", NULL, 0,
      "Write the page to OUT.html ('-' is stdout); never over one of the reports. A failed "
      "write leaves an existing OUT.html as it was. Without it, the page goes beside the first "
      "report, named after it (run.json: run.html), and its path is printed." },
    { "--reports", NULL, OPT_CHOICE, 0, "auto|whole|summaries", holds, 0,
      "How the page holds the reports. whole: every one whole. summaries: whole only those "
      "that stand out (merge's rule); of each other one, its totals and each list's 20 largest "
      "sites, without stacks or timeline, the page naming the file that holds the rest. auto "
      "(the default): summaries for more than 16 reports of more than 64 MiB in all, which "
      "would be slow to open whole; else whole." },
};

static const cmd_exit_t exits[] = {
    { "0", "the page was written" },
    { "2", "bad usage, a report that cannot be read, or a failed write" },
};

/* The page's default path: the first report's, its .json (if any) made
 * .html. Malloc'd; NULL when out of memory. */
static char *default_page(const char *report)
{
    size_t len = strlen(report);
    if (len > 5 && strcmp(report + len - 5, ".json") == 0)
        len -= 5;
    char *page = malloc(len + 6);
    if (page != NULL) {
        memcpy(page, report, len);
        memcpy(page + len, ".html", 6);
    }
    return page;
}

/* Writes the page of files to out_path. Returns 0, or 2 after one line. */
static int write_page(char **files, int nfiles, hold_t hold, const char *out_path)
{
    if (is_input(out_path, files, nfiles)) {
        fputs("gpuleak html: -o ", stderr);
        frame_text_put(stderr, out_path);
        fputs(" is one of the reports; it would be overwritten\n", stderr);
        return CLI_EXIT_USAGE;
    }
    out_t out;
    if (out_open(&out, out_path) != 0)
        return CLI_EXIT_USAGE;
    int ok = put_page(out.f, files, nfiles, hold) == 0;
    return out_close(&out, ok) == 0 ? 0 : CLI_EXIT_USAGE;
}

static int html_main(const opts_t *opts)
{
    char **files = opts->operands;
    int nfiles = (int)opts->noperands;
    char *named = opts->v[O_OUTPUT].set ? NULL : default_page(files[0]);
    const char *out_path = opts->v[O_OUTPUT].set ? opts->v[O_OUTPUT].text : named;
    if (out_path == NULL) {
        fputs("gpuleak html: out of memory\n", stderr);
        return CLI_EXIT_USAGE;
    }
    hold_t hold = opts->v[O_REPORTS].set ? (hold_t)opts->v[O_REPORTS].choice : HOLD_AUTO;
    int code = write_page(files, nfiles, hold, out_path);
    if (code == 0 && named != NULL) {
        fputs("gpuleak html: wrote ", stdout);
        frame_text_put(stdout, named);
        putchar('\n');
    }
    free(named);
    return code;
}

const cmd_spec_t html_command = {
    .name = "html",
    .operands = "FILE...",
    .min_operands = 1,
    .max_operands = OPERANDS_ANY,
    .summary = "the reports as one self-contained interactive page",
    .description =
        "Writes one HTML page holding every report given (ranks side by side): the timeline with "
        "the exact peak, zoomable; icicle graphs of leaked, peak, grown and held bytes by stack; "
        "tables of leaks, growth, what Python held at its finish and who held it, the peak's "
        "composition, failures and the out-of-memory record, that sort and filter. The page "
        "needs no network and no other file: the libraries (third_party/js) are inlined. A "
        "report with a list of more than 5,000 sites is written in two parts: the page draws "
        "each list's largest sites, with the whole report's totals, while the browser reads "
        "the rest. A page of more than 16 reports of more than 64 MiB in all (a job's ranks) "
        "holds whole only those that stand out (merge's rule); of each other one, its totals "
        "and each list's 20 largest sites, and the page says which file holds the rest "
        "(--reports).",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = html_main,
};
