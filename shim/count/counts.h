/* counts.h: each thread's block of counts, summed when read.
 *
 * A count that only grows (allocations, frees, bytes allocated) needs no
 * shared cache line: each thread adds to its own block with plain stores,
 * and a reader sums every block. On the allocation path that replaces a
 * locked read-modify-write (tens of ns when another core owns the line) with
 * a store to memory only this thread touches (the shared block, for threads
 * that could get none of their own, is written under its lock). A sum read
 * while threads count is some moment's value, never a torn one. A block
 * holds the thread's shares of the tracker's rows and, in pages made as
 * sites are first used, of its sites (live.h: their live bytes, kept exact
 * at every peak, and their counts), and the shim's own time (selftime.h). */
#ifndef GPULEAK_TALLY_H
#define GPULEAK_TALLY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "live_share.h"

#define COUNTS_SITES LIVE_SITES
#define COUNTS_SITES_PER_PAGE 512

/* A thread's shares (live.h) of 512 consecutive sites, made when it first
 * moves one of them. */
typedef struct counts_page {
    live_share_t shares[COUNTS_SITES_PER_PAGE];
} counts_page_t;

/* What the shim's own time is counted in (selftime.h): clock ticks, the
 * calls they were taken over, and the intervals (clock reading pairs); and,
 * of the stacks it captured, their number, the ticks taking native stacks
 * and Python frames and interning them, the native frames kept, those the
 * own unwinder gave and those of them it took from the thread's recent
 * stacks (unwind.h). */
typedef enum {
    COUNTS_TIME_TICKS, COUNTS_TIME_CALLS, COUNTS_TIME_INTERVALS,
    COUNTS_TIME_CAPTURES, COUNTS_TIME_NATIVE_TICKS, COUNTS_TIME_PYTHON_TICKS, COUNTS_TIME_INTERN_TICKS,
    COUNTS_TIME_NATIVE_FRAMES, COUNTS_TIME_UNWOUND_FRAMES, COUNTS_TIME_REUSED_FRAMES,
    COUNTS_TIME_TRUSTED, COUNTS_TIME_FIELDS
} counts_time_t;

/* Events counted per thread where a shared counter would take a locked
 * instruction (and a line other threads write) at each: PyTorch's most
 * frequent allocator actions. They fill the line of the pages pointer
 * that every event reads. */
#define COUNTS_EVENTS 7

typedef struct counts_block {
    counts_page_t *_Atomic *_Atomic pages;  /* a page per 512 sites, or NULL */
    _Atomic uint64_t events[COUNTS_EVENTS];
    _Atomic size_t page_bytes;             /* of the pages and their directory */
    _Atomic uint64_t shim_time[COUNTS_TIME_FIELDS];  /* the shim's own time (selftime.h) */
    _Atomic int in_use;               /* claimed by a live thread */
    struct counts_block *next;         /* every block ever made, never freed */
    live_block_t live;                /* this thread's shares of the tracker's rows (live.h) */
} counts_block_t;

extern __thread counts_block_t *counts_mine __attribute__((tls_model("initial-exec")));

/* Claims this thread's block; returns it, or the shared block, which every
 * thread without one uses, when none can be had. */
counts_block_t *counts_block_first(void);

/* This thread's block, claimed when it has none, or the shared block.
 * Never NULL. */
static inline counts_block_t *counts_block(void)
{
    counts_block_t *b = counts_mine;
    return __builtin_expect(b != NULL, 1) ? b : counts_block_first();
}

/* Calls fn on every block, finished threads' and the shared one included. */
void counts_each(void (*fn)(counts_block_t *block, void *arg), void *arg);

/* b's page that holds site (< COUNTS_SITES), or NULL when b is NULL or has
 * none yet. Acquire loads: another thread's reader sees a page zeroed. */
static inline counts_page_t *counts_page(counts_block_t *b, uint32_t site)
{
    counts_page_t *_Atomic *dir = b ? atomic_load_explicit(&b->pages, memory_order_acquire) : NULL;
    return dir ? atomic_load_explicit(&dir[site / COUNTS_SITES_PER_PAGE], memory_order_acquire)
               : NULL;
}

/* Makes this thread's block's page for site and returns its share of the
 * site; NULL when memory is out, site is out of range, or b is
 * not this thread's block (the shared block has no pages). */
live_share_t *counts_site_share_first(counts_block_t *b, uint32_t site);

/* Block b's share of site, or NULL when it has none. With make
 * (only for b, this thread's own block), its page is made when missing. */
static inline live_share_t *counts_site_share(counts_block_t *b, uint32_t site, int make)
{
    counts_page_t *page = site < COUNTS_SITES ? counts_page(b, site) : NULL;
    if (__builtin_expect(page != NULL, 1))
        return &page->shares[site % COUNTS_SITES_PER_PAGE];
    return make ? counts_site_share_first(b, site) : NULL;
}

/* Claims this thread's block and adds add (one value per counts_time_t
 * field) to its shim time; when memory is out, adds atomically to a shared
 * block. */
void counts_time_add_first(const uint64_t add[COUNTS_TIME_FIELDS]);

/* Adds add, one value per counts_time_t field, to this thread's shim time. */
static inline void counts_time_add(const uint64_t add[COUNTS_TIME_FIELDS])
{
    counts_block_t *b = counts_mine;
    if (__builtin_expect(b == NULL, 0)) {
        counts_time_add_first(add);
        return;
    }
    for (int i = 0; i < COUNTS_TIME_FIELDS; i++)
        atomic_store_explicit(&b->shim_time[i],
                              atomic_load_explicit(&b->shim_time[i], memory_order_relaxed) + add[i],
                              memory_order_relaxed);
}

/* Counts one event of kind event (< COUNTS_EVENTS) in this thread's block,
 * or, when memory for one is out, in the shared block. */
static inline void counts_event_add(unsigned event)
{
    counts_block_t *b = counts_block();
    if (__builtin_expect(b == counts_mine, 1))
        atomic_store_explicit(&b->events[event],
                              atomic_load_explicit(&b->events[event], memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&b->events[event], 1, memory_order_relaxed);
}

/* The count of event, every thread's together: some moment's value while
 * threads count. */
uint64_t counts_event_sum(unsigned event);

/* One field of the shim's own time, summed over every thread. */
uint64_t counts_time_sum(counts_time_t field);

/* Bytes the blocks and site pages use. */
size_t counts_memory_bytes(void);

#endif
