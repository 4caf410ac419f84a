/* tracker.h: what is live, per site and in total, and the exact peak.
 *
 * Live allocations sit in hash tables keyed by address (or handle),
 * sharded so that threads allocating at once rarely meet on a lock; the
 * counts, live bytes and peaks of sites, kinds, devices and the GPU are
 * kept per thread, the live bytes within reservations that keep the peaks
 * exact (live.h). Nothing here
 * unwinds or symbolizes: the caller captures the stack before it calls in. */
#ifndef GPULEAK_TRACKER_H
#define GPULEAK_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "report_format.h"

/* An allocation's kind: common/report_format.h's table (REPORT_KINDS) gives
 * each its id (REPORT_KIND_device, ...), name and phrase, and the calls
 * that make it. Tensors (torch_trace.h) are memory inside the segments the
 * driver kinds count, so never added to the GPU's or a device's totals. */
typedef enum report_kind alloc_kind_t;

/* Which free releases what: one key space per family of free calls, so a
 * VMM handle and a device address with the same value never collide. */
typedef enum key_space {
    SPACE_DEVICE,  /* cuMemFree_v2, cuMemFreeAsync: device, pool, managed */
    SPACE_HOST,    /* cuMemFreeHost */
    SPACE_VMM,     /* cuMemRelease */
    SPACE_ARRAY,   /* cuArrayDestroy */
    SPACE_TENSOR,  /* PyTorch's free events: addresses inside segments */
    SPACE_COUNT
} key_space_t;

typedef enum teardown_reason {
    TEARDOWN_NONE,
    TEARDOWN_CTX_DESTROY,      /* cuCtxDestroy_v2 */
    TEARDOWN_PRIMARY_RESET,    /* cuDevicePrimaryCtxReset_v2 (cudaDeviceReset) */
} teardown_reason_t;

#define TRACKER_MAX_DEVICES 64

/* Lifetime counters of one site (one stack id). */
typedef struct site_stats {
    uint64_t allocations, frees, failures;
    uint64_t bytes_allocated, failed_bytes;
    uint64_t live_bytes, live_allocations, peak_live_bytes;
    uint64_t teardown_bytes, teardown_allocations;
    uint64_t at_peak_bytes;  /* live at the moment of the process's GPU peak */
    int kind, device, last_failure, teardown_reason;
    uint64_t reserve_bytes, reserve_allocations;  /* of the live: segments that
                                                     PyTorch's events named its own */
} site_stats_t;

/* Totals of one kind, one device, or the whole process. */
typedef struct totals {
    uint64_t allocations, frees, failures, bytes_allocated;
    uint64_t live_bytes, live_allocations, peak_bytes, peak_time_ns;
    uint64_t teardown_bytes, teardown_allocations;
} totals_t;

/* A site and the bytes it held at some moment (an OOM, Python's finish). */
typedef struct tracker_site_bytes {
    uint32_t site;
    uint64_t bytes;
} tracker_site_bytes_t;

/* CUDA_ERROR_OUT_OF_MEMORY, without making this header depend on cuda.h. */
#define TRACKER_OUT_OF_MEMORY 2

/* The first out-of-memory failure and what was live at that moment. A
 * PyTorch out-of-memory event (kind tensor) replaces a driver failure seen
 * before it: the caching allocator retries a refused segment after freeing
 * its cache, so only its own event is the program's OOM. */
typedef struct tracker_oom {
    uint64_t count;          /* out-of-memory failures in all */
    uint64_t time_ns;        /* clock_coarse_ns() of the first */
    uint64_t bytes_asked;
    uint64_t live_bytes;     /* live GPU bytes then (PyTorch's OOM: its tensors') */
    uint64_t torch_reserved_bytes;  /* PyTorch's OOM: its cached segments' bytes on the
                                       device then (its reserved memory), else 0 */
    uint64_t torch_allocated_bytes; /* and its live tensors' bytes there */
    int kind, device;
    uint32_t site;           /* where the refused allocation came from */
    tracker_site_bytes_t *sites;  /* live GPU bytes by site */
    size_t site_count;
} tracker_oom_t;

/* What the program still held when its interpreter began to finish
 * (python_finished): live GPU bytes by site, PyTorch's cache left out. */
typedef struct tracker_held {
    uint64_t time_ns;
    uint64_t gpu_bytes, tensor_bytes;   /* the driver's and the tensors' live bytes then */
    uint64_t later_allocations;         /* allocations made since by the thread that
                                           took it (Python's finishing thread) */
    tracker_site_bytes_t *sites;
    size_t site_count;
} tracker_held_t;

/* Name of a kind as the report spells it ("device", "pool", ...). */
const char *tracker_kind_name(alloc_kind_t kind);

struct timeline_point;

/* Sets up the tables; sampler fills each timeline point (tracker_sample, or
 * a wrapper of it that adds what only the driver knows). Returns 0, or -1
 * when memory for them is lacking (then tracking must stay off). */
int tracker_init(void (*sampler)(struct timeline_point *point));

/* Records a successful allocation of size bytes under key. A key already
 * live in its space (a driver reusing an address the shim missed the free
 * of) is replaced, its old record counted as freed. Returns 0, or -1 when no
 * memory is left for the record (the caller turns tracking off). */
int tracker_alloc(alloc_kind_t kind, uint64_t key, size_t size, int device,
                   const void *context, uint32_t site);

/* tracker_alloc at now_ns (clock.h's coarse clock, read by the caller):
 * a driver allocation's wrapper reads the clock once for every part that
 * needs the time (about 9 ns a read here). */
int tracker_alloc_at(alloc_kind_t kind, uint64_t key, size_t size, int device,
                     const void *context, uint32_t site, uint64_t now_ns);

/* What the tracker keeps of one live allocation. */
typedef struct tracker_record {
    uint64_t key;
    uint64_t size;
    const void *context;
    uint32_t site;
    uint8_t kind;
    uint8_t reserve;   /* 1: PyTorch's segment (tracker_mark_reserve) */
    int16_t device;
} tracker_record_t;

/* A free in progress: the record is out of the table while the driver
 * frees, so an address handed out again at once cannot be confused with it. */
typedef struct tracker_pending {
    key_space_t space;
    int found;                /* 0 when the key was not live */
    tracker_record_t record;  /* a copy: the table's slot is already reused */
} tracker_pending_t;

/* Takes key's record out of its table before the driver frees it. */
void tracker_free_begin(key_space_t space, uint64_t key, tracker_pending_t *pending);

/* Ends a free: a key the shim never saw counts as an unknown free, whatever
 * the driver said; otherwise, when the driver freed, counts the free, and
 * when it refused, puts the record back. */
void tracker_free_end(tracker_pending_t *pending, int freed);

/* Records an allocation the driver refused with result. */
void tracker_failure(alloc_kind_t kind, size_t size, int result, int device, uint32_t site);

/* Marks the live allocation of kind under key as a segment of PyTorch's
 * caching allocator (its events said so): its bytes are the allocator's
 * cache, counted in its site's reserve_bytes until it is freed. An unknown
 * key is ignored. */
void tracker_mark_reserve(alloc_kind_t kind, uint64_t key);

/* Brackets, on the calling thread, allocations and frees that stand for
 * one moment (begin 1, then 0): a snapshot of a framework's arrays,
 * recorded one by one. No growth checkpoint is taken between; the end
 * offers one, as an event would. */
void tracker_one_moment(int begin);

/* Counts a cuMemMap or cuMemUnmap of size bytes. */
void tracker_map(size_t size, int is_unmap);

/* Moves every live allocation made in context (or, when context is NULL, on
 * device) to its site's teardown counters: the context's memory is gone, and
 * the program never freed it. Returns how many were moved. */
uint64_t tracker_teardown(const void *context, int device, teardown_reason_t reason);

/* Copies the counters of site into *out. Returns 0, or -1 for a site beyond
 * the sites seen. */
int tracker_site(uint32_t site, site_stats_t *out);

/* The kind of site's last event (an alloc_kind_t), with no lock and no
 * sum: for a writer that needs no more of it. */
int tracker_site_kind(uint32_t site);

/* The largest site id seen. */
uint32_t tracker_site_count(void);

/* Whether a kind is memory the driver handed out on a device (every kind
 * but host and tensor): the kinds the GPU's and the devices' totals sum. */
static inline int tracker_is_driver_gpu_kind(int kind)
{
    return kind != REPORT_KIND_host && kind != REPORT_KIND_tensor;
}

/* From now on, what was live at the peak (site_stats_t.at_peak_bytes) is
 * taken at the tensors' peak, not the GPU's: call once, before the first
 * tensor is recorded (torch_trace.c does, when it attaches). */
void tracker_peak_at_tensors(void);

/* Whether at_peak_bytes is taken at the tensors' peak. */
int tracker_peak_is_tensors(void);

/* Totals of the driver's GPU-memory kinds together (host and tensors
 * excluded), of one kind, and of one device (its driver kinds). */
void tracker_totals(totals_t *out);
void tracker_kind_totals(alloc_kind_t kind, totals_t *out);
int tracker_device_totals(int device, totals_t *out); /* -1: never seen */

/* Copies the out-of-memory record into *out, its sites into memory the
 * caller frees (out->sites, NULL when none could be had). Returns 1, or 0
 * when no allocation ran out of memory (then *out is zeroed), or when a
 * report's bounded wait for its lock ended (bounded.h). A copy, since
 * PyTorch's OOM event may replace the record while a report reads. */
int tracker_oom_copy(tracker_oom_t *out);

/* Takes the held-at-finish snapshot, the first time only: O(sites); a
 * thread arriving meanwhile waits for it, and later calls cost one load. */
void tracker_take_held(void);

/* Copies the held-at-finish snapshot as tracker_oom_copy does. Returns 1,
 * or 0 when none was taken (or its lock was given up). */
int tracker_held_copy(tracker_held_t *out);

/* Every site holding GPU memory now (pinned host memory and PyTorch's
 * cache left out), by site id, with its live bytes, in memory the caller
 * frees; NULL with *count 0 when none does or memory is out. O(sites). */
tracker_site_bytes_t *tracker_live_sites(size_t *count);

/* A copy of every live record but PyTorch's segments (tracker_mark_reserve),
 * in memory the caller frees, with their number in *count; NULL with *count
 * 0 when none is live or memory is out. Records made while it copies may be
 * missed. */
tracker_record_t *tracker_live_records(size_t *count);

/* Successful allocations so far, every kind. */
uint64_t tracker_allocation_count(void);

/* Fills a timeline point with the live bytes now: GPU total, per kind, per
 * device (the timeline's sampler). */
struct timeline_point;
void tracker_sample(struct timeline_point *point);

/* Counts of odd events for the report. */
uint64_t tracker_unknown_frees(void);
uint64_t tracker_maps(int unmaps);
/* Bytes of memory the live-allocation records and the per-thread counts
 * use now. Takes no lock. */
size_t tracker_memory_bytes(void);

#endif
