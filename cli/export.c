/* export.c: a report in other tools' formats: folded stacks (flamegraph.pl,
 * speedscope), CSV (spreadsheets, pandas) and Chrome trace JSON (Perfetto,
 * chrome://tracing). */
#define _GNU_SOURCE
#include "commands.h"
#include "frames.h"
#include "load.h"
#include "units.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A frame name in folded format may not hold ';' (the separator) or a
 * line break; spaces are fine, the count is after the last one. */
static void folded_put(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        fputc(*p == ';' ? ':' : (*p < 0x20 || *p == 0x7f) ? '?' : *p, f);
}

/* Folded stacks of a list of sites, root first, the value each site's
 * bytes (leaked, at the peak or grown, by the list). Python frames come
 * first (nearest the root): they are the user's code that the native
 * frames, from the outermost in, end up allocating for. A native frame
 * without a name is written "module+0xOFFSET". */
static void export_folded(FILE *f, const load_list_t *list)
{
    for (size_t i = 0; i < list->n; i++) {
        const load_site_t *s = &list->v[i];
        int first = 1;
        for (size_t k = s->npython; k-- > 0;) {
            if (!first)
                fputc(';', f);
            first = 0;
            folded_put(f, s->python[k]->function);
            fputs(" (", f);
            folded_put(f, frame_text_basename(s->python[k]->file));
            fprintf(f, ":%ld)", s->python[k]->line);
        }
        for (size_t k = s->nstack; k-- > 0;) {
            const load_frame_t *fr = s->stack[k];
            if (!first)
                fputc(';', f);
            first = 0;
            if (fr->function != NULL)
                folded_put(f, fr->function);
            else {
                folded_put(f, frame_text_basename(fr->module));
                fprintf(f, "+0x%llx", (unsigned long long)fr->offset);
            }
        }
        if (first)
            fprintf(f, "[no stack: %s]", s->kind);
        fprintf(f, " %llu\n", (unsigned long long)s->bytes);
    }
}

/* RFC 4180 quoting, applied to every text field since names can hold
 * commas (C++ templates) and quotes. */
static void csv_put(FILE *f, const char *s)
{
    fputc('"', f);
    for (const char *p = s ? s : ""; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

/* The timeline as t_s,bytes,<kind>...,max_bytes when the report has one
 * (max_bytes last, so the columns before stay where scripts found them),
 * else one row per site with its counters and innermost frame. bytes is
 * what was live at the sample, max_bytes the exact high since the sample
 * before: the peak is the highest max_bytes, never lost between samples. */
static void export_csv(FILE *f, const load_report_t *r)
{
    if (r->has_timeline) {
        fputs("t_s,bytes", f);
        for (int k = 0; k < LOAD_KINDS; k++)
            fprintf(f, ",%s", load_kind_names[k]);
        fputs(",max_bytes\n", f);
        for (size_t i = 0; i < r->npoints; i++) {
            const load_point_t *p = &r->points[i];
            fprintf(f, "%llu.%09llu,%llu", (unsigned long long)(p->t_ns / 1000000000ULL),
                    (unsigned long long)(p->t_ns % 1000000000ULL), (unsigned long long)p->bytes);
            for (int k = 0; k < LOAD_KINDS; k++)
                fprintf(f, ",%llu", (unsigned long long)p->kinds[k]);
            fprintf(f, ",%llu\n", (unsigned long long)p->max_bytes);
        }
        return;
    }
    fputs("site,kind,device,bytes_allocated,allocations,frees,live_bytes,peak_live_bytes,"
          "function,file,line,module,offset\n", f);
    for (size_t i = 0; i < r->sites.n; i++) {
        const load_site_t *s = &r->sites.v[i];
        const load_frame_t *fr = frames_innermost_user(s);
        fprintf(f, "%llu,", (unsigned long long)s->id);
        csv_put(f, s->kind);
        fprintf(f, ",%ld,%llu,%llu,%llu,%llu,%llu,", s->device, (unsigned long long)s->bytes,
                (unsigned long long)s->allocations, (unsigned long long)s->frees,
                (unsigned long long)s->live_bytes, (unsigned long long)s->peak_live_bytes);
        csv_put(f, fr ? fr->function : NULL);
        fputc(',', f);
        csv_put(f, fr ? fr->file : NULL);
        if (fr && fr->line > 0)
            fprintf(f, ",%ld,", fr->line);
        else
            fputs(",,", f);
        csv_put(f, fr ? frame_text_basename(fr->module) : NULL);
        if (fr)
            fprintf(f, ",0x%llx\n", (unsigned long long)fr->offset);
        else
            fputs(",\n", f);
    }
}

static json_t *counter(const char *name, double ts_us, long long pid, json_t *args)
{
    return json_pack("{s:s, s:s, s:f, s:I, s:i, s:o}", "name", name, "ph", "C", "ts", ts_us, "pid",
                     (json_int_t)pid, "tid", 0, "args", args);
}

/* The timeline's counter tracks: live bytes and the exact high within
 * each sample; the driver's kinds (with PyTorch, its reserved memory) on
 * one track and its tensors (allocated memory, which lies inside those
 * segments, so never stacked on them) on another, each kind only when the
 * timeline has it. */
static void chrome_timeline(json_t *events, const load_report_t *r, long long pid)
{
    bool present[LOAD_KINDS] = { false }, any_driver = false;
    for (size_t i = 0; i < r->npoints; i++)
        for (int k = 0; k < LOAD_KINDS; k++)
            present[k] = present[k] || r->points[i].kinds[k] > 0;
    for (int k = 0; k < LOAD_KINDS; k++)
        any_driver = any_driver || (present[k] && k != REPORT_KIND_tensor);
    for (size_t i = 0; i < r->npoints; i++) {
        const load_point_t *p = &r->points[i];
        double ts = (double)p->t_ns / 1000.0;
        json_array_append_new(events, counter("GPU memory (bytes)", ts, pid,
                                              json_pack("{s:I}", "live", (json_int_t)p->bytes)));
        json_array_append_new(events, counter("GPU memory, highest in the sample (bytes)", ts, pid,
                                              json_pack("{s:I}", "max_bytes", (json_int_t)p->max_bytes)));
        if (any_driver) {
            json_t *kinds = json_object();
            for (int k = 0; k < LOAD_KINDS; k++)
                if (present[k] && k != REPORT_KIND_tensor)
                    json_object_set_new(kinds, load_kind_names[k], json_integer((json_int_t)p->kinds[k]));
            json_array_append_new(events, counter("GPU memory by kind (bytes; with PyTorch, reserved)",
                                                  ts, pid, kinds));
        }
        if (present[REPORT_KIND_tensor])
            json_array_append_new(events, counter("PyTorch tensors (bytes; allocated)", ts, pid,
                                                  json_pack("{s:I}", "tensor",
                                                            (json_int_t)p->kinds[REPORT_KIND_tensor])));
    }
}

/* Chrome trace JSON: counter events ("ph":"C") that Perfetto draws as
 * tracks: the timeline's (chrome_timeline), or without a timeline the
 * peak and the bytes live at exit at their times. Built with jansson so
 * every name is escaped correctly. Returns 0, or -1 when out of memory. */
static int export_chrome(FILE *f, const load_report_t *r)
{
    json_t *events = json_array();
    json_t *root = json_pack("{s:o, s:s}", "traceEvents", events, "displayTimeUnit", "ms");
    if (root == NULL)
        return -1;
    long long pid = r->pid;
    char *pname = NULL;
    if (asprintf(&pname, "gpuleak %s%s", r->argc ? r->argv[0] : "", r->has_rank ? " (rank)" : "") < 0)
        pname = NULL;
    json_array_append_new(events, json_pack("{s:s, s:s, s:I, s:i, s:{s:s}}", "name", "process_name", "ph",
                                            "M", "pid", (json_int_t)pid, "tid", 0, "args", "name",
                                            pname ? pname : "gpuleak"));
    free(pname);
    if (r->has_timeline && r->npoints > 0) {
        chrome_timeline(events, r, pid);
    } else {
        uint64_t t0 = r->start_time_ns ? r->start_time_ns : r->peak_time_ns;
        double peak_ts = r->peak_time_ns >= t0 ? (double)(r->peak_time_ns - t0) / 1000.0 : 0;
        double end_ts = r->end_time_ns >= t0 && r->end_time_ns ? (double)(r->end_time_ns - t0) / 1000.0 : peak_ts;
        if (r->start_time_ns)
            json_array_append_new(events, counter("GPU memory (bytes)", 0, pid, json_pack("{s:i}", "live", 0)));
        json_array_append_new(events, counter("GPU memory (bytes)", peak_ts, pid,
                                              json_pack("{s:I}", "live", (json_int_t)r->totals.peak_bytes)));
        json_array_append_new(events, counter("GPU memory (bytes)", end_ts, pid,
                                              json_pack("{s:I}", "live", (json_int_t)r->totals.live_bytes)));
    }
    int rc = json_dumpf(root, f, JSON_COMPACT) == 0 ? 0 : -1;
    fputc('\n', f);
    json_decref(root);
    return rc;
}

enum { O_FORMAT, O_WHAT, O_OUTPUT, O_COUNT };

enum { FORMAT_FOLDED, FORMAT_CSV, FORMAT_CHROME };
enum { WHAT_LEAKED, WHAT_PEAK, WHAT_GROWTH };

/* An empty folded export is a silent file: one line on stderr says why
 * (nothing leaked, a run too short for the growth rule, a report taken
 * while the program ran), and the exit is still 0. */
static void say_empty(const char *file, const load_report_t *r, int what)
{
    const char *why = what == WHAT_GROWTH && !r->growth_judged
                          ? "the run was too short for the growth rule to judge growth"
                    : what == WHAT_GROWTH ? "no site grew"
                    : what == WHAT_PEAK ? "no site held memory at the peak"
                    : !r->complete ? "nothing was live when this report was taken"
                                   : "nothing leaked";
    fputs("gpuleak export: ", stderr);
    frame_text_put(stderr, file);
    fprintf(stderr, ": no sites to export (%s)\n", why);
}

static const char *const formats[] = { "folded", "csv", "chrome-trace", NULL };
static const char *const whats[] = { "leaked", "peak", "growth", NULL };

static const opt_spec_t options[] = {
    { "--format", "-f", OPT_CHOICE, OPT_REQUIRED, "folded|csv|chrome-trace", formats, 0,
      "folded: one line per site for flamegraph.pl and speedscope, root first, the value "
      "its bytes (--what). csv: the timeline (t_s,bytes,<kind>...,max_bytes), or without one "
      "the sites. chrome-trace: counter tracks that Perfetto and chrome://tracing open: live "
      "bytes, the exact high within each sample, the driver's kinds (with PyTorch, reserved "
      "memory) and PyTorch's tensors (allocated) when the report has them." },
    { "--what", NULL, OPT_CHOICE, 0, "leaked|peak|growth", whats, 0,
      "With --format folded, which sites and bytes: leaked (the default: the leaks' bytes), "
      "peak (what each site held at the exact peak) or growth (what each grew); peak and growth "
      "need the report's section." },
    { "--output", "-o", OPT_STRING, 0, "FILE", NULL, 0,
      "Write to FILE instead of stdout ('-' is stdout); never over the report itself." },
};
_Static_assert(sizeof options / sizeof options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t exits[] = {
    { "0", "the export was written" },
    { "2", "bad usage, a report that cannot be read, or a failed write (a half-written export "
           "must not look like a good one)" },
};

static int export_main(const opts_t *opts)
{
    const char *file = opts->operands[0], *out_path = opts->v[O_OUTPUT].text;
    int which = opts->v[O_FORMAT].choice, what = opts->v[O_WHAT].set ? opts->v[O_WHAT].choice : WHAT_LEAKED;
    if (opts->v[O_WHAT].set && which != FORMAT_FOLDED) {
        fputs("gpuleak export: --what is for --format folded\n", stderr);
        return CLI_EXIT_USAGE;
    }
    load_set_t set;
    if (load_files(&set, opts->operands, 1) != 0 || set.bad > 0) {
        load_set_free(&set);
        return CLI_EXIT_USAGE;
    }
    load_report_t *r = set.v[0];
    const load_list_t *sites = what == WHAT_PEAK ? &r->peak_sites : what == WHAT_GROWTH ? &r->growth : &r->leaks;
    if ((what == WHAT_PEAK && !r->has_peak) || (what == WHAT_GROWTH && !r->has_growth)) {
        fputs("gpuleak: ", stderr);
        frame_text_put(stderr, file);
        fprintf(stderr, ": --what %s needs the report's \"%s\" section, which it does not have\n",
                whats[what], what == WHAT_PEAK ? "peak" : "growth");
        load_set_free(&set);
        return CLI_EXIT_USAGE;
    }
    struct stat in_st, out_st;
    if (out_path != NULL && stat(file, &in_st) == 0 && stat(out_path, &out_st) == 0
        && in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) {
        fputs("gpuleak export: -o ", stderr);
        frame_text_put(stderr, out_path);
        fputs(" is the report itself; it would be overwritten\n", stderr);
        load_set_free(&set);
        return CLI_EXIT_USAGE;
    }
    FILE *f = out_path && strcmp(out_path, "-") != 0 ? fopen(out_path, "w") : stdout;
    if (f == NULL) {
        fputs("gpuleak export: cannot write ", stderr);
        frame_text_put(stderr, out_path);
        fprintf(stderr, ": %s\n", strerror(errno));
        load_set_free(&set);
        return CLI_EXIT_USAGE;
    }
    int rc = 0;
    if (which == FORMAT_FOLDED && sites->n == 0)
        say_empty(file, r, what);
    if (which == FORMAT_FOLDED)
        export_folded(f, sites);
    else if (which == FORMAT_CSV)
        export_csv(f, r);
    else
        rc = export_chrome(f, r);
    /* Writes to stdout are checked once, by main, as for every command. */
    int write_failed = 0;
    if (f != stdout) {
        write_failed = ferror(f);
        write_failed |= fclose(f) != 0;
    }
    load_set_free(&set);
    if (rc != 0)
        fputs("gpuleak export: out of memory\n", stderr);
    else if (write_failed) {
        fputs("gpuleak export: writing ", stderr);
        frame_text_put(stderr, out_path);
        fputs(" failed\n", stderr);
    }
    return rc != 0 || write_failed ? CLI_EXIT_USAGE : 0;
}

const cmd_spec_t export_command = {
    .name = "export",
    .operands = "FILE",
    .min_operands = 1,
    .max_operands = 1,
    .summary = "a report in other tools' formats (flame graphs, CSV, Perfetto)",
    .description =
        "Writes one report in the format --format names. In folded stacks, Python frames "
        "(outermost first) come nearest the root, then the native frames from the outermost in: "
        "the user's Python code, then the interpreter and the libraries it calls, down to the "
        "allocating frame.",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = export_main,
};
