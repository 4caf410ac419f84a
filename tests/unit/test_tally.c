/* test_tally.c: per-thread counts add up across threads, finished threads
 * included, and a finished thread's block is reused, not leaked. */
#include "suite.h"
#include "tally.h"

#include <pthread.h>

#define THREADS 8
#define ADDS 100000

static void *count_some(void *arg)
{
    unsigned row = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < ADDS; i++) {
        tally_add(row, TALLY_ALLOCATIONS, 1);
        tally_add(row, TALLY_BYTES_ALLOCATED, 3);
    }
    tally_add(row, TALLY_FREES, 7);
    return tally_mine;  /* the block this thread used */
}

static uint64_t run_threads(unsigned row, tally_block_t **blocks)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, count_some, (void *)(uintptr_t)row), 0);
    for (int i = 0; i < THREADS; i++) {
        void *block;
        pthread_join(t[i], &block);
        blocks[i] = block;
    }
    return tally_sum(row, TALLY_ALLOCATIONS);
}

START_TEST(sums_every_thread_finished_or_not)
{
    tally_block_t *blocks[THREADS];
    tally_add(5, TALLY_ALLOCATIONS, 2);  /* this thread's, still running */
    ck_assert_uint_eq(run_threads(5, blocks), 2 + (uint64_t)THREADS * ADDS);
    ck_assert_uint_eq(tally_sum(5, TALLY_BYTES_ALLOCATED), 3ull * THREADS * ADDS);
    ck_assert_uint_eq(tally_sum(5, TALLY_FREES), 7ull * THREADS);
    ck_assert_uint_eq(tally_sum(6, TALLY_ALLOCATIONS), 0);
}
END_TEST

START_TEST(finished_threads_hand_their_blocks_on)
{
    tally_block_t *first[THREADS], *second[THREADS];
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
        ck_assert_int_eq(tally_site_add(7, TALLY_FREES, 1), 0);
        ck_assert_int_eq(tally_site_add(TALLY_SITES - 1, TALLY_FREES, 2), 0);
    }
    return NULL;
}

START_TEST(site_counts_add_up_per_site)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, count_sites, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_eq(tally_site_sum(7, TALLY_FREES), 1000ull * THREADS);
    ck_assert_uint_eq(tally_site_sum(TALLY_SITES - 1, TALLY_FREES), 2000ull * THREADS);
    ck_assert_uint_eq(tally_site_sum(8, TALLY_FREES), 0);          /* a neighbour */
    ck_assert_uint_eq(tally_site_sum(7, TALLY_ALLOCATIONS), 0);    /* another field */
    ck_assert_uint_gt(tally_memory_bytes(), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tally");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, sums_every_thread_finished_or_not);
    tcase_add_test(tc, finished_threads_hand_their_blocks_on);
    tcase_add_test(tc, site_counts_add_up_per_site);
    suite_add_tcase(s, tc);
    return suite_run(s, 1);
}
