#define _GNU_SOURCE
#include "report_summary.h"
#include "chart.h"
#include "frame_text.h"
#include "units.h"
#include "cuda_errors.h"
#include "composition.h"
#include "diagnosis.h"
#include "report_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SUMMARY_FRAMES_MAX 256

/* Prints a site's frames in LeakSanitizer's shape, Python frames first
 * (they name the user's line), then native frames, limit frames in all. */
static void print_frames(FILE *f, uint32_t site, int limit)
{
    static symbolized_frame_t frames[SUMMARY_FRAMES_MAX];
    const stack_record_t *stack = report_view_stack(site);
    int shown = 0;
    for (int i = 0; stack != NULL && i < stack->python_count && shown < limit; i++) {
        const char *function, *file;
        int line;
        if (report_view_python_frame(stack->frames[stack->native_count + i], &function, &file, &line) == 0)
            frame_text_python(f, shown++, function, file, line);
    }
    int n = report_view_origin_frames(site, frames, SUMMARY_FRAMES_MAX);
    /* cudart's own frames fold under the runtime call they serve. */
    static origin_frame_t as_rules[SUMMARY_FRAMES_MAX];
    for (int i = 0; i < n; i++)
        as_rules[i] = (origin_frame_t){ frames[i].function, frames[i].file, frames[i].module,
                                        frames[i].line, 0 };
    int folded = origin_cudart_folded(as_rules, n);
    for (int i = folded; i < n && shown < limit; i++, shown++) {
        const symbolized_frame_t *fr = &frames[i];
        frame_text_native(f, shown, fr->address, fr->function, fr->file, fr->line, fr->module,
                          fr->offset);
        if (i == folded && folded > 0)
            frame_text_cudart_folded(f, (size_t)folded, "the report has them");
    }
    if (shown == 0)
        fprintf(f, "    (no stack recorded: GPULEAK_STACK_DEPTH=0 or too many stacks)\n");
}

/* The site's origin and owner in one phrase, as every view writes it
 * (common/frame_text.h). Returns a static buffer. */
static const char *origin_phrase(const report_view_t *view, uint32_t site, int kind)
{
    static char phrase[4096];
    origin_site_t o;
    report_view_origin(site, kind, &o);
    origin_frame_t callers[UINT8_MAX];
    frame_text_place_t places[UINT8_MAX], via;
    int n = o.found ? report_view_origin_callers(view, site, callers) : 0;
    for (int i = 0; i < n; i++)
        places[i] = (frame_text_place_t){ callers[i].function, callers[i].file, callers[i].line };
    if (o.has_via)
        via = (frame_text_place_t){ o.via.function, o.via.file, o.via.line };
    frame_text_origin_t text = {
        .found = o.found, .function = o.frame.function, .file = o.frame.file,
        .module = o.frame.module, .line = o.frame.line, .offset = o.offset,
        .callers = places, .ncallers = (size_t)n, .via = o.has_via ? &via : NULL,
        .library = o.library, .owner = o.owner,
    };
    int framework = report_view_site_framework(site, kind);
    const stack_record_t *stack = report_view_stack(site);
    if (framework != REPORT_FRAMEWORK_torch && framework >= 0 && stack != NULL
        && stack->native_count == 0 && stack->python_count == 0)
        text.unseen = 1 + framework;
    FILE *m = fmemopen(phrase, sizeof phrase, "w");
    if (m == NULL) {
        snprintf(phrase, sizeof phrase, "site %u", site);
        return phrase;
    }
    frame_text_origin(m, &text);
    fclose(m);
    return phrase;
}

/* The sites of a section that share an origin line, summed: what one
 * summary entry is about. top indexes the largest of them in the section. */
typedef struct line_group {
    char *key;               /* kind, device, then "file:line", "module+0xoffset"
                                or "site N", and a helper's callers (malloc'd) */
    size_t top;
    uint64_t bytes, allocations;
    size_t sites;
    int grew;                /* one of its sites grew during the run */
    size_t made;             /* its place before sorting (member_of's numbers) */
} line_group_t;

#define GROUPED_SITES 1000   /* the largest sites grouped; the rest are omitted */

/* For the i-th site of the list last grouped, its group's "made" number. */
static size_t member_of[GROUPED_SITES];

/* Groups the first GROUPED_SITES sites of list (a section of view) by
 * origin line, with the callers view shows after it, into out
 * (room for GROUPED_SITES), bytes_of giving each site's bytes in this
 * section; sorts the groups by bytes, largest first. Returns how many. */
static size_t group_by_line(const report_view_t *view, const report_list_t *list,
                            uint64_t (*bytes_of)(const report_site_t *), line_group_t *out)
{
    static char key[8192];
    size_t n = 0;
    for (size_t g = 0; g < GROUPED_SITES; g++) {  /* the last call's keys */
        free(out[g].key);
        out[g].key = NULL;
    }
    for (size_t i = 0; i < list->count && i < GROUPED_SITES; i++) {
        const report_site_t *s = &list->sites[i];
        origin_site_t o;
        report_view_origin(s->id, s->stats.kind, &o);
        /* One kind on one device a line: the entry names them. */
        int used = snprintf(key, sizeof key, "%d/%d/", s->stats.kind, s->stats.device);
        if (!o.found)
            used += snprintf(key + used, sizeof key - (size_t)used, "site %u", s->id);
        else if (o.frame.file != NULL)
            used += snprintf(key + used, sizeof key - (size_t)used, "%s:%d", o.frame.file, o.frame.line);
        else
            used += snprintf(key + used, sizeof key - (size_t)used, "%s+0x%llx",
                             o.frame.module ? o.frame.module : "?", (unsigned long long)o.offset);
        /* A helper's leaking path is a line of its own. */
        origin_frame_t callers[UINT8_MAX];
        int c = report_view_origin_callers(view, s->id, callers);
        for (int k = 0; k < c && (size_t)used < sizeof key; k++)
            used += snprintf(key + used, sizeof key - (size_t)used, "<%s:%d",
                             callers[k].file ? callers[k].file : "?", callers[k].line);
        size_t g = 0;
        while (g < n && strcmp(out[g].key, key) != 0)
            g++;
        if (g == n) {
            out[n].key = strdup(key);
            if (out[n].key == NULL)
                break;  /* no memory: the groups so far stand */
            out[n].top = i;
            out[n].bytes = out[n].allocations = 0;
            out[n].sites = 0;
            out[n].grew = 0;
            out[n].made = n;
            n++;
        }
        member_of[i] = g;
        out[g].grew |= s->growth.grew;
        out[g].bytes += bytes_of(s);
        out[g].allocations += s->stats.live_allocations;
        out[g].sites++;
        if (bytes_of(s) > bytes_of(&list->sites[out[g].top]))
            out[g].top = i;
    }
    for (size_t a = 1; a < n; a++)  /* insertion sort: groups are few and nearly sorted */
        for (size_t b = a; b > 0 && out[b].bytes > out[b - 1].bytes; b--) {
            line_group_t t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return n;
}

static uint64_t live_of(const report_site_t *s) { return s->stats.live_bytes; }
static uint64_t gained_of(const report_site_t *s) { return s->growth.bytes_gained; }
static uint64_t at_peak_of(const report_site_t *s) { return s->stats.at_peak_bytes; }
static uint64_t held_of(const report_site_t *s) { return s->held_bytes; }

static line_group_t groups[GROUPED_SITES];  /* the summary is single-threaded */

/* A listed site's memory as every view names it. */
static const char *site_phrase(const report_site_t *s)
{
    return report_site_phrase(s->stats.kind, s->framework);
}

/* One holder of a line's memory, its bytes summed over the line's sites. */
typedef struct line_holder {
    const holder_t *first;
    uint64_t bytes;
} line_holder_t;

#define LINE_HOLDERS 64  /* distinct holders summed per line; more are rare */

static int same_holder(const holder_t *a, const holder_t *b)
{
    return a->graph == b->graph && strcmp(a->name, b->name) == 0 && strcmp(a->type, b->type) == 0
        && strcmp(a->owner, b->owner) == 0 && strcmp(a->file, b->file) == 0
        && strcmp(a->path, b->path) == 0;
}

/* The objects that held the memory of group (of the list last grouped) at
 * Python's finish, summed over its sites: the largest two, a line each.
 * One line's sites (its first run and its later ones, say) are one place
 * in the user's code, and so are their holders. Returns the largest, or
 * NULL when none was named. */
static const holder_t *print_holders(FILE *f, const report_view_t *view, const report_list_t *list,
                                     const line_group_t *group, const char *indent)
{
    static line_holder_t found[LINE_HOLDERS];  /* the summary is single-threaded */
    size_t n = 0;
    for (size_t i = 0; i < list->count && i < GROUPED_SITES; i++) {
        if (member_of[i] != group->made)
            continue;
        const report_site_t *s = &list->sites[i];
        for (size_t k = 0; k < s->holder_count; k++) {
            size_t j = 0;
            while (j < n && !same_holder(found[j].first, &s->holders[k]))
                j++;
            if (j == n && n == LINE_HOLDERS)
                continue;
            if (j == n)
                found[n++] = (line_holder_t){ &s->holders[k], 0 };
            found[j].bytes += s->holders[k].bytes;
        }
    }
    /* Said, not left blank: with no line a reader cannot tell "nothing held
     * it" from "nobody looked". */
    if (n == 0 && view->holders.ran && view->holders.ended != NULL) {
        if (strcmp(view->holders.ended, "budget") == 0)
            fprintf(f, "%sheld by no Python object found before the search's time ran out "
                       "(GPULEAK_HOLDERS_MS)\n", indent);
        else if (strcmp(view->holders.ended, "error") == 0)
            fprintf(f, "%sheld by: unknown, the search for holders failed\n", indent);
        else if (strcmp(view->holders.ended, REPORT_SEARCH_AUDIT_HOOKS) == 0)
            fprintf(f, "%sheld by: unknown, the program's audit hooks kept the search from running\n",
                    indent);
        else
            fprintf(f, "%sheld by no Python object the search reached from the program's names\n", indent);
        return NULL;
    }
    const holder_t *largest = NULL;
    char size[UNITS_SIZE_BUF], phrase[1024];
    for (int shown = 0; shown < 2; shown++) {
        size_t best = n;
        for (size_t j = 0; j < n; j++)
            if (found[j].bytes > 0 && (best == n || found[j].bytes > found[best].bytes))
                best = j;
        if (best == n)
            break;
        const holder_t *h = found[best].first;
        if (largest == NULL)
            largest = h;
        report_holder_phrase(phrase, sizeof phrase, h->name, h->type, h->owner, h->file, h->graph, h->path);
        fprintf(f, "%sheld by %s: %s\n", indent, phrase, units_format_size(found[best].bytes, size));
        found[best].bytes = 0;
    }
    return largest;
}

/* What the script still held when Python began to finish, by line: its
 * shutdown frees a script's globals before the report at exit, so a list
 * or a cache kept to the end shows here, not among the leaks. A line whose
 * site also grew says so; the rest (weights, optimizer state) were held
 * steadily. */
static void print_held(FILE *f, const report_view_t *view)
{
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    if (view->held.count == 0)
        return;
    size_t n = group_by_line(view, &view->held, held_of, groups);
    /* What grew first: a model's weights and optimizer state are held at
     * the end of every script, and are often larger than the leak. */
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && groups[b].grew && !groups[b - 1].grew; b--) {
            line_group_t t = groups[b];
            groups[b] = groups[b - 1];
            groups[b - 1] = t;
        }
    fprintf(f, "\nStill held when Python finished, before its shutdown freed it (%s in %zu site(s); "
            "%s:\n", units_format_size(view->held_bytes, a), view->held_sites,
            view->held_sites > GROUPED_SITES ? "the largest sites by line)" : "by line)");
    for (size_t i = 0; i < n && i < (size_t)view->run.summary_sites; i++) {
        const report_site_t *s = &view->held.sites[groups[i].top];
        fprintf(f, "  %10s %s from %s%s", units_format_size(groups[i].bytes, b),
                site_phrase(s), origin_phrase(view, s->id, s->stats.kind),
                groups[i].grew ? " [grew during the run]" : "");
        if (groups[i].sites > 1)
            fprintf(f, " [%zu sites]", groups[i].sites);
        fputc('\n', f);
        print_holders(f, view, &view->held, &groups[i], "      ");
    }
    const holder_search_t *hs = &view->holders;
    if (hs->ran && view->holders_at_finish) {
        diagnosis_search(f, 2, hs->objects, hs->elapsed_ns / 1e9, hs->ended, hs->named_bytes,
                         view->held_bytes);
        diagnosis_composition(f, 2, COMPOSITION_AT_FINISH, &hs->composition);
    }
}

/* The timeline as common/chart.h draws it (gpuleak report's chart too),
 * then the program's marks in one line. */
/* Fewer points than this draw no chart worth its lines (a short run's). */
#define CHART_MIN_POINTS 16

static void print_chart(FILE *f, const report_view_t *view)
{
    if (view->timeline_count < CHART_MIN_POINTS)
        return;
    uint64_t start = view->run.started_ns;
    chart_point_t *points = calloc(view->timeline_count ? view->timeline_count : 1, sizeof *points);
    uint64_t *marks = calloc(view->mark_count ? view->mark_count : 1, sizeof *marks);
    if (points != NULL && marks != NULL) {
        size_t n = 0;
        for (size_t i = 0; i < view->timeline_count; i++)
            if (view->timeline[i].time_ns >= start)
                points[n++] = (chart_point_t){ view->timeline[i].time_ns - start,
                                               view->timeline[i].bytes, view->timeline[i].max_bytes };
        for (size_t i = 0; i < view->mark_count; i++)
            marks[i] = view->marks[i].time_ns > start ? view->marks[i].time_ns - start : 0;
        uint64_t peak_at = view->totals.peak_time_ns;
        chart_t chart = { points, n, view->totals.peak_bytes,
                          peak_at >= start ? (int64_t)(peak_at - start) : -1, marks, view->mark_count };
        chart_print(f, &chart, CHART_WIDTH, CHART_HEIGHT);
        if (view->mark_count > 0)
            fprintf(f, "  %zu mark(s) ('|' on the axis): the first \"%s\", the last \"%s\"\n",
                    view->mark_count, view->marks[0].name, view->marks[view->mark_count - 1].name);
    }
    free(points);
    free(marks);
}

/* Seconds from the start of tracking to a tracker time (0 before it). */
static double seconds_since_start(const report_view_t *view, uint64_t time_ns)
{
    uint64_t start = view->run.started_ns;
    return time_ns > start ? (double)(time_ns - start) / 1e9 : 0.0;
}

/* The first out-of-memory failure: what was asked, from where, and what
 * held the GPU then (the program's own OOM: PyTorch's, where its tensors
 * are followed, with its cache left out). */
static void print_oom(FILE *f, const report_view_t *view)
{
    if (!view->has_oom)
        return;
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    const tracker_oom_t *oom = &view->oom;
    fprintf(f, "\nOut of memory at %.2f s: %s of %s asked on device %d, from %s",
            seconds_since_start(view, oom->time_ns), units_format_size(oom->bytes_asked, a),
            report_view_site_phrase(oom->site, oom->kind), oom->device, origin_phrase(view, oom->site, oom->kind));
    if (oom->count > 1)
        fprintf(f, " (%llu out-of-memory failures in all)", (unsigned long long)oom->count);
    fputs(".\n", f);
    diagnosis_oom_t d = { oom->bytes_asked, oom->torch_allocated_bytes, oom->torch_reserved_bytes,
                          report_view_site_framework(oom->site, oom->kind) };
    diagnosis_oom(f, 0, &d);
    diagnosis_composition(f, 0, COMPOSITION_AT_OOM, &view->oom_search.composition);
    fprintf(f, "%s was live then; the largest holders:\n", units_format_size(oom->live_bytes, b));
    for (size_t i = 0; i < view->oom_holder_count && i < (size_t)view->run.summary_sites; i++) {
        const tracker_site_bytes_t *h = &oom->sites[view->oom_holders[i]];
        int kind = report_view_site_kind(h->site);
        fprintf(f, "  %10s %s from %s\n", units_format_size(h->bytes, a),
                report_view_site_phrase(h->site, kind),
                origin_phrase(view, h->site, kind));
        /* Who held it, as Python said just after the failure. */
        const holder_t *held;
        size_t n = report_view_holders(view->oom_set, h->site, &held);
        char phrase[1024];
        for (size_t k = 0; k < n && k < 2; k++) {
            report_holder_phrase(phrase, sizeof phrase, held[k].name, held[k].type, held[k].owner,
                                 held[k].file, held[k].graph, held[k].path);
            fprintf(f, "             held by %s: %s\n", phrase, units_format_size(held[k].bytes, a));
        }
    }
}

/* The sites that grew, and what was live at the peak, a line each. */
static void print_growth_and_peak(FILE *f, const report_view_t *view)
{
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    size_t limit = (size_t)view->run.summary_sites;
    size_t n;
    n = group_by_line(view, &view->growth, gained_of, groups);
    if (view->growth.count > 0)
        fprintf(f, "\nGrowing during the run (%zu site(s) at %zu line(s)):\n", view->growth.count, n);
    else if (!view->growth_judged)
        /* Else no growth section reads as "nothing grew". */
        fprintf(f, "\nGrowth not judged: the run was too short (%zu sample(s) of live memory; "
                   "the rule needs %d after the first fifth of the run).\n",
                view->growth_samples, GROWTH_MIN_SAMPLES);
    for (size_t i = 0; i < n && i < limit; i++) {
        const report_site_t *s = &view->growth.sites[groups[i].top];
        fprintf(f, "  +%s (%s/s, steadiness %.0f%%) %s from %s",
                units_format_size(groups[i].bytes, a),
                units_format_size((uint64_t)s->growth.bytes_per_second, b),
                s->growth.steadiness * 100, site_phrase(s),
                origin_phrase(view, s->id, s->stats.kind));
        if (groups[i].sites > 1)
            fprintf(f, " [%zu sites; rate and steadiness of the largest]", groups[i].sites);
        fputc('\n', f);
        const holder_t *h = print_holders(f, view, &view->growth, &groups[i], "      ");
        if (h != NULL)
            diagnosis_kept(f, 6, h->name, h->graph, h->role, groups[i].bytes, s->framework);
    }
    if (view->peak.count > 0 && view->peak_is_tensors) {
        fprintf(f, "\nLive at the tensors' peak (%s allocated at %.2f s):\n",
                units_format_size(view->tensors.peak_bytes, a),
                seconds_since_start(view, view->tensors.peak_time_ns));
        composition_print(f, 2, COMPOSITION_AT_PEAK, &view->peak_composition);
        if (view->has_oom)
            diagnosis_peak(f, 2, &view->peak_composition);
    }
    else if (view->peak.count > 0)
        fprintf(f, "\nLive at the peak (%s):\n", units_format_size(view->totals.peak_bytes, a));
    n = group_by_line(view, &view->peak, at_peak_of, groups);
    for (size_t i = 0; i < n && i < limit; i++) {
        const report_site_t *s = &view->peak.sites[groups[i].top];
        fprintf(f, "  %10s %s from %s", units_format_size(groups[i].bytes, a),
                site_phrase(s), origin_phrase(view, s->id, s->stats.kind));
        if (groups[i].sites > 1)
            fprintf(f, " [%zu sites]", groups[i].sites);
        fputc('\n', f);
    }
}

/* How many lines of library-kept memory the summary shows. */
#define KEPT_SHOWN 3

/* What CUDA libraries keep for the process (cuBLAS's workspaces, NCCL's
 * communicators), live at exit like a leak but theirs: by line, so a
 * user can see whose call made the library take it. */
static void print_kept(FILE *f, const report_view_t *view)
{
    char a[UNITS_SIZE_BUF];
    if (view->kept.count == 0)
        return;
    size_t lines = group_by_line(view, &view->kept, live_of, groups);
    fprintf(f, "\nKept for the process by CUDA libraries, not leaks (%s in %llu allocation(s)):\n",
            units_format_size(view->kept_bytes, a), (unsigned long long)view->kept_allocations);
    for (size_t i = 0; i < lines && i < KEPT_SHOWN; i++) {
        const report_site_t *s = &view->kept.sites[groups[i].top];
        fprintf(f, "  %10s %s from %s\n", units_format_size(groups[i].bytes, a),
                site_phrase(s), origin_phrase(view, s->id, s->stats.kind));
    }
}

/* The leaking lines, the largest first, each with its frames, origin and
 * holders, as LeakSanitizer words a leak. */
static void print_leaks(FILE *f, const report_view_t *view)
{
    int pid = (int)getpid();
    size_t lines = group_by_line(view, &view->leaks, live_of, groups);
    size_t shown = lines < (size_t)view->run.summary_sites ? lines : (size_t)view->run.summary_sites;
    /* A signal that kills the program comes before its own frees: what is
     * live then is in use, not leaked (gpuleak check does not judge it). */
    char when[128] = "at exit";
    if (view->moment == REPORT_ON_SIGNAL)
        snprintf(when, sizeof when, "when signal %d ended the program (in use then: its frees "
                 "never ran)", view->signal);
    if (view->leaks.count > GROUPED_SITES)
        fprintf(f, "\n==%d==gpuleak: %zu site(s) still hold GPU memory %s (the largest %d "
                "at %zu line(s))\n", pid, view->leaks.count, when, GROUPED_SITES, lines);
    else if (view->leaks.count > 0)
        fprintf(f, "\n==%d==gpuleak: %zu site(s) at %zu line(s) still hold GPU memory %s\n",
                pid, view->leaks.count, lines, when);
    size_t shown_sites = 0;
    for (size_t i = 0; i < shown; i++) {
        const line_group_t *g = &groups[i];
        const report_site_t *s = &view->leaks.sites[g->top];
        fprintf(f, "\nLeak of %llu byte(s) in %llu allocation(s) of %s",
                (unsigned long long)g->bytes, (unsigned long long)g->allocations,
                site_phrase(s));
        /* Pinned host memory lives in the host's RAM: "on device 0" (the
         * context current when it was asked for) misled. */
        if (s->stats.kind != REPORT_KIND_host)
            fprintf(f, " on device %d", s->stats.device);
        if (g->sites > 1)
            fprintf(f, " at %zu sites of one line; the largest allocated from:\n", g->sites);
        else
            fputs(", allocated from:\n", f);
        print_frames(f, s->id, view->run.summary_frames);
        fprintf(f, "  origin: %s\n", origin_phrase(view, s->id, s->stats.kind));
        print_holders(f, view, &view->leaks, g, "  ");
        shown_sites += g->sites;
    }
    if (view->leaks.count > shown_sites)
        fprintf(f, "\nOmitting %zu more leaking site(s); the report lists them all.\n",
                view->leaks.count - shown_sites);
}

/* What was live but not leaked (still reachable, a library's, PyTorch's
 * cache), torn down with its context, or refused. */
static void print_not_leaked(FILE *f, const report_view_t *view)
{
    char a[UNITS_SIZE_BUF];
    if (view->reachable.count > 0)
        fprintf(f, "\nOf it, %s in %llu allocation(s) was still live at exit%s. Still reachable "
                   "from those names, not counted as leaked.\n",
                units_format_size(view->reachable_bytes, a), (unsigned long long)view->reachable_allocations,
                view->run.frameworks & 1u << REPORT_FRAMEWORK_jax
                    ? " as far as gpuleak saw (JAX's arrays are seen in snapshots, the last at "
                      "Python's finish)"
                    : ": Python's shutdown did not free it");
    print_kept(f, view);
    if (view->reserve_bytes > 0 && view->run.frameworks == 1u << REPORT_FRAMEWORK_torch)
        fprintf(f, "\nPyTorch's caching allocator still reserved %s at exit: its cache, not a "
                "leak (the tensors in it are reported instead).\n",
                units_format_size(view->reserve_bytes, a));
    else if (view->reserve_bytes > 0)
        fprintf(f, "\n%s still held %s at exit, for arrays to come: not a leak (the arrays "
                "in it are reported instead).\n", report_frameworks_cache(view->run.frameworks, 1),
                units_format_size(view->reserve_bytes, a));
    if (view->teardown.count > 0) {
        uint64_t bytes = 0, count = 0;
        for (size_t i = 0; i < view->teardown.count; i++) {
            bytes += view->teardown.sites[i].stats.teardown_bytes;
            count += view->teardown.sites[i].stats.teardown_allocations;
        }
        fprintf(f, "\n%llu allocation(s), %s, were still live when their context was torn down.\n",
                (unsigned long long)count, units_format_size(bytes, a));
    }
    if (view->failures.count > 0) {
        const report_site_t *s = &view->failures.sites[0];
        const char *why = cuda_error_name(s->stats.last_failure);
        fprintf(f, "\n%zu site(s) had allocations refused; the largest, %s asked in %llu call(s) "
                   "(last %s, %d), from:\n",
                view->failures.count, units_format_size(s->stats.failed_bytes, a),
                (unsigned long long)s->stats.failures, why ? why : "result", s->stats.last_failure);
        print_frames(f, s->id, view->run.summary_frames);
    }
}

/* The closing line: what leaked (or was held when Python finished), the
 * peak, the tensors' peak, and where the report is. */
static void print_closing_line(FILE *f, const report_view_t *view, const char *path,
                               const char *lead)
{
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    double peak_s = seconds_since_start(view, view->totals.peak_time_ns);
    if (view->leaks.count > 0)
        fprintf(f, "%sSUMMARY: gpuleak: %llu byte(s) leaked in %llu allocation(s); "
                "peak GPU memory %s at %.2f s.", lead,
                (unsigned long long)view->leaked_bytes, (unsigned long long)view->leaked_allocations,
                units_format_size(view->totals.peak_bytes, b), peak_s);
    else if (view->held_bytes > 0)
        /* Nothing live at exit because Python's shutdown freed it: what the
         * script held to its end is above, and may be the leak. */
        fprintf(f, "%sgpuleak: no leaks at exit, but %s was still held when Python finished "
                "(above): %llu allocation(s), peak GPU memory %s at %.2f s.", lead,
                units_format_size(view->held_bytes, a), (unsigned long long)view->totals.allocations,
                units_format_size(view->totals.peak_bytes, b), peak_s);
    else
        fprintf(f, "%sgpuleak: no leaks at exit: %llu allocation(s), peak GPU memory %s at %.2f s.",
                lead, (unsigned long long)view->totals.allocations,
                units_format_size(view->totals.peak_bytes, b), peak_s);
    const char *which = view->run.frameworks == 0
                        ? report_framework_text(REPORT_FRAMEWORK_torch, REPORT_FRAMEWORK_ARRAYS)
                        : "Tensors and arrays";
    for (int fw = 0; fw < REPORT_FRAMEWORK_COUNT; fw++)
        if (view->run.frameworks == 1u << fw)
            which = report_framework_text(fw, REPORT_FRAMEWORK_ARRAYS);
    if (view->tensors.allocations > 0)
        fprintf(f, " %s: %llu allocation(s), peak %s at %.2f s.", which,
                (unsigned long long)view->tensors.allocations,
                units_format_size(view->tensors.peak_bytes, b),
                seconds_since_start(view, view->tensors.peak_time_ns));
    if (path != NULL && view->run.report_temporary)
        fprintf(f, " The report is gpuleak run's to judge.\n");
    else if (path != NULL)
        fprintf(f, " Report: %s\n", path);
    else
        fprintf(f, " No report could be written.\n");
}

/* Whether nothing calls for the reader's attention: no leak, nothing held
 * when Python finished, no growth, no refusal, no out-of-memory failure,
 * nothing torn down live. Then the summary is its closing line alone. */
static int all_is_well(const report_view_t *view)
{
    return view->leaks.count == 0 && view->held_bytes == 0 && view->growth.count == 0
        && view->failures.count == 0 && !view->has_oom && view->teardown.count == 0;
}

/* The commands that read the report further, for a summary that found
 * something: the page and the text view. */
static void print_next(FILE *f, const report_view_t *view, const char *path)
{
    if (path == NULL || view->run.report_temporary)
        return;
    fprintf(f, "gpuleak: next: %s html %s (a page), %s report %s (by line)\n", view->run.command, path,
            view->run.command, path);
}

/* Why the counts may fall short, and the shim's own time when it was
 * timed. */
static void print_caveats(FILE *f, const report_view_t *view)
{
    if (view->run.stop_reason != NULL)
        fprintf(f, "gpuleak: tracking stopped early (%s); counts cover the run until then.\n",
                view->run.stop_reason);
    if (view->locks_skipped > 0)
        fprintf(f, "gpuleak: the report gave up %u lock(s) a thread interrupted by a signal "
                "held; some counts may be off (status.locks_skipped).\n", view->locks_skipped);
    const selftime_totals_t own = view->run.self_time;
    if (own.calls > 0) {
        double run_s = (double)(view->now_ns - view->run.started_ns) / 1e9;
        fprintf(f, "gpuleak: its own time was %.3f ms over %llu call(s), %.0f ns a call, "
                "%.2f%% of the %.2f s it tracked (the clock's %.0f ns a read left out).\n",
                (double)own.ns / 1e6, (unsigned long long)own.calls,
                (double)own.ns / (double)own.calls,
                run_s > 0 ? 100.0 * (double)own.ns / 1e9 / run_s : 0.0, run_s, own.clock_ns);
    }
    if (own.captures > 0) {
        double captures = (double)own.captures;
        fprintf(f, "gpuleak: of it, %llu stack(s) taken: native %.0f ns a stack (%.1f frames; "
                "%.0f%% of those its unwinder gave taken from recent stacks; %.0f%% of the stacks "
                "of a trusted Python line, not walked), Python frames %.0f ns, interning %.0f ns "
                "a stack.\n",
                (unsigned long long)own.captures, (double)own.native_ns / captures,
                (double)own.native_frames / captures,
                own.unwound_frames > 0 ? 100.0 * (double)own.reused_frames / (double)own.unwound_frames : 0.0,
                100.0 * (double)own.trusted / captures,
                (double)own.python_ns / captures, (double)own.intern_ns / captures);
    }
}

void report_summary_print(FILE *f, const report_view_t *view, const char *path)
{
    if (all_is_well(view)) {
        print_closing_line(f, view, path, "");
        print_caveats(f, view);
        return;
    }
    print_leaks(f, view);
    print_held(f, view);
    print_not_leaked(f, view);
    print_oom(f, view);
    print_growth_and_peak(f, view);
    print_chart(f, view);
    print_closing_line(f, view, path, "\n");
    print_next(f, view, path);
    print_caveats(f, view);
}
