/* live.h: live bytes and their exact peaks, and the event counts, for the
 * tracker's rows (the GPU, each kind, each device) and for every site, moved
 * by each thread in its own block.
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
 * counter would. A row below its peak moves locally; one climbing past it
 * pays a walk over the threads' blocks per new peak.
 *
 * A share also counts the row's allocations, frees and bytes allocated
 * that its thread made: counts that only grow need no shared line either,
 * and kept beside the share's live bytes they cost no second lookup. A
 * reader sums every thread's, and the row's own counts, which take the
 * events of threads that have no share of the row.
 *
 * What each site held at the epoch row's (the GPU's, or the tensors') last peak is kept too,
 * without a snapshot at every peak: each part of a row (its committed
 * bytes, each thread's share) saves its value at its first change after a
 * peak, so the sum of what the parts saved, or hold when unchanged since,
 * is the site's value at that peak. */
#ifndef GPULEAK_LIVE_H
#define GPULEAK_LIVE_H

#include <stdatomic.h>
#include <stdint.h>

#include "live_share.h"

/* What an event does to a row: an allocation counts and moves up, a free
 * counts and moves down, a drop (memory gone with its context, never
 * freed) only moves down. */
typedef enum live_event { LIVE_FREE, LIVE_ALLOC, LIVE_DROP } live_event_t;

/* Sets up the sites' rows; epoch_row is the row whose peaks live_at_peak
 * reports the moment of, and the row live_move returns. Returns 0, or -1
 * when memory for them is lacking. */
int live_init(uint32_t epoch_row);

/* Makes id the row whose peaks live_at_peak reports the moment of (live_move
 * still returns live_init's row). Exact only when called before id first
 * moves: a peak it reached before would not have started an epoch. Used
 * once PyTorch's tensors are seen, so that what was live at the peak means
 * at the tensors' peak, not the driver's. */
void live_set_epoch_row(uint32_t id);

/* Applies event, of size bytes (below 2^62), to each of the rows ids[0..n)
 * (n <= 8, each a fixed row or a LIVE_SITE); now_ns is kept as the time of
 * a peak the move makes. The rows move in order: a peak of a later row
 * finds the earlier ones moved. Returns live_init's row's live bytes as this
 * thread sees them after the move, its committed bytes and this thread's
 * share, with no lock and no walk (the timeline needs a value at every
 * event): never above the peak, at a new peak the peak itself, otherwise
 * off by what other threads moved since their last fold (low by their
 * allocations, high by their frees, a finished thread's block included),
 * so exact only when this thread is the one that ever moved the row. */
uint64_t live_move(const uint32_t *ids, unsigned n, uint64_t size, live_event_t event,
                   uint64_t now_ns);

/* The row's live bytes: its committed bytes and every thread's share. Exact
 * when no thread moves it meanwhile; otherwise some moment's value. A
 * report that gave up the row's lock (bounded.h) sums without it, and a
 * fold under way may then count a share twice or not at all. */
uint64_t live_bytes(uint32_t id);

/* The row's count of field, every thread's together: some moment's value
 * while threads count. */
uint64_t live_count(uint32_t id, live_count_t field);

/* The row's peak, and in *time_ns (when not NULL) when it was reached;
 * read without the row's lock when a report gave it up (bounded.h). */
uint64_t live_peak(uint32_t id, uint64_t *time_ns);

/* A site's live bytes at the epoch row's last peak (0 before its first);
 * fixed rows keep no such value. */
uint64_t live_at_peak(uint32_t site_id);

#endif
