#define _GNU_SOURCE
#include "report.h"
#include "config.h"
#include "log.h"
#include "origin.h"
#include "patience.h"
#include "python.h"
#include "stacks.h"
#include "torch_trace.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* A rank variable's value when it is 1 to 9 decimal digits, else NULL,
 * naming a set but refused value once. */
static const char *rank_from(const char *name, _Atomic int *warned)
{
    const char *value = config_getenv(name);
    if (value == NULL || *value == '\0')
        return NULL;
    size_t digits = strspn(value, "0123456789");
    if (digits > 0 && digits <= 9 && value[digits] == '\0')
        return value;
    if (!atomic_exchange(warned, 1))
        log_line("%s=%s is not a whole number; it is not used as the rank", name, value);
    return NULL;
}

const char *report_rank(void)
{
    static _Atomic int warned_rank, warned_local;
    const char *rank = rank_from("RANK", &warned_rank);
    return rank != NULL ? rank : rank_from("LOCAL_RANK", &warned_local);
}

int report_expand_path(const char *pattern, char *out, size_t size)
{
    size_t used = 0;
    for (const char *p = pattern; *p != '\0'; p++) {
        char piece[256];
        const char *text = piece;
        if (*p != '%' || p[1] == '\0') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            p++;
            if (*p == 'p') {
                snprintf(piece, sizeof piece, "%d", (int)getpid());
            } else if (*p == 'h') {
                if (gethostname(piece, sizeof piece) != 0)
                    snprintf(piece, sizeof piece, "unknown-host");
                piece[sizeof piece - 1] = '\0';
            } else if (*p == 'r') {
                const char *rank = report_rank();
                text = rank != NULL ? rank : "0";
            } else if (*p == '%') {
                text = "%";
            } else {
                piece[0] = '%';
                piece[1] = *p;
                piece[2] = '\0';
            }
        }
        size_t len = strlen(text);
        if (used + len + 1 > size)
            return -1;
        memcpy(out + used, text, len);
        used += len;
    }
    out[used] = '\0';
    return 0;
}

int report_site_frames(uint32_t site, symbolized_frame_t *out, int max)
{
    const stack_record_t *stack = stacks_get(site);
    if (stack == NULL)
        return 0;
    int n = 0;
    for (int i = 0; i < stack->native_count && n < max; i++)
        n += symbolize_address((uintptr_t)stack->frames[i], out + n, max - n);
    return n;
}

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

static int is_leak(const report_site_t *s) { return s->stats.live_allocations > 0 && !s->aside; }
static int is_teardown(const report_site_t *s) { return s->stats.teardown_allocations > 0; }
static int is_failure(const report_site_t *s) { return s->stats.failures > 0; }
static int is_used(const report_site_t *s) { return s->stats.allocations > 0 || s->stats.failures > 0; }
static int is_at_peak(const report_site_t *s) { return s->stats.at_peak_bytes > 0 && !s->aside; }
static int is_growing(const report_site_t *s) { return s->growth.grew && !s->aside; }
static int is_held(const report_site_t *s) { return s->held_bytes > 0 && !s->aside; }

/* Sets PyTorch's cache aside where its tensors are followed, so that its
 * memory is counted once, by the tensors inside it: a driver site whose
 * owner is the caching allocator is set aside whole; otherwise the segments
 * PyTorch's events named (a frameless site with stacks off holds them
 * beside the program's own allocations) leave the site's live counts. Where
 * the tensors' frees stopped being seen, tensor sites are set aside, as
 * what they hold is no longer known. */
static void set_aside_cache(report_view_t *view, report_site_t *site, int followed)
{
    site_stats_t *st = &site->stats;
    if (st->kind == KIND_TENSOR) {
        site->aside = !followed;
        return;
    }
    if (!followed || (st->kind != KIND_DEVICE && st->kind != KIND_VMM))
        return;
    origin_site_t o;
    origin_site(site->id, st->kind, &o);
    if (o.owner != NULL && strcmp(o.owner, ORIGIN_OWNER_CACHING) == 0) {
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

/* For each site of kept (the leaks, or what was held when Python finished:
 * kept_is_held)
 * whose origin line is also the origin of a site whose memory was freed (a
 * helper the user calls for both), how many of
 * its callers in the user's code the views show: down to the first caller
 * no freed site with that origin shares, so a leaking and a freed path read
 * apart. Among the largest HELPER_SITES of each; leaves view->callers NULL
 * when none needs it or memory is short. */
static void find_helpers(report_view_t *view, const report_list_t *kept, int kept_is_held)
{
    static origin_frame_t mine[HELPER_CALLERS], theirs[HELPER_CALLERS];
    static struct { const report_site_t *site; origin_frame_t origin; } freed[HELPER_SITES];
    size_t freed_n = 0;
    for (size_t j = 0; j < view->sites.count && freed_n < HELPER_SITES; j++) {
        const report_site_t *other = &view->sites.sites[j];
        /* Freed: nothing live at exit (for the leaks), or nothing held when
         * Python finished (for what was held then). */
        int kept_too = kept_is_held ? other->held_bytes != 0 : other->stats.live_allocations != 0;
        if (kept_too || other->stats.allocations == 0)
            continue;
        origin_site_t oo;
        origin_site(other->id, other->stats.kind, &oo);
        if (oo.found)
            freed[freed_n++] = (typeof(freed[0])){ other, oo.frame };
    }
    for (size_t i = 0; i < kept->count && i < HELPER_SITES && freed_n > 0; i++) {
        const report_site_t *leak = &kept->sites[i];
        origin_site_t lo;
        origin_site(leak->id, leak->stats.kind, &lo);
        if (!lo.found)
            continue;
        int mine_n = -1, depth = 0;
        for (size_t j = 0; j < freed_n; j++) {
            /* The same kind: a helper's freed tensors, not the segment its
             * first call made the allocator take. */
            if (freed[j].site->id == leak->id || freed[j].site->stats.kind != leak->stats.kind
                || freed[j].site->aside || !origin_same_frame(&freed[j].origin, &lo.frame))
                continue;
            if (mine_n < 0)
                mine_n = origin_callers(leak->id, mine, HELPER_CALLERS);
            const report_site_t *other = freed[j].site;
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

int report_origin_callers(const report_view_t *view, uint32_t site, origin_frame_t *out)
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

/* Gathers every site's counters and the sections of the report: every
 * read that takes a lock is made here, so that the writers know how many
 * locks were given up. Call between origin_init and origin_end (owners
 * decide the reserve). */
static int gather(report_view_t *view)
{
    memset(view, 0, sizeof *view);
    view->now_ns = tracker_now_ns();
    tracker_totals(&view->totals);
    for (int k = 0; k < KIND_COUNT; k++)
        tracker_kind_totals((alloc_kind_t)k, &view->kinds[k]);
    view->tensors = view->kinds[KIND_TENSOR];
    for (int d = 0; d < TRACKER_MAX_DEVICES; d++)
        if (tracker_device_totals(d, &view->devices[d]) == 0)
            view->devices_seen |= 1ull << d;
    view->shim_bytes = tracker_memory_bytes() + stacks_memory_bytes();
    view->peak_is_tensors = tracker_peak_is_tensors() && view->tensors.allocations > 0;
    view->has_oom = tracker_oom_copy(&view->oom);
    if (view->has_oom)
        view->oom_holder_count = oom_holders(&view->oom, view->oom_holders);
    finish_search(&view->holders);
    int followed = torch_trace_followed() && view->tensors.allocations > 0;
    view->timeline = malloc(sizeof *view->timeline * TIMELINE_POINTS);
    if (view->timeline != NULL)
        view->timeline_count = timeline_points(view->now_ns, view->timeline, TIMELINE_POINTS);
    view->marks = marks_copy(&view->mark_count, &view->marks_dropped);
    view->timeline_interval_ns = timeline_interval_ns();
    uint64_t allocations = tracker_allocation_count();
    uint32_t high = tracker_site_count();
    /* Where Python finished, its moment is the growth rule's last sample:
     * its shutdown then freed what the script kept. */
    tracker_held_t held;
    int has_held = tracker_held_copy(&held);
    /* A program that embeds Python and goes on allocating after finalizing
     * it was not at its end then: the moment is not its finish. Teardown
     * itself frees; a few allocations are its destructors' own. */
    if (has_held && allocations > held.allocations + HELD_LATER_ALLOCATIONS)
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
    report_site_t *all = malloc(sizeof *all * ((size_t)high + 1));
    if (all == NULL) {
        free(held_by_site);
        return -1;
    }
    size_t count = 0;
    for (uint32_t id = 0; id <= high; id++) {
        report_site_t *site = &all[count];
        site->id = id;
        if (tracker_site(id, &site->stats) != 0 || !is_used(site))
            continue;
        site->aside = 0;
        set_aside_cache(view, site, followed);
        site->held_bytes = held_by_site != NULL ? held_by_site[id] : 0;
        site->holder_count = finish_holders(id, &site->holders);
        uint64_t last_ns = held_by_site != NULL ? view->held_time_ns : view->now_ns;
        uint64_t last_bytes = held_by_site != NULL ? site->held_bytes : site->stats.live_bytes;
        if (site->stats.kind == KIND_HOST
            || growth_site(id, last_ns, last_bytes, allocations, &site->growth) != 0)
            memset(&site->growth, 0, sizeof site->growth);
        count++;
    }
    int rc = select_sites(all, count, is_leak, by_live_bytes, &view->leaks)
           | select_sites(all, count, is_teardown, by_teardown_bytes, &view->teardown)
           | select_sites(all, count, is_failure, by_failed_bytes, &view->failures)
           | select_sites(all, count, is_used, by_peak_bytes, &view->sites)
           | select_sites(all, count, is_at_peak, by_at_peak_bytes, &view->peak)
           | select_sites(all, count, is_growing, by_bytes_gained, &view->growth)
           | select_sites(all, count, is_held, by_held_bytes, &view->held);
    free(all);
    for (size_t i = 0; i < view->leaks.count; i++) {
        view->leaked_bytes += view->leaks.sites[i].stats.live_bytes;
        view->leaked_allocations += view->leaks.sites[i].stats.live_allocations;
    }
    free(held_by_site);
    view->held_sites = view->held.count;
    for (size_t i = 0; i < view->held.count; i++)
        view->held_bytes += view->held.sites[i].held_bytes;
    if (view->held.count > HELD_SITES)
        view->held.count = HELD_SITES;
    if (rc == 0) {
        find_helpers(view, &view->leaks, 0);
        find_helpers(view, &view->held, 1);
    }
    return rc;
}

static void release(report_view_t *view)
{
    free(view->leaks.sites);
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
}

/* One report at a time: the reporter thread's snapshots, a dump on request,
 * a fatal signal and the exit all write the same file. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static int primary_failed;       /* warned once; the fallback is used directly */
static char fallback[4096];      /* the fallback name this process took, or "" */

#define FALLBACK_NAMES 16

/* Writes the report into the temporary directory, which every process can
 * write: to the name this process took before, else to a new name it takes
 * without replacing anything, since in a shared directory the first choice
 * (gpuleak-PID.json) may be another user's file, made there to block or to
 * catch the report; then names with an unguessable suffix are tried.
 * Returns fallback (the name written), or NULL with errno set. */
static const char *write_fallback(const report_view_t *view)
{
    if (fallback[0] != '\0' && report_json_write(fallback, view, REPORT_REPLACE_REPORT) == 0)
        return fallback;
    const char *dir = config_getenv("TMPDIR");
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    for (int i = 0; i < FALLBACK_NAMES; i++) {
        uint32_t noise = 0;
        if (i > 0 && getrandom(&noise, sizeof noise, GRND_NONBLOCK) != (ssize_t)sizeof noise)
            noise = (uint32_t)i;
        int n = i == 0 ? snprintf(fallback, sizeof fallback, "%s/gpuleak-%d.json", dir, (int)getpid())
                       : snprintf(fallback, sizeof fallback, "%s/gpuleak-%d-%08x.json", dir,
                                  (int)getpid(), noise);
        if (n < 0 || (size_t)n >= sizeof fallback) {
            errno = ENAMETOOLONG;
            break;
        }
        if (report_json_write(fallback, view, REPORT_CREATE_ONLY) == 0)
            return fallback;
        if (errno != EEXIST)
            break;
    }
    fallback[0] = '\0';
    return NULL;
}

/* A report larger than the file size limit (ulimit -f) fits in no path:
 * one warning in the run says so, and no fallback is tried. Returns 1 when
 * the write that set errno failed so. */
static int too_large(const char *path)
{
    static int warned;
    if (errno != EFBIG)
        return 0;
    if (!warned)
        log_line("cannot write the report to %s: it passes the file size limit (ulimit -f)",
                 path);
    warned = 1;
    return 1;
}

/* Writes the report to its path or, when that fails, to the fallback, and
 * says so in one line the first time (and once more should the fallback
 * fail later). Returns the path written, or NULL. */
static const char *write_somewhere(const report_view_t *view, char *path, size_t size)
{
    static int fallback_warned;
    const char *why = NULL;
    if (!primary_failed) {
        int expanded = report_expand_path(config.output, path, size) == 0;
        if (expanded && report_json_write(path, view, REPORT_REPLACE_REPORT) == 0)
            return path;
        if (expanded && too_large(path))
            return NULL;
        why = !expanded ? "too long once expanded"
            : errno == EEXIST ? "it exists and is not a gpuleak report" : strerror(errno);
        if (!expanded)
            snprintf(path, size, "%s", config.output);
        primary_failed = 1;
    }
    const char *written = write_fallback(view);
    if (written == NULL && too_large("the temporary directory"))
        return NULL;
    if (why != NULL && written != NULL) {
        log_line("cannot write the report to %s (%s); writing to fallback %s", path, why, written);
    } else if (written == NULL && (why != NULL || !fallback_warned)) {
        const char *fallback_why = strerror(errno);
        if (why != NULL)
            log_line("cannot write the report to %s (%s), nor to a fallback in the temporary "
                     "directory (%s)", path, why, fallback_why);
        else
            log_line("cannot write the report to a fallback in the temporary directory either (%s)",
                     fallback_why);
        fallback_warned = 1;
    }
    return written;
}

int report_python_origin(uint32_t site, char *out, size_t size)
{
    const stack_record_t *stack = stacks_get(site);
    if (stack == NULL || size == 0)
        return -1;
    origin_frame_t frames[STACKS_MAX_FRAMES];
    int n = 0;
    for (int i = 0; i < stack->python_count; i++) {
        origin_frame_t *fr = &frames[n];
        if (python_describe(stack->frames[stack->native_count + i], &fr->function, &fr->file,
                            &fr->line) != 0)
            continue;
        fr->module = NULL;
        fr->is_python = 1;
        n++;
    }
    /* The rules and their cache are the report's: one user at a time. */
    pthread_mutex_lock(&write_lock);
    origin_init();
    int o = origin_find(frames, n);
    if (o < 0)
        o = origin_find_via(frames, n);
    if (o >= 0)
        snprintf(out, size, "%s:%d in %s", frames[o].file ? frames[o].file : "?", frames[o].line,
                 frames[o].function ? frames[o].function : "?");
    origin_end();
    pthread_mutex_unlock(&write_lock);
    return o >= 0 ? 0 : -1;
}

/* The final report's progress: a signal's handler and the exit wait for
 * it, and nothing replaces it once begun. */
enum { FINAL_NONE, FINAL_WRITING, FINAL_DONE };
static _Atomic int final_state;

int report_final_wait(unsigned ms)
{
    struct timespec tick = { 0, 1000 * 1000 };
    for (unsigned waited = 0; atomic_load(&final_state) != FINAL_DONE; waited++) {
        if (waited >= ms)
            return 0;
        nanosleep(&tick, NULL);
    }
    return 1;
}

static __thread int quiet_driver __attribute__((tls_model("initial-exec")));

int report_may_call_driver(void)
{
    return !quiet_driver;
}

/* Takes write_lock within REPORT_WAIT_S: the report before this one is
 * written by a running thread, but one stalled for good (in malloc, say,
 * on an arena a thread a signal interrupted holds) must not hang the exit. */
static int lock_writer(void)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += REPORT_WAIT_S;
    if (pthread_mutex_clocklock(&write_lock, CLOCK_MONOTONIC, &until) == 0)
        return 1;
    log_line("the report before this one did not finish in %d s; this one is not written",
             REPORT_WAIT_S);
    return 0;
}

/* Writes the report and its lines on stderr. A write past the file size
 * limit (ulimit -f) raises SIGXFSZ on its thread, whose default action
 * kills the program: it is blocked meanwhile (the write fails with EFBIG
 * instead), and one the report raised is taken back before it is
 * unblocked (one pending before is left to the program). */
/* The summary on stderr. A thread a signal interrupted may hold stderr's
 * stdio lock for good (it was printing): for its report the summary is
 * made in memory and written to descriptor 2 in one call, without that
 * lock (or not at all when memory is out). */
static void print_summary(const report_view_t *view, const char *written, int interrupted)
{
    if (!interrupted) {
        report_summary_print(stderr, view, written);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return;
    report_summary_print(f, view, written);
    if (fclose(f) == 0) {
        for (size_t done = 0; done < len;) {
            ssize_t n = write(STDERR_FILENO, text + done, len - done);
            if (n <= 0)
                break;
            done += (size_t)n;
        }
    }
    free(text);
}

static void write_locked(report_moment_t moment, int signal, int interrupted)
{
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
    report_view_t view;
    symbolize_begin();
    origin_init();
    patience_begin();
    int gathered = gather(&view) == 0;
    view.locks_skipped = patience_end();
    if (!gathered) {
        log_line("no memory to gather the report; none written");
    } else {
        view.moment = moment;
        view.signal = signal;
        char path[4096];
        const char *written = write_somewhere(&view, path, sizeof path);
        if (config.summary && (moment == REPORT_AT_EXIT || moment == REPORT_ON_SIGNAL))
            print_summary(&view, written, interrupted);
        else if (moment == REPORT_ON_REQUEST && written != NULL)
            log_line("report written to %s (on request; the program runs on)", written);
    }
    origin_end();
    symbolize_end();
    release(&view);
    if (!was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ))
        sigtimedwait(&xfsz, NULL, &(struct timespec){ 0, 0 });
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void report_write(report_moment_t moment, int signal, int interrupted)
{
    int final = moment == REPORT_AT_EXIT || moment == REPORT_ON_SIGNAL;
    int none = FINAL_NONE;
    if (final ? !atomic_compare_exchange_strong(&final_state, &none, FINAL_WRITING)
              : atomic_load(&final_state) != FINAL_NONE)
        return;
    if (lock_writer()) {
        quiet_driver = interrupted;
        write_locked(moment, signal, interrupted);
        quiet_driver = 0;
        pthread_mutex_unlock(&write_lock);
    }
    if (final)
        atomic_store(&final_state, FINAL_DONE);
}
