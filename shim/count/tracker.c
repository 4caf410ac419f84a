#define _GNU_SOURCE
#include "tracker.h"
#include "clock.h"
#include "growth.h"
#include "live.h"
#include "bounded.h"
#include "report_format.h"
#include "stacks.h"
#include "counts.h"
#include "timeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SHARDS 256               /* per key space */
#define SHARD_REGION_SHIFT 12    /* addresses share a shard by 4 KiB region */
#define RECORDS_PER_CHUNK 128
#define FIRST_BUCKETS 64

/* A live allocation in its shard's table: a chained hash of single links.
 * 40 bytes a record plus 8 to 16 of bucket, where a uthash handle alone was
 * 56: the table is most of the shim's memory when a program holds millions
 * of allocations. */
typedef struct live_alloc {
    struct live_alloc *next;  /* in its bucket's chain, or in the spares */
    tracker_record_t r;
} live_alloc_t;

typedef struct shard {
    _Atomic int lock;         /* spin.h: guards a lookup and a pointer swap or two */
    live_alloc_t **buckets;   /* bucket_count chains, a power of two */
    size_t bucket_count;
    size_t live;              /* records in the table */
    live_alloc_t *spare;      /* recycled records */
} __attribute__((aligned(64))) shard_t;  /* a line each: threads on neighbouring shards */

/* A kind's, a device's or the GPU's row. Its allocations, frees, bytes
 * allocated, live bytes and peak are live.h's, in row number row; what is
 * here changes only on rare events. */
typedef struct atomic_totals {
    _Atomic uint64_t failures;
    _Atomic uint64_t teardown_bytes, teardown_allocations;
    unsigned row;
} __attribute__((aligned(64))) atomic_totals_t;  /* a line each: any thread may write a row */

/* A site's shared counters, for what is rare. Its allocations, frees,
 * bytes allocated, live bytes and peaks are live.h's (row LIVE_SITE(id)).
 * Kind and device, read at every allocation, come first; aligned, so that
 * two sites never share a line two threads write. */
typedef struct atomic_site {
    _Atomic int kind, device;
    _Atomic uint64_t failures, failed_bytes, teardown_bytes, teardown_allocations;
    _Atomic int last_failure, teardown_reason;
    _Atomic uint64_t reserve_bytes, reserve_allocations;
} __attribute__((aligned(64))) atomic_site_t;

static shard_t shards[SPACE_COUNT][SHARDS];
/* The bytes of every shard's records (live or spare) and buckets, added to
 * as they grow (every 128 records, or a doubling): read without a shard's
 * lock, which a report must not wait for (bounded.h). */
static _Atomic size_t table_bytes;
static atomic_site_t *sites;          /* indexed by stack id, 0 = no stack */
static _Atomic uint32_t site_high;
static atomic_totals_t kind_totals[REPORT_KIND_COUNT];
static atomic_totals_t device_totals[TRACKER_MAX_DEVICES];
static _Atomic uint64_t devices_seen;  /* bit per device */
static atomic_totals_t gpu_totals;     /* every kind but host */

/* Rows 0 to REPORT_KIND_COUNT - 1 are the kinds', then the devices', then the
 * GPU's: numbers an event computes, where loading them from the totals'
 * rows took a line each. */
#define KIND_ROW(kind) ((uint32_t)(kind))
#define DEVICE_ROW(device) ((uint32_t)(REPORT_KIND_COUNT + (device)))
#define GPU_ROW (REPORT_KIND_COUNT + TRACKER_MAX_DEVICES)
static _Atomic uint64_t unknown_frees, map_count, unmap_count;

_Static_assert(GPU_ROW < LIVE_ROWS, "a live row per kind and device, and the GPU's");
_Static_assert(STACKS_CAPACITY + 1 <= LIVE_SITES, "a live row per site id");

/* The first out-of-memory failure, with what was live then, by site. */
static pthread_mutex_t oom_lock = PTHREAD_MUTEX_INITIALIZER;
static tracker_oom_t oom;

static const key_space_t kind_space[REPORT_KIND_COUNT] = {
    SPACE_DEVICE, SPACE_DEVICE, SPACE_VMM, SPACE_DEVICE, SPACE_HOST, SPACE_ARRAY, SPACE_TENSOR,
};

static uint64_t site_live_bytes(uint32_t site);

const char *tracker_kind_name(alloc_kind_t kind)
{
    return report_kind_name((int)kind);
}

int tracker_init(void (*sampler)(struct timeline_point *point))
{
    for (int k = 0; k < REPORT_KIND_COUNT; k++)
        kind_totals[k].row = KIND_ROW(k);
    for (int d = 0; d < TRACKER_MAX_DEVICES; d++)
        device_totals[d].row = DEVICE_ROW(d);
    gpu_totals.row = GPU_ROW;
    if (live_init(GPU_ROW) != 0)
        return -1;
    void *p = mmap(NULL, sizeof *sites * (STACKS_CAPACITY + 1), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    sites = p;
    uint64_t now = clock_coarse_ns();
    timeline_init(now, 1000000, sampler);
    growth_init(now, 1000000, site_live_bytes);
    return 0;
}

/* The bits of a key below its shard's region: addresses share a shard by
 * region; handles (VMM allocations, arrays) are numbers or pointers to the
 * driver's objects, which a region would crowd onto one shard. */
static const unsigned region_shift[SPACE_COUNT] = {
    [SPACE_DEVICE] = SHARD_REGION_SHIFT, [SPACE_HOST] = SHARD_REGION_SHIFT,
    [SPACE_VMM] = 0, [SPACE_ARRAY] = 0, [SPACE_TENSOR] = SHARD_REGION_SHIFT,
};

/* A key's shard: for addresses, one per 4 KiB region, the region's number
 * mixed so that regions spread evenly over the shards. By region, not by
 * address: a thread's consecutive allocations mostly fall in one region (a
 * pool carves them side by side, or hands the one just freed back), so the
 * shard's lock, buckets and spare records stay in that core's cache where
 * a shard per address made each event take those lines from whichever
 * core last touched them. The mixing is two rounds of xor-shift and
 * multiply: a single multiply (as before) sent the regions of threads
 * whose addresses differ only in high bits through the same shards in
 * step. */
static shard_t *shard_of(key_space_t space, uint64_t key)
{
    uint64_t h = key >> region_shift[space];
    h = (h ^ (h >> 31)) * 0x7fb5d329728ea185ull;
    h = (h ^ (h >> 27)) * 0x81dadef4bc2dd44dull;
    return &shards[space][(h ^ (h >> 33)) & (SHARDS - 1)];
}

static uint64_t site_live_bytes(uint32_t site)
{
    return live_bytes(LIVE_SITE(site));
}

static atomic_site_t *site_of(uint32_t site)
{
    if (site > STACKS_CAPACITY)
        site = 0;
    uint32_t high = atomic_load_explicit(&site_high, memory_order_relaxed);
    while (site > high
           && !atomic_compare_exchange_weak(&site_high, &high, site)) {
    }
    return &sites[site];
}

static atomic_totals_t *device_row(int device)
{
    if (device < 0 || device >= TRACKER_MAX_DEVICES)
        return NULL;
    uint64_t bit = 1ull << device;
    if (!(atomic_load_explicit(&devices_seen, memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(&devices_seen, bit, memory_order_relaxed);
    return &device_totals[device];
}

/* Lets the timeline see the GPU's live bytes after an event. This thread's
 * estimate misses the other threads' shares, so before it raises the
 * interval's high the sum is read: a walk over every thread's block under
 * the GPU row's lock. With one thread the estimate is the sum and a walk
 * comes only with a new high. With several, an estimate can stay above
 * the high while the sum is not (their frees not yet folded in), and a walk
 * at every event made that lock the wall of 8 threads; so a thread whose
 * estimate a walk found too high walks again only at the next clock tick,
 * noting nothing higher until then: the high can read low, never high
 * (docs/report-format.md). */
static void note_timeline(uint64_t now_ns, uint64_t gpu_live)
{
    static __thread uint64_t estimate_high_at_ns __attribute__((tls_model("initial-exec")));
    if (gpu_live > timeline_interval_high()) {
        if (estimate_high_at_ns == now_ns) {
            /* 0 raises nothing: noting the high read here could carry it
             * into a new interval that another thread starts meanwhile. */
            gpu_live = 0;
        } else {
            uint64_t sum = live_bytes(GPU_ROW);
            if (sum < gpu_live)
                estimate_high_at_ns = now_ns;
            gpu_live = sum;
        }
    }
    timeline_note(now_ns, gpu_live);
}

/* Applies one event to every counter row the allocation belongs to: its
 * site, its kind, its device and the GPU total, then lets the timeline and
 * the growth checkpoints see the change. The site moves first so that a
 * GPU peak this change makes finds the site already moved. An allocation
 * also stores its site's kind and device. */
static void apply(const tracker_record_t *a, live_event_t event, uint64_t now_ns)
{
    atomic_site_t *s = site_of(a->site);
    if (event == LIVE_ALLOC) {
        /* Stored only when they change: a store to the site's line on every
         * allocation would make it bounce between threads sharing the site. */
        if (__builtin_expect(atomic_load_explicit(&s->kind, memory_order_relaxed) != a->kind, 0))
            atomic_store_explicit(&s->kind, a->kind, memory_order_relaxed);
        if (__builtin_expect(atomic_load_explicit(&s->device, memory_order_relaxed) != a->device, 0))
            atomic_store_explicit(&s->device, a->device, memory_order_relaxed);
    }
    uint32_t moved[4], n = 0;
    if (__builtin_expect(a->reserve && event != LIVE_ALLOC, 0)) {  /* a PyTorch segment leaves */
        atomic_fetch_sub_explicit(&s->reserve_bytes, a->size, memory_order_relaxed);
        atomic_fetch_sub_explicit(&s->reserve_allocations, 1, memory_order_relaxed);
    }
    moved[n++] = LIVE_SITE(s - sites);
    moved[n++] = KIND_ROW(a->kind);
    if (tracker_is_driver_gpu_kind(a->kind)) {
        moved[n++] = GPU_ROW;
        if (device_row(a->device) != NULL)
            moved[n++] = DEVICE_ROW(a->device);
    }
    note_timeline(now_ns, live_move(moved, n, a->size, event, now_ns));
    growth_note(now_ns, tracker_allocation_count,
                atomic_load_explicit(&site_high, memory_order_relaxed));
}

/* The shard's bucket for key among count buckets. A shard's keys come
 * from a few regions, mostly side by side; a multiply spreads neighbours
 * (16 bytes apart or more) over the buckets. */
static size_t bucket_of(uint64_t key, size_t count)
{
    return (size_t)(((key >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & (count - 1);
}

/* The link that points at key's record in its chain (*link is NULL when key
 * is not live); caller holds the shard's lock and the shard has buckets. */
static live_alloc_t **find_link(shard_t *sh, uint64_t key)
{
    live_alloc_t **link = &sh->buckets[bucket_of(key, sh->bucket_count)];
    while (*link != NULL && (*link)->r.key != key)
        link = &(*link)->next;
    return link;
}

/* Looks key up and unlinks its record, returning it, or NULL. */
static live_alloc_t *unlink_record(shard_t *sh, uint64_t key)
{
    if (sh->buckets == NULL)
        return NULL;
    live_alloc_t **link = find_link(sh, key);
    live_alloc_t *r = *link;
    if (r != NULL) {
        *link = r->next;
        sh->live--;
    }
    return r;
}

/* Doubles the buckets when the table is full (one record per bucket on
 * average). A failed growth is not an error: chains only get longer. Out of
 * line, as the other rare paths of an event (the first buckets, a new
 * chunk of records, a refused free): inlined, they took cache lines of
 * every event's code. */
static __attribute__((cold, noinline)) void grow_buckets(shard_t *sh)
{
    size_t count = sh->bucket_count * 2;
    live_alloc_t **bigger = calloc(count, sizeof *bigger);
    if (bigger == NULL)
        return;
    for (size_t i = 0; i < sh->bucket_count; i++) {
        live_alloc_t *r = sh->buckets[i], *next;
        for (; r != NULL; r = next) {
            next = r->next;
            size_t b = bucket_of(r->r.key, count);
            r->next = bigger[b];
            bigger[b] = r;
        }
    }
    free(sh->buckets);
    atomic_fetch_add_explicit(&table_bytes, (count - sh->bucket_count) * sizeof *bigger,
                              memory_order_relaxed);
    sh->buckets = bigger;
    sh->bucket_count = count;
}

/* Gives the shard its first buckets. Returns 0, or -1 when memory is out. */
static __attribute__((cold, noinline)) int first_buckets(shard_t *sh)
{
    sh->buckets = calloc(FIRST_BUCKETS, sizeof *sh->buckets);
    if (sh->buckets == NULL)
        return -1;
    sh->bucket_count = FIRST_BUCKETS;
    atomic_fetch_add_explicit(&table_bytes, FIRST_BUCKETS * sizeof *sh->buckets,
                              memory_order_relaxed);
    return 0;
}

/* Links r (whose key is not live) into the table. Returns 0, or -1 when the
 * first buckets cannot be had. */
static int link_record(shard_t *sh, live_alloc_t *r)
{
    if (sh->buckets == NULL && first_buckets(sh) != 0)
        return -1;
    if (sh->live >= sh->bucket_count)
        grow_buckets(sh);
    live_alloc_t **head = &sh->buckets[bucket_of(r->r.key, sh->bucket_count)];
    r->next = *head;
    *head = r;
    sh->live++;
    return 0;
}

/* Adds a chunk of records to the shard's spares, or none when memory is
 * out; caller holds the shard's lock. */
static __attribute__((cold, noinline)) void add_chunk(shard_t *sh)
{
    live_alloc_t *chunk = calloc(RECORDS_PER_CHUNK, sizeof *chunk);
    if (chunk == NULL)
        return;
    for (int i = 0; i < RECORDS_PER_CHUNK; i++) {
        chunk[i].next = sh->spare;
        sh->spare = &chunk[i];
    }
    atomic_fetch_add_explicit(&table_bytes, RECORDS_PER_CHUNK * sizeof *chunk,
                              memory_order_relaxed);
}

/* Takes a record from the shard's spares, carving a new chunk when there are
 * none; caller holds the shard's lock. Returns NULL when memory is out. */
static live_alloc_t *take_record(shard_t *sh)
{
    if (sh->spare == NULL)
        add_chunk(sh);
    if (sh->spare == NULL)
        return NULL;
    live_alloc_t *r = sh->spare;
    sh->spare = r->next;
    return r;
}

static void give_record(shard_t *sh, live_alloc_t *r)
{
    r->next = sh->spare;
    sh->spare = r;
}

/* Of the held-at-finish snapshot (tracker_take_held): the thread that took
 * it, and how many allocations it made since. A program that embeds Python
 * and goes on after finalizing it allocates on that thread; daemon threads
 * still running at exit do not count. */
static pthread_t held_thread;
static _Atomic uint64_t held_later;
/* Set, under held_lock, once held is filled; read without it first, so
 * that the frees after the snapshot pay one load. */
static _Atomic int held_taken;

int tracker_alloc(alloc_kind_t kind, uint64_t key, size_t size, int device,
                  const void *context, uint32_t site)
{
    return tracker_alloc_at(kind, key, size, device, context, site, clock_coarse_ns());
}

int tracker_alloc_at(alloc_kind_t kind, uint64_t key, size_t size, int device,
                     const void *context, uint32_t site, uint64_t now)
{
    shard_t *sh = shard_of(kind_space[kind], key);
    tracker_record_t fresh = {
        .key = key, .size = size, .context = context,
        .site = site, .kind = (uint8_t)kind, .device = (int16_t)device,
    };
    tracker_record_t stale;
    int had_stale = 0;
    spin_lock(&sh->lock);
    live_alloc_t *r = unlink_record(sh, key);
    if (__builtin_expect(r != NULL, 0)) {  /* the driver gave a live address again */
        stale = r->r;
        had_stale = 1;
    } else {
        r = take_record(sh);
    }
    if (__builtin_expect(r != NULL, 1)) {
        r->r = fresh;
        if (__builtin_expect(link_record(sh, r) != 0, 0)) {
            give_record(sh, r);
            r = NULL;
        }
    }
    spin_unlock(&sh->lock);

    if (__builtin_expect(had_stale, 0))
        apply(&stale, LIVE_FREE, now);
    if (__builtin_expect(r == NULL, 0))
        return -1;
    apply(&fresh, LIVE_ALLOC, now);
    if (__builtin_expect(atomic_load_explicit(&held_taken, memory_order_acquire), 0)
        && pthread_equal(pthread_self(), held_thread))
        atomic_fetch_add_explicit(&held_later, 1, memory_order_relaxed);
    return 0;
}

/* The record's slot goes back to the spares at once, under the lock taken
 * to find it, and the pending free carries a copy: a free the driver accepts
 * (nearly all) then costs one lock, and a refused one takes a new slot. */
void tracker_free_begin(key_space_t space, uint64_t key, tracker_pending_t *pending)
{
    shard_t *sh = shard_of(space, key);
    pending->space = space;
    pending->found = 0;
    spin_lock(&sh->lock);
    live_alloc_t *r = unlink_record(sh, key);
    if (r != NULL) {
        pending->record = r->r;
        pending->found = 1;
        give_record(sh, r);
    }
    spin_unlock(&sh->lock);
    if (!pending->found)
        pending->record.key = key;
}

/* A free the driver refused: the allocation is still live, unless the
 * address was handed out again meanwhile: then the newer record stands and
 * the older allocation is gone (counted freed, or its bytes would stay live
 * with no record left to free them). */
static __attribute__((cold, noinline)) void put_back(tracker_pending_t *pending)
{
    uint64_t key = pending->record.key;
    shard_t *sh = shard_of(pending->space, key);
    spin_lock(&sh->lock);
    int newer = sh->buckets != NULL && *find_link(sh, key) != NULL;
    live_alloc_t *r = newer ? NULL : take_record(sh);
    if (r != NULL) {
        r->r = pending->record;
        if (link_record(sh, r) != 0) {
            give_record(sh, r);
            r = NULL;
        }
    }
    spin_unlock(&sh->lock);
    if (r == NULL)  /* newer, or no memory for the slot: count it gone */
        apply(&pending->record, LIVE_FREE, clock_coarse_ns());
}

void tracker_free_end(tracker_pending_t *pending, int freed)
{
    if (!pending->found) {  /* freed or refused, the program freed what it never had */
        atomic_fetch_add_explicit(&unknown_frees, 1, memory_order_relaxed);
        return;
    }
    if (freed)
        apply(&pending->record, LIVE_FREE, clock_coarse_ns());
    else
        put_back(pending);
}

/* The sites holding GPU memory now (host memory left out), with their live
 * bytes, less PyTorch's cache when without_cache; malloc'd, the count in
 * *count (NULL and 0 when memory is out). O(sites). */
static tracker_site_bytes_t *live_sites(int without_cache, size_t *count)
{
    uint32_t high = atomic_load(&site_high);
    tracker_site_bytes_t *out = calloc((size_t)high + 1, sizeof *out);
    *count = 0;
    for (uint32_t i = 0; out != NULL && i <= high; i++) {
        uint64_t live = site_live_bytes(i);
        uint64_t cache = without_cache ? atomic_load(&sites[i].reserve_bytes) : 0;
        live = live > cache ? live - cache : 0;
        if (live > 0 && atomic_load(&sites[i].kind) != REPORT_KIND_host)
            out[(*count)++] = (tracker_site_bytes_t){ i, live };
    }
    return out;
}

/* PyTorch's reserved memory on device now (its cached segments' bytes)
 * into *reserved, and its live tensors' bytes there into *allocated: each
 * site counted on the device it last allocated on. O(sites). */
static void torch_memory_now(int device, uint64_t *reserved, uint64_t *allocated)
{
    uint32_t high = atomic_load(&site_high);
    *reserved = *allocated = 0;
    for (uint32_t i = 0; i <= high; i++) {
        if (atomic_load(&sites[i].device) != device)
            continue;
        uint64_t live = site_live_bytes(i), cache = atomic_load(&sites[i].reserve_bytes);
        *reserved += cache < live ? cache : live;
        if (atomic_load(&sites[i].kind) == REPORT_KIND_tensor)
            *allocated += live;
    }
}

/* Saves what was live, by site, at the first out-of-memory failure: what
 * filled the GPU is the question an OOM asks. Later ones are only counted. */
static void snapshot_oom(alloc_kind_t kind, size_t size, int device, uint32_t site)
{
    pthread_mutex_lock(&oom_lock);
    /* Once PyTorch's own event is the record, the driver's refusals are
     * its allocator's retries, not more of the program's OOMs. */
    if (oom.count > 0 && oom.kind == REPORT_KIND_tensor && kind != REPORT_KIND_tensor) {
        pthread_mutex_unlock(&oom_lock);
        return;
    }
    int torch_replaces_driver = kind == REPORT_KIND_tensor && oom.count > 0 && oom.kind != REPORT_KIND_tensor;
    oom.count = torch_replaces_driver ? 1 : oom.count + 1;
    if (torch_replaces_driver) {
        free(oom.sites);
        oom.sites = NULL;
        oom.site_count = 0;
    }
    if (oom.count == 1) {
        oom.time_ns = clock_coarse_ns();
        oom.bytes_asked = size;
        oom.kind = kind;
        oom.device = device;
        oom.site = site;
        oom.live_bytes = live_bytes(kind == REPORT_KIND_tensor ? kind_totals[REPORT_KIND_tensor].row : GPU_ROW);
        /* How much of its reserved memory its tensors used: the evidence for
         * fragmentation (common/diagnosis.h). */
        oom.torch_reserved_bytes = oom.torch_allocated_bytes = 0;
        if (kind == REPORT_KIND_tensor)
            torch_memory_now(device, &oom.torch_reserved_bytes, &oom.torch_allocated_bytes);
        /* At PyTorch's OOM its cache is not a holder: its tensors are. */
        oom.sites = live_sites(kind == REPORT_KIND_tensor, &oom.site_count);
    }
    pthread_mutex_unlock(&oom_lock);
}

void tracker_failure(alloc_kind_t kind, size_t size, int result, int device, uint32_t site)
{
    if (result == TRACKER_OUT_OF_MEMORY)
        snapshot_oom(kind, size, device, site);
    atomic_site_t *s = site_of(site);
    atomic_fetch_add(&s->failures, 1);
    atomic_fetch_add(&s->failed_bytes, size);
    atomic_store(&s->last_failure, result);
    atomic_store(&s->kind, kind);
    atomic_store(&s->device, device);
    atomic_fetch_add(&kind_totals[kind].failures, 1);
    if (!tracker_is_driver_gpu_kind(kind))
        return;
    atomic_fetch_add(&gpu_totals.failures, 1);
    atomic_totals_t *dev = device_row(device);
    if (dev != NULL)
        atomic_fetch_add(&dev->failures, 1);
}

void tracker_mark_reserve(alloc_kind_t kind, uint64_t key)
{
    shard_t *sh = shard_of(kind_space[kind], key);
    uint32_t site = 0;
    uint64_t size = 0;
    spin_lock(&sh->lock);
    live_alloc_t *r = sh->buckets != NULL ? *find_link(sh, key) : NULL;
    if (r != NULL && !r->r.reserve) {
        r->r.reserve = 1;
        site = r->r.site;
        size = r->r.size;
    }
    spin_unlock(&sh->lock);
    if (size == 0)
        return;
    atomic_site_t *s = site_of(site);
    atomic_fetch_add_explicit(&s->reserve_bytes, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->reserve_allocations, 1, memory_order_relaxed);
}

void tracker_one_moment(int begin)
{
    growth_hold(begin);
    if (!begin)
        growth_note(clock_coarse_ns(), tracker_allocation_count,
                    atomic_load_explicit(&site_high, memory_order_relaxed));
}

void tracker_map(size_t size, int is_unmap)
{
    (void)size;
    atomic_fetch_add(is_unmap ? &unmap_count : &map_count, 1);
}

/* Moves one record's allocation to the teardown counters of its site, its
 * kind, its device and the GPU row. */
static void count_teardown(const tracker_record_t *gone, teardown_reason_t reason, uint64_t now)
{
    apply(gone, LIVE_DROP, now);
    atomic_site_t *s = site_of(gone->site);
    atomic_fetch_add(&s->teardown_allocations, 1);
    atomic_fetch_add(&s->teardown_bytes, gone->size);
    atomic_store(&s->teardown_reason, reason);
    atomic_fetch_add(&kind_totals[gone->kind].teardown_allocations, 1);
    atomic_fetch_add(&kind_totals[gone->kind].teardown_bytes, gone->size);
    if (!tracker_is_driver_gpu_kind(gone->kind))
        return;
    atomic_fetch_add(&gpu_totals.teardown_allocations, 1);
    atomic_fetch_add(&gpu_totals.teardown_bytes, gone->size);
    atomic_totals_t *dev = device_row(gone->device);
    if (dev != NULL) {
        atomic_fetch_add(&dev->teardown_allocations, 1);
        atomic_fetch_add(&dev->teardown_bytes, gone->size);
    }
}

/* The records are unlinked under the shard's lock and counted after it is
 * released: counting can sample the timeline, which asks the driver, and a
 * spinlock must not be held across that (every allocation in the shard
 * would spin meanwhile). Their slots then go back in one more lock. */
uint64_t tracker_teardown(const void *context, int device, teardown_reason_t reason)
{
    uint64_t moved = 0, now = clock_coarse_ns();
    for (int space = 0; space < SPACE_COUNT; space++) {
        for (int i = 0; i < SHARDS; i++) {
            shard_t *sh = &shards[space][i];
            live_alloc_t *gone = NULL, *last = NULL;
            spin_lock(&sh->lock);
            for (size_t b = 0; b < sh->bucket_count; b++) {
                live_alloc_t **link = &sh->buckets[b];
                while (*link != NULL) {
                    live_alloc_t *r = *link;
                    if (context != NULL ? r->r.context != context : r->r.device != device) {
                        link = &r->next;
                        continue;
                    }
                    *link = r->next;
                    sh->live--;
                    r->next = gone;
                    gone = r;
                    if (last == NULL)
                        last = r;
                }
            }
            spin_unlock(&sh->lock);
            if (gone == NULL)
                continue;
            for (live_alloc_t *r = gone; r != NULL; r = r->next, moved++)
                count_teardown(&r->r, reason, now);
            spin_lock(&sh->lock);
            last->next = sh->spare;
            sh->spare = gone;
            spin_unlock(&sh->lock);
        }
    }
    return moved;
}

/* Allocations still live: allocations - frees - teardowns, derived when
 * read so that an event counts nothing more. Read while other threads
 * count, a free may be seen before its allocation (frees are read first to
 * make that rare), so the difference is clamped at zero. */
static uint64_t live_allocations(uint64_t allocations, uint64_t frees, uint64_t torn_down)
{
    return allocations > frees + torn_down ? allocations - frees - torn_down : 0;
}

int tracker_site(uint32_t site, site_stats_t *out)
{
    if (sites == NULL || site > atomic_load(&site_high))
        return -1;
    const atomic_site_t *s = &sites[site];
    out->frees = live_count(LIVE_SITE(site), LIVE_FREES); /* first: see live_allocations */
    out->allocations = live_count(LIVE_SITE(site), LIVE_ALLOCATIONS);
    out->failures = atomic_load(&s->failures);
    out->bytes_allocated = live_count(LIVE_SITE(site), LIVE_BYTES_ALLOCATED);
    out->failed_bytes = atomic_load(&s->failed_bytes);
    out->live_bytes = site_live_bytes(site);
    out->peak_live_bytes = live_peak(LIVE_SITE(site), NULL);
    out->teardown_bytes = atomic_load(&s->teardown_bytes);
    out->teardown_allocations = atomic_load(&s->teardown_allocations);
    out->live_allocations = live_allocations(out->allocations, out->frees, out->teardown_allocations);
    out->at_peak_bytes = live_at_peak(LIVE_SITE(site));
    if (atomic_load(&s->kind) == REPORT_KIND_host)
        out->at_peak_bytes = 0;
    out->kind = atomic_load(&s->kind);
    out->device = atomic_load(&s->device);
    out->last_failure = atomic_load(&s->last_failure);
    out->teardown_reason = atomic_load(&s->teardown_reason);
    out->reserve_allocations = atomic_load(&s->reserve_allocations);
    out->reserve_bytes = atomic_load(&s->reserve_bytes);
    return 0;
}

int tracker_site_kind(uint32_t site)
{
    if (sites == NULL || site > atomic_load(&site_high))
        return REPORT_KIND_device;
    return atomic_load(&sites[site].kind);
}

uint32_t tracker_site_count(void)
{
    return atomic_load(&site_high);
}

static void read_totals(const atomic_totals_t *t, totals_t *out)
{
    out->frees = live_count(t->row, LIVE_FREES);
    out->allocations = live_count(t->row, LIVE_ALLOCATIONS);
    out->failures = atomic_load(&t->failures);
    out->bytes_allocated = live_count(t->row, LIVE_BYTES_ALLOCATED);
    out->live_bytes = live_bytes(t->row);
    out->peak_bytes = live_peak(t->row, &out->peak_time_ns);
    out->teardown_bytes = atomic_load(&t->teardown_bytes);
    out->teardown_allocations = atomic_load(&t->teardown_allocations);
    out->live_allocations = live_allocations(out->allocations, out->frees, out->teardown_allocations);
}

void tracker_totals(totals_t *out)
{
    read_totals(&gpu_totals, out);
}

void tracker_kind_totals(alloc_kind_t kind, totals_t *out)
{
    read_totals(&kind_totals[kind], out);
}

int tracker_device_totals(int device, totals_t *out)
{
    if (device < 0 || device >= TRACKER_MAX_DEVICES
        || !(atomic_load(&devices_seen) & (1ull << device)))
        return -1;
    read_totals(&device_totals[device], out);
    return 0;
}

uint64_t tracker_unknown_frees(void)
{
    return atomic_load(&unknown_frees);
}

uint64_t tracker_maps(int unmaps)
{
    return atomic_load(unmaps ? &unmap_count : &map_count);
}

size_t tracker_memory_bytes(void)
{
    return atomic_load_explicit(&table_bytes, memory_order_relaxed) + counts_memory_bytes();
}

/* A copy of count (site, bytes) pairs the caller frees, or NULL with
 * *count 0 when there are none or memory is out. */
static tracker_site_bytes_t *copy_site_bytes(const tracker_site_bytes_t *src, size_t *count)
{
    tracker_site_bytes_t *copy = *count && src ? malloc(sizeof *copy * *count) : NULL;
    if (copy == NULL)
        *count = 0;
    else
        memcpy(copy, src, sizeof *copy * *count);
    return copy;
}

static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static tracker_held_t held;



void tracker_take_held(void)
{
    if (atomic_load_explicit(&held_taken, memory_order_acquire))
        return;
    pthread_mutex_lock(&held_lock);
    if (!atomic_load_explicit(&held_taken, memory_order_relaxed)) {
        held.time_ns = clock_coarse_ns();
        held.gpu_bytes = live_bytes(GPU_ROW);
        held.tensor_bytes = live_bytes(kind_totals[REPORT_KIND_tensor].row);
        held_thread = pthread_self();
        held.sites = live_sites(1, &held.site_count);
        atomic_store_explicit(&held_taken, 1, memory_order_release);
    }
    pthread_mutex_unlock(&held_lock);
}

int tracker_held_copy(tracker_held_t *out)
{
    memset(out, 0, sizeof *out);
    if (!bounded_mutex_lock(&held_lock))
        return 0;
    int taken = atomic_load_explicit(&held_taken, memory_order_relaxed);
    if (taken) {
        *out = held;
        out->later_allocations = atomic_load(&held_later);
        out->sites = copy_site_bytes(held.sites, &out->site_count);
    }
    pthread_mutex_unlock(&held_lock);
    return taken;
}

tracker_site_bytes_t *tracker_live_sites(size_t *count)
{
    tracker_site_bytes_t *sites = live_sites(1, count);
    if (sites != NULL && *count == 0) {
        free(sites);
        sites = NULL;
    }
    return sites;
}

tracker_record_t *tracker_live_records(size_t *count)
{
    size_t room = 0, n = 0;
    for (int s = 0; s < SPACE_COUNT; s++)
        for (int i = 0; i < SHARDS; i++)
            room += shards[s][i].live;
    room += room / 8 + 64;  /* what other threads add meanwhile */
    tracker_record_t *out = malloc(room * sizeof *out);
    for (int s = 0; out != NULL && s < SPACE_COUNT; s++)
        for (int i = 0; i < SHARDS; i++) {
            shard_t *sh = &shards[s][i];
            spin_lock(&sh->lock);
            for (size_t b = 0; b < sh->bucket_count; b++)
                for (live_alloc_t *r = sh->buckets[b]; r != NULL && n < room; r = r->next)
                    if (!r->r.reserve)
                        out[n++] = r->r;
            spin_unlock(&sh->lock);
        }
    if (n == 0) {
        free(out);
        out = NULL;
    }
    *count = n;
    return out;
}

static _Atomic int peak_at_tensors;

void tracker_peak_at_tensors(void)
{
    live_set_epoch_row(kind_totals[REPORT_KIND_tensor].row);
    atomic_store(&peak_at_tensors, 1);
}

int tracker_peak_is_tensors(void)
{
    return atomic_load(&peak_at_tensors);
}

int tracker_oom_copy(tracker_oom_t *out)
{
    memset(out, 0, sizeof *out);
    if (!bounded_mutex_lock(&oom_lock))
        return 0;
    int taken = oom.count != 0;
    if (taken) {
        *out = oom;
        out->sites = copy_site_bytes(oom.sites, &out->site_count);
    }
    pthread_mutex_unlock(&oom_lock);
    return taken;
}

uint64_t tracker_allocation_count(void)
{
    return live_count(GPU_ROW, LIVE_ALLOCATIONS)
         + live_count(kind_totals[REPORT_KIND_host].row, LIVE_ALLOCATIONS)
         + live_count(kind_totals[REPORT_KIND_tensor].row, LIVE_ALLOCATIONS);
}

void tracker_sample(timeline_point_t *point)
{
    point->bytes = live_bytes(GPU_ROW);
    for (int k = 0; k < REPORT_KIND_COUNT; k++)
        point->kind_bytes[k] = live_bytes(kind_totals[k].row);
    for (int d = 0; d < TIMELINE_DEVICES; d++)
        point->device_bytes[d] = live_bytes(device_totals[d].row);
}
