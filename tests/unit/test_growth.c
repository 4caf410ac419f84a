/* Unit tests for the growth rule (growth_evaluate) on synthetic series, and
 * for the timeline's bounded, decimating buffer. */
#include "suite.h"
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "growth.h"
#include "timeline.h"

#define N 40

static uint64_t values[N], times[N], allocs[N];

/* Samples every 100 ms, 1000 allocations apart, values from shape(i). */
static void fill(uint64_t (*shape)(int, unsigned *), unsigned seed)
{
    for (int i = 0; i < N; i++) {
        values[i] = shape(i, &seed);
        times[i] = (uint64_t)i * 100000000ull;
        allocs[i] = (uint64_t)i * 1000;
    }
}

static growth_finding_t evaluate(void)
{
    growth_finding_t g;
    growth_evaluate(values, times, allocs, N, &g);
    return g;
}

static uint64_t linear(int i, unsigned *s) { (void)s; return 1000000 + (uint64_t)i * 65536; }
static uint64_t sawtooth(int i, unsigned *s) { (void)s; return (uint64_t)(i % 4) * 1048576; }
static uint64_t startup_step(int i, unsigned *s) { (void)s; return i < 3 ? (uint64_t)i << 20 : 500u << 20; }
static uint64_t plateau(int i, unsigned *s) { (void)s; (void)i; return 8u << 20; }
static uint64_t leak_on_sawtooth(int i, unsigned *s) { (void)s; return (uint64_t)(i % 4) * 262144 + (uint64_t)i * 131072; }
static uint64_t rise_then_shutdown(int i, unsigned *s) { (void)s; return i < N - 3 ? (uint64_t)i << 20 : 0; }
static uint64_t noise(int i, unsigned *s)
{
    (void)i;
    *s = *s * 1103515245u + 12345u;
    return (64u << 20) + ((*s >> 8) % (4u << 20));
}

START_TEST(linear_rise_is_growth)
{
    fill(linear, 0);
    growth_finding_t g = evaluate();
    ck_assert_int_eq(g.grew, 1);
    /* Baseline at a fifth of the run (sample 8), high point at the end. */
    ck_assert_uint_eq(g.bytes_gained, (uint64_t)(N - 1 - 8) * 65536);
    ck_assert(g.steadiness > 0.99);
    ck_assert(g.bytes_per_second > 0);
    ck_assert(g.bytes_per_1k_allocations > 65535 && g.bytes_per_1k_allocations < 65537);
}
END_TEST

START_TEST(sawtooth_is_not_growth)
{
    fill(sawtooth, 0);
    ck_assert_int_eq(evaluate().grew, 0);
}
END_TEST

START_TEST(startup_step_is_not_growth)
{
    fill(startup_step, 0);
    growth_finding_t g = evaluate();
    ck_assert_int_eq(g.grew, 0);
    ck_assert_uint_eq(g.bytes_gained, 0);
}
END_TEST

START_TEST(plateau_is_not_growth)
{
    fill(plateau, 0);
    ck_assert_int_eq(evaluate().grew, 0);
}
END_TEST

START_TEST(noise_is_not_growth)
{
    for (unsigned seed = 1; seed <= 2000; seed++) {
        fill(noise, seed);
        ck_assert_msg(evaluate().grew == 0, "noise seed %u called growth", seed);
    }
}
END_TEST

START_TEST(leak_under_sawtooth_is_growth)
{
    fill(leak_on_sawtooth, 0);
    ck_assert_int_eq(evaluate().grew, 1);
}
END_TEST

START_TEST(shutdown_frees_do_not_hide_growth)
{
    fill(rise_then_shutdown, 0);
    growth_finding_t g = evaluate();
    ck_assert_int_eq(g.grew, 1);
    ck_assert_uint_eq(g.high_bytes, (uint64_t)(N - 4) << 20);
}
END_TEST

START_TEST(short_series_is_not_judged)
{
    fill(linear, 0);
    growth_finding_t g;
    growth_evaluate(values, times, allocs, 5, &g);
    ck_assert_int_eq(g.grew, 0);
    growth_evaluate(values, times, allocs, 1, &g);
    ck_assert_int_eq(g.grew, 0);
}
END_TEST

/* A leak once an epoch that begins late: flat for most of the run, then
 * six epochs of two samples each (every level held to the next sample).
 * The three floors miss it (the first two are the same); the held rises
 * do not. */
static uint64_t late_epochs(int i, unsigned *s)
{
    (void)s;
    return (64u << 20) + (i < 28 ? 0 : (uint64_t)((i - 28) / 2 + 1) * (4u << 20));
}

START_TEST(once_an_epoch_is_growth_however_late)
{
    fill(late_epochs, 0);
    growth_finding_t g = evaluate();
    ck_assert_int_eq(g.grew, 1);
    ck_assert_uint_eq(g.bytes_gained, 6u * (4u << 20));
    /* Four epochs are not enough on their own. */
    growth_evaluate(values, times, allocs, N - 4, &g);
    ck_assert_int_eq(g.grew, 0);
}
END_TEST

static uint64_t staircase(int i, unsigned *s) { (void)s; return (uint64_t)(i / 2 + 1) << 20; }

/* Whether a run can be judged at all is known from its times and
 * allocations: below that, no series is a finding, however plainly it
 * rises (so a report may say "not judged" instead of an empty list that
 * reads "nothing grew"); at it, a plain rise is one. Samples 100 ms apart
 * put the baseline at the first sample past a fifth, so 13 samples are the
 * fewest: 10 from the baseline on. */
START_TEST(a_run_too_short_to_judge_is_known_and_finds_nothing)
{
    uint64_t (*const shapes[])(int, unsigned *) = { linear, staircase, late_epochs,
                                                    leak_on_sawtooth };
    size_t fewest = 0;
    for (size_t n = 1; n <= N; n++) {
        fill(linear, 0);
        int judgeable = growth_judgeable(times, allocs, n);
        if (judgeable && fewest == 0)
            fewest = n;
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0] && !judgeable; k++) {
            fill(shapes[k], 0);
            growth_finding_t g;
            growth_evaluate(values, times, allocs, n, &g);
            ck_assert_msg(g.grew == 0, "shape %zu of %zu samples, not judgeable, grew", k, n);
        }
    }
    ck_assert_uint_eq(fewest, 13);
    fill(linear, 0);
    growth_finding_t g;
    growth_evaluate(values, times, allocs, fewest, &g);
    ck_assert_int_eq(g.grew, 1);
    ck_assert_int_eq(growth_judgeable(times, allocs, 0), 0);
}
END_TEST

/* A run of a few milliseconds, timed by a coarse clock: its samples share
 * the first tick but for the last few. By time, every one of them but
 * those would be start-up; by allocations the rise is plain. The same
 * timing with a level series stays no finding, and so does a start-up
 * that filled in steps then held through a long run. */
START_TEST(a_run_within_a_few_clock_ticks_is_judged_by_allocations)
{
    for (int i = 0; i < 20; i++) {
        values[i] = (uint64_t)(i + 1) << 20;
        times[i] = i < 14 ? 0 : 4000000;
        allocs[i] = (uint64_t)i * 8;
    }
    growth_finding_t g;
    growth_evaluate(values, times, allocs, 20, &g);
    ck_assert_int_eq(g.grew, 1);
    for (int i = 0; i < 20; i++)
        values[i] = 8u << 20;
    growth_evaluate(values, times, allocs, 20, &g);
    ck_assert_int_eq(g.grew, 0);
    for (int i = 0; i < 20; i++) {
        values[i] = (uint64_t)(i < 6 ? i + 1 : 6) << 20;
        times[i] = (uint64_t)i * 100000000ull;
    }
    growth_evaluate(values, times, allocs, 20, &g);
    ck_assert_int_eq(g.grew, 0);
}
END_TEST

/* A cache that fills in six held steps just after the baseline and then
 * keeps its size for the rest of the run (more than half of it): bounded,
 * not a leak. The floors do not call it growth (the last two thirds are
 * level); neither must the held rises, whose last one is long past. */
static uint64_t filled_then_level(int i, unsigned *s)
{
    (void)s;
    int level = i < 8 ? 0 : (i - 8) / 2 + 1;
    return (64u << 20) + (uint64_t)(level < 6 ? level : 6) * (4u << 20);
}

START_TEST(a_cache_that_filled_early_and_stayed_is_not_growth)
{
    fill(filled_then_level, 0);
    ck_assert_int_eq(evaluate().grew, 0);
}
END_TEST

/* A loop's temporaries sampled at a phase that drifts late in the run:
 * the live bytes climb in held steps (two samples at each phase), as a
 * leak once an epoch does, then wrap to nothing at the last sample. Not a
 * leak: the memory went back down. */
static uint64_t aliased_sawtooth(int i, unsigned *s)
{
    return i == N - 1 ? 0 : late_epochs(i, s);
}

START_TEST(a_drifting_phase_that_wraps_is_not_growth)
{
    fill(aliased_sawtooth, 0);
    ck_assert_int_eq(evaluate().grew, 0);
}
END_TEST

/* A rise in single steps over six samples (each a new size, none held) is
 * what noise can do by chance: not judged without the three floors. */
START_TEST(a_short_rise_without_held_levels_is_not_judged)
{
    fill(linear, 0);
    growth_finding_t g;
    growth_evaluate(values, times, allocs, 8, &g);
    ck_assert_int_eq(g.grew, 0);
}
END_TEST

/* Short series of noise: the held rises alone must not make growth. */
START_TEST(short_noise_is_not_growth)
{
    for (unsigned seed = 1; seed <= 2000; seed++)
        for (size_t n = 6; n <= 12; n++) {
            fill(noise, seed);
            growth_finding_t g;
            growth_evaluate(values, times, allocs, n, &g);
            ck_assert_msg(g.grew == 0, "noise seed %u of %zu samples called growth", seed, n);
        }
}
END_TEST

/* A reader that takes spin_ns of real time a site, and counts the
 * checkpoints (each reads site 0 first). */
static uint64_t spin_ns, checkpoints_taken;

static uint64_t slow_site(uint32_t site)
{
    if (site == 0)
        checkpoints_taken++;
    for (uint64_t until = clock_monotonic_ns() + spin_ns; clock_monotonic_ns() < until;) {
    }
    return site;
}

static uint64_t no_allocations(void) { return 0; }

/* Notes every 10 us of the caller's clock for 200 ms, checkpoints due every
 * 1 ms; returns how many were taken. */
static uint64_t checkpoints_over_200ms(uint64_t site_spin_ns)
{
    spin_ns = site_spin_ns;
    checkpoints_taken = 0;
    growth_init(0, 1000000, slow_site);
    for (uint64_t t = 0; t < 200000000; t += 10000)
        growth_note(t, no_allocations, 99);
    return checkpoints_taken;
}

/* Cheap checkpoints come at the interval (1, then 2, then 4 ms as the 64
 * fill and halve: about 114 in 200 ms); ones that take 1 ms (100 sites at
 * 10 us) wait 19 times as long, whatever the interval says (but after the
 * first, whose cost is the first touch's: one more). */
START_TEST(costly_checkpoints_wait_in_proportion)
{
    uint64_t cheap = checkpoints_over_200ms(0);
    ck_assert_uint_ge(cheap, 50);  /* about 114; fewer only on a machine so loaded that 100 reads take 50 us */
    uint64_t costly = checkpoints_over_200ms(10000);
    ck_assert_uint_le(costly, 200 / 19 + 2);
    ck_assert_uint_ge(costly, 3);
}
END_TEST

static uint64_t first_made;

/* The first checkpoint's read costs 3 ms of this thread's CPU (the first
 * touch of the shim's code and tables, on a real run); later ones nothing. */
static uint64_t slow_first_site(uint32_t site)
{
    if (site == 0 && checkpoints_taken++ == 0)
        for (uint64_t until = clock_monotonic_ns() + 3000000; clock_monotonic_ns() < until;) {
        }
    return site;
}

static uint64_t first_allocations(void) { return first_made; }

/* A hundred steps right after the start, within one tick of the coarse
 * clock (as a short script's loop): checkpoints by the events made. The
 * first checkpoint's cost is not the next ones': waiting 19 times it held
 * every checkpoint of the loop back, and the run was not judged. */
START_TEST(a_costly_first_checkpoint_holds_no_burst_back)
{
    checkpoints_taken = 0;
    first_made = 0;
    growth_init(0, 1000000000ull, slow_first_site);
    for (int step = 0; step < 300; step++) {
        first_made++;
        growth_note(0, first_allocations, 0);
        for (uint64_t until = clock_monotonic_ns() + 5000; clock_monotonic_ns() < until;) {
        }
    }
    ck_assert_uint_ge(checkpoints_taken, 10);
}
END_TEST

/* The thread's CPU clock as this machine's virtual one moves: measured
 * here, it ran ahead of the wall clock by up to 2 ms between two reads a
 * microsecond apart. cpu_skew_ns is added to every read of it. */
static uint64_t cpu_skew_ns;

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = __real_clock_gettime(id, ts);
    if (rc == 0 && id == CLOCK_THREAD_CPUTIME_ID && cpu_skew_ns > 0) {
        uint64_t t = (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec + cpu_skew_ns;
        ts->tv_sec = (time_t)(t / 1000000000ull);
        ts->tv_nsec = (long)(t % 1000000000ull);
    }
    return rc;
}

/* Each checkpoint's read sees the CPU clock jump a 4 ms tick. */
static uint64_t ticking_site(uint32_t site)
{
    if (site == 0) {
        checkpoints_taken++;
        cpu_skew_ns += 4000000;
    }
    return site;
}

/* A checkpoint's cost is at most the time that passed: a tick of the CPU
 * clock inside a microsecond's checkpoint held the rest of a short loop
 * back (19 times 4 ms), and a run on a virtual machine had two samples. */
START_TEST(a_tick_of_the_cpu_clock_holds_no_checkpoint_back)
{
    checkpoints_taken = 0;
    first_made = 0;
    growth_init(0, 1000000000ull, ticking_site);
    for (int step = 0; step < 300; step++) {
        first_made++;
        growth_note(0, first_allocations, 0);
        for (uint64_t until = clock_monotonic_ns() + 5000; clock_monotonic_ns() < until;) {
        }
    }
    ck_assert_uint_ge(checkpoints_taken, 10);
}
END_TEST

static uint64_t burst_live[2], burst_made;

static uint64_t burst_site(uint32_t site) { return site < 2 ? burst_live[site] : 0; }
static uint64_t burst_allocations(void) { return burst_made; }

/* A torch.compile'd model, as on the H100: 15 s of compiling (site 0, a
 * batch, the only one), then 60 steps in 120 ms whose outputs (site 1, born
 * in the burst) are all kept, then 12 s of nothing (Inductor's workers shut
 * down) before Python's finish ends the series. Site 1 grew; judged on a
 * fifth of its own span by time, its whole burst was skipped. */
START_TEST(a_site_born_in_a_late_burst_before_a_long_idle_end_is_growth)
{
    burst_live[0] = 1 << 18;
    burst_live[1] = 0;
    burst_made = 1;
    growth_init(0, 1000000, burst_site);
    uint64_t t = 0;
    for (; t < 15000000000ull; t += 10000000)
        growth_note(t, burst_allocations, 0);
    for (int step = 0; step < 60; step++, t += 2000000) {
        for (int event = 0; event < 4; event++) {
            burst_made++;
            growth_note(t, burst_allocations, step > 0);  /* the highest site so far */
        }
        burst_live[1] += 1 << 20;
        burst_made++;
        growth_note(t, burst_allocations, 1);
        /* A step takes real time too: the checkpoints' cost guard reads the
         * precise clock. */
        nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
    }
    growth_finding_t g;
    ck_assert_int_eq(growth_site(1, 27500000000ull, burst_live[1], burst_made, &g), 0);
    ck_assert_msg(g.grew, "gained %llu, trend %.2f", (unsigned long long)g.bytes_gained, g.trend);
    ck_assert_uint_ge(g.bytes_gained, 40u << 20);
    /* The batch it was built beside held still: no finding. */
    ck_assert_int_eq(growth_site(0, 27500000000ull, burst_live[0], burst_made, &g), 0);
    ck_assert(!g.grew);
}
END_TEST

/* A run of 40 s that allocates steadily (1000 allocations every 10 ms,
 * from a count so high that only the clock makes checkpoints: one a
 * second, the same on any machine) with a cache (site 1) born at born_ns
 * that fills in six held steps over fill_ns and then keeps its size to the
 * end. Returns site 1's finding at the end. */
static growth_finding_t cache_born_at(uint64_t born_ns, uint64_t fill_ns)
{
    const uint64_t end = 40000000000ull;
    burst_live[0] = 1 << 18;
    burst_live[1] = 0;
    burst_made = 1ull << 32;
    growth_init(0, 1000000000ull, burst_site);
    for (uint64_t t = 0; t < end; t += 10000000) {
        burst_made += 1000;
        if (t >= born_ns) {
            uint64_t level = 1 + (t - born_ns) * 6 / fill_ns;
            burst_live[1] = (level < 6 ? level : 6) << 22;
        }
        growth_note(t, burst_allocations, t >= born_ns);
    }
    growth_finding_t g;
    ck_assert_int_eq(growth_site(1, end, burst_live[1], burst_made, &g), 0);
    return g;
}

/* The same bounded cache, filling over the first half of its life and
 * then level while the program goes on allocating, is no finding whether
 * it is born with the run or at its middle: the leading 0 of a late-born
 * site's series must not make its first fill the whole window. */
START_TEST(a_cache_born_late_that_filled_and_stayed_is_not_growth)
{
    growth_finding_t g = cache_born_at(0, 20000000000ull);
    ck_assert_msg(!g.grew, "born at 0: gained %llu", (unsigned long long)g.bytes_gained);
    g = cache_born_at(20000000000ull, 10000000000ull);
    ck_assert_msg(!g.grew, "born at 20 s: gained %llu, trend %.2f", (unsigned long long)g.bytes_gained,
                  g.trend);
}
END_TEST

static void no_rows(timeline_point_t *p) { (void)p; }

START_TEST(timeline_stays_bounded_and_keeps_the_high_water)
{
    timeline_init(0, 1000, no_rows);
    uint64_t highest = 0;
    for (uint64_t t = 0; t < 10000000; t += 100) {
        uint64_t live = (t / 100) % 977 * 1000 + (t == 5000000 ? 99999999 : 0);
        if (live > highest)
            highest = live;
        timeline_note(t, live);
    }
    static timeline_point_t points[TIMELINE_POINTS];
    size_t n = timeline_points(10000000, points, TIMELINE_POINTS);
    ck_assert_uint_le(n, TIMELINE_POINTS);
    ck_assert_uint_gt(n, TIMELINE_POINTS / 2 - 2);
    ck_assert_uint_gt(timeline_interval_ns(), 1000);
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (points[i].max_bytes > seen)
            seen = points[i].max_bytes;
        if (i > 0)
            ck_assert_uint_gt(points[i].time_ns, points[i - 1].time_ns);
    }
    ck_assert_uint_eq(seen, highest);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("growth");
    TCase *tc = tcase_create("rule");
    tcase_add_test(tc, linear_rise_is_growth);
    tcase_add_test(tc, a_costly_first_checkpoint_holds_no_burst_back);
    tcase_add_test(tc, a_tick_of_the_cpu_clock_holds_no_checkpoint_back);
    tcase_add_test(tc, sawtooth_is_not_growth);
    tcase_add_test(tc, startup_step_is_not_growth);
    tcase_add_test(tc, plateau_is_not_growth);
    tcase_add_test(tc, noise_is_not_growth);
    tcase_add_test(tc, once_an_epoch_is_growth_however_late);
    tcase_add_test(tc, a_short_rise_without_held_levels_is_not_judged);
    tcase_add_test(tc, a_drifting_phase_that_wraps_is_not_growth);
    tcase_add_test(tc, a_cache_that_filled_early_and_stayed_is_not_growth);
    tcase_add_test(tc, short_noise_is_not_growth);
    tcase_add_test(tc, leak_under_sawtooth_is_growth);
    tcase_add_test(tc, shutdown_frees_do_not_hide_growth);
    tcase_add_test(tc, short_series_is_not_judged);
    tcase_add_test(tc, a_run_too_short_to_judge_is_known_and_finds_nothing);
    tcase_add_test(tc, a_run_within_a_few_clock_ticks_is_judged_by_allocations);
    tcase_add_test(tc, timeline_stays_bounded_and_keeps_the_high_water);
    tcase_add_test(tc, costly_checkpoints_wait_in_proportion);
    tcase_add_test(tc, a_site_born_in_a_late_burst_before_a_long_idle_end_is_growth);
    tcase_add_test(tc, a_cache_born_late_that_filled_and_stayed_is_not_growth);
    suite_add_tcase(suite, tc);
    return suite_run(suite, 0);
}
