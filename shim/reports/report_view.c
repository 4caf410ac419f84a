/* report_view.c: a report's content, gathered once into a view
 * (report_view.h): every section's sites, selected and sorted, with their
 * origins' helpers and holders, the totals, the timeline and marks, the
 * out-of-memory record and what Python held at its finish. */
#define _GNU_SOURCE
#include "report_view.h"
#include "clock.h"
#include "command.h"
#include "config.h"
#include "search.h"
#include "lifecycle.h"
#include "log.h"
#include "origin.h"
#include "bounded.h"
#include "python.h"
#include "rank.h"
#include "stacks.h"
#include "torch_events.h"

#include <stdlib.h>
#include <string.h>

static int by_live_bytes(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->stats.live_bytes != y->stats.live_bytes)
        return x->stats.live_bytes < y->stats.live_bytes ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_teardown_bytes(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->stats.teardown_bytes != y->stats.teardown_bytes)
        return x->stats.teardown_bytes < y->stats.teardown_bytes ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_failed_bytes(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->stats.failed_bytes != y->stats.failed_bytes)
        return x->stats.failed_bytes < y->stats.failed_bytes ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_at_peak_bytes(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->stats.at_peak_bytes != y->stats.at_peak_bytes)
        return x->stats.at_peak_bytes < y->stats.at_peak_bytes ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_bytes_gained(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->growth.bytes_gained != y->growth.bytes_gained)
        return x->growth.bytes_gained < y->growth.bytes_gained ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_peak_bytes(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->stats.peak_live_bytes != y->stats.peak_live_bytes)
        return x->stats.peak_live_bytes < y->stats.peak_live_bytes ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Keeps the sites for which keep() holds, sorted by order. Returns -1 when
 * memory is out (the list is then empty). */
static int select_sites(const report_site_t *all, size_t count, int (*keep)(const report_site_t *),
                        int (*order)(const void *, const void *), report_list_t *out)
{
    out->count = 0;
    out->sites = malloc(sizeof *out->sites * (count ? count : 1));
    if (out->sites == NULL)
        return -1;
    for (size_t i = 0; i < count; i++)
        if (keep(&all[i]))
            out->sites[out->count++] = all[i];
    qsort(out->sites, out->count, sizeof *out->sites, order);
    return 0;
}

static int is_leak(const report_site_t *s)
{
    return s->stats.live_allocations > s->reachable_allocations && !s->aside && !s->kept;
}
static int is_reachable(const report_site_t *s) { return s->reachable_allocations > 0 && !s->aside && !s->kept; }
static int is_kept(const report_site_t *s) { return s->stats.live_allocations > 0 && !s->aside && s->kept; }
static int is_teardown(const report_site_t *s) { return s->stats.teardown_allocations > 0; }
static int is_failure(const report_site_t *s) { return s->stats.failures > 0; }
static int is_used(const report_site_t *s) { return s->stats.allocations > 0 || s->stats.failures > 0; }
static int is_at_peak(const report_site_t *s) { return s->stats.at_peak_bytes > 0 && !s->aside; }
static int is_growing(const report_site_t *s) { return s->growth.grew && !s->aside; }
static int is_held(const report_site_t *s) { return s->held_bytes > 0 && !s->aside && !s->kept; }

static int by_reachable_bytes(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->reachable_bytes != y->reachable_bytes)
        return x->reachable_bytes < y->reachable_bytes ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The live tensors of each site up to high that the holder search named
 * at Python's finish (holder_set_named), bytes and allocations by site id, in
 * arrays the caller frees; both NULL when none was named or memory is out.
 * O(live allocations). Only tensors: PyTorch keeps them past module
 * teardown (a model's parameters), so one named at the finish and live at
 * exit was kept by it. Memory behind another object's
 * __cuda_array_interface__ returns only by that object's own free: one
 * whose class never frees it (a raw cuMemAlloc wrapper) dies at teardown
 * and its memory is lost, which the search, done before teardown, cannot
 * tell from memory still held. */
static void reachable_by_site(const holder_set_t *set, uint32_t high, uint64_t **bytes,
                              uint64_t **count)
{
    *bytes = NULL;
    *count = NULL;
    holder_search_t search;
    holder_set_search(set, &search);
    if (search.named_allocations == 0)
        return;
    size_t live;
    tracker_record_t *records = tracker_live_records(&live);
    uint64_t *b = calloc((size_t)high + 1, sizeof *b), *c = calloc((size_t)high + 1, sizeof *c);
    if (records == NULL || b == NULL || c == NULL) {
        free(records);
        free(b);
        free(c);
        return;
    }
    for (size_t i = 0; i < live; i++)
        if (records[i].kind == REPORT_KIND_tensor && records[i].site <= high
            && holder_set_named(set, records[i].key, records[i].site)) {
            b[records[i].site] += records[i].size;
            c[records[i].site]++;
        }
    free(records);
    *bytes = b;
    *count = c;
}

/* Whether owner is the pool of a framework whose arrays are followed
 * (frameworks: 1 << each, report_format.h). */
static int pool_owner(const char *owner, unsigned frameworks)
{
    static const struct { const char *owner; int framework; } pools[] = {
        { ORIGIN_OWNER_CACHING, REPORT_FRAMEWORK_torch },
        { ORIGIN_OWNER_XLA_POOL, REPORT_FRAMEWORK_jax },
        { ORIGIN_OWNER_CUPY_POOL, REPORT_FRAMEWORK_cupy },
    };
    for (size_t i = 0; owner != NULL && i < sizeof pools / sizeof pools[0]; i++)
        if (strcmp(owner, pools[i].owner) == 0)
            return (frameworks & 1u << pools[i].framework) != 0;
    return 0;
}

/* Sets the frameworks' caches aside where their tensors are followed, so
 * that their memory is counted once, by the tensors inside it: a driver
 * site whose owner is PyTorch's caching allocator, or whose every live
 * block is a framework's pool (JAX's block, CuPy's chunks: pools.h), is set
 * aside whole; otherwise the segments
 * PyTorch's events named (a frameless site with stacks off holds them
 * beside the program's own allocations) leave the site's live counts. Where
 * the tensors' frees stopped being seen, tensor sites are set aside, as
 * what they hold is no longer known. */
static void set_aside_cache(report_view_t *view, report_site_t *site, int followed)
{
    site_stats_t *st = &site->stats;
    if (st->kind == REPORT_KIND_tensor) {
        site->aside = !followed;
        return;
    }
    if (!followed || (st->kind != REPORT_KIND_device && st->kind != REPORT_KIND_vmm))
        return;
    origin_site_t o;
    origin_site(site->id, st->kind, &o);
    int all_reserve = st->live_allocations > 0 && st->reserve_allocations >= st->live_allocations;
    if (all_reserve || pool_owner(o.owner, view->run.frameworks)) {
        site->aside = 1;
        view->reserve_bytes += st->live_bytes;
        return;
    }
    uint64_t bytes = st->reserve_bytes < st->live_bytes ? st->reserve_bytes : st->live_bytes;
    uint64_t count = st->reserve_allocations < st->live_allocations ? st->reserve_allocations
                                                                     : st->live_allocations;
    view->reserve_bytes += bytes;
    st->live_bytes -= bytes;
    st->live_allocations -= count;
}

#define HELPER_SITES 1000    /* leaks, and freed sites, compared for a shared origin */
#define HELPER_CALLERS 8      /* the most callers shown after a shared origin */

/* A site's fate, as find_helpers tells paths apart: kept (live at exit,
 * or held when Python finished: kept_is_held) or freed, and grown or not. */
static int fate(const report_site_t *s, int kept_is_held)
{
    int kept = kept_is_held ? s->held_bytes != 0 : s->stats.live_allocations != 0;
    return kept * 2 + (s->growth.grew != 0);
}

/* For each site of kept (the leaks, or what was held when Python finished:
 * kept_is_held) whose origin line is also the origin of a site with
 * another fate (freed, or kept but grown where it was not, or the other
 * way: a helper the user calls for a cache, the weights and a leak), how
 * many of its callers in the user's code the views show: down to the
 * first caller no such site shares, so the paths read apart. Among the
 * largest HELPER_SITES of each; leaves view->callers NULL when none needs
 * it or memory is short. */
static void find_helpers(report_view_t *view, const report_list_t *kept, int kept_is_held)
{
    static origin_frame_t mine[HELPER_CALLERS], theirs[HELPER_CALLERS];
    static struct { const report_site_t *site; origin_frame_t origin; } others[HELPER_SITES];
    size_t others_n = 0;
    for (size_t j = 0; j < view->sites.count && others_n < HELPER_SITES; j++) {
        const report_site_t *other = &view->sites.sites[j];
        if (other->stats.allocations == 0)
            continue;
        origin_site_t oo;
        origin_site(other->id, other->stats.kind, &oo);
        if (oo.found)
            others[others_n++] = (typeof(others[0])){ other, oo.frame };
    }
    for (size_t i = 0; i < kept->count && i < HELPER_SITES && others_n > 0; i++) {
        const report_site_t *leak = &kept->sites[i];
        origin_site_t lo;
        origin_site(leak->id, leak->stats.kind, &lo);
        if (!lo.found)
            continue;
        int mine_n = -1, depth = 0;
        for (size_t j = 0; j < others_n; j++) {
            /* The same kind: a helper's freed tensors, not the segment its
             * first call made the allocator take. */
            if (others[j].site->id == leak->id || others[j].site->stats.kind != leak->stats.kind
                || others[j].site->aside || fate(others[j].site, kept_is_held) == fate(leak, kept_is_held)
                || !origin_same_frame(&others[j].origin, &lo.frame))
                continue;
            if (mine_n < 0)
                mine_n = origin_callers(leak->id, mine, HELPER_CALLERS);
            const report_site_t *other = others[j].site;
            int theirs_n = origin_callers(other->id, theirs, HELPER_CALLERS);
            int d = 0;  /* callers shared with this freed site */
            while (d < mine_n && d < theirs_n && origin_same_frame(&mine[d], &theirs[d]))
                d++;
            if (d == mine_n && d == theirs_n)
                continue;  /* the same path (deeper down, or deeper in a recursion): no caller tells them apart */
            int want = d + 1 <= mine_n ? d + 1 : mine_n;
            if (want > depth)
                depth = want;
        }
        if (depth == 0)
            continue;
        if (view->callers == NULL) {
            view->callers_high = tracker_site_count();
            view->callers = calloc((size_t)view->callers_high + 1, 1);
            if (view->callers == NULL)
                return;
        }
        if (leak->id <= view->callers_high)
            view->callers[leak->id] = (uint8_t)depth;
    }
}

int report_view_origin_callers(const report_view_t *view, uint32_t site, origin_frame_t *out)
{
    if (view == NULL || view->callers == NULL || site > view->callers_high
        || view->callers[site] == 0)
        return 0;
    return origin_callers(site, out, view->callers[site]);
}

#define HELD_SITES 1000
#define HELD_LATER_ALLOCATIONS 64  /* allocations after Python's finish that still count as its end */

static int by_held_bytes(const void *a, const void *b)
{
    const report_site_t *x = a, *y = b;
    if (x->held_bytes != y->held_bytes)
        return x->held_bytes < y->held_bytes ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The largest holders of GPU memory at the out-of-memory failure, as
 * indices into oom->sites, largest first (ties by site order); a selection,
 * since the rest are small. Returns how many (<= OOM_HOLDERS). */
static size_t oom_holders(const tracker_oom_t *oom, size_t chosen[OOM_HOLDERS])
{
    size_t shown = 0;
    uint64_t floor_bytes = UINT64_MAX;
    while (shown < OOM_HOLDERS) {
        size_t best = oom->site_count;
        for (size_t i = 0; i < oom->site_count; i++) {
            uint64_t b = oom->sites[i].bytes;
            if (b < floor_bytes && (best == oom->site_count || b > oom->sites[best].bytes))
                best = i;
        }
        if (best == oom->site_count)
            break;
        floor_bytes = oom->sites[best].bytes;
        for (size_t i = 0; i < oom->site_count && shown < OOM_HOLDERS; i++)
            if (oom->sites[i].bytes == floor_bytes)
                chosen[shown++] = i;
    }
    return shown;
}

/* How long a search made for a report on request stays its own. */
#define HOLDERS_FRESH_NS (10ull * 1000 * 1000 * 1000)

/* The searches a report shows: at the exit or a fatal signal, the one of
 * Python's finish; on request (or in a snapshot right after one), the one
 * made for it when it is fresh (the reporter asked just before:
 * search_on_request), else none, for a search made minutes ago would name
 * holders of memory since freed; and the first OOM's. */
static void choose_holders(report_view_t *view, report_moment_t moment)
{
    if (moment == REPORT_ON_REQUEST || moment == REPORT_SNAPSHOT) {
        view->holder_set = search_acquire(SEARCH_ON_REQUEST, &view->holder_ticket);
        holder_search_t search;
        holder_set_search(view->holder_set, &search);
        if (view->holder_set != NULL && clock_monotonic_ns() - search.made_ns > HOLDERS_FRESH_NS) {
            search_release(view->holder_ticket);
            view->holder_set = NULL;
            view->holder_ticket = NULL;
        }
    } else {
        view->holder_set = search_acquire(SEARCH_AT_EXIT, &view->holder_ticket);
        view->holders_at_finish = 1;
    }
    if (view->has_oom)
        view->oom_set = search_acquire(SEARCH_AT_OOM, &view->oom_ticket);
    holder_set_search(view->oom_set, &view->oom_search);
}

/* The run's own facts (report_run_t). */
static void gather_run(report_run_t *run)
{
    run->stop_reason = lifecycle_stop_reason();
    run->epoch_offset_ns = lifecycle_epoch_offset_ns();
    run->started_ns = lifecycle_started_ns();
    run->unknown_frees = tracker_unknown_frees();
    run->maps = tracker_maps(0);
    run->unmaps = tracker_maps(1);
    run->stacks = stacks_count();
    run->stacks_dropped = stacks_overflowed();
    run->growth_sites_unfollowed = growth_sites_unfollowed();
    selftime_read(&run->self_time);
    run->torch_mode = lifecycle_torch_mode();
    run->torch_alloc_conf = config_getenv("PYTORCH_CUDA_ALLOC_CONF");
    run->torch_status = torch_events_status();
    torch_events_counts(run->torch_events);
    run->frameworks = torch_events_followed() ? 1u << REPORT_FRAMEWORK_torch : 0;
    for (int f = 0; f < REPORT_FRAMEWORK_COUNT; f++) {
        pools_counts(f, &run->pools[f]);
        if (run->pools[f].live_arrays + run->pools[f].events + run->pools[f].from_snapshots > 0)
            run->frameworks |= 1u << f;
    }
    run->cupy_hooked = pools_cupy_hooked();
    run->python_version = python_version();
    run->rank = rank_of_process();
    run->local_rank = rank_local();
    run->job = rank_job();
    run->site_count = tracker_site_count();
    run->redact_argv = config.redact_argv;
    run->summary_sites = config.summary_sites;
    run->summary_frames = config.summary_frames;
    run->report_temporary = config.report_temporary;
    command_name(run->command, sizeof run->command);
}

/* The totals, the out-of-memory record, the holders, the timeline and the
 * marks. */
static void gather_totals(report_view_t *view, report_moment_t moment)
{
    tracker_totals(&view->totals);
    for (int k = 0; k < REPORT_KIND_COUNT; k++)
        tracker_kind_totals((alloc_kind_t)k, &view->kinds[k]);
    view->tensors = view->kinds[REPORT_KIND_tensor];
    for (int d = 0; d < TRACKER_MAX_DEVICES; d++)
        if (tracker_device_totals(d, &view->devices[d]) == 0)
            view->devices_seen |= 1ull << d;
    view->shim_bytes = tracker_memory_bytes() + stacks_memory_bytes();
    view->peak_is_tensors = tracker_peak_is_tensors() && view->tensors.allocations > 0;
    view->has_oom = tracker_oom_copy(&view->oom);
    if (view->has_oom)
        view->oom_holder_count = oom_holders(&view->oom, view->oom_holders);
    choose_holders(view, moment);
    holder_set_search(view->holder_set, &view->holders);
    view->timeline = malloc(sizeof *view->timeline * TIMELINE_POINTS);
    if (view->timeline != NULL)
        view->timeline_count = timeline_points(view->now_ns, view->timeline, TIMELINE_POINTS);
    view->marks = marks_copy(&view->mark_count, &view->marks_dropped);
    view->timeline_interval_ns = timeline_interval_ns();
}

/* What every site is judged with: the tensors' events followed, what each
 * site held as Python finished, what the search found reachable, and the
 * growth rule's last sample. */
typedef struct site_context {
    int followed;
    uint64_t *held_by_site;              /* NULL: Python did not finish (or its end was not the program's) */
    uint64_t *reach_bytes, *reach_count; /* NULL: reachability not judged */
    uint64_t last_ns, allocations;
} site_context_t;

/* What each site held where Python finished, by site id up to high, into
 * memory the caller frees; NULL when it did not (or its moment was not the
 * program's end). */
static uint64_t *gather_held(report_view_t *view, uint32_t high)
{
    tracker_held_t held;
    int has_held = tracker_held_copy(&held);
    /* A program that embeds Python and goes on allocating after finalizing
     * it was not at its end then: the moment is not its finish. Teardown
     * itself frees; a few allocations are its destructors' own. */
    if (has_held && held.later_allocations > HELD_LATER_ALLOCATIONS)
        has_held = 0;
    uint64_t *held_by_site = has_held ? calloc((size_t)high + 1, sizeof *held_by_site) : NULL;
    for (size_t i = 0; held_by_site != NULL && i < held.site_count; i++)
        if (held.sites[i].site <= high)
            held_by_site[held.sites[i].site] = held.sites[i].bytes;
    if (held_by_site != NULL) {
        view->held_time_ns = held.time_ns;
        view->held_gpu_bytes = held.gpu_bytes;
        view->held_tensor_bytes = held.tensor_bytes;
    }
    free(held.sites);
    return held_by_site;
}

/* Fills the parts of site (its stats read) that the lists are chosen by. */
static void judge_site(report_view_t *view, const site_context_t *ctx, report_site_t *site)
{
    uint32_t id = site->id;
    site->aside = 0;
    site->framework = report_view_site_framework(id, site->stats.kind);
    set_aside_cache(view, site, ctx->followed);
    site->held_bytes = ctx->held_by_site != NULL ? ctx->held_by_site[id] : 0;
    site->kept = 0;
    if ((site->stats.live_allocations > 0 || site->held_bytes > 0) && !site->aside) {
        origin_site_t o;
        origin_site(id, site->stats.kind, &o);
        site->kept = origin_owner_keeps(o.owner);
    }
    site->reachable_bytes = 0;
    site->reachable_allocations = 0;
    if (ctx->reach_bytes != NULL && !site->aside) {
        site->reachable_allocations = ctx->reach_count[id] < site->stats.live_allocations
                                    ? ctx->reach_count[id] : site->stats.live_allocations;
        site->reachable_bytes = ctx->reach_bytes[id] < site->stats.live_bytes
                              ? ctx->reach_bytes[id] : site->stats.live_bytes;
    }
    site->holder_count = holder_set_site(view->holder_set, id, &site->holders);
    uint64_t last_bytes = ctx->held_by_site != NULL ? site->held_bytes : site->stats.live_bytes;
    if (site->stats.kind == REPORT_KIND_host
        || growth_site(id, ctx->last_ns, last_bytes, ctx->allocations, &site->growth) != 0)
        memset(&site->growth, 0, sizeof site->growth);
}

/* Every list of the report, chosen from the used sites all[0..count).
 * Returns 0, or nonzero when memory for one was lacking. */
static int select_lists(report_view_t *view, report_site_t *all, size_t count)
{
    return select_sites(all, count, is_leak, by_live_bytes, &view->leaks)
         | select_sites(all, count, is_kept, by_live_bytes, &view->kept)
         | select_sites(all, count, is_reachable, by_reachable_bytes, &view->reachable)
         | select_sites(all, count, is_teardown, by_teardown_bytes, &view->teardown)
         | select_sites(all, count, is_failure, by_failed_bytes, &view->failures)
         | select_sites(all, count, is_used, by_peak_bytes, &view->sites)
         | select_sites(all, count, is_at_peak, by_at_peak_bytes, &view->peak)
         | select_sites(all, count, is_growing, by_bytes_gained, &view->growth)
         | select_sites(all, count, is_held, by_held_bytes, &view->held);
}

/* Each list's copy counts its own part of a site's live memory. Where
 * reachability was judged, a tensor site's leak is only what the search
 * did not name: its holders held the reachable part or memory freed since,
 * never the leak, so the leak's copy names none. Then each list's sums. */
static void settle_lists(report_view_t *view, int reach_known)
{
    for (size_t i = 0; i < view->leaks.count; i++) {
        report_site_t *leak = &view->leaks.sites[i];
        leak->stats.live_bytes -= leak->reachable_bytes;
        leak->stats.live_allocations -= leak->reachable_allocations;
        if (reach_known && leak->stats.kind == REPORT_KIND_tensor && !leak->aside) {
            leak->holder_count = 0;
            leak->holders = NULL;
        }
        view->leaked_bytes += leak->stats.live_bytes;
        view->leaked_allocations += leak->stats.live_allocations;
    }
    qsort(view->leaks.sites, view->leaks.count, sizeof *view->leaks.sites, by_live_bytes);
    for (size_t i = 0; i < view->reachable.count; i++) {
        report_site_t *r = &view->reachable.sites[i];
        r->stats.live_bytes = r->reachable_bytes;
        r->stats.live_allocations = r->reachable_allocations;
        view->reachable_bytes += r->reachable_bytes;
        view->reachable_allocations += r->reachable_allocations;
    }
    for (size_t i = 0; i < view->kept.count; i++) {
        view->kept_bytes += view->kept.sites[i].stats.live_bytes;
        view->kept_allocations += view->kept.sites[i].stats.live_allocations;
    }
    view->held_sites = view->held.count;
    for (size_t i = 0; i < view->held.count; i++)
        view->held_bytes += view->held.sites[i].held_bytes;
    if (view->held.count > HELD_SITES)
        view->held.count = HELD_SITES;
}

/* Gathers every site's counters and the sections of the report: every
 * read that takes a lock is made here, so that the writers know how many
 * locks were given up. Call between origin_init and origin_end (owners
 * decide the reserve). */
/* Most Python frames a site's role is inferred from. */
#define ROLE_FRAMES 64

/* The role the Python frames of a tensor site's call imply
 * (composition_role_of_call, which reads PyTorch's files): another
 * framework's arrays are other tensors. */
static composition_role_t site_role(const report_view_t *view, uint32_t site)
{
    if (report_view_site_framework(site, REPORT_KIND_tensor) != REPORT_FRAMEWORK_torch)
        return COMPOSITION_other_tensors;
    const char *functions[ROLE_FRAMES], *files[ROLE_FRAMES];
    size_t n = 0;
    const stack_record_t *stack = stacks_get(site);
    for (uint16_t k = 0; stack != NULL && k < stack->python_count && n < ROLE_FRAMES; k++) {
        int line;
        if (python_describe(stack->frames[stack->native_count + k], &functions[n], &files[n], &line) == 0)
            n++;
    }
    return composition_role_of_call(functions, files, n, view->run.python_version != NULL);
}

/* The tensors at their peak, by the role each site's call implies; the
 * part the peak list does not hold (none today) counts as other tensors,
 * so the parts sum to the peak. */
static void gather_peak_composition(report_view_t *view)
{
    composition_t *c = &view->peak_composition;
    if (!view->peak_is_tensors)
        return;
    c->inferred = 1;
    uint64_t listed = 0;
    for (size_t i = 0; i < view->peak.count; i++) {
        const report_site_t *s = &view->peak.sites[i];
        if (s->stats.kind != REPORT_KIND_tensor)
            continue;
        composition_add(c, site_role(view, s->id), NULL, s->stats.at_peak_bytes);
        listed += s->stats.at_peak_bytes;
    }
    if (view->tensors.peak_bytes > listed)
        composition_add(c, COMPOSITION_other_tensors, NULL, view->tensors.peak_bytes - listed);
}

/* A report taken while the program runs with no walk of the heap made for
 * it (a periodic snapshot; a report on request the main thread did not
 * answer): the GPU memory now, its tensors by the role each site's call
 * implies, PyTorch's cache (its segments' bytes no tensor uses) and the
 * rest outside its allocator; the parts sum to the live GPU bytes. A job
 * killed without warning keeps its last snapshot's. */
static void gather_live_composition(report_view_t *view)
{
    composition_t *c = &view->live_composition;
    if (view->holder_set != NULL || view->tensors.live_bytes == 0)
        return;
    c->inferred = 1;
    uint64_t tensors = 0, reserve = 0;
    for (size_t i = 0; i < view->sites.count; i++) {
        const report_site_t *s = &view->sites.sites[i];
        if (s->stats.kind == REPORT_KIND_tensor && s->stats.live_bytes > 0 && !s->aside) {
            composition_add(c, site_role(view, s->id), NULL, s->stats.live_bytes);
            tensors += s->stats.live_bytes;
        } else if (s->stats.kind != REPORT_KIND_tensor) {
            reserve += s->stats.reserve_bytes < s->stats.live_bytes ? s->stats.reserve_bytes
                                                                   : s->stats.live_bytes;
        }
    }
    uint64_t gpu = view->totals.live_bytes;
    uint64_t outside = gpu > reserve ? gpu - reserve : 0;
    composition_add(c, COMPOSITION_outside_torch, NULL, outside);
    if (reserve > tensors)
        composition_add(c, COMPOSITION_torch_cache, NULL, reserve - tensors);
}

int report_view_gather(report_view_t *view, report_moment_t moment, int signal)
{
    memset(view, 0, sizeof *view);
    view->moment = moment;
    view->signal = signal;
    view->now_ns = clock_coarse_ns();
    gather_run(&view->run);
    gather_totals(view, moment);
    site_context_t ctx = { .followed = (torch_events_followed() || pools_followed())
                                       && view->tensors.allocations > 0 };
    ctx.allocations = tracker_allocation_count();
    uint32_t high = tracker_site_count();
    /* Where Python finished, its moment is the growth rule's last sample:
     * its shutdown then freed what the script kept. */
    ctx.held_by_site = gather_held(view, high);
    ctx.last_ns = ctx.held_by_site != NULL ? view->held_time_ns : view->now_ns;
    view->growth_judged = growth_run(ctx.last_ns, ctx.allocations, &view->growth_samples);
    /* What the program's names held as Python finished and its shutdown
     * did not free (PyTorch leaves such tensors, a model's parameters among
     * them, live at exit): still reachable, not leaked. */
    if (ctx.held_by_site != NULL && moment != REPORT_SNAPSHOT && moment != REPORT_ON_REQUEST)
        reachable_by_site(view->holder_set, high, &ctx.reach_bytes, &ctx.reach_count);
    report_site_t *all = malloc(sizeof *all * ((size_t)high + 1));
    int rc = -1;
    if (all != NULL) {
        size_t count = 0;
        for (uint32_t id = 0; id <= high; id++) {
            all[count].id = id;
            if (tracker_site(id, &all[count].stats) != 0 || !is_used(&all[count]))
                continue;
            judge_site(view, &ctx, &all[count]);
            count++;
        }
        rc = select_lists(view, all, count);
        free(all);
        settle_lists(view, ctx.reach_bytes != NULL);
        gather_peak_composition(view);
        if (moment == REPORT_SNAPSHOT || moment == REPORT_ON_REQUEST)
            gather_live_composition(view);
    }
    /* Each composition names its cache by the frameworks seen. */
    view->holders.composition.frameworks = view->run.frameworks;
    view->oom_search.composition.frameworks = view->run.frameworks;
    view->peak_composition.frameworks = view->run.frameworks;
    view->live_composition.frameworks = view->run.frameworks;
    free(ctx.held_by_site);
    free(ctx.reach_bytes);
    free(ctx.reach_count);
    if (rc == 0) {
        find_helpers(view, &view->leaks, 0);
        find_helpers(view, &view->held, 1);
    }
    return rc;
}

void report_view_release(report_view_t *view)
{
    free(view->leaks.sites);
    free(view->kept.sites);
    free(view->reachable.sites);
    free(view->teardown.sites);
    free(view->failures.sites);
    free(view->sites.sites);
    free(view->peak.sites);
    free(view->growth.sites);
    free(view->timeline);
    free(view->marks);
    free(view->oom.sites);
    free(view->callers);
    free(view->held.sites);
    search_release(view->holder_ticket);
    search_release(view->oom_ticket);
    view->holder_ticket = view->oom_ticket = NULL;
}

/* One report at a time: the reporter thread's snapshots, a dump on request,
 * a fatal signal and the exit all write the same file. */

const stack_record_t *report_view_stack(uint32_t site)
{
    return stacks_get(site);
}

int report_view_native_frames(uint64_t address, symbolized_frame_t *out, int max)
{
    return symbolize_address((uintptr_t)address, out, max);
}

int report_view_python_frame(uint64_t packed, const char **function, const char **file, int *line)
{
    return python_describe(packed, function, file, line);
}

void report_view_origin(uint32_t site, int kind, origin_site_t *out)
{
    origin_site(site, kind, out);
}

int report_view_origin_frames(uint32_t site, symbolized_frame_t *out, int max)
{
    return origin_site_frames(site, out, max);
}

const origin_layout_t *report_view_layout(void)
{
    return origin_layout();
}

int report_view_site_kind(uint32_t site)
{
    return tracker_site_kind(site);
}

int report_view_site_framework(uint32_t site, int kind)
{
    if (kind != REPORT_KIND_tensor)
        return -1;
    int framework = pools_site_framework(site);
    return framework >= 0 ? framework : REPORT_FRAMEWORK_torch;
}

const char *report_view_site_phrase(uint32_t site, int kind)
{
    return report_site_phrase(kind, report_view_site_framework(site, kind));
}

size_t report_view_holders(const holder_set_t *set, uint32_t site, const holder_t **out)
{
    return holder_set_site(set, site, out);
}
