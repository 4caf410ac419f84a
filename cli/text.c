/* text.c: the report as a person reads it, leaks first in LeakSanitizer's
 * wording (people already know how to read those), then the tables. */
#define _GNU_SOURCE
#include "text.h"
#include "chart.h"
#include "cuda_errors.h"
#include "composition.h"
#include "diagnosis.h"
#include "frames.h"
#include "units.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Frames shown per site unless --full-stacks: enough to reach user code
 * through an allocator or two, short enough to scan many sites. */
#define DEFAULT_FRAMES 8
/* Holders shown under a site; the rest are counted. */
#define HOLDERS_SHOWN 3

static int site_selected(const load_site_t *s, const text_options_t *o)
{
    if (o->kind != NULL && strcmp(s->kind, o->kind) != 0)
        return 0;
    return o->device < 0 || s->device == o->device;
}

/* Seconds since the start of the run, when the report says when it started
 * (a timeline start, or the process start); -1 when it does not. */
static double seconds_since_start(const load_report_t *r, uint64_t t_ns)
{
    uint64_t start = r->has_timeline && r->timeline_start_ns ? r->timeline_start_ns : r->start_time_ns;
    if (start == 0 || t_ns < start)
        return -1;
    return (double)(t_ns - start) / 1e9;
}

const char *text_signal_name(long sig)
{
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return NULL;
    }
}

bool text_killed(const load_report_t *r)
{
    return r->moment != NULL && strcmp(r->moment, "signal") == 0;
}

/* When the report was written. An incomplete one (a snapshot, a dump on
 * request) was taken while the program ran, and one a signal wrote as it
 * killed the program was taken before its frees, so the "leaks" of either
 * are memory the program still used then: said on one line, since a reader
 * who takes them for leaks at exit chases the wrong thing. */
static void print_moment(FILE *f, const load_report_t *r)
{
    if (r->moment != NULL || !r->complete) {
        fputs("  moment:   ", f);
        frame_text_put(f, r->moment ? r->moment : "unknown");
        if (!r->complete)
            fprintf(f, "%s, taken while the program ran: what it lists as leaks was live then, "
                       "not left at exit\n",
                    r->moment && strcmp(r->moment, "request") == 0 ? " (a dump on request)" : "");
        else if (r->signal > 0) {
            const char *name = text_signal_name(r->signal);
            fprintf(f, ", written as signal %ld%s%s%s ended the program: what it lists as leaks "
                       "was live then\n", r->signal,
                    name ? " (" : "", name ? name : "", name ? ")" : "");
        } else
            fputc('\n', f);
    }
    if (r->locks_skipped > 0)
        fprintf(f, "  locks:    %llu lock(s) of the shim skipped (a thread a signal interrupted "
                   "held them); some counts may be off by an event under way\n",
                (unsigned long long)r->locks_skipped);
}

static void print_header(FILE *f, const load_report_t *r)
{
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF], c[UNITS_SIZE_BUF];
    fputs("gpuleak report: ", f);
    frame_text_put(f, r->path);
    fputc('\n', f);
    fprintf(f, "  process:  pid %lld", r->pid);
    if (r->host != NULL) {
        fputs(" on ", f);
        frame_text_put(f, r->host);
    }
    if (r->has_rank)
        fprintf(f, ", rank %lld", r->rank);
    if (r->has_local_rank)
        fprintf(f, " (local %lld)", r->local_rank);
    if (r->job != NULL) {
        fputs(" of job ", f);
        frame_text_put(f, r->job);
    }
    if (r->argc > 0) {
        fputs(", argv:", f);
        for (size_t i = 0; i < r->argc && i < 16; i++) {
            fputc(' ', f);
            frame_text_put(f, r->argv[i]);
        }
        if (r->argc > 16)
            fputs(" ...", f);
    }
    fputc('\n', f);
    print_moment(f, r);
    if (r->tracking != NULL && strcmp(r->tracking, "on") != 0) {
        fputs("  tracking: stopped early (", f);
        frame_text_put(f, r->reason ? r->reason : "no reason given");
        fputs("); counts cover the run until then\n", f);
    }
    const load_totals_t *t = &r->totals;
    fprintf(f, "  calls:    %llu allocation(s), %llu free(s), %llu failed, %llu unknown free(s)\n",
            (unsigned long long)t->allocations, (unsigned long long)t->frees,
            (unsigned long long)t->failed_allocations, (unsigned long long)r->unknown_frees);
    fprintf(f, "  memory:   %s allocated in all, peak %s", units_format_size(t->bytes_allocated, a),
            units_format_size(t->peak_bytes, b));
    double at = seconds_since_start(r, r->peak_time_ns);
    if (at >= 0)
        fprintf(f, " at %.2f s", at);
    fprintf(f, ", %s live %s\n", units_format_size(t->live_bytes, c), r->complete ? "at exit" : "then");
    fprintf(f, "  leaked:   %llu byte(s) in %llu allocation(s) at %zu site(s)",
            (unsigned long long)t->leaked_bytes, (unsigned long long)t->leaked_allocations, r->leaks.n);
    if (t->teardown_leaked_bytes > 0)
        fprintf(f, "; %llu byte(s) at context teardown", (unsigned long long)t->teardown_leaked_bytes);
    fputc('\n', f);
    if (r->has_growth && !r->growth_judged)
        fprintf(f, "  growth:   not judged: the run was too short (%llu sample(s) of live memory)\n",
                (unsigned long long)r->growth_samples);
    else if (r->has_growth)
        fprintf(f, "  growth:   %s\n", units_format_size(r->growth_bytes, a));
}

static void print_kinds(FILE *f, const load_report_t *r)
{
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF], c[UNITS_SIZE_BUF];
    int any = 0;
    for (size_t i = 0; i < r->nkinds; i++) {
        const load_totals_t *t = &r->kinds[i].totals;
        if (t->allocations == 0 && t->failed_allocations == 0)
            continue; /* six kinds always written; unused ones are noise */
        /* What each kind still held: the leaks, and with PyTorch its cached
         * segments too (device, vmm), which are not leaks: "leaked" here
         * read 8 MiB under "leaked: 0 byte(s)". */
        if (!any)
            fprintf(f, "\nBy kind:\n  %-8s %12s %12s %8s %12s %12s %14s\n", "kind", "allocations",
                    "frees", "failed", "allocated", "peak", r->complete ? "live at exit" : "live then");
        any = 1;
        fputs("  ", f);
        frame_text_put(f, r->kinds[i].name);
        fprintf(f, "%*s %12llu %12llu %8llu %12s %12s %14s\n",
                (int)(strlen(r->kinds[i].name) < 8 ? 8 - strlen(r->kinds[i].name) : 0), "",
                (unsigned long long)t->allocations, (unsigned long long)t->frees,
                (unsigned long long)t->failed_allocations, units_format_size(t->bytes_allocated, a),
                units_format_size(t->peak_bytes, b), units_format_size(t->leaked_bytes, c));
    }
    if (r->ndevices > 1) {
        fprintf(f, "\nBy device:\n  %-8s %12s %12s %14s\n", "device", "allocations", "peak",
                r->complete ? "live at exit" : "live then");
        for (size_t i = 0; i < r->ndevices; i++)
            fprintf(f, "  %-8ld %12llu %12s %14s\n", r->devices[i].device,
                    (unsigned long long)r->devices[i].totals.allocations,
                    units_format_size(r->devices[i].totals.peak_bytes, a),
                    units_format_size(r->devices[i].totals.leaked_bytes, b));
    }
}

/* How many of list's sites the options select. */
static size_t count_selected(const load_list_t *list, const text_options_t *o)
{
    size_t selected = 0;
    for (size_t i = 0; i < list->n; i++)
        selected += site_selected(&list->v[i], o);
    return selected;
}

/* Leak-style blocks for a list (leaks, teardown leaks or failures): the
 * sentence changes with what the list is about, the frames do not. */
static void print_blocks(FILE *f, const load_list_t *list, const char *title, const char *what,
                         const text_options_t *o)
{
    size_t selected = count_selected(list, o), shown = 0;
    if (selected == 0)
        return;
    fprintf(f, "\n%s: %zu site(s)\n", title, selected);
    for (size_t i = 0; i < list->n; i++) {
        const load_site_t *s = &list->v[i];
        if (!site_selected(s, o))
            continue;
        if (o->top && shown == o->top) {
            fprintf(f, "\n... %zu more site(s); --top shows more\n", selected - shown);
            break;
        }
        shown++;
        if (strcmp(what, "failure") == 0) {
            const char *why = s->result >= -(1LL << 31) && s->result < (1LL << 31)
                            ? cuda_error_name((int)s->result) : NULL;
            fprintf(f, "\n%llu allocation(s) of %s on device %ld refused (%llu byte(s) asked, last %s, %lld), from:\n",
                    (unsigned long long)s->allocations, frames_site_phrase(s), s->device,
                    (unsigned long long)s->bytes, why ? why : "result", s->result);
        }
        else {
            fprintf(f, "\n%s of %llu byte(s) in %llu allocation(s) of %s",
                    strcmp(what, "teardown") == 0 ? "Teardown leak" : "Leak", (unsigned long long)s->bytes,
                    (unsigned long long)s->allocations, frames_site_phrase(s));
            /* Pinned host memory lives in the host's RAM: "on device 0"
             * (the context current when it was asked for) misled. */
            if (s->kind == NULL || strcmp(s->kind, "host") != 0)
                fprintf(f, " on device %ld", s->device);
            if (s->teardown != NULL) {
                fputs(" (reclaimed by ", f);
                frame_text_put(f, s->teardown);
                fputc(')', f);
            }
            fputs(", allocated from:\n", f);
        }
        frames_print_stack(f, s, o->full_stacks ? 0 : DEFAULT_FRAMES);
        frames_print_holders(f, s, "  ", HOLDERS_SHOWN);
    }
}

/* The first out-of-memory failure: when, what was asked and from where,
 * how many there were, and the largest holders of the GPU then, each with
 * its origin. One event, not a list of sites, so --kind and --device do
 * not hide it; --top limits the holders. */
/* How the search for the held memory's holders went: what it looked at,
 * how it ended, and how much of the held memory it named. */
static void print_search(FILE *f, const load_report_t *r)
{
    if (!r->has_search)
        return;
    diagnosis_search(f, 2, r->search_objects, r->search_seconds, r->search_ended,
                     r->search_named_bytes, r->held_bytes);
    diagnosis_composition(f, 2, COMPOSITION_AT_FINISH, &r->held_composition);
}

static void print_oom(FILE *f, const load_report_t *r, const text_options_t *o)
{
    if (!r->has_oom)
        return;
    const load_oom_t *oom = &r->oom;
    char a[UNITS_SIZE_BUF];
    fprintf(f, "\nOut of memory: %llu failure(s) in all; the first", (unsigned long long)oom->count);
    double at = seconds_since_start(r, oom->time_ns);
    if (at >= 0)
        fprintf(f, ", at %.2f s", at);
    fprintf(f, ":\n  %llu byte(s) of %s asked", (unsigned long long)oom->site.bytes,
            frames_site_phrase(&oom->site));
    if (oom->site.device >= 0)
        fprintf(f, " on device %ld", oom->site.device);
    char *origin = frames_origin(&oom->site);
    fputs(", from ", f);
    frame_text_put(f, origin ? origin : "?");
    free(origin);
    fputc('\n', f);
    diagnosis_oom_t d = { oom->site.bytes, oom->torch_allocated_bytes, oom->torch_reserved_bytes,
                          oom->site.framework };
    diagnosis_oom(f, 2, &d);
    diagnosis_composition(f, 2, COMPOSITION_AT_OOM, &oom->composition);
    fprintf(f, "  %s was live then", units_format_size(oom->live_bytes, a));
    if (oom->holders.n == 0) {
        fputs("\n", f);
        return;
    }
    fprintf(f, "; the largest holders:\n  %6s %-8s %12s %6s  %s\n", "site", "kind", "held", "%", "origin");
    for (size_t i = 0; i < oom->holders.n; i++) {
        const load_site_t *s = &oom->holders.v[i];
        if (o->top && i == o->top) {
            fprintf(f, "  ... %zu more holder(s)\n", oom->holders.n - i);
            break;
        }
        char kind[9];
        snprintf(kind, sizeof kind, "%s", s->kind);
        for (char *p = kind; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                *p = '?';
        double pct = oom->live_bytes ? 100.0 * (double)s->bytes / (double)oom->live_bytes : 0;
        fprintf(f, "  %6llu %-8s %12s %5.1f%%  ", (unsigned long long)s->id, kind,
                units_format_size(s->bytes, a), pct > 999.9 ? 999.9 : pct);
        origin = frames_origin(s);
        frame_text_put(f, origin ? origin : "?");
        free(origin);
        fputc('\n', f);
        frames_print_holders(f, s, "           ", 2);
    }
}

/* A table of sites with one origin column; used for the sites list and for
 * the growth and peak sections, whose "bytes" mean growth or live at peak.
 * growth: the list is the growth section's, whose largest holders may show
 * a cause (diagnosis_kept). */
static void print_table(FILE *f, const load_list_t *list, const char *title, const char *bytes_label,
                        uint64_t percent_of, int lifetime, int growth, const text_options_t *o)
{
    size_t selected = count_selected(list, o), shown = 0;
    if (selected == 0)
        return;
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF], c[UNITS_SIZE_BUF];
    fprintf(f, "\n%s:\n", title);
    if (lifetime)
        fprintf(f, "  %6s %-8s %3s %11s %11s %12s %12s %12s  %s\n", "site", "kind", "dev", "allocations",
                "frees", "allocated", "peak live", "live", "origin");
    else
        /* The site's allocations over the whole run: how many of them were
         * live at the peak, grew or were held is not counted ("4.0 MiB at
         * the peak in 50 allocations" of 4 MiB each read wrong). */
        fprintf(f, "  %6s %-8s %3s %12s %6s %11s  %s\n", "site", "kind", "dev", bytes_label, "%",
                "allocs ever", "origin");
    for (size_t i = 0; i < list->n; i++) {
        const load_site_t *s = &list->v[i];
        if (!site_selected(s, o))
            continue;
        if (o->top && shown == o->top) {
            fprintf(f, "  ... %zu more site(s)\n", selected - shown);
            break;
        }
        shown++;
        char kind[9];
        snprintf(kind, sizeof kind, "%s", s->kind);
        for (char *p = kind; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                *p = '?';
        if (lifetime)
            fprintf(f, "  %6llu %-8s %3ld %11llu %11llu %12s %12s %12s  ", (unsigned long long)s->id, kind,
                    s->device, (unsigned long long)s->allocations, (unsigned long long)s->frees,
                    units_format_size(s->bytes, a), units_format_size(s->peak_live_bytes, b),
                    units_format_size(s->live_bytes, c));
        else {
            double pct = percent_of ? 100.0 * (double)s->bytes / (double)percent_of : 0;
            fprintf(f, "  %6llu %-8s %3ld %12s %5.1f%% %11llu  ", (unsigned long long)s->id, kind, s->device,
                    units_format_size(s->bytes, a), pct > 999.9 ? 999.9 : pct,
                    (unsigned long long)s->allocations);
        }
        char *origin = frames_origin(s);
        frame_text_put(f, origin ? origin : "?");
        free(origin);
        fputc('\n', f);
        if (!lifetime)
            frames_print_holders(f, s, "           ", HOLDERS_SHOWN);
        if (growth && s->nholders > 0)
            diagnosis_kept(f, 11, s->holders[0].name, s->holders[0].graph, s->holders[0].role, s->bytes,
                           s->framework);
    }
}

/* Marks listed beyond this are counted. */
#define MARKS_LISTED 20

/* The program's named marks (gpuleak_mark), with their times. */
static void print_marks(FILE *f, const load_report_t *r)
{
    if (r->nmarks == 0)
        return;
    fputs("  marks ('|' on the axis):", f);
    for (size_t i = 0; i < r->nmarks && i < MARKS_LISTED; i++) {
        fprintf(f, "%s%.3f s ", i ? ", " : " ", (double)r->marks[i].t_ns / 1e9);
        frame_text_put(f, r->marks[i].name);
    }
    uint64_t more = r->marks_dropped + (r->nmarks > MARKS_LISTED ? r->nmarks - MARKS_LISTED : 0);
    if (more > 0)
        fprintf(f, ", and %llu more", (unsigned long long)more);
    fputc('\n', f);
}

/* The timeline as common/chart.h draws it (the exit summary's chart too),
 * then the program's marks by name. */
void text_timeline_chart(FILE *f, const load_report_t *r, int width, int height)
{
    if (!r->has_timeline || r->npoints < 1)
        return;
    chart_point_t *points = calloc(r->npoints, sizeof *points);
    uint64_t *marks = calloc(r->nmarks ? r->nmarks : 1, sizeof *marks);
    if (points != NULL && marks != NULL) {
        for (size_t i = 0; i < r->npoints; i++)
            points[i] = (chart_point_t){ r->points[i].t_ns, r->points[i].bytes, r->points[i].max_bytes };
        for (size_t i = 0; i < r->nmarks; i++)
            marks[i] = r->marks[i].t_ns;
        double peak_s = seconds_since_start(r, r->peak_time_ns);
        chart_t chart = { points, r->npoints, r->totals.peak_bytes,
                          peak_s >= 0 ? (int64_t)(peak_s * 1e9) : -1, marks, r->nmarks };
        chart_print(f, &chart, width, height);
        print_marks(f, r);
    }
    free(points);
    free(marks);
}

/* Prints the whole human view: header (with when the report was taken),
 * kinds, leaks, teardown leaks, failures, the first out-of-memory failure,
 * growth and peak tables and the timeline when the report has
 * them, then the sites table. Filters and --top apply to every site list. */
void text_print(FILE *f, const load_report_t *r, const text_options_t *o)
{
    print_header(f, r);
    print_kinds(f, r);
    print_blocks(f, &r->leaks, !r->complete ? "Leaks (live when the report was taken, the program running)"
                               : text_killed(r) ? "Leaks (live when a signal ended the program)"
                                           : "Leaks (still live at exit)",
                 "leak", o);
    diagnosis_composition(f, 2, COMPOSITION_AT_REPORT, &r->request_composition);
    uint64_t kept_bytes = 0;
    for (size_t i = 0; i < r->kept.n; i++)
        kept_bytes += r->kept.v[i].bytes;
    print_table(f, &r->kept, "Kept for the process by CUDA libraries, not leaks", "kept", kept_bytes, 0, 0, o);
    uint64_t reachable_bytes = 0;
    for (size_t i = 0; i < r->reachable.n; i++)
        reachable_bytes += r->reachable.v[i].bytes;
    print_table(f, &r->reachable,
                "Still reachable at exit: held by the program's names when Python finished, "
                "its shutdown did not free it; not leaks", "reachable", reachable_bytes, 0, 0, o);
    print_blocks(f, &r->teardown, "Teardown leaks (live when their context was destroyed)", "teardown", o);
    print_blocks(f, &r->failures, "Failed allocations", "failure", o);
    print_oom(f, r, o);
    if (r->has_growth)
        print_table(f, &r->growth, "Growth by site", "growth", r->growth_bytes, 0, 1, o);
    if (r->has_held && r->held.n > 0) {
        print_table(f, &r->held, "Still held when Python finished (before its shutdown freed it)",
                    "held", r->held_bytes, 0, 0, o);
        print_search(f, r);
    }
    if (r->has_peak && r->peak_at_tensors) {
        char title[96], a[UNITS_SIZE_BUF];
        snprintf(title, sizeof title, "Peak composition (live at the tensors' peak, %s allocated)",
                 units_format_size(r->peak_sites_bytes, a));
        print_table(f, &r->peak_sites, title, "at peak", r->peak_sites_bytes, 0, 0, o);
        composition_print(f, 2, COMPOSITION_AT_PEAK, &r->peak_composition);
        if (r->has_oom)
            diagnosis_peak(f, 2, &r->peak_composition);
    } else if (r->has_peak) {
        print_table(f, &r->peak_sites, "Peak composition (live at the peak)", "at peak",
                    r->peak_bytes ? r->peak_bytes : r->totals.peak_bytes, 0, 0, o);
    }
    text_timeline_chart(f, r, CHART_WIDTH, CHART_HEIGHT);
    print_table(f, &r->sites, "Sites (by peak live bytes)", NULL, 0, 1, 0, o);
    if (r->leaks.n == 0)
        fputs("\nNo leaks.\n", f);
}
