/* check.h: budgets (leaked bytes, growth, peak) judged on one report, the
 * verdict lines, and the JUnit XML a CI system shows. Used by `gpuleak
 * check` and by the gates of `gpuleak run`. */
#ifndef GPULEAK_CLI_CHECK_H
#define GPULEAK_CLI_CHECK_H

#include "load.h"
#include "opts.h"
#include "supp.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    bool leaked, growth, peak;        /* which budgets are set */
    bool allow_unjudged;              /* --allow-unjudged */
    bool growth_where_judged;         /* growth judged (at max_growth) on the reports
                                         that have a growth section, the others
                                         left be: check's default */
    uint64_t max_leaked, max_growth, max_peak;
    const char *leaked_flag, *growth_flag, *peak_flag; /* option names for messages */
    bool quiet_pass; /* print FAIL lines only (gpuleak run, beside CMD's output) */
    bool implicit;   /* no budget was given: check's defaults */
} check_budget_t;

/* Verdicts of check_report, from the mildest: a budget that could not be
 * judged on a report (a snapshot, a killed run's report, a run too short
 * for the growth rule) is not a pass: nothing was judged. */
enum { CHECK_PASS, CHECK_UNJUDGED, CHECK_FAIL, CHECK_ERROR };

/* check's exit code for a verdict: 0, 3 unjudged (0 when allowed), 1 a
 * budget failed, 2 an error. */
#define CHECK_EXIT_UNJUDGED 3
int check_exit_code(int verdict, bool allow_unjudged);

typedef struct check_junit check_junit_t;

/* The options of the budgets and suppressions, the same in check and run
 * (one spelling of each budget); value_flags is OPT_OPTIONAL where a budget
 * given alone means 0 (run), else 0. A command lists them in this order,
 * CHECK_OPT_COUNT entries starting at some index, and hands check_setup
 * its values from there. --fail-on-leak and --fail-on-growth are run's
 * first spellings, kept working. */
enum { CHECK_OPT_LEAKED, CHECK_OPT_GROWTH, CHECK_OPT_PEAK, CHECK_OPT_SUPP, CHECK_OPT_NO_DEFAULTS,
       CHECK_OPT_ALLOW_UNJUDGED, CHECK_OPT_COUNT };
#define CHECK_OPTIONS(value_flags)                                                                  \
    { "--max-leaked", "--fail-on-leak", OPT_SIZE, value_flags, "SIZE", NULL, 0,                     \
      "Fail when the unsuppressed leaks (live at exit; teardown leaks do not count) come to more "  \
      "than SIZE in a report; not judged on a snapshot (taken while the program ran)." },           \
    { "--max-growth", "--fail-on-growth", OPT_SIZE, value_flags, "SIZE", NULL, 0,                   \
      "Fail when a report's growth (memory that rose during the run and was held) comes to more "   \
      "than SIZE; needs the report's growth section." },                                            \
    { "--max-peak", NULL, OPT_SIZE, 0, "SIZE", NULL, 0,                                             \
      "Fail when a report's peak GPU memory is more than SIZE." },                                  \
    { "--suppressions", NULL, OPT_STRING, OPT_REPEATED, "FILE", NULL, 0,                            \
      "Leave out the leaks that FILE's \"leak:PATTERN\" lines match (docs/suppressions.md); "      \
      "files are read in order before anything is judged." },                                       \
    { "--no-default-suppressions", NULL, OPT_FLAG, 0, NULL, NULL, 0,                                \
      "Judge the leaks that the built-in list leaves out (libraries' caches and handles) too." },   \
    { "--allow-unjudged", NULL, OPT_FLAG, 0, NULL, NULL, 0,                                         \
      "Let a budget that could not be judged on a report (a snapshot, a report written as a "     \
      "signal killed the program, a run too short for the growth rule) pass; by default it "       \
      "is an exit code of its own, as nothing was judged." }

/* Sets *b's budgets from the CHECK_OPTIONS values at v (messages name the
 * spelling given), and returns the suppressions to judge with: the
 * built-in list unless turned off, then each file in order. NULL after one
 * line on stderr when a file is missing or malformed, or out of memory. */
supp_set_t *check_setup(check_budget_t *b, const opt_value_t *v);

int check_report(FILE *out, const load_report_t *report, const check_budget_t *budget,
                 supp_set_t *supp, check_junit_t *junit);
check_junit_t *check_junit_new(void);
void check_junit_error(check_junit_t *junit, const char *file, const char *message);
int check_junit_write(const check_junit_t *junit, const char *path);
void check_junit_free(check_junit_t *junit);

#endif
