/* Unit tests for stacks.c: the depot stores a stack once, tells stacks
 * apart by every frame, kind and Python frame, and agrees across threads. */
#include "suite.h"
#include <pthread.h>
#include <stdlib.h>

#include "stacks.h"
#include "unwind.h"

static void setup(void)
{
    static int done;
    if (!done) {
        stacks_init(1);
        done = 1;
    }
}

START_TEST(same_stack_same_id)
{
    uintptr_t frames[] = { 0x1000, 0x2000, 0x3000 };
    uint32_t a = stacks_intern(0, frames, 3, NULL, 0);
    uint32_t b = stacks_intern(0, frames, 3, NULL, 0);
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_eq(a, b);
    const stack_record_t *r = stacks_get(a);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->native_count, 3);
    ck_assert_uint_eq(r->frames[2], 0x3000);
}
END_TEST

START_TEST(any_difference_makes_a_new_id)
{
    uintptr_t frames[] = { 0x1000, 0x2000, 0x3000 };
    uintptr_t other[] = { 0x1000, 0x2000, 0x3001 };
    python_frame_t py1[] = { (1ull << 32) | 42 }, py2[] = { (1ull << 32) | 43 };
    uint32_t base = stacks_intern(0, frames, 3, NULL, 0);
    uint32_t ids[] = {
        stacks_intern(0, other, 3, NULL, 0),
        stacks_intern(1, frames, 3, NULL, 0),
        stacks_intern(0, frames, 2, NULL, 0),
        stacks_intern(0, frames, 3, py1, 1),
        stacks_intern(0, frames, 3, py2, 1),
    };
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_ne(ids[i], 0);
        ck_assert_uint_ne(ids[i], base);
        for (int j = 0; j < i; j++)
            ck_assert_uint_ne(ids[i], ids[j]);
    }
    const stack_record_t *r = stacks_get(ids[3]);
    ck_assert_uint_eq(r->python_count, 1);
    ck_assert_uint_eq(r->frames[3], py1[0]);
}
END_TEST

/* A hint names where the unwinder keeps a stack; the id under it is only a
 * guess to check. Whatever the hint, the id is the unhinted one: the same
 * stack, or stacks differing in a frame, kind or Python frame, under one
 * hint in turn. */
START_TEST(a_hint_never_changes_the_id)
{
    uintptr_t frames[] = { 0x7000, 0x8000, 0x9000 };
    uintptr_t other[] = { 0x7000, 0x8000, 0x9001 };
    python_frame_t py[] = { (2ull << 32) | 7 };
    const struct { uint32_t tag; const uintptr_t *native; int n; const python_frame_t *python; int pn; } stacks[] = {
        { 0, frames, 3, NULL, 0 }, { 0, other, 3, NULL, 0 }, { 1, frames, 3, NULL, 0 },
        { 0, frames, 2, NULL, 0 }, { 0, frames, 3, py, 1 },
    };
    uint32_t want[5];
    for (int i = 0; i < 5; i++)
        want[i] = stacks_intern(stacks[i].tag, stacks[i].native, stacks[i].n, stacks[i].python,
                                stacks[i].pn);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 5; i++)
            for (int hint = -1; hint < 2; hint++)
                ck_assert_uint_eq(stacks_intern_hinted(hint, stacks[i].tag, stacks[i].native,
                                                       stacks[i].n, stacks[i].python, stacks[i].pn),
                                  want[i]);
    ck_assert_uint_eq(stacks_intern_hinted(UNWIND_SLOTS, 0, frames, 3, NULL, 0), want[0]);
}
END_TEST

START_TEST(empty_stack_is_valid)
{
    uint32_t a = stacks_intern(4, NULL, 0, NULL, 0);
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_eq(stacks_intern(4, NULL, 0, NULL, 0), a);
    ck_assert_ptr_null(stacks_get(0));
    ck_assert_ptr_null(stacks_get(stacks_count() + 1));
}
END_TEST

__attribute__((noinline)) static int capture_here(uintptr_t *out, int max)
{
    return stacks_capture(out, max, NULL);
}

START_TEST(capture_respects_max)
{
    uintptr_t frames[4];
    /* The test binary is the "shim" here, so its leading frames are
     * dropped; what remains lies in Check or libc, and never exceeds max. */
    int n = capture_here(frames, 4);
    ck_assert_int_ge(n, 0);
    ck_assert_int_le(n, 4);
    ck_assert_int_eq(stacks_capture(frames, 0, NULL), 0);
}
END_TEST

#define THREADS 8
#define STACKS 2000

static void *intern_many(void *arg)
{
    uint32_t *ids = arg;
    for (uintptr_t i = 0; i < STACKS; i++) {
        uintptr_t frames[] = { 0x40000000 + i, 0x50000000, i * 7 };
        ids[i] = stacks_intern(9, frames, 3, NULL, 0);
    }
    return NULL;
}

START_TEST(threads_agree_on_ids)
{
    static uint32_t ids[THREADS][STACKS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, intern_many, ids[t]);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    for (int i = 0; i < STACKS; i++) {
        ck_assert_uint_ne(ids[0][i], 0);
        for (int t = 1; t < THREADS; t++)
            ck_assert_uint_eq(ids[t][i], ids[0][i]);
        if (i > 0)
            ck_assert_uint_ne(ids[0][i], ids[0][i - 1]);
    }
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("stacks");
    TCase *tc = tcase_create("depot");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, same_stack_same_id);
    tcase_add_test(tc, any_difference_makes_a_new_id);
    tcase_add_test(tc, empty_stack_is_valid);
    tcase_add_test(tc, a_hint_never_changes_the_id);
    tcase_add_test(tc, capture_respects_max);
    tcase_add_test(tc, threads_agree_on_ids);
    suite_add_tcase(suite, tc);
    return suite_run(suite, 0);
}
