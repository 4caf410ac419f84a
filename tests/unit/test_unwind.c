/* The rule-cache unwinder against libunwind, frame for frame, on stacks of
 * the shapes compilers make: frames addressed from rsp, from rbp (alloca),
 * over-aligned locals, a thread's stack, a truncated capture, and a signal
 * handler (whose frame it must refuse, so that libunwind takes it); and the
 * remembered recent stacks, which must be reused where the stack still
 * holds them and nowhere else. */
#define _GNU_SOURCE
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "suite.h"
#include "unwind.h"

#define MAX 256

/* Takes the stack both ways from one frame. unwind_capture's first two
 * entries are inside itself and this function; unw_backtrace's first is
 * inside this function: from the caller on, both must agree. */
__attribute__((noinline)) static int same_as_libunwind(int max, int *ours_count)
{
    uintptr_t ours[MAX], theirs[MAX + 1];
    int n = unwind_capture(ours, max);
    int m = unw_backtrace((void **)theirs, max + 1);
    *ours_count = n;
    if (n < 0)
        return 0;
    int compared = n - 2 < m - 1 ? n - 2 : m - 1;
    if (n < max && n - 2 != m - 1)
        return 0;
    for (int i = 0; i < compared; i++)
        if (ours[i + 2] != theirs[i + 1])
            return 0;
    return 1;
}

static int captured_frames;  /* of check_here's last capture */

static int check_here(void)
{
    int n;
    int same = same_as_libunwind(MAX, &n);
    ck_assert_msg(same, "the stacks differ (ours: %d frames)", n);
    captured_frames = n;
    return n;
}

__attribute__((noinline)) static int rsp_frames(int depth)
{
    if (depth == 0)
        return check_here();
    int r = rsp_frames(depth - 1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

__attribute__((noinline)) static int rbp_frames(int depth)
{
    char *p = alloca((size_t)depth * 24 + 8);
    memset(p, depth, (size_t)depth * 24 + 8);
    __asm__ volatile("" : : "r"(p) : "memory");
    if (depth == 0)
        return check_here();
    return rbp_frames(depth - 1) + (p[0] & 1);
}

__attribute__((noinline)) static int aligned_frames(int depth)
{
    char buf[96] __attribute__((aligned(64)));
    memset(buf, depth, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
    if (depth == 0)
        return check_here();
    return aligned_frames(depth - 1) + (buf[5] & 1);
}

/* Alternates the shapes, so that each kind of frame has the others as
 * caller and callee. */
__attribute__((noinline)) static int mixed_frames(int depth)
{
    if (depth == 0)
        return check_here();
    switch (depth % 3) {
    case 0: return rsp_frames(1) + mixed_frames(depth - 1);
    case 1: return rbp_frames(1) + mixed_frames(depth - 1);
    default: return aligned_frames(1) + mixed_frames(depth - 1);
    }
}

START_TEST(agrees_with_libunwind_on_every_frame_shape)
{
    ck_assert_int_gt(rsp_frames(40), 40);
    ck_assert_int_gt(rbp_frames(20), 20);
    ck_assert_int_gt(aligned_frames(20), 20);
    ck_assert_int_gt(mixed_frames(30), 30);
}
END_TEST

static void *thread_body(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)mixed_frames(12);
}

START_TEST(agrees_on_a_thread_to_its_first_frame)
{
    pthread_t t;
    void *got;
    ck_assert_int_eq(pthread_create(&t, NULL, thread_body, NULL), 0);
    ck_assert_int_eq(pthread_join(t, &got), 0);
    ck_assert_int_gt((int)(intptr_t)got, 12);
}
END_TEST

__attribute__((noinline)) static int truncated(int depth)
{
    if (depth > 0)
        return truncated(depth - 1) + 1;
    int n;
    ck_assert(same_as_libunwind(7, &n));
    ck_assert_int_eq(n, 7);
    return 0;
}

START_TEST(a_capture_stops_at_max)
{
    truncated(20);
    uintptr_t one[1];
    ck_assert_int_eq(unwind_capture(one, 1), 1);
    ck_assert_int_eq(unwind_capture(one, 0), -1);
}
END_TEST

/* via_a and via_b have the same frame, so the chain under them sits at the
 * same addresses in the same states whichever called it: only the return
 * address into via_a or via_b tells the two stacks apart. */
__attribute__((noinline)) static int common_chain(int depth)
{
    if (depth == 0)
        return check_here();
    int r = common_chain(depth - 1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

__attribute__((noinline)) static int via_a(int depth)
{
    int r = common_chain(depth);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

__attribute__((noinline)) static int via_b(int depth)
{
    int r = common_chain(depth);
    __asm__ volatile("" ::: "memory");
    return r + 2;
}

START_TEST(a_changed_caller_is_not_taken_from_the_last_stack)
{
    int (*const callers[2])(int) = { via_a, via_b };
    uint64_t before = unwind_counts().reused;
    for (int i = 0; i < 20; i++)
        ck_assert_int_gt(callers[(i / 2) & 1](6), 6);
    ck_assert_msg(unwind_counts().reused - before >= 19 * 6,
                  "the outer frames were stepped again (%llu reused)",
                  (unsigned long long)(unwind_counts().reused - before));
}
END_TEST

/* A capture cut at a small max, then a full one from the same frame: the
 * second joins the first's frames and must step on past where it stopped. */
__attribute__((noinline)) static int short_then_full(void)
{
    int n;
    ck_assert(same_as_libunwind(7, &n));
    ck_assert_int_eq(n, 7);
    ck_assert(same_as_libunwind(MAX, &n));
    ck_assert_int_gt(n, 7);
    ck_assert(same_as_libunwind(MAX, &n));
    return n;
}

START_TEST(a_truncated_stack_is_stepped_on_past_its_cut)
{
    ck_assert_int_gt(short_then_full(), 7);
    ck_assert_int_gt(rsp_frames(12), 12);
}
END_TEST

/* Three stacks in turn: each is found again whole (every frame but the
 * capture's own first one taken from memory), where the last stack alone
 * would share only the frames outside the three. */
START_TEST(stacks_that_recur_are_taken_whole)
{
    for (int i = 0; i < 30; i++) {
        uint64_t before = unwind_counts().reused;
        switch (i % 3) {
        case 0: ck_assert_int_gt(rsp_frames(4), 4); break;
        case 1: ck_assert_int_gt(rbp_frames(5), 5); break;
        default: ck_assert_int_gt(aligned_frames(6), 6); break;
        }
        uint64_t reused = unwind_counts().reused - before;
        if (i >= 3)
            ck_assert_msg(reused == (uint64_t)(captured_frames - 1),
                          "capture %d reused %llu of its %d frames", i,
                          (unsigned long long)reused, captured_frames);
    }
}
END_TEST

/* call_with_rbp(fn, value) calls fn with rbp set to value, having saved
 * its caller's rbp where its unwind rule says: as code built without frame
 * pointers keeps data in rbp, which its callees pass on untouched and which
 * no frame outside reads before it is restored. */
__asm__(".text\n"
        ".globl call_with_rbp\n"
        ".hidden call_with_rbp\n"
        ".type call_with_rbp, @function\n"
        "call_with_rbp:\n"
        ".cfi_startproc\n"
        "push %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "mov %rsi, %rbp\n"
        "call *%rdi\n"
        "pop %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size call_with_rbp, .-call_with_rbp\n");
int call_with_rbp(int (*fn)(void), uintptr_t rbp);

__attribute__((noinline)) static int rbp_leaf(void)
{
    int n = check_here();
    __asm__ volatile("" ::: "memory");
    return n;
}

START_TEST(a_changed_rbp_that_no_caller_reads_changes_no_stack)
{
    static uintptr_t data[16];  /* what rbp points at: readable, in case anything follows it */
    for (int i = 0; i < 16; i++) {
        uint64_t before = unwind_counts().reused;
        ck_assert_int_gt(call_with_rbp(rbp_leaf, (uintptr_t)&data[i]), 3);
        uint64_t reused = unwind_counts().reused - before;
        if (i > 0)
            ck_assert_msg(reused == (uint64_t)(captured_frames - 1),
                          "capture %d reused %llu of its %d frames", i,
                          (unsigned long long)reused, captured_frames);
    }
}
END_TEST

/* Random walks over four frame shapes (rsp-addressed, alloca'd and so
 * rbp-addressed, over-aligned, and under call_with_rbp with rbp set to
 * one of 16 addresses), drawn from a few paths and their mutations so
 * that stacks recur whole, share outer frames, start at the same stack
 * pointer while differing further out, and are cut at different maxima:
 * every capture must agree with libunwind. */
static const unsigned char *cont_path;
static int cont_len, cont_max;
static uintptr_t walk_data[16];
static unsigned walk_calls;

static int walk(const unsigned char *path, int len, int max);

__attribute__((noinline)) static int walk_rsp(const unsigned char *path, int len, int max)
{
    int r = walk(path, len, max);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

__attribute__((noinline)) static int walk_alloca(const unsigned char *path, int len, int max)
{
    size_t bytes = 16 + (size_t)(path[-1] >> 2) * 8;
    char *p = alloca(bytes);
    memset(p, len, bytes);
    __asm__ volatile("" : : "r"(p) : "memory");
    return walk(path, len, max) + (p[0] & 1);
}

__attribute__((noinline)) static int walk_aligned(const unsigned char *path, int len, int max)
{
    char buf[96] __attribute__((aligned(64)));
    memset(buf, len, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
    return walk(path, len, max) + (buf[3] & 1);
}

__attribute__((noinline)) static int walk_on(void)
{
    int r = walk(cont_path, cont_len, cont_max);
    __asm__ volatile("" ::: "memory");
    return r;
}

static int walk(const unsigned char *path, int len, int max)
{
    if (len == 0) {
        int n;
        ck_assert_msg(same_as_libunwind(max, &n), "capture %u differs (max %d, ours %d frames)",
                      walk_calls, max, n);
        walk_calls++;
        return n;
    }
    switch (path[0] & 3) {
    case 0: return walk_rsp(path + 1, len - 1, max);
    case 1: return walk_alloca(path + 1, len - 1, max);
    case 2: return walk_aligned(path + 1, len - 1, max);
    default:
        cont_path = path + 1;
        cont_len = len - 1;
        cont_max = max;
        return call_with_rbp(walk_on, (uintptr_t)&walk_data[walk_calls % 16]);
    }
}

START_TEST(random_walks_agree_with_libunwind)
{
    static const int maxima[] = { 7, 16, MAX };
    unsigned char paths[6][24];
    uint64_t seed = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 24; j++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            paths[i][j] = (unsigned char)(seed >> 56);
        }
    uint64_t before = unwind_counts().reused;
    for (int i = 0; i < 3000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned char *path = paths[(seed >> 40) % 6];
        if ((seed >> 20) % 8 == 0)  /* mutate a step: the paths drift */
            path[(seed >> 8) % 24] = (unsigned char)(seed >> 32);
        int len = 1 + (int)((seed >> 48) % 24);
        int max = (seed >> 12) % 4 == 0 ? maxima[(seed >> 4) % 3] : MAX;
        ck_assert_int_gt(walk(path, len, max), 0);
    }
    ck_assert_uint_eq(walk_calls, 3000);
    ck_assert_msg(unwind_counts().reused - before > 3000 * 5,
                  "few frames were taken from memory (%llu)",
                  (unsigned long long)(unwind_counts().reused - before));
}
END_TEST

static volatile int in_handler_result = 99;

static void handler(int sig)
{
    (void)sig;
    uintptr_t frames[MAX];
    in_handler_result = unwind_capture(frames, MAX);
}

START_TEST(a_signal_frame_is_left_to_libunwind)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
    raise(SIGUSR1);
    sigaction(SIGUSR1, &old, NULL);
    ck_assert_int_eq(in_handler_result, -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("unwind");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, agrees_with_libunwind_on_every_frame_shape);
    tcase_add_test(tc, agrees_on_a_thread_to_its_first_frame);
    tcase_add_test(tc, a_capture_stops_at_max);
    tcase_add_test(tc, a_signal_frame_is_left_to_libunwind);
    tcase_add_test(tc, a_changed_caller_is_not_taken_from_the_last_stack);
    tcase_add_test(tc, a_truncated_stack_is_stepped_on_past_its_cut);
    tcase_add_test(tc, stacks_that_recur_are_taken_whole);
    tcase_add_test(tc, a_changed_rbp_that_no_caller_reads_changes_no_stack);
    tcase_add_test(tc, random_walks_agree_with_libunwind);
    suite_add_tcase(s, tc);
    return suite_run(s, 1);
}
