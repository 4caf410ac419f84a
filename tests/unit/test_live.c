/* test_live.c: live bytes moved per thread within reservations keep every
 * row's peak exact: a new high is never missed nor overstated, whichever
 * thread's moves make it, and no byte is lost to a fold or a thread's exit. */
#include "suite.h"
#include "live.h"
#include "counts.h"

#include <pthread.h>

#define THREADS 8

static void up(uint32_t row, uint64_t size) { live_move(&row, 1, size, LIVE_ALLOC, 0); }
static void down(uint32_t row, uint64_t size) { live_move(&row, 1, size, LIVE_FREE, 0); }

/* What a plain sum gives for the epoch row and two sites beside it, each
 * allocation in one of the sites and in the row, as the tracker moves
 * them: values, peaks, the sites' values at the row's last peak, and their
 * counts; and what the last move returned, the row as its thread saw it. */
typedef struct model {
    uint64_t row, row_peak;
    uint64_t site[2], site_peak[2], site_at_peak[2];
    uint64_t allocations[2], frees[2], bytes_allocated[2];
    uint64_t estimate;
} model_t;

enum { ROW = 3, SITE0 = 7 };  /* the epoch row; the sites are SITE0 and SITE0 + 1 */

static void model_move(model_t *m, unsigned site, uint64_t size, int up_move)
{
    uint32_t ids[2] = { LIVE_SITE(SITE0 + site), ROW };
    m->estimate = live_move(ids, 2, size, up_move ? LIVE_ALLOC : LIVE_FREE, 0);
    if (up_move) {
        m->allocations[site]++;
        m->bytes_allocated[site] += size;
    } else {
        m->frees[site]++;
    }
    m->row = up_move ? m->row + size : m->row - size;
    m->site[site] = up_move ? m->site[site] + size : m->site[site] - size;
    if (m->site[site] > m->site_peak[site])
        m->site_peak[site] = m->site[site];
    if (m->row > m->row_peak) {
        m->row_peak = m->row;
        m->site_at_peak[0] = m->site[0];
        m->site_at_peak[1] = m->site[1];
    }
}

/* The counts, which only grow and never move between parts. */
static void model_check_counts(const model_t *m)
{
    SUITE_EQ_U64(live_count(ROW, LIVE_ALLOCATIONS), m->allocations[0] + m->allocations[1]);
    SUITE_EQ_U64(live_count(ROW, LIVE_FREES), m->frees[0] + m->frees[1]);
    for (unsigned i = 0; i < 2; i++) {
        SUITE_EQ_U64(live_count(LIVE_SITE(SITE0 + i), LIVE_ALLOCATIONS), m->allocations[i]);
        SUITE_EQ_U64(live_count(LIVE_SITE(SITE0 + i), LIVE_FREES), m->frees[i]);
        SUITE_EQ_U64(live_count(LIVE_SITE(SITE0 + i), LIVE_BYTES_ALLOCATED),
                     m->bytes_allocated[i]);
    }
}

static void model_check(const model_t *m)
{
    SUITE_EQ_U64(live_bytes(ROW), m->row);
    SUITE_EQ_U64(live_peak(ROW, NULL), m->row_peak);
    SUITE_LE_U64(m->estimate, m->row_peak);
    model_check_counts(m);
    for (unsigned i = 0; i < 2; i++) {
        SUITE_EQ_U64(live_bytes(LIVE_SITE(SITE0 + i)), m->site[i]);
        SUITE_EQ_U64(live_peak(LIVE_SITE(SITE0 + i), NULL), m->site_peak[i]);
        SUITE_EQ_U64(live_at_peak(LIVE_SITE(SITE0 + i)), m->site_at_peak[i]);
    }
}

/* One thread, a walk up and down of mixed sizes: after every move what the
 * rows hold equals the plain sum, and the estimate is exact. */
START_TEST(one_thread_follows_a_plain_sum)
{
    ck_assert_int_eq(live_init(ROW), 0);
    model_t m = {0};
    uint64_t held[64] = {0};
    unsigned seed = 12345, n = 0, site_of[64];
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        if (n < 64 && ((seed >> 16) % 3 != 0 || n == 0)) {
            held[n] = 1 + (seed >> 8) % 5000;
            site_of[n] = (seed >> 28) & 1;
            model_move(&m, site_of[n], held[n], 1);
            n++;
        } else {
            unsigned i = (seed >> 12) % n;
            model_move(&m, site_of[i], held[i], 0);
            held[i] = held[n - 1];
            site_of[i] = site_of[--n];
        }
        model_check(&m);
        ck_assert_uint_eq(m.estimate, m.row);
    }
    model_check_counts(&m);
    ck_assert_uint_eq(live_bytes(ROW + 1), 0);  /* a neighbour row is untouched */
}
END_TEST

static void *claim_block(void *arg)
{
    (void)arg;
    return counts_block();
}

/* A block of its own for each call: the claiming thread has finished, and
 * the block is kept marked in use so that the next thread makes a new one
 * instead of taking this one back. */
static counts_block_t *new_block(void)
{
    pthread_t t;
    counts_block_t *b;
    ck_assert_int_eq(pthread_create(&t, NULL, claim_block, NULL), 0);
    ck_assert_int_eq(pthread_join(t, (void **)&b), 0);
    atomic_store(&b->in_use, 1);
    return b;
}

/* Every fold walks the blocks through counts_each (linked with
 * --wrap=counts_each): when armed, another thread makes a GPU peak just as
 * the walk starts, the moment a fold's stamps must agree on. */
void __real_counts_each(void (*fn)(counts_block_t *block, void *arg), void *arg);
static int peak_armed;

static void *make_gpu_peak(void *arg)
{
    (void)arg;
    up(ROW, 1u << 30);
    return NULL;
}

void __wrap_counts_each(void (*fn)(counts_block_t *block, void *arg), void *arg)
{
    if (peak_armed) {
        peak_armed = 0;
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, make_gpu_peak, NULL), 0);
        pthread_join(t, NULL);
    }
    __real_counts_each(fn, arg);
}

/* A site holds 40 bytes (10 committed, 30 in one block's share) when the
 * GPU peaks during the fold another block's move starts: its value at that
 * peak is 40, each share counted once, in the committed bytes or in the
 * share, never both. */
START_TEST(a_peak_during_a_fold_counts_each_share_once)
{
    ck_assert_int_eq(live_init(ROW), 0);
    counts_block_t *own = counts_mine, *b1 = new_block(), *b2 = new_block();
    const uint32_t site = LIVE_SITE(SITE0);
    counts_mine = b1;
    up(site, 100);
    down(site, 100);
    counts_mine = b2;
    up(site, 10);    /* committed 10, the site's peak 100 */
    counts_mine = b1;
    up(site, 30);    /* granted: b1's share holds 30 */
    peak_armed = 1;
    counts_mine = b2;
    up(site, 80);    /* past every reservation: the folds walk, the GPU peaks */
    counts_mine = own;
    ck_assert_int_eq(peak_armed, 0);
    ck_assert_uint_eq(live_peak(ROW, NULL), 1u << 30);
    ck_assert_uint_eq(live_bytes(site), 120);
    ck_assert_uint_eq(live_at_peak(site), 40);
}
END_TEST

/* Many threads' blocks, moved in one thread in a random order, so that
 * every interleaving of grants, folds and moves past the peak is checked
 * against a plain sum after each move; frees often come from another
 * block than the allocation's, as on a thread that frees what another
 * allocated. */
START_TEST(interleaved_blocks_follow_a_plain_sum)
{
    enum { BLOCKS = 6, HELD = 256 };
    ck_assert_int_eq(live_init(ROW), 0);
    counts_block_t *blocks[BLOCKS], *own = counts_mine;
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = new_block();
        for (int j = 0; j < i; j++)
            ck_assert_ptr_ne(blocks[i], blocks[j]);
    }
    model_t m = {0};
    uint64_t held[HELD];
    unsigned seed = 99, n = 0, owner[HELD], site_of[HELD];
    for (int step = 0; step < 400000; step++) {
        seed = seed * 1103515245u + 12345u;
        unsigned b = (seed >> 24) % BLOCKS;
        counts_mine = blocks[b];
        /* Phases of climbing and falling, so the peak is passed again and
         * again from below with reservations handed out. */
        int climbing = (step / 3000) % 2 == 0;
        if (n < HELD && (n == 0 || (seed >> 8) % 8 < (climbing ? 5u : 3u))) {
            held[n] = 1 + (seed >> 4) % 3000;
            owner[n] = b;
            site_of[n] = (seed >> 2) & 1;
            model_move(&m, site_of[n], held[n], 1);
            n++;
        } else {
            /* Mostly the block's own allocation, at times another's. */
            unsigned i = (seed >> 12) % n;
            for (unsigned k = 0; k < n && (seed >> 20) % 4 != 0 && owner[i] != b; k++)
                i = (i + 1) % n;
            model_move(&m, site_of[i], held[i], 0);
            held[i] = held[n - 1];
            owner[i] = owner[n - 1];
            site_of[i] = site_of[--n];
        }
        model_check(&m);
    }
    model_check_counts(&m);
    counts_mine = own;
}
END_TEST

static pthread_barrier_t barrier;
static const uint32_t shared_rows[2] = { LIVE_SITE(5), 70 };

/* Thread i warms up below its share (which hands it reservations), then
 * all threads hold a larger amount at once, then warm up again. */
static void *warm_then_climb(void *arg)
{
    uint64_t i = (uintptr_t)arg, small = 1000 * (i + 1), big = 7000 * (i + 1);
    for (int rep = 0; rep < 3; rep++) {
        for (int k = 0; k < 20000; k++) {
            live_move(shared_rows, 2, small, LIVE_ALLOC, 0);
            live_move(shared_rows, 2, small, LIVE_FREE, 0);
        }
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);   /* the main thread has read the peak */
        live_move(shared_rows, 2, big, LIVE_ALLOC, 0);
        pthread_barrier_wait(&barrier);   /* every thread holds its big share */
        pthread_barrier_wait(&barrier);   /* the main thread has read the rows */
        live_move(shared_rows, 2, big, LIVE_FREE, 0);
    }
    return NULL;
}

/* The moment every thread holds its big share is the only time the rows
 * reach sum(big); the peak must be exactly that, although each thread
 * moved its own share without a shared write for most of the run. */
START_TEST(a_peak_all_threads_make_together_is_exact)
{
    ck_assert_int_eq(live_init(70), 0);
    pthread_t t[THREADS];
    uint64_t all_big = 0, all_small = 0;
    for (uint64_t i = 0; i < THREADS; i++) {
        all_big += 7000 * (i + 1);
        all_small += 1000 * (i + 1);
    }
    ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, THREADS + 1), 0);
    for (uintptr_t i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, warm_then_climb, (void *)i), 0);
    for (int rep = 0; rep < 3; rep++) {
        pthread_barrier_wait(&barrier);
        ck_assert_uint_le(live_peak(shared_rows[0], NULL), (rep ? all_big : all_small));
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
        for (int r = 0; r < 2; r++) {
            ck_assert_uint_eq(live_bytes(shared_rows[r]), all_big);
            ck_assert_uint_eq(live_peak(shared_rows[r], NULL), all_big);
        }
        ck_assert_uint_eq(live_at_peak(shared_rows[0]), all_big);
        pthread_barrier_wait(&barrier);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int r = 0; r < 2; r++) {
        ck_assert_uint_eq(live_bytes(shared_rows[r]), 0);
        ck_assert_uint_eq(live_peak(shared_rows[r], NULL), all_big);
    }
}
END_TEST

static void *climb(void *arg)
{
    for (int k = 0; k < 1000; k++)
        up(9, (uintptr_t)arg);
    return NULL;
}

static void *descend(void *arg)
{
    for (int k = 0; k < 1000; k++)
        down(9, (uintptr_t)arg);
    return NULL;
}

static void run_one(void *(*fn)(void *), uintptr_t size)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, fn, (void *)size), 0);
    pthread_join(t, NULL);
}

/* Bytes one thread adds and another, later, takes away balance, and what a
 * finished thread left in its block still counts (as allocations a thread
 * made and never freed do). */
START_TEST(other_threads_frees_and_finished_threads_count)
{
    ck_assert_int_eq(live_init(9), 0);
    run_one(climb, 64);
    ck_assert_uint_eq(live_bytes(9), 64000);
    ck_assert_uint_eq(live_peak(9, NULL), 64000);
    run_one(climb, 64);
    ck_assert_uint_eq(live_bytes(9), 128000);
    run_one(descend, 64);
    run_one(descend, 64);
    ck_assert_uint_eq(live_bytes(9), 0);
    up(9, 100);  /* this thread, with blocks left by the others */
    ck_assert_uint_eq(live_bytes(9), 100);
    ck_assert_uint_eq(live_peak(9, NULL), 128000);
}
END_TEST

/* Threads moving a site at random (each making its page of shares), each
 * within its own bound and back to zero: nothing is lost or counted twice,
 * and the peak stays within the bounds. */
static void *wander(void *arg)
{
    uint64_t i = (uintptr_t)arg, bound = 4096 * (i + 1), held = 0;
    unsigned seed = (unsigned)i * 7919u + 1;
    for (int k = 0; k < 50000; k++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t size = 1 + (seed >> 10) % 1024;
        if ((seed >> 20) & 1 && held + size <= bound) {
            up(LIVE_SITE(11), size);
            held += size;
        } else if (held >= size) {
            down(LIVE_SITE(11), size);
            held -= size;
        }
    }
    down(LIVE_SITE(11), held);
    return NULL;
}

START_TEST(wandering_threads_lose_nothing)
{
    ck_assert_int_eq(live_init(11), 0);
    pthread_t t[THREADS];
    uint64_t bounds = 0;
    for (uintptr_t i = 0; i < THREADS; i++) {
        bounds += 4096 * (i + 1);
        ck_assert_int_eq(pthread_create(&t[i], NULL, wander, (void *)i), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_eq(live_bytes(LIVE_SITE(11)), 0);
    ck_assert_uint_le(live_peak(LIVE_SITE(11), NULL), bounds);
    ck_assert_uint_ge(live_peak(LIVE_SITE(11), NULL), 4096);
}
END_TEST

/* The peak's time is the time of the move that made it. */
START_TEST(the_peak_keeps_its_time)
{
    ck_assert_int_eq(live_init(2), 0);
    uint32_t row = 2;
    live_move(&row, 1, 10, LIVE_ALLOC, 111);
    live_move(&row, 1, 10, LIVE_FREE, 222);
    live_move(&row, 1, 5, LIVE_ALLOC, 333);    /* below the peak: the time stays */
    uint64_t when = 0;
    ck_assert_uint_eq(live_peak(row, &when), 10);
    ck_assert_uint_eq(when, 111);
    live_move(&row, 1, 6, LIVE_ALLOC, 444);    /* 11: a new peak */
    ck_assert_uint_eq(live_peak(row, &when), 11);
    ck_assert_uint_eq(when, 444);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("live");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_thread_follows_a_plain_sum);
    tcase_add_test(tc, interleaved_blocks_follow_a_plain_sum);
    tcase_add_test(tc, a_peak_during_a_fold_counts_each_share_once);
    tcase_add_test(tc, a_peak_all_threads_make_together_is_exact);
    tcase_add_test(tc, other_threads_frees_and_finished_threads_count);
    tcase_add_test(tc, wandering_threads_lose_nothing);
    tcase_add_test(tc, the_peak_keeps_its_time);
    suite_add_tcase(s, tc);
    return suite_run(s, 1);
}
