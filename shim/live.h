/* live.h: the live bytes of the tracker's rows (the GPU, each kind, each
 * device) and their exact peaks, moved by each thread in its own block.
 *
 * An exact peak seems to need one shared sum that every event moves, and a
 * sum every thread writes is a cache line that crosses between cores at
 * every event: with 8 threads allocating, those lines cost more than the
 * rest of the shim together. Here each thread moves its own share of a row
 * with plain stores, within a reservation: the bytes committed to the row
 * plus every thread's reservation never pass the row's peak, so no set of
 * moves within reservations can make a new peak unseen. A move that would
 * pass its reservation takes the row's lock and asks for more of the
 * headroom left under the peak. When too little is left, every thread's
 * share is folded into the committed bytes and its reservation cut to what
 * it used since the last fold; when that still leaves too little, every
 * reservation is taken back, the committed bytes are then the row's exact
 * live bytes, and the move raises the peak under the lock as one shared
 * counter would. A program below its peak moves locally; one climbing past
 * it pays a walk over the threads' blocks per new peak. */
#ifndef GPULEAK_LIVE_H
#define GPULEAK_LIVE_H

#include <stdatomic.h>
#include <stdint.h>

#define LIVE_ROWS 72

/* One thread's share of one row. Only the block's lock holder writes it;
 * readers of the row's live bytes read delta without the lock. */
typedef struct live_share {
    _Atomic int64_t delta;  /* bytes moved since the last fold (frees make it negative) */
    int64_t reserve;        /* delta may rise to this without the row's lock */
    int64_t high;           /* highest delta since the last fold */
} live_share_t;

/* A thread's shares of every row (inside its tally block, tally.h). */
typedef struct live_block {
    _Atomic int lock;  /* the owner's moves, a fold's visit */
    live_share_t rows[LIVE_ROWS];
} live_block_t;

/* on_peak is called, under the row's lock, each time a row reaches a new
 * peak (the tracker stamps its sites there); it must not call back in. */
void live_init(void (*on_peak)(unsigned row));

/* Moves each of rows[0..n) (n <= 8, each below LIVE_ROWS) up, for an
 * allocation, or down by size bytes (below 2^62); now_ns is kept as the
 * time of a peak the move makes. */
void live_move(const unsigned *rows, unsigned n, uint64_t size, int up, uint64_t now_ns);

/* The row's live bytes: its committed bytes and every thread's share. Exact
 * when no thread moves it meanwhile; otherwise some moment's value. */
uint64_t live_bytes(unsigned row);

/* The committed bytes and this thread's share only: no lock and no walk,
 * for the timeline, which needs a value at every event. Exact with one
 * thread moving the row, never above the peak, and at a new peak the peak
 * itself. */
uint64_t live_estimate(unsigned row);

/* The row's peak, and in *time_ns (when not NULL) when it was reached. */
uint64_t live_peak(unsigned row, uint64_t *time_ns);

#endif
