/* api.c: include/gpuleak.h, what a running program may ask the shim (the
 * Python package and its pytest plugin ask through ctypes). A thin layer:
 * the answers come from the tracker, the marks, the depot and the origin
 * rules. */
#define _GNU_SOURCE
#include "gpuleak.h"
#include "clock.h"
#include "composition.h"
#include "diagnosis.h"
#include "search.h"
#include "refwalk.h"
#include "guard.h"
#include "lifecycle.h"
#include "marks.h"
#include "python.h"
#include "report_format.h"
#include "report.h"
#include "stacks.h"
#include "tracker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int gpuleak_api_version(void)
{
    return GPULEAK_API_VERSION;
}

EXPORT const char *gpuleak_kind_name(int kind)
{
    return kind >= 0 && kind < REPORT_KIND_COUNT ? tracker_kind_name((alloc_kind_t)kind) : NULL;
}

EXPORT int gpuleak_tracking(void)
{
    return lifecycle_report_owed()
        && atomic_load(&lifecycle_state_now) == LIFECYCLE_TRACKING;
}

/* The kind named name, or -1. */
static int kind_of(const char *name)
{
    for (int k = 0; k < REPORT_KIND_COUNT; k++)
        if (strcmp(name, tracker_kind_name((alloc_kind_t)k)) == 0)
            return k;
    return -1;
}

EXPORT uint64_t gpuleak_live_bytes(const char *kind, int device)
{
    if (!gpuleak_tracking())
        return 0;
    totals_t t;
    if (kind == NULL && device < 0) {
        tracker_totals(&t);
        return t.live_bytes;
    }
    if (kind == NULL)
        return tracker_device_totals(device, &t) == 0 ? t.live_bytes : 0;
    int k = kind_of(kind);
    if (k < 0)
        return 0;
    if (device < 0) {
        tracker_kind_totals((alloc_kind_t)k, &t);
        return t.live_bytes;
    }
    /* A kind on one device: summed over that kind's sites on the device. */
    uint64_t bytes = 0;
    uint32_t high = tracker_site_count();
    for (uint32_t s = 1; s <= high; s++) {
        site_stats_t st;
        if (tracker_site(s, &st) == 0 && st.kind == k && st.device == device)
            bytes += st.live_bytes;
    }
    return bytes;
}

EXPORT uint64_t gpuleak_mark(const char *name)
{
    /* Before the first CUDA call nothing is live: a mark then is a true
     * baseline (a test's first allocation may start tracking). */
    int state = atomic_load(&lifecycle_state_now);
    if (state == LIFECYCLE_OFF || (state == LIFECYCLE_TRACKING && !lifecycle_report_owed()))
        return 0;
    guard_depth++;
    uint64_t id = marks_add(name, clock_coarse_ns(), state == LIFECYCLE_IDLE);
    guard_depth--;
    return id;
}

/* By site id, whether a CUDA library keeps the site's memory for the
 * process: 0 not asked yet, 1 it does, 2 the program's own. A site's stack
 * never changes, so each is symbolized once, when it first gains. */
static struct {
    pthread_mutex_t lock;
    uint8_t *by_site;
    uint32_t high;
} kept_sites = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };

/* Whether the memory of site (of kind) is a library's for the process;
 * asks the report for the sites of stats[0..count) not asked before, in
 * one batch. On a shortage of memory, the program's. */
static void ask_kept(const site_stats_t *stats, const mark_gain_t *gains, size_t count)
{
    pthread_mutex_lock(&kept_sites.lock);
    uint32_t high = tracker_site_count();
    size_t had = kept_sites.by_site != NULL ? (size_t)kept_sites.high + 1 : 0;
    if ((size_t)high + 1 > had) {
        uint8_t *bigger = realloc(kept_sites.by_site, (size_t)high + 1);
        if (bigger != NULL) {
            memset(bigger + had, 0, (size_t)high + 1 - had);
            kept_sites.by_site = bigger;
            kept_sites.high = high;
        }
    }
    uint32_t *sites = malloc(count * sizeof *sites + 1);
    int *kinds = malloc(count * sizeof *kinds + 1);
    uint8_t *answers = malloc(count + 1);
    size_t n = 0;
    for (size_t i = 0; sites && kinds && answers && kept_sites.by_site && i < count; i++)
        if (gains[i].site <= kept_sites.high && kept_sites.by_site[gains[i].site] == 0) {
            sites[n] = gains[i].site;
            kinds[n++] = stats[i].kind;
        }
    if (n > 0) {
        report_sites_kept(sites, kinds, n, answers);
        for (size_t i = 0; i < n; i++)
            kept_sites.by_site[sites[i]] = answers[i] ? 1 : 2;
    }
    free(sites);
    free(kinds);
    free(answers);
    pthread_mutex_unlock(&kept_sites.lock);
}

static int is_kept(uint32_t site)
{
    pthread_mutex_lock(&kept_sites.lock);
    int yes = kept_sites.by_site != NULL && site <= kept_sites.high && kept_sites.by_site[site] == 1;
    pthread_mutex_unlock(&kept_sites.lock);
    return yes;
}

EXPORT size_t gpuleak_live_since(uint64_t mark, gpuleak_site_t *out, size_t max)
{
    if (!gpuleak_tracking())
        return 0;
    guard_depth++;
    size_t count, found = 0;
    mark_gain_t *gains = marks_gains_since(mark, &count);
    site_stats_t *stats = calloc(count + 1, sizeof *stats);
    if (stats != NULL) {
        for (size_t i = 0; i < count; i++)
            tracker_site(gains[i].site, &stats[i]);
        ask_kept(stats, gains, count);
    }
    for (size_t i = 0; stats != NULL && i < count; i++) {
        if (is_kept(gains[i].site))
            continue;
        const site_stats_t *st = &stats[i];
        if (found < max)
            out[found] = (gpuleak_site_t){ gains[i].site, st->kind, st->device, gains[i].bytes,
                                           st->live_bytes, st->live_allocations };
        found++;
    }
    free(stats);
    free(gains);
    guard_depth--;
    return found;
}

EXPORT int gpuleak_site_origin(uint32_t site, char *out, size_t size)
{
    guard_depth++;
    int rc = report_python_origin(site, out, size);
    guard_depth--;
    return rc;
}

EXPORT uint64_t gpuleak_site_thread(uint32_t site)
{
    const stack_record_t *r = stacks_get(site);
    return r != NULL ? r->thread : 0;
}

EXPORT int gpuleak_site_python_frames(uint32_t site, char *out, size_t size)
{
    const stack_record_t *r = stacks_get(site);
    if (size > 0)
        out[0] = '\0';
    if (r == NULL)
        return 0;
    size_t used = 0;
    for (int i = 0; size > 0 && i < r->python_count; i++) {
        const char *function = NULL, *file = NULL;
        int line = 0;
        (void)python_describe(r->frames[r->native_count + i], &function, &file, &line);
        int n = snprintf(out + used, size - used, "%s:%d in %s\n", file ? file : "?", line,
                         function ? function : "?");
        if (n < 0 || (size_t)n >= size - used) {
            out[used] = '\0';  /* a line that did not fit is left out whole */
            break;
        }
        used += (size_t)n;
    }
    return r->python_count;
}

EXPORT size_t gpuleak_site_records(uint32_t site, uint64_t *addresses, uint64_t *sizes, size_t max)
{
    if (!gpuleak_tracking())
        return 0;
    guard_depth++;
    size_t count, found = 0;
    tracker_record_t *records = tracker_live_records(&count);
    for (size_t i = 0; i < count; i++) {
        if (records[i].site != site)
            continue;
        if (found < max) {
            addresses[found] = records[i].key;
            sizes[found] = records[i].size;
        }
        found++;
    }
    free(records);
    guard_depth--;
    return found;
}

EXPORT const char *gpuleak_holders_source(void)
{
    return search_holders_py;
}

/* A new reference, for ctypes.PyDLL (the GIL held): refwalk.h. */
EXPORT void *gpuleak_holders_walker(void)
{
    return refwalk_new();
}

EXPORT int gpuleak_holder_phrase(const char *name, const char *type, const char *owner,
                                 const char *file, int graph, const char *path, char *out,
                                 size_t size)
{
    return report_holder_phrase(out, size, name, type, owner, file, graph, path);
}

EXPORT int gpuleak_diagnosis(const char *name, int graph, const char *role, uint64_t bytes, int grew,
                             int indent, char *out, size_t size)
{
    if (name == NULL || out == NULL || size == 0)
        return -1;
    out[0] = '\0';
    FILE *f = fmemopen(out, size, "w");
    if (f == NULL)
        return -1;
    int role_id = role != NULL ? composition_role_of_word(role) : -1;
    diagnosis_holder(f, indent, name, graph, role_id, bytes, grew, REPORT_FRAMEWORK_torch);
    long n = ftell(f);
    fclose(f);
    return n < 0 ? -1 : (int)n;
}

EXPORT const char *gpuleak_layout_source(void)
{
    return search_layout_py;
}

EXPORT int gpuleak_snapshot(void)
{
    if (!gpuleak_tracking())
        return -1;
    guard_depth++;
    report_write(REPORT_ON_REQUEST, 0, 0);
    guard_depth--;
    return 0;
}
