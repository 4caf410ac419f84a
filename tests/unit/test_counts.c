/* test_counts.c: per-thread counts (kept in each block's shares, live.h)
 * add up across threads, finished threads included, and a finished
 * thread's block is reused, not leaked, even when the thread counts again
 * while it exits. */
#include "suite.h"
#include "live.h"
#include "counts.h"

#include <pthread.h>

#define THREADS 8
#define ADDS 100000

static void count(uint32_t row, live_event_t event, uint64_t size)
{
    live_move(&row, 1, size, event, 0);
}

static void *count_some(void *arg)
{
    uint32_t row = (uint32_t)(uintptr_t)arg;
    for (int i = 0; i < ADDS; i++)
        count(row, LIVE_ALLOC, 3);
    for (int i = 0; i < 7; i++)
        count(row, LIVE_FREE, 3);
    count(row, LIVE_DROP, 3);  /* gone without a free: counts nothing */
    return counts_mine;  /* the block this thread used */
}

static uint64_t run_threads(unsigned row, counts_block_t **blocks)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, count_some, (void *)(uintptr_t)row), 0);
    for (int i = 0; i < THREADS; i++) {
        void *block;
        pthread_join(t[i], &block);
        blocks[i] = block;
    }
    return live_count(row, LIVE_ALLOCATIONS);
}

START_TEST(sums_every_thread_finished_or_not)
{
    counts_block_t *blocks[THREADS];
    ck_assert_int_eq(live_init(0), 0);
    count(5, LIVE_ALLOC, 1);  /* this thread's, still running */
    count(5, LIVE_ALLOC, 1);
    ck_assert_uint_eq(run_threads(5, blocks), 2 + (uint64_t)THREADS * ADDS);
    ck_assert_uint_eq(live_count(5, LIVE_BYTES_ALLOCATED), 2 + 3ull * THREADS * ADDS);
    ck_assert_uint_eq(live_count(5, LIVE_FREES), 7ull * THREADS);
    ck_assert_uint_eq(live_count(6, LIVE_ALLOCATIONS), 0);
    ck_assert_uint_eq(live_bytes(5), 2 + 3ull * THREADS * (ADDS - 8));
}
END_TEST

START_TEST(finished_threads_hand_their_blocks_on)
{
    counts_block_t *first[THREADS], *second[THREADS];
    ck_assert_int_eq(live_init(0), 0);
    run_threads(1, first);
    uint64_t total = run_threads(1, second);
    ck_assert_uint_eq(total, 2ull * THREADS * ADDS);
    /* Threads that run after others finished take their blocks: no new
     * block per thread for a program that keeps starting threads. */
    int reused = 0;
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < THREADS; j++)
            reused += second[i] == first[j];
    ck_assert_int_gt(reused, 0);
    for (int i = 0; i < THREADS; i++)
        ck_assert_ptr_nonnull(second[i]);
}
END_TEST

static void *count_sites(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        count(LIVE_SITE(7), LIVE_ALLOC, 1);
        count(LIVE_SITE(COUNTS_SITES - 1), LIVE_ALLOC, 2);
        count(LIVE_SITE(COUNTS_SITES - 1), LIVE_ALLOC, 2);
    }
    return NULL;
}

START_TEST(site_counts_add_up_per_site)
{
    pthread_t t[THREADS];
    ck_assert_int_eq(live_init(0), 0);
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, count_sites, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_eq(live_count(LIVE_SITE(7), LIVE_ALLOCATIONS), 1000ull * THREADS);
    ck_assert_uint_eq(live_count(LIVE_SITE(COUNTS_SITES - 1), LIVE_ALLOCATIONS), 2000ull * THREADS);
    ck_assert_uint_eq(live_count(LIVE_SITE(COUNTS_SITES - 1), LIVE_BYTES_ALLOCATED), 4000ull * THREADS);
    ck_assert_uint_eq(live_count(LIVE_SITE(8), LIVE_ALLOCATIONS), 0);   /* a neighbour */
    ck_assert_uint_eq(live_count(LIVE_SITE(7), LIVE_FREES), 0);         /* another field */
    ck_assert_uint_gt(counts_memory_bytes(), 0);
}
END_TEST

/* A destructor that counts in every pass of a thread's exit, as a library
 * that frees GPU memory from its own thread-local destructor would. */
static pthread_key_t late_key;

static void count_late(void *pass)
{
    uintptr_t n = (uintptr_t)pass;
    count(9, LIVE_FREE, 1);
    count(LIVE_SITE(9), LIVE_FREE, 1);  /* no share of a site: the row's own count */
    if (n < 8)  /* ask for another pass, as long as glibc gives one */
        pthread_setspecific(late_key, (void *)(n + 1));
}

static void *count_then_exit_late(void *arg)
{
    (void)arg;
    count(9, LIVE_ALLOC, 16);
    count(LIVE_SITE(9), LIVE_ALLOC, 16);
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}

/* Counts made while a thread exits, after its block was handed on, are
 * kept, and do not take a block that is then never handed on. */
START_TEST(counts_during_thread_exit_keep_no_block)
{
    ck_assert_int_eq(live_init(0), 0);
    count(9, LIVE_DROP, 0);   /* this thread's block, and tally's key, first */
    ck_assert_int_eq(pthread_key_create(&late_key, count_late), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, count_then_exit_late, NULL), 0);
    pthread_join(t, NULL);
    size_t after_first = counts_memory_bytes();
    uint64_t late = live_count(9, LIVE_FREES);
    ck_assert_uint_ge(late, 2);  /* the destructor ran in several passes */
    ck_assert_uint_le(late, 16);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_create(&t, NULL, count_then_exit_late, NULL), 0);
        pthread_join(t, NULL);
    }
    ck_assert_uint_eq(counts_memory_bytes(), after_first);  /* the one block, reused */
    ck_assert_uint_eq(live_count(9, LIVE_ALLOCATIONS), 5);
    ck_assert_uint_eq(live_count(9, LIVE_FREES), 5 * late);
    ck_assert_uint_eq(live_count(LIVE_SITE(9), LIVE_ALLOCATIONS), 5);
    ck_assert_uint_eq(live_count(LIVE_SITE(9), LIVE_FREES), 5 * late);
    ck_assert_uint_eq(live_bytes(9), 5 * (16 - late));
    ck_assert_uint_eq(live_bytes(LIVE_SITE(9)), 5 * (16 - late));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("counts");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, sums_every_thread_finished_or_not);
    tcase_add_test(tc, finished_threads_hand_their_blocks_on);
    tcase_add_test(tc, site_counts_add_up_per_site);
    tcase_add_test(tc, counts_during_thread_exit_keep_no_block);
    suite_add_tcase(s, tc);
    return suite_run(s, 1);
}
