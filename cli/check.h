/* check.h: budgets (leaked bytes, growth, peak) judged on one report, the
 * verdict lines, and the JUnit XML a CI system shows. Used by `gpuleak
 * check` and by the gates of `gpuleak run`. */
#ifndef GPULEAK_CLI_CHECK_H
#define GPULEAK_CLI_CHECK_H

#include "load.h"
#include "supp.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    bool leaked, growth, peak;        /* which budgets are set */
    uint64_t max_leaked, max_growth, max_peak;
    const char *leaked_flag, *growth_flag, *peak_flag; /* option names for messages */
    bool quiet_pass; /* print FAIL lines only (gpuleak run, beside CMD's output) */
} check_budget_t;

/* Verdicts of check_report. */
enum { CHECK_PASS = 0, CHECK_FAIL = 1, CHECK_ERROR = 2 };

typedef struct check_junit check_junit_t;

int check_report(FILE *out, const load_report_t *report, const check_budget_t *budget,
                 supp_set_t *supp, check_junit_t *junit);
check_junit_t *check_junit_new(void);
void check_junit_error(check_junit_t *junit, const char *file, const char *message);
int check_junit_write(const check_junit_t *junit, const char *path);
void check_junit_free(check_junit_t *junit);

#endif
