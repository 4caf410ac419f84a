#include "live.h"
#include "bounded.h"
#include "counts.h"

#include <stddef.h>
#include <sys/mman.h>

/* A row's shared part: written only under its lock, by a move past a
 * reservation or a fold (its counts excepted, which any thread without a
 * share adds to atomically); its committed bytes read by live_move without
 * it. */
typedef struct live_row {
    _Atomic int lock;
    _Atomic int64_t committed;  /* live bytes, less every thread's delta */
    int64_t reserved;           /* the sum of every thread's reserve */
    _Atomic uint64_t peak, peak_time_ns;
    _Atomic int64_t at_peak;    /* committed at the last peak, when epoch is that peak's */
    _Atomic uint64_t epoch;
    _Atomic uint64_t counts[LIVE_COUNTS];  /* events of threads with no share of the row */
} __attribute__((aligned(64))) live_row_t;  /* two lines: rows move independently (a site's
                                              * 24 bytes of fallback counts moved here from
                                              * the tracker's site, which shrank by a line) */

static live_row_t fixed_rows[LIVE_ROWS];
static live_row_t *site_rows;          /* LIVE_SITES of them, touched as used */
static uint32_t estimate_row_id = UINT32_MAX;   /* the row live_move returns */
static _Atomic uint32_t epoch_row_id = UINT32_MAX; /* the row whose peaks start epochs */
static _Atomic uint64_t epoch;         /* the epoch row's new peaks so far */

int live_init(uint32_t epoch_row)
{
    void *p = mmap(NULL, sizeof *site_rows * LIVE_SITES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    site_rows = p;
    estimate_row_id = epoch_row;
    atomic_store(&epoch_row_id, epoch_row);
    return 0;
}

void live_set_epoch_row(uint32_t id)
{
    atomic_store_explicit(&epoch_row_id, id, memory_order_relaxed);
}

static int64_t load(_Atomic int64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void store(_Atomic int64_t *v, int64_t value)
{
    atomic_store_explicit(v, value, memory_order_relaxed);
}

/* A site's row exists once live_init succeeded; the tracker moves no site
 * before (it stays off when its init fails). */
static live_row_t *row_of(uint32_t id)
{
    return id < LIVE_ROWS ? &fixed_rows[id] : &site_rows[id - LIVE_ROWS];
}

/* Block b's share of row id; for a site, made on first use when b is this
 * thread's block. NULL when it has none (the row's moves are then made
 * under the row's lock). */
static inline live_share_t *share_of(counts_block_t *b, uint32_t id, int make)
{
    if (id < LIVE_ROWS)
        return &b->live.rows[id];
    return counts_site_share(b, id - LIVE_ROWS, make);
}

/* Saves a part's value as it was at the last peak, before its first change
 * since: the part is then known at that peak without a snapshot of all. */
static inline void stamp(_Atomic int64_t *value, _Atomic int64_t *at_peak, _Atomic uint64_t *part_epoch,
                  uint64_t now_epoch)
{
    if (atomic_load_explicit(part_epoch, memory_order_relaxed) == now_epoch)
        return;
    store(at_peak, load(value));
    atomic_store_explicit(part_epoch, now_epoch, memory_order_relaxed);
}

static inline void stamp_share(live_share_t *share, uint64_t now_epoch)
{
    stamp(&share->delta, &share->at_peak, &share->epoch, now_epoch);
}

static void stamp_row(live_row_t *row, uint64_t now_epoch)
{
    stamp(&row->committed, &row->at_peak, &row->epoch, now_epoch);
}

static uint64_t epoch_now(void)
{
    return atomic_load_explicit(&epoch, memory_order_acquire);
}

/* Moves a share to delta (a site's stamped first: only sites report what
 * they held at the peak); its high is kept for folds. */
static inline void move_share(uint32_t id, live_share_t *share, int64_t delta, uint64_t now_epoch)
{
    if (id >= LIVE_ROWS)
        stamp_share(share, now_epoch);
    store(&share->delta, delta);
    if (delta > share->high)
        share->high = delta;
}

/* Lets the share rise by size under its reserve when the row's headroom
 * covers the shortfall, granting half of what is left beside it so that
 * the next moves stay local: a lone thread soon holds most of the
 * headroom, and threads that share it are cut back to what they use at the
 * next fold. Caller holds the row's lock. Returns 1 when granted (and
 * moved). */
static int grant(live_row_t *row, uint32_t id, live_block_t *b, live_share_t *share, int64_t size)
{
    if (share == NULL)
        return 0;
    spin_lock(&b->lock);
    int64_t want = load(&share->delta) + size - share->reserve;
    if (want < 0)  /* a fold left more reserve than the move needs */
        want = 0;
    int64_t headroom = (int64_t)atomic_load_explicit(&row->peak, memory_order_relaxed)
                     - load(&row->committed) - row->reserved;
    int granted = want <= headroom;
    if (granted) {
        int64_t given = want + (headroom - want) / 2;
        share->reserve += given;
        row->reserved += given;
        move_share(id, share, load(&share->delta) + size, epoch_now());
    }
    spin_unlock(&b->lock);
    return granted;
}

typedef struct fold {
    live_row_t *row;
    uint32_t id;
    int keep;  /* 1: reserve what was used since the last fold; 0: nothing */
} fold_t;

/* Moves one block's delta into the committed bytes and resets its
 * reservation. A reserve of high - delta is what lets the thread climb
 * back to its recent high from where it now stands; it never exceeds the
 * reserve it replaces (high never passed it), so a fold never shrinks the
 * headroom. Both parts are stamped with one reading of the epoch: a GPU
 * peak made while the fold walks must find the delta in exactly one of
 * them. Caller holds the row's lock. */
static void fold_block(counts_block_t *tb, void *arg)
{
    const fold_t *f = arg;
    live_share_t *share = share_of(tb, f->id, 0);
    if (share == NULL)
        return;
    live_block_t *b = &tb->live;
    spin_lock(&b->lock);
    uint64_t now_epoch = epoch_now();
    stamp_row(f->row, now_epoch);
    stamp_share(share, now_epoch);
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

static void fold(live_row_t *row, uint32_t id, int keep)
{
    fold_t f = { row, id, keep };
    counts_each(fold_block, &f);
}

/* Adds size to the committed bytes (stamped first); returns the new value.
 * Caller holds the row's lock. */
static int64_t commit(live_row_t *row, int64_t size)
{
    stamp_row(row, epoch_now());
    int64_t live = load(&row->committed) + size;
    store(&row->committed, live);
    return live;
}

/* Raises the row's peak to live when it passes it; a new peak of the epoch
 * row starts a new epoch, after the peak is stored. Caller holds the row's
 * lock, so a peak's value and time move together. */
static void raise_peak(live_row_t *row, uint32_t id, int64_t live, uint64_t now_ns)
{
    if (live <= 0 || (uint64_t)live <= atomic_load_explicit(&row->peak, memory_order_relaxed))
        return;
    atomic_store_explicit(&row->peak, (uint64_t)live, memory_order_relaxed);
    atomic_store_explicit(&row->peak_time_ns, now_ns, memory_order_relaxed);
    if (id == atomic_load_explicit(&epoch_row_id, memory_order_relaxed))
        atomic_fetch_add_explicit(&epoch, 1, memory_order_release);
}

/* Adds n to a count: a relaxed load and store where shared is 0, for a
 * share, which only its block's lock holder writes; a read-modify-write
 * where it is 1, for a row's counts, which any thread may add to. */
static inline void bump(_Atomic uint64_t *count, uint64_t n, int shared)
{
    if (shared)
        atomic_fetch_add_explicit(count, n, memory_order_relaxed);
    else
        atomic_store_explicit(count, atomic_load_explicit(count, memory_order_relaxed) + n,
                              memory_order_relaxed);
}

static inline void count_event(_Atomic uint64_t *counts, live_event_t event, uint64_t size,
                               int shared)
{
    if (event == LIVE_ALLOC) {
        bump(&counts[LIVE_ALLOCATIONS], 1, shared);
        bump(&counts[LIVE_BYTES_ALLOCATED], size, shared);
    } else if (event == LIVE_FREE) {
        bump(&counts[LIVE_FREES], 1, shared);
    }
}

/* A move the thread's share cannot make alone: up past its reserve (or
 * with no share), granted more, or made on the committed bytes once every
 * share is folded in and every reservation taken back, which makes them the
 * row's exact live bytes; or down with no share. The event is counted here:
 * in the share (its site's page made just now), or in the row's counts
 * when the thread has no share of it. Rare (a new peak, a thread's first
 * move of a row), so out of line: inlined, it took cache lines of every
 * event's code. */
static __attribute__((cold, noinline)) void
move_locked(uint32_t id, counts_block_t *tb, live_share_t *share, live_event_t event,
            uint64_t size, uint64_t now_ns)
{
    live_row_t *row = row_of(id);
    int64_t bytes = event == LIVE_ALLOC ? (int64_t)size : -(int64_t)size;
    if (share != NULL) {
        spin_lock(&tb->live.lock);
        count_event(share->counts, event, size, 0);
        spin_unlock(&tb->live.lock);
    } else {
        count_event(row->counts, event, size, 1);
    }
    spin_lock(&row->lock);
    if (bytes < 0) {
        commit(row, bytes);
    } else if (!grant(row, id, &tb->live, share, bytes)) {
        int granted = 0;
        if (share != NULL && row->reserved > 0) {
            fold(row, id, 1);
            granted = grant(row, id, &tb->live, share, bytes);
        }
        if (!granted) {
            fold(row, id, 0);
            raise_peak(row, id, commit(row, bytes), now_ns);
        }
    }
    spin_unlock(&row->lock);
}

/* Moves this thread's shares of the rows ids[0..n) by one event, as far as
 * they can alone; returns a bit per row that must move under its row's
 * lock (no share yet, or up past its reserve), left uncounted. One loop
 * for every event: a loop compiled apart for each (fewer tests a row) ran
 * fewer instructions but put two loops' code in every pair's path, and the
 * caches' lines an event takes from the program cost more (cachegrind, a
 * pair from Python, one loop against three: 40 instructions more, 19 L1
 * instruction misses fewer).
 * Caller holds the block's lock. */
static unsigned move_shares(counts_block_t *tb, const uint32_t *ids, unsigned n,
                            live_event_t event, uint64_t size, uint64_t now_epoch)
{
    int up = event == LIVE_ALLOC;
    int64_t bytes = up ? (int64_t)size : -(int64_t)size;
    unsigned locked = 0;
    for (unsigned i = 0; i < n; i++) {
        live_share_t *share = share_of(tb, ids[i], 0);
        if (__builtin_expect(share == NULL, 0)) {
            locked |= 1u << i;
            continue;
        }
        int64_t delta = load(&share->delta) + bytes;
        if (__builtin_expect(up && delta > share->reserve, 0)) {
            locked |= 1u << i;
            continue;
        }
        count_event(share->counts, event, size, 0);
        move_share(ids[i], share, delta, now_epoch);
    }
    return locked;
}

/* A move down with a share is always local: it cannot make a peak, and a
 * delta below zero only makes the headroom look smaller until the next
 * fold. A site's first move makes its page of shares after the block's
 * lock is released (no allocation happens under a spinlock), and is made
 * under the row's lock, which counts the event there. */
uint64_t live_move(const uint32_t *ids, unsigned n, uint64_t size, live_event_t event,
                   uint64_t now_ns)
{
    counts_block_t *tb = counts_block();
    live_block_t *b = &tb->live;
    spin_lock(&b->lock);
    uint64_t now_epoch = epoch_now();  /* under the lock: a fold's stamps read it there too */
    /* Bit i: ids[i] moves (and is counted) under its row's lock. */
    unsigned locked = move_shares(tb, ids, n, event, size, now_epoch);
    spin_unlock(&b->lock);
    for (unsigned i = 0; __builtin_expect(locked != 0, 0); i++, locked >>= 1)
        if (locked & 1)
            move_locked(ids[i], tb, share_of(tb, ids[i], 1), event, size, now_ns);
    if (estimate_row_id >= LIVE_ROWS)
        return 0;
    int64_t v = load(&fixed_rows[estimate_row_id].committed) + load(&b->rows[estimate_row_id].delta);
    return v > 0 ? (uint64_t)v : 0;
}

typedef struct sum {
    uint32_t id;
    int at_peak;        /* 1: each part's value at the last peak */
    uint64_t now_epoch;
    int64_t total;
} sum_t;

/* The value of a part (of its delta, or of the committed bytes): now, or
 * at the last peak, which a part unchanged since still holds. */
static int64_t part(_Atomic int64_t *value, _Atomic int64_t *at_peak, _Atomic uint64_t *part_epoch,
                    const sum_t *s)
{
    if (s->at_peak && atomic_load_explicit(part_epoch, memory_order_relaxed) == s->now_epoch)
        return load(at_peak);
    return load(value);
}

static void add_share(counts_block_t *tb, void *arg)
{
    sum_t *s = arg;
    live_share_t *share = share_of(tb, s->id, 0);
    if (share != NULL)
        s->total += part(&share->delta, &share->at_peak, &share->epoch, s);
}

/* Under the row's lock so that no fold moves a delta into the committed
 * bytes while it is summed (it would count twice or not at all). A report
 * whose wait for the lock ended (bounded.h) sums without it: the parts are
 * atomics, and only a fold under way could be seen half done. */
static uint64_t sum_parts(uint32_t id, int at_peak)
{
    live_row_t *row = row_of(id);
    sum_t s = { id, at_peak, 0, 0 };
    int locked = bounded_spin_lock(&row->lock);
    s.now_epoch = epoch_now();
    s.total = part(&row->committed, &row->at_peak, &row->epoch, &s);
    counts_each(add_share, &s);
    if (locked)
        spin_unlock(&row->lock);
    return s.total > 0 ? (uint64_t)s.total : 0;
}

uint64_t live_bytes(uint32_t id)
{
    return sum_parts(id, 0);
}

uint64_t live_at_peak(uint32_t id)
{
    return sum_parts(id, 1);
}

typedef struct count_sum {
    uint32_t id;
    live_count_t field;
    uint64_t total;
} count_sum_t;

static void add_count(counts_block_t *tb, void *arg)
{
    count_sum_t *c = arg;
    live_share_t *share = share_of(tb, c->id, 0);
    if (share != NULL)
        c->total += atomic_load_explicit(&share->counts[c->field], memory_order_relaxed);
}

uint64_t live_count(uint32_t id, live_count_t field)
{
    count_sum_t c = { id, field, 0 };
    c.total = atomic_load_explicit(&row_of(id)->counts[field], memory_order_relaxed);
    counts_each(add_count, &c);
    return c.total;
}

/* Without the lock (a report that gave it up) the peak and its time may
 * be of two moments. */
uint64_t live_peak(uint32_t id, uint64_t *time_ns)
{
    live_row_t *row = row_of(id);
    int locked = bounded_spin_lock(&row->lock);
    uint64_t peak = atomic_load_explicit(&row->peak, memory_order_relaxed);
    if (time_ns != NULL)
        *time_ns = atomic_load_explicit(&row->peak_time_ns, memory_order_relaxed);
    if (locked)
        spin_unlock(&row->lock);
    return peak;
}
