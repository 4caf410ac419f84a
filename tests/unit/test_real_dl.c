/* test_real_dl.c: a fork waits for the shim's loader calls, for a bounded
 * time; a child forked after the wait ran out gets a guard of its own;
 * loader calls in several threads do not wait for each other.
 * dl_iterate_phdr is wrapped (-Wl,--wrap), so a walk can be held open
 * without holding glibc's own loader lock. */
#define _GNU_SOURCE
#include "suite.h"
#include "real_dl.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int in_walk, release, hold_ms;

int __real_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

/* Holds the walk open hold_ms, or until release; then the real walk. */
int __wrap_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    int ms = atomic_load(&hold_ms);
    if (ms > 0) {
        atomic_store(&in_walk, 1);
        for (int i = 0; i < ms && !atomic_load(&release); i++) {
            struct timespec tick = { 0, 1000 * 1000 };
            nanosleep(&tick, NULL);
        }
        atomic_store(&in_walk, 0);
    }
    return __real_dl_iterate_phdr(cb, data);
}

static int no_op(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    (void)data;
    return 1;
}

static void *walker(void *unused)
{
    (void)unused;
    real_dl_iterate(no_op, NULL);
    return NULL;
}

/* The child's exit status, or -1 when it has not exited within 5 s. */
static int child_status(pid_t child)
{
    for (int i = 0; i < 5000; i++) {
        int status;
        if (waitpid(child, &status, WNOHANG) == child)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        struct timespec tick = { 0, 1000 * 1000 };
        nanosleep(&tick, NULL);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return -1;
}

static void start_walk(pthread_t *thread, int ms)
{
    atomic_store(&release, 0);
    atomic_store(&hold_ms, ms);
    ck_assert_int_eq(pthread_create(thread, NULL, walker, NULL), 0);
    while (!atomic_load(&in_walk))
        sched_yield();
}

START_TEST(a_fork_waits_for_a_walk_to_end)
{
    pthread_t thread;
    start_walk(&thread, 200);
    pid_t child = fork();
    if (child == 0)
        _exit(atomic_load(&in_walk) ? 3 : 0);  /* 3: forked inside the walk */
    ck_assert_int_gt(child, 0);
    ck_assert_int_eq(atomic_load(&in_walk), 0);
    pthread_join(thread, NULL);
    ck_assert_int_eq(child_status(child), 0);
}
END_TEST

START_TEST(a_fork_stops_waiting_at_its_bound_and_the_child_has_a_guard_of_its_own)
{
    pthread_t thread;
    start_walk(&thread, 10000);  /* longer than any bound; ends on release */
    pid_t child = fork();
    if (child == 0) {
        atomic_store(&hold_ms, 0);
        real_dl_iterate(no_op, NULL);  /* waits for good on the parent's guard */
        _exit(0);
    }
    ck_assert_int_gt(child, 0);
    ck_assert_msg(atomic_load(&in_walk), "the fork waited for the whole walk");
    atomic_store(&release, 1);
    pthread_join(thread, NULL);
    ck_assert_int_eq(child_status(child), 0);
    /* The parent's guard is free again. */
    atomic_store(&hold_ms, 0);
    ck_assert_int_eq(real_dl_iterate(no_op, NULL), 1);
}
END_TEST

START_TEST(walks_at_once_do_not_wait_for_each_other)
{
    pthread_t thread;
    start_walk(&thread, 10000);
    atomic_store(&hold_ms, 0);
    ck_assert_int_eq(real_dl_iterate(no_op, NULL), 1);
    ck_assert_msg(atomic_load(&in_walk), "the second walk waited for the first");
    atomic_store(&release, 1);
    pthread_join(thread, NULL);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("real_dl");
    TCase *tc = tcase_create("fork");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_fork_waits_for_a_walk_to_end);
    tcase_add_test(tc, a_fork_stops_waiting_at_its_bound_and_the_child_has_a_guard_of_its_own);
    tcase_add_test(tc, walks_at_once_do_not_wait_for_each_other);
    suite_add_tcase(suite, tc);
    return suite_run(suite, 1);
}
