/* Unit tests for tracker.c: counts, peaks, teardown, unknown frees, and
 * exact totals under concurrent threads. */
#include "suite.h"
#include "clock.h"
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "timeline.h"
#include "tracker.h"

static int initialised;

static void setup(void)
{
    if (!initialised) {
        ck_assert_int_eq(tracker_init(tracker_sample), 0);
        initialised = 1;
    }
}

/* Each test uses its own site ids and devices, since the tracker is global. */
static void free_key(key_space_t space, uint64_t key, int freed)
{
    tracker_pending_t pending;
    tracker_free_begin(space, key, &pending);
    tracker_free_end(&pending, freed);
}

START_TEST(alloc_then_free_balances_site_and_kind)
{
    totals_t before, after;
    tracker_kind_totals(REPORT_KIND_managed, &before);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_managed, 0x1000, 100, 3, NULL, 11), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_managed, 0x2000, 50, 3, NULL, 11), 0);
    site_stats_t s;
    ck_assert_int_eq(tracker_site(11, &s), 0);
    ck_assert_uint_eq(s.live_bytes, 150);
    ck_assert_uint_eq(s.live_allocations, 2);
    free_key(SPACE_DEVICE, 0x1000, 1);
    ck_assert_int_eq(tracker_site(11, &s), 0);
    ck_assert_uint_eq(s.live_bytes, 50);
    ck_assert_uint_eq(s.peak_live_bytes, 150);
    ck_assert_uint_eq(s.allocations, 2);
    ck_assert_uint_eq(s.frees, 1);
    ck_assert_int_eq(s.kind, REPORT_KIND_managed);
    ck_assert_int_eq(s.device, 3);
    tracker_kind_totals(REPORT_KIND_managed, &after);
    ck_assert_uint_eq(after.allocations - before.allocations, 2);
    ck_assert_uint_eq(after.frees - before.frees, 1);
    ck_assert_uint_eq(after.live_bytes - before.live_bytes, 50);
    totals_t dev;
    ck_assert_int_eq(tracker_device_totals(3, &dev), 0);
    ck_assert_uint_eq(dev.peak_bytes, 150);
    free_key(SPACE_DEVICE, 0x2000, 1);
}
END_TEST

START_TEST(key_spaces_do_not_collide)
{
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_vmm, 0x5000, 10, 0, NULL, 12), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0x5000, 20, 0, NULL, 13), 0);
    free_key(SPACE_VMM, 0x5000, 1);
    site_stats_t vmm, dev;
    tracker_site(12, &vmm);
    tracker_site(13, &dev);
    ck_assert_uint_eq(vmm.live_bytes, 0);
    ck_assert_uint_eq(dev.live_bytes, 20);
    free_key(SPACE_DEVICE, 0x5000, 1);
}
END_TEST

START_TEST(unknown_free_is_counted_not_fatal)
{
    uint64_t before = tracker_unknown_frees();
    free_key(SPACE_HOST, 0xdead0000, 1);
    free_key(SPACE_HOST, 0xdead0010, 0);
    ck_assert_uint_eq(tracker_unknown_frees() - before, 2);
}
END_TEST

START_TEST(refused_free_keeps_allocation_live)
{
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_host, 0x7000, 64, 0, NULL, 14), 0);
    free_key(SPACE_HOST, 0x7000, 0);
    site_stats_t s;
    tracker_site(14, &s);
    ck_assert_uint_eq(s.live_allocations, 1);
    ck_assert_uint_eq(s.frees, 0);
    free_key(SPACE_HOST, 0x7000, 1);
    tracker_site(14, &s);
    ck_assert_uint_eq(s.live_allocations, 0);
    ck_assert_uint_eq(s.frees, 1);
}
END_TEST

/* A free the driver refuses while the address was handed out again (the
 * free raced an allocation on another thread): the newer allocation stands,
 * and the older one is gone, not left as live bytes nothing can free. */
START_TEST(refused_free_of_a_reused_address_leaves_only_the_newer)
{
    totals_t before, after;
    tracker_kind_totals(REPORT_KIND_device, &before);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0x41000, 100, 0, NULL, 41), 0);
    tracker_pending_t pending;
    tracker_free_begin(SPACE_DEVICE, 0x41000, &pending);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0x41000, 300, 0, NULL, 41), 0);
    tracker_free_end(&pending, 0);
    site_stats_t s;
    tracker_site(41, &s);
    ck_assert_uint_eq(s.live_bytes, 300);
    ck_assert_uint_eq(s.live_allocations, 1);
    free_key(SPACE_DEVICE, 0x41000, 1);
    tracker_site(41, &s);
    ck_assert_uint_eq(s.live_bytes, 0);
    ck_assert_uint_eq(s.live_allocations, 0);
    tracker_kind_totals(REPORT_KIND_device, &after);
    ck_assert_uint_eq(after.live_bytes, before.live_bytes);
}
END_TEST

START_TEST(reused_address_replaces_stale_record)
{
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0x9000, 8, 0, NULL, 15), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0x9000, 16, 0, NULL, 16), 0);
    site_stats_t old, fresh;
    tracker_site(15, &old);
    tracker_site(16, &fresh);
    ck_assert_uint_eq(old.live_allocations, 0);
    ck_assert_uint_eq(old.frees, 1);
    ck_assert_uint_eq(fresh.live_bytes, 16);
    free_key(SPACE_DEVICE, 0x9000, 1);
}
END_TEST

START_TEST(failure_is_recorded_not_live)
{
    totals_t before, after;
    tracker_kind_totals(REPORT_KIND_array, &before);
    tracker_failure(REPORT_KIND_array, 1 << 20, 2, 0, 17);
    site_stats_t s;
    tracker_site(17, &s);
    ck_assert_uint_eq(s.failures, 1);
    ck_assert_uint_eq(s.failed_bytes, 1 << 20);
    ck_assert_int_eq(s.last_failure, 2);
    ck_assert_uint_eq(s.live_allocations, 0);
    tracker_kind_totals(REPORT_KIND_array, &after);
    ck_assert_uint_eq(after.failures - before.failures, 1);
    ck_assert_uint_eq(after.live_bytes, before.live_bytes);
}
END_TEST

START_TEST(teardown_moves_only_that_context)
{
    static int ctx_a, ctx_b;
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0xa000, 100, 5, &ctx_a, 18), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_host, 0xa000, 10, 5, &ctx_a, 18), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0xb000, 200, 5, &ctx_b, 19), 0);
    ck_assert_uint_eq(tracker_teardown(&ctx_a, -1, TEARDOWN_CTX_DESTROY), 2);
    site_stats_t a, b;
    tracker_site(18, &a);
    tracker_site(19, &b);
    ck_assert_uint_eq(a.teardown_allocations, 2);
    ck_assert_uint_eq(a.teardown_bytes, 110);
    ck_assert_uint_eq(a.live_allocations, 0);
    ck_assert_int_eq(a.teardown_reason, TEARDOWN_CTX_DESTROY);
    ck_assert_uint_eq(b.live_bytes, 200);
    ck_assert_uint_eq(tracker_teardown(NULL, 5, TEARDOWN_PRIMARY_RESET), 1);
    tracker_site(19, &b);
    ck_assert_uint_eq(b.teardown_bytes, 200);
}
END_TEST

/* Enough records to make every shard's table grow many times: each key is
 * found after growth, frees and teardown find theirs, and the memory the
 * tables report stays under 100 bytes a live record. */
START_TEST(tables_grow_and_keep_every_record)
{
    enum { N = 200000 };
    static int ctx;
    size_t memory_before = tracker_memory_bytes();
    for (uint64_t i = 0; i < N; i++)
        ck_assert_int_eq(tracker_alloc(REPORT_KIND_managed, 0x7000000000ull + i * 512, 3, 7, &ctx, 40), 0);
    size_t per_record = (tracker_memory_bytes() - memory_before) / N;
    ck_assert_msg(per_record < 100, "%zu bytes a record", per_record);
    for (uint64_t i = 0; i < N; i += 2)
        free_key(SPACE_DEVICE, 0x7000000000ull + i * 512, 1);
    site_stats_t st;
    tracker_site(40, &st);
    ck_assert_uint_eq(st.live_allocations, N / 2);
    ck_assert_uint_eq(st.live_bytes, 3ull * N / 2);
    uint64_t before = tracker_unknown_frees();
    free_key(SPACE_DEVICE, 0x7000000000ull, 1);  /* freed already */
    ck_assert_uint_eq(tracker_unknown_frees() - before, 1);
    ck_assert_uint_eq(tracker_teardown(&ctx, -1, TEARDOWN_CTX_DESTROY), N / 2);
    tracker_site(40, &st);
    ck_assert_uint_eq(st.live_allocations, 0);
    ck_assert_uint_eq(st.teardown_allocations, N / 2);
    ck_assert_uint_eq(tracker_teardown(&ctx, -1, TEARDOWN_CTX_DESTROY), 0);
}
END_TEST

START_TEST(gpu_peak_is_exact_and_excludes_host)
{
    totals_t t0, t1;
    tracker_totals(&t0);
    uint64_t base = t0.live_bytes;
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0xc000, 1000000, 0, NULL, 20), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_pool, 0xd000, 2000000, 0, NULL, 20), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_host, 0xe000, 50000000, 0, NULL, 21), 0);
    free_key(SPACE_DEVICE, 0xc000, 1);
    free_key(SPACE_DEVICE, 0xd000, 1);
    free_key(SPACE_HOST, 0xe000, 1);
    tracker_totals(&t1);
    ck_assert_uint_eq(t1.live_bytes, base);
    ck_assert_uint_ge(t1.peak_bytes, base + 3000000);
    if (t0.peak_bytes < base + 3000000)
        ck_assert_uint_eq(t1.peak_bytes, base + 3000000);
    ck_assert_uint_ne(t1.peak_time_ns, 0);
}
END_TEST

/* The GPU row counts its own events; its totals must be those of every
 * kind but host and tensor together (a tensor lies inside a segment the
 * driver kinds already count), whatever mix of events the kinds saw (the
 * tracker is global: other tests' events are in both sides too). */
START_TEST(gpu_totals_are_the_gpu_kinds_together)
{
    static int ctx;
    totals_t before;
    tracker_totals(&before);
    for (uint64_t i = 0; i < 40; i++) {
        alloc_kind_t kind = (alloc_kind_t)(i % REPORT_KIND_COUNT);
        uint64_t key = 0x5000000000ull + i * 0x1000;
        ck_assert_int_eq(tracker_alloc(kind, key, 100 + i, 10 + (int)(i % 3), i % 4 ? NULL : &ctx,
                                       50 + (uint32_t)(i % 5)), 0);
        if (i % 3 == 0)
            free_key(kind == REPORT_KIND_host ? SPACE_HOST : kind == REPORT_KIND_vmm ? SPACE_VMM
                     : kind == REPORT_KIND_array ? SPACE_ARRAY : kind == REPORT_KIND_tensor ? SPACE_TENSOR
                     : SPACE_DEVICE, key, 1);
    }
    tracker_failure(REPORT_KIND_pool, 4096, TRACKER_OUT_OF_MEMORY, 10, 50);
    tracker_failure(REPORT_KIND_host, 4096, TRACKER_OUT_OF_MEMORY, 10, 51);
    tracker_failure(REPORT_KIND_tensor, 4096, TRACKER_OUT_OF_MEMORY, 10, 52);
    ck_assert_uint_gt(tracker_teardown(&ctx, -1, TEARDOWN_CTX_DESTROY), 0);

    totals_t gpu, sum = {0};
    tracker_totals(&gpu);
    uint64_t all_allocations = 0;
    for (int k = 0; k < REPORT_KIND_COUNT; k++) {
        totals_t t;
        tracker_kind_totals((alloc_kind_t)k, &t);
        all_allocations += t.allocations;
        if (k == REPORT_KIND_host || k == REPORT_KIND_tensor) {
            ck_assert_uint_gt(t.allocations, 0);
            continue;
        }
        sum.allocations += t.allocations;
        sum.frees += t.frees;
        sum.failures += t.failures;
        sum.bytes_allocated += t.bytes_allocated;
        sum.live_bytes += t.live_bytes;
        sum.live_allocations += t.live_allocations;
        sum.teardown_bytes += t.teardown_bytes;
        sum.teardown_allocations += t.teardown_allocations;
    }
    ck_assert_uint_gt(sum.allocations, 0);
    ck_assert_uint_eq(gpu.allocations, sum.allocations);
    ck_assert_uint_eq(gpu.frees, sum.frees);
    ck_assert_uint_eq(gpu.failures, before.failures + 1);  /* the host's and tensor's are not the GPU's */
    ck_assert_uint_eq(gpu.failures, sum.failures);
    ck_assert_uint_eq(gpu.bytes_allocated, sum.bytes_allocated);
    ck_assert_uint_eq(gpu.live_bytes, sum.live_bytes);
    ck_assert_uint_eq(gpu.live_allocations, sum.live_allocations);
    ck_assert_uint_eq(gpu.teardown_bytes, sum.teardown_bytes);
    ck_assert_uint_eq(gpu.teardown_allocations, sum.teardown_allocations);
    ck_assert_uint_eq(tracker_allocation_count(), all_allocations);
}
END_TEST

#define THREADS 8
#define PER_THREAD 20000

static void *churn(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg << 32;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        if (tracker_alloc(REPORT_KIND_pool, base + i * 256, 256, 1, NULL, 30) != 0)
            return (void *)1;
        if (i % 10 != 0)
            free_key(SPACE_DEVICE, base + i * 256, 1);
    }
    return NULL;
}

static void *free_three(void *arg)
{
    for (uint64_t k = 0; k < 3; k++)
        free_key(SPACE_DEVICE, (uintptr_t)arg + 0x100 * k, 1);
    return NULL;
}

/* Sleeps past the timeline's interval, so that the next event takes a point. */
static void sleep_past_interval(void)
{
    uint64_t ns = timeline_interval_ns() + 10000000;  /* the coarse clock ticks every 1-4 ms */
    nanosleep(&(struct timespec){ .tv_sec = (time_t)(ns / 1000000000),
                                  .tv_nsec = (long)(ns % 1000000000) }, NULL);
}

/* Another thread's frees leave a negative share in its block, which this
 * thread's cheap estimate of the GPU's live bytes does not see: a high in
 * the timeline must come from the live bytes themselves, never from that
 * estimate (which here reads 60 bytes over what is live). */
START_TEST(timeline_highs_are_never_above_what_was_live)
{
    const uint64_t key = 0x7000000;
    sleep_past_interval();
    free_key(SPACE_DEVICE, key, 1);  /* an unknown free: takes no point, moves nothing */
    totals_t t;
    tracker_totals(&t);
    uint64_t base = t.live_bytes;
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, key, 100, 9, NULL, 40), 0);
    free_key(SPACE_DEVICE, key, 1);
    sleep_past_interval();    /* the next event starts a new interval */
    for (uint64_t k = 0; k < 3; k++)
        ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, key + 0x10 + 0x100 * k, 20, 9, NULL, 40), 0);
    pthread_t other;
    ck_assert_int_eq(pthread_create(&other, NULL, free_three, (void *)(uintptr_t)(key + 0x10)), 0);
    pthread_join(other, NULL);
    sleep_past_interval();    /* this allocation ends that interval, whose high was base + 60 */
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, key + 0x20, 10, 9, NULL, 40), 0);
    timeline_point_t points[TIMELINE_POINTS];
    size_t n = timeline_points(clock_coarse_ns(), points, TIMELINE_POINTS);
    ck_assert_uint_ge(n, 3);
    ck_assert_uint_le(points[n - 2].max_bytes, base + 60);
    ck_assert_uint_eq(points[n - 2].bytes, base + 10);
    /* The estimate still reads 60 high, as the allocation above found by
     * its sum: within that clock tick these two note no high of their own
     * (in the next, one sums again); either way none above what was live. */
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, key + 0x30, 5, 9, NULL, 40), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, key + 0x40, 5, 9, NULL, 40), 0);
    sleep_past_interval();
    free_key(SPACE_DEVICE, key + 0x40, 1);
    n = timeline_points(clock_coarse_ns(), points, TIMELINE_POINTS);
    ck_assert_uint_le(points[n - 2].max_bytes, base + 20);
    ck_assert_uint_ge(points[n - 2].max_bytes, base + 10);
    ck_assert_uint_eq(points[n - 1].bytes, base + 15);
    free_key(SPACE_DEVICE, key + 0x30, 1);
    free_key(SPACE_DEVICE, key + 0x20, 1);
}
END_TEST

START_TEST(concurrent_counts_are_exact)
{
    pthread_t threads[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        ck_assert_int_eq(pthread_create(&threads[t], NULL, churn, (void *)(t + 100)), 0);
    for (int t = 0; t < THREADS; t++) {
        void *rc;
        pthread_join(threads[t], &rc);
        ck_assert_ptr_null(rc);
    }
    site_stats_t s;
    tracker_site(30, &s);
    ck_assert_uint_eq(s.allocations, THREADS * PER_THREAD);
    ck_assert_uint_eq(s.frees, THREADS * PER_THREAD * 9 / 10);
    ck_assert_uint_eq(s.live_allocations, THREADS * PER_THREAD / 10);
    ck_assert_uint_eq(s.live_bytes, (uint64_t)THREADS * PER_THREAD / 10 * 256);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("tracker");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, alloc_then_free_balances_site_and_kind);
    tcase_add_test(tc, key_spaces_do_not_collide);
    tcase_add_test(tc, unknown_free_is_counted_not_fatal);
    tcase_add_test(tc, refused_free_keeps_allocation_live);
    tcase_add_test(tc, refused_free_of_a_reused_address_leaves_only_the_newer);
    tcase_add_test(tc, reused_address_replaces_stale_record);
    tcase_add_test(tc, failure_is_recorded_not_live);
    tcase_add_test(tc, teardown_moves_only_that_context);
    tcase_add_test(tc, gpu_peak_is_exact_and_excludes_host);
    tcase_add_test(tc, gpu_totals_are_the_gpu_kinds_together);
    tcase_add_test(tc, tables_grow_and_keep_every_record);
    tcase_add_test(tc, concurrent_counts_are_exact);
    tcase_add_test(tc, timeline_highs_are_never_above_what_was_live);
    suite_add_tcase(suite, tc);
    return suite_run(suite, 0);
}
