/* suite.h: how every unit suite runs, so each test file is only its tests. */
#ifndef GPULEAK_TEST_SUITE_H
#define GPULEAK_TEST_SUITE_H

#include <check.h>
#include <stdlib.h>

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

#endif
