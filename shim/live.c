#include "live.h"
#include "spin.h"
#include "tally.h"

#include <stddef.h>

/* A row's shared part: written only under its lock, by a move past its
 * reservation or a fold; read by live_estimate without it. */
typedef struct live_row {
    _Atomic int lock;
    _Atomic int64_t committed;  /* live bytes, less every thread's delta */
    int64_t reserved;           /* the sum of every thread's reserve */
    _Atomic uint64_t peak, peak_time_ns;
} __attribute__((aligned(64))) live_row_t;  /* a line each: rows move independently */

static live_row_t rows[LIVE_ROWS];
static void (*peak_hook)(unsigned row);

void live_init(void (*on_peak)(unsigned row))
{
    peak_hook = on_peak;
}

static live_block_t *my_block(void)
{
    return &tally_block()->live;
}

static int64_t load(_Atomic int64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void store(_Atomic int64_t *v, int64_t value)
{
    atomic_store_explicit(v, value, memory_order_relaxed);
}

/* Lets delta rise by size under reserve when the row's headroom covers the
 * shortfall, granting half of what is left beside it so that the next
 * moves stay local: a lone thread soon holds most of the headroom, and
 * threads that share it are cut back to what they use at the next fold.
 * Caller holds the row's lock. Returns 1 when granted (and moved). */
static int grant(live_row_t *row, live_block_t *b, unsigned index, int64_t size)
{
    live_share_t *share = &b->rows[index];
    spin_lock(&b->lock);
    int64_t delta = load(&share->delta) + size;
    int64_t want = delta - share->reserve;
    int64_t headroom = (int64_t)atomic_load_explicit(&row->peak, memory_order_relaxed)
                     - load(&row->committed) - row->reserved;
    int granted = want <= headroom;
    if (granted) {
        int64_t given = want + (headroom - want) / 2;
        share->reserve += given;
        row->reserved += given;
        store(&share->delta, delta);
        if (delta > share->high)
            share->high = delta;
    }
    spin_unlock(&b->lock);
    return granted;
}

typedef struct fold {
    live_row_t *row;
    unsigned index;
    int keep;  /* 1: reserve what was used since the last fold; 0: nothing */
} fold_t;

/* Moves one block's delta into the committed bytes and resets its
 * reservation. A reserve of high - delta is what lets the thread climb
 * back to its recent high from where it now stands; it never exceeds the
 * reserve it replaces (high never passed it), so the headroom never
 * shrinks by a fold. */
static void fold_block(tally_block_t *tb, void *arg)
{
    const fold_t *f = arg;
    live_block_t *b = &tb->live;
    live_share_t *share = &b->rows[f->index];
    spin_lock(&b->lock);
    int64_t delta = load(&share->delta);
    int64_t reserve = f->keep ? share->high - delta : 0;
    if (reserve < 0)
        reserve = 0;
    store(&f->row->committed, load(&f->row->committed) + delta);
    f->row->reserved += reserve - share->reserve;
    share->reserve = reserve;
    share->high = 0;
    store(&share->delta, 0);
    spin_unlock(&b->lock);
}

static void fold(live_row_t *row, unsigned index, int keep)
{
    fold_t f = { row, index, keep };
    tally_each(fold_block, &f);
}

/* A move up the thread's reservation does not cover: granted more, or
 * made exact after the folds, raising the peak when it passes it. */
static void move_past_reserve(unsigned index, live_block_t *b, int64_t size, uint64_t now_ns)
{
    live_row_t *row = &rows[index];
    spin_lock(&row->lock);
    if (grant(row, b, index, size))
        goto out;
    if (row->reserved > 0) {
        fold(row, index, 1);
        if (grant(row, b, index, size))
            goto out;
    }
    fold(row, index, 0);
    int64_t live = load(&row->committed) + size;
    store(&row->committed, live);
    if (live > 0 && (uint64_t)live > atomic_load_explicit(&row->peak, memory_order_relaxed)) {
        atomic_store_explicit(&row->peak, (uint64_t)live, memory_order_relaxed);
        atomic_store_explicit(&row->peak_time_ns, now_ns, memory_order_relaxed);
        if (peak_hook != NULL)
            peak_hook(index);
    }
out:
    spin_unlock(&row->lock);
}

/* A move down is always local: it cannot make a peak, and a delta below
 * zero only makes the headroom look smaller until the next fold. */
void live_move(const unsigned *indexes, unsigned n, uint64_t size, int up, uint64_t now_ns)
{
    live_block_t *b = my_block();
    int64_t bytes = (int64_t)size;
    unsigned past = 0;  /* bit i: indexes[i] needs the row's lock */
    spin_lock(&b->lock);
    for (unsigned i = 0; i < n; i++) {
        live_share_t *share = &b->rows[indexes[i]];
        int64_t delta = load(&share->delta) + (up ? bytes : -bytes);
        if (up && delta > share->reserve) {
            past |= 1u << i;
            continue;
        }
        store(&share->delta, delta);
        if (delta > share->high)
            share->high = delta;
    }
    spin_unlock(&b->lock);
    for (unsigned i = 0; past != 0; i++, past >>= 1)
        if (past & 1)
            move_past_reserve(indexes[i], b, bytes, now_ns);
}

static void add_delta(tally_block_t *tb, void *arg)
{
    int64_t *sum = arg;
    sum[0] += load(&tb->live.rows[sum[1]].delta);
}

/* Under the row's lock so that no fold moves a delta into the committed
 * bytes while it is summed (it would count twice or not at all). */
uint64_t live_bytes(unsigned index)
{
    live_row_t *row = &rows[index];
    int64_t sum[2] = { 0, (int64_t)index };
    spin_lock(&row->lock);
    sum[0] = load(&row->committed);
    tally_each(add_delta, sum);
    spin_unlock(&row->lock);
    return sum[0] > 0 ? (uint64_t)sum[0] : 0;
}

uint64_t live_estimate(unsigned index)
{
    int64_t v = load(&rows[index].committed) + load(&my_block()->rows[index].delta);
    return v > 0 ? (uint64_t)v : 0;
}

uint64_t live_peak(unsigned index, uint64_t *time_ns)
{
    live_row_t *row = &rows[index];
    spin_lock(&row->lock);
    uint64_t peak = atomic_load_explicit(&row->peak, memory_order_relaxed);
    if (time_ns != NULL)
        *time_ns = atomic_load_explicit(&row->peak_time_ns, memory_order_relaxed);
    spin_unlock(&row->lock);
    return peak;
}
