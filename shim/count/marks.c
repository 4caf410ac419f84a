#include "marks.h"
#include "bounded.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t marks_lock = PTHREAD_MUTEX_INITIALIZER;
static mark_t *marks;          /* MARKS_MAX, allocated at the first mark */
static uint64_t mark_count;    /* every mark made, kept or not */

/* What the sites held at each of the last MARKS_REMEMBERED marks, by id
 * modulo MARKS_REMEMBERED; sorted by site, as tracker_live_sites gives. */
static struct {
    uint64_t id;
    tracker_site_bytes_t *sites;
    size_t count;
} remembered[MARKS_REMEMBERED];

uint64_t marks_add(const char *name, uint64_t now_ns, int nothing_live)
{
    size_t count = 0;
    /* Under the lock, so that two threads marking at once cannot pair one
     * id with the other's moment. */
    pthread_mutex_lock(&marks_lock);
    tracker_site_bytes_t *sites = nothing_live ? NULL : tracker_live_sites(&count);
    if (marks == NULL)
        marks = calloc(MARKS_MAX, sizeof *marks);
    uint64_t id = ++mark_count;
    if (marks != NULL && id <= MARKS_MAX) {
        marks[id - 1].time_ns = now_ns;
        strncpy(marks[id - 1].name, name != NULL ? name : "", sizeof marks[id - 1].name - 1);
    }
    size_t slot = id % MARKS_REMEMBERED;
    free(remembered[slot].sites);
    remembered[slot].id = id;
    remembered[slot].sites = sites;
    remembered[slot].count = count;
    pthread_mutex_unlock(&marks_lock);
    return id;
}

static int by_gain(const void *a, const void *b)
{
    const mark_gain_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->site < y->site ? -1 : x->site > y->site;
}

mark_gain_t *marks_gains_since(uint64_t id, size_t *count)
{
    *count = 0;
    size_t now_count;
    tracker_site_bytes_t *now = tracker_live_sites(&now_count);
    mark_gain_t *gains = now_count ? malloc(now_count * sizeof *gains) : NULL;
    pthread_mutex_lock(&marks_lock);
    size_t slot = id % MARKS_REMEMBERED;
    int known = id != 0 && remembered[slot].id == id;
    const tracker_site_bytes_t *then = known ? remembered[slot].sites : NULL;
    size_t then_count = known ? remembered[slot].count : 0, j = 0;
    for (size_t i = 0; known && gains != NULL && i < now_count; i++) {
        /* Both lists are sorted by site: one merge. */
        while (j < then_count && then[j].site < now[i].site)
            j++;
        uint64_t before = j < then_count && then[j].site == now[i].site ? then[j].bytes : 0;
        if (now[i].bytes > before)
            gains[(*count)++] = (mark_gain_t){ now[i].site, now[i].bytes - before };
    }
    pthread_mutex_unlock(&marks_lock);
    free(now);
    if (*count == 0) {
        free(gains);
        return NULL;
    }
    qsort(gains, *count, sizeof *gains, by_gain);
    return gains;
}

mark_t *marks_copy(size_t *count, uint64_t *dropped)
{
    *count = 0;
    *dropped = 0;
    /* A report's wait is bounded: a thread a signal stopped inside
     * gpuleak_mark may hold the lock for good; the marks are left out. */
    if (!bounded_mutex_lock(&marks_lock))
        return NULL;
    size_t kept = mark_count < MARKS_MAX ? (size_t)mark_count : MARKS_MAX;
    mark_t *out = kept && marks != NULL ? malloc(kept * sizeof *out) : NULL;
    if (out != NULL)
        memcpy(out, marks, kept * sizeof *out);
    *count = out != NULL ? kept : 0;
    *dropped = mark_count - *count;
    pthread_mutex_unlock(&marks_lock);
    return out;
}
