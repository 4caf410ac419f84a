/* test_bounded.c: a report's lock waits end (a lock held for good is given
 * up within its bound, and counted), every other thread's do not, and the
 * budget caps one report's waits together. */
#include "suite.h"
#include "bounded.h"

#include <stdint.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

START_TEST(a_held_spin_lock_is_given_up_within_its_bound)
{
    _Atomic int lock = 1;  /* held by a thread that never lets go */
    bounded_begin();
    uint64_t start = now_ns();
    ck_assert_int_eq(bounded_spin_lock(&lock), 0);
    uint64_t took = now_ns() - start;
    ck_assert_uint_ge(took, BOUNDED_LOCK_NS);
    ck_assert_uint_lt(took, BOUNDED_LOCK_NS * 5);
    ck_assert_uint_eq(bounded_given_up(), 1);
    ck_assert_uint_eq(bounded_end(), 1);
}
END_TEST

START_TEST(a_free_lock_is_taken_and_counts_nothing)
{
    _Atomic int lock = 0;
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    bounded_begin();
    ck_assert_int_eq(bounded_spin_lock(&lock), 1);
    ck_assert_int_eq(lock, 1);
    spin_unlock(&lock);
    ck_assert_int_eq(bounded_mutex_lock(&mutex), 1);
    pthread_mutex_unlock(&mutex);
    ck_assert_uint_eq(bounded_end(), 0);
}
END_TEST

/* The holder: this thread itself, as when a signal's handler calls exit()
 * in the thread it interrupted inside the shim. */
START_TEST(a_mutex_this_thread_holds_is_given_up)
{
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mutex);
    bounded_begin();
    ck_assert_int_eq(bounded_mutex_lock(&mutex), 0);
    ck_assert_uint_eq(bounded_end(), 1);
    pthread_mutex_unlock(&mutex);
}
END_TEST

START_TEST(the_budget_caps_all_waits_together)
{
    _Atomic int lock = 1;
    bounded_begin();
    uint64_t start = now_ns();
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(bounded_spin_lock(&lock), 0);
    uint64_t took = now_ns() - start;
    ck_assert_uint_lt(took, BOUNDED_TOTAL_NS + 10 * BOUNDED_LOCK_NS);
    ck_assert_uint_eq(bounded_end(), 100);
}
END_TEST

static _Atomic int released;

static void *release_later(void *lock)
{
    nanosleep(&(struct timespec){ 0, 3 * BOUNDED_LOCK_NS }, NULL);
    atomic_store(&released, 1);
    spin_unlock(lock);
    return NULL;
}

START_TEST(without_patience_a_wait_lasts_as_long_as_it_takes)
{
    _Atomic int lock = 1;
    pthread_t t;
    pthread_create(&t, NULL, release_later, &lock);
    ck_assert_int_eq(bounded_spin_lock(&lock), 1);  /* three bounds later */
    ck_assert_int_eq(atomic_load(&released), 1);
    pthread_join(t, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bounded");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_held_spin_lock_is_given_up_within_its_bound);
    tcase_add_test(tc, a_free_lock_is_taken_and_counts_nothing);
    tcase_add_test(tc, a_mutex_this_thread_holds_is_given_up);
    tcase_add_test(tc, the_budget_caps_all_waits_together);
    tcase_add_test(tc, without_patience_a_wait_lasts_as_long_as_it_takes);
    suite_add_tcase(s, tc);
    return suite_run(s, 1);
}
