/* live_share.h: a thread's share of a row of live bytes (live.h), the
 * type that each thread's block of counts (counts.h) holds, apart so that counts.h
 * needs nothing of live.h's functions, which use counts.h. */
#ifndef GPULEAK_LIVE_SHARE_H
#define GPULEAK_LIVE_SHARE_H

#include <stdatomic.h>
#include <stdint.h>

#define LIVE_ROWS 72                    /* the tracker's fixed rows */
#define LIVE_SITES ((1u << 20) + 1)     /* site ids 0 to 2^20, as the stack depot's */
#define LIVE_SITE(site) (LIVE_ROWS + (uint32_t)(site))  /* a site's row id */

typedef enum live_count {
    LIVE_ALLOCATIONS,
    LIVE_FREES,
    LIVE_BYTES_ALLOCATED,
    LIVE_COUNTS
} live_count_t;

/* One thread's share of one row, a cache line. Only the block's lock
 * holder writes it; readers read delta and counts without the lock. */
typedef struct live_share {
    _Atomic int64_t delta;    /* bytes moved since the last fold (frees make it negative) */
    int64_t reserve;          /* delta may rise to this without the row's lock */
    int64_t high;             /* highest delta since the last fold */
    _Atomic int64_t at_peak;  /* delta at the last peak, when epoch is that peak's */
    _Atomic uint64_t epoch;
    _Atomic uint64_t counts[LIVE_COUNTS];  /* this thread's events of the row */
} __attribute__((aligned(64))) live_share_t;

_Static_assert(sizeof(live_share_t) == 64, "a share is one cache line");

/* A thread's lock and its shares of the fixed rows (inside its block
 * of counts, counts.h; its shares of sites are in its pages). */
typedef struct live_block {
    _Atomic int lock;  /* the owner's moves, a fold's visit */
    live_share_t rows[LIVE_ROWS];
} live_block_t;

#endif
