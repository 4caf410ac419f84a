/* api.c: include/gpuleak.h, what a running program may ask the shim (the
 * Python package and its pytest plugin ask through ctypes). A thin layer:
 * the answers come from the tracker, the marks, the depot and the origin
 * rules. */
#define _GNU_SOURCE
#include "gpuleak.h"
#include "finish.h"
#include "guard.h"
#include "lifecycle.h"
#include "marks.h"
#include "report.h"
#include "tracker.h"

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
    uint64_t id = marks_add(name, tracker_now_ns(), state == LIFECYCLE_IDLE);
    guard_depth--;
    return id;
}

EXPORT size_t gpuleak_live_since(uint64_t mark, gpuleak_site_t *out, size_t max)
{
    if (!gpuleak_tracking())
        return 0;
    guard_depth++;
    size_t count;
    mark_gain_t *gains = marks_gains_since(mark, &count);
    for (size_t i = 0; i < count && i < max; i++) {
        site_stats_t st;
        memset(&st, 0, sizeof st);
        tracker_site(gains[i].site, &st);
        out[i] = (gpuleak_site_t){ gains[i].site, st.kind, st.device, gains[i].bytes,
                                   st.live_bytes, st.live_allocations };
    }
    free(gains);
    guard_depth--;
    return count;
}

EXPORT int gpuleak_site_origin(uint32_t site, char *out, size_t size)
{
    guard_depth++;
    int rc = report_python_origin(site, out, size);
    guard_depth--;
    return rc;
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
    return finish_holders_py;
}

EXPORT const char *gpuleak_layout_source(void)
{
    return finish_layout_py;
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
