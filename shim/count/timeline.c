#include "timeline.h"
#include "bounded.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static timeline_point_t points[TIMELINE_POINTS];
static size_t point_count;
/* Written under timeline_lock; read without it by timeline_interval_ns,
 * which a report calls (bounded.h: a report never waits on this lock for
 * what one load can tell). */
static _Atomic uint64_t interval_ns = 1000000;
static _Atomic uint64_t next_due_ns = UINT64_MAX; /* UINT64_MAX until init */
static _Atomic uint64_t interval_max;             /* highest live since the last point */
static pthread_mutex_t timeline_lock = PTHREAD_MUTEX_INITIALIZER;
static timeline_sampler_t sample_rows;

void timeline_init(uint64_t start_ns, uint64_t first_interval_ns, timeline_sampler_t sampler)
{
    pthread_mutex_lock(&timeline_lock);
    point_count = 0;
    atomic_store_explicit(&interval_ns, first_interval_ns ? first_interval_ns : 1000000,
                          memory_order_relaxed);
    sample_rows = sampler;
    atomic_store(&interval_max, 0);
    atomic_store(&next_due_ns, start_ns);
    pthread_mutex_unlock(&timeline_lock);
}

/* Halves the points: pairs merge into the later point, keeping the higher
 * max, so no high water mark is lost. Caller holds timeline_lock. */
static void decimate(void)
{
    size_t kept = 0;
    for (size_t i = 0; i + 1 < point_count; i += 2) {
        timeline_point_t merged = points[i + 1];
        if (points[i].max_bytes > merged.max_bytes)
            merged.max_bytes = points[i].max_bytes;
        points[kept++] = merged;
    }
    if (point_count % 2)
        points[kept++] = points[point_count - 1];
    point_count = kept;
    atomic_store_explicit(&interval_ns, atomic_load_explicit(&interval_ns, memory_order_relaxed) * 2,
                          memory_order_relaxed);
}

/* Appends a point at now_ns; caller holds timeline_lock. */
static void take_point(uint64_t now_ns, uint64_t live)
{
    if (point_count == TIMELINE_POINTS)
        decimate();
    timeline_point_t *p = &points[point_count++];
    memset(p, 0, sizeof *p);
    p->time_ns = now_ns;
    p->bytes = live;
    if (sample_rows != NULL)
        sample_rows(p);
    uint64_t peak = atomic_exchange(&interval_max, p->bytes);
    p->max_bytes = peak > p->bytes ? peak : p->bytes;
}

/* Takes the point that is due, unless another thread is taking it. Out of
 * line, so that timeline_note, called at every event, stays a few loads. */
static __attribute__((noinline)) void take_due_point(uint64_t now_ns, uint64_t live)
{
    if (pthread_mutex_trylock(&timeline_lock) != 0)
        return;
    if (now_ns >= atomic_load(&next_due_ns)) {
        take_point(now_ns, live);
        atomic_store(&next_due_ns,
                     now_ns + atomic_load_explicit(&interval_ns, memory_order_relaxed));
    }
    pthread_mutex_unlock(&timeline_lock);
}

void timeline_note(uint64_t now_ns, uint64_t live)
{
    uint64_t seen = atomic_load_explicit(&interval_max, memory_order_relaxed);
    while (live > seen
           && !atomic_compare_exchange_weak_explicit(&interval_max, &seen, live,
                                                     memory_order_relaxed, memory_order_relaxed)) {
    }
    if (now_ns >= atomic_load_explicit(&next_due_ns, memory_order_relaxed))
        take_due_point(now_ns, live);
}

uint64_t timeline_interval_high(void)
{
    return atomic_load_explicit(&interval_max, memory_order_relaxed);
}

size_t timeline_points(uint64_t now_ns, timeline_point_t *out, size_t max)
{
    if (!bounded_mutex_lock(&timeline_lock))
        return 0;
    if (atomic_load(&next_due_ns) != UINT64_MAX)
        take_point(now_ns, point_count ? points[point_count - 1].bytes : 0);
    size_t n = point_count < max ? point_count : max;
    memcpy(out, points, sizeof *out * n);
    pthread_mutex_unlock(&timeline_lock);
    return n;
}

uint64_t timeline_interval_ns(void)
{
    return atomic_load_explicit(&interval_ns, memory_order_relaxed);
}
