/* suite.h: how every unit suite runs, so each test file is only its tests. */
#ifndef GPULEAK_TEST_SUITE_H
#define GPULEAK_TEST_SUITE_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Check records the place of every assertion with a write to a file, a
 * system call each: in a loop of many thousand steps that is the whole
 * cost (test_live's 400,000-step model took 9 s, 32 s under ASan). These
 * call Check only when the comparison fails, with Check's message. */
#define SUITE_EQ_U64(a, b)                                                          \
    do {                                                                            \
        uint64_t suite_x_ = (a), suite_y_ = (b);                                    \
        if (suite_x_ != suite_y_)                                                   \
            ck_abort_msg("Assertion '%s == %s' failed: %s == %ju, %s == %ju", #a, #b, \
                         #a, (uintmax_t)suite_x_, #b, (uintmax_t)suite_y_);         \
    } while (0)
#define SUITE_LE_U64(a, b)                                                          \
    do {                                                                            \
        uint64_t suite_x_ = (a), suite_y_ = (b);                                    \
        if (suite_x_ > suite_y_)                                                    \
            ck_abort_msg("Assertion '%s <= %s' failed: %s == %ju, %s == %ju", #a, #b, \
                         #a, (uintmax_t)suite_x_, #b, (uintmax_t)suite_y_);         \
    } while (0)

/* Runs suite (forking per test when fork is 1: suites whose state is one
 * process-wide table or interpreter run in one process) and returns the
 * exit status `make unit` reads: 0 when every test passed. */
static inline int suite_run(Suite *suite, int fork)
{
    SRunner *runner = srunner_create(suite);
    if (!fork)
        srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Reads a repository file (tests run from the repository root) into buf,
 * NUL-terminated, for the tests that keep code and documents in step. */
static inline void suite_read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: run from the repository root", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

#endif
