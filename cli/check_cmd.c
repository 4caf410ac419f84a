/* check_cmd.c: `gpuleak check FILE...`, each report judged against the
 * budgets (check.c) with PASS and FAIL lines on stdout, and JUnit XML for
 * a CI system when asked. */
#include "check.h"
#include "commands.h"
#include "frames.h"
#include "load.h"
#include "rejudge.h"
#include "report_keys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { O_BUDGETS, O_JUNIT = O_BUDGETS + CHECK_OPT_COUNT, O_ORIGIN,
       O_COUNT = O_ORIGIN + REJUDGE_OPT_COUNT };

static const opt_spec_t options[] = {
    CHECK_OPTIONS(0),
    { "--junit", NULL, OPT_STRING, 0, "FILE", NULL, 0,
      "Write JUnit XML to FILE too: a testsuite per report, a testcase per budget, an error per "
      "report that could not be read." },
    REJUDGE_OPTIONS,
};
_Static_assert(sizeof options / sizeof options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t exits[] = {
    { "0", "every budget held in every report (with --allow-unjudged, or check's default "
           "growth budget, a budget that could not be judged too)" },
    { "1", "a budget failed" },
    { "3", "no budget failed, but one could not be judged on a report (a snapshot or a "
           "dump on request, a report written as a signal killed the program, a run too short "
           "for the growth rule): nothing was judged there, so nothing passed" },
    { "2", "bad usage, a report or suppressions file that cannot be read, a budget a report "
           "cannot be judged on (--max-growth without a growth section), or a failed write" },
};

/* Without a budget, any unsuppressed leak fails (--max-leaked 0), and so
 * does any growth where the report judged it (--max-growth 0): a Python
 * program's kept tensors are freed by its shutdown before the exit, so
 * for it "check for leaks" means the memory that grew and was held. */
static int check_main(const opts_t *o)
{
    check_budget_t b;
    memset(&b, 0, sizeof b);
    supp_set_t *supp = check_setup(&b, &o->v[O_BUDGETS]);
    if (supp == NULL)
        return CLI_EXIT_USAGE;
    if (!b.leaked && !b.growth && !b.peak) {
        b.leaked = true;
        b.growth_where_judged = true;
    }
    const char *junit_path = o->v[O_JUNIT].text;
    check_junit_t *junit = junit_path ? check_junit_new() : NULL;
    load_set_t set;
    int code = CLI_EXIT_USAGE;
    /* Only a peak budget reads the peak section, and no budget the
     * timeline: in a big report they are half the text. */
    const char *const unread[] = { RK(peak), RK(timeline), NULL };
    if (load_files_skipping(&set, o->operands, o->noperands, b.peak ? unread + 1 : unread) == 0) {
        bool again = rejudge_options(&o->v[O_ORIGIN]);
        /* A bad file does not stop the others being judged, so the JUnit
         * file and the output cover the whole set; the exit code is the
         * worst verdict. */
        int verdict = set.bad ? CHECK_ERROR : CHECK_PASS;
        for (size_t i = 0; i < set.n; i++) {
            if (set.v[i] == NULL) {
                check_junit_error(junit, o->operands[i], set.errors[i] ? set.errors[i] : "unreadable");
                continue;
            }
            if (again)
                rejudge_report(set.v[i]);
            int v = check_report(stdout, set.v[i], &b, supp, junit);
            verdict = v > verdict ? v : verdict;
        }
        supp_print_used(stdout, supp);
        code = check_exit_code(verdict, b.allow_unjudged);
    }
    if (junit_path != NULL && check_junit_write(junit, junit_path) != 0) {
        fputs("gpuleak check: cannot write ", stderr);
        frame_text_put(stderr, junit_path);
        fprintf(stderr, ": %s\n", strerror(errno));
        code = CLI_EXIT_USAGE;
    }
    load_set_free(&set);
    check_junit_free(junit);
    supp_free(supp);
    return code;
}

const cmd_spec_t check_command = {
    .name = "check",
    .operands = "FILE...",
    .min_operands = 1,
    .max_operands = OPERANDS_ANY,
    .summary = "judge reports against budgets; exit 1 when one fails",
    .description =
        "Judges each report against the budgets given; with none, --max-leaked 0 and, on the "
        "reports that judged growth, --max-growth 0 (a Python program's kept tensors are "
        "freed by its shutdown before the exit: they show as growth, not leaks). Prints PASS "
        "per budget, or one FAIL line per origin line (its sites summed, the largest first, "
        "with the object that held it when Python finished), then the suppressions that "
        "matched. Leaks count; teardown leaks are reported but do not. A report taken while "
        "the program ran (a snapshot or a dump on request, status.complete false) lists what "
        "was live then, in use rather than leaked: the leak budget is not judged on it, one "
        "SKIP line says so (a skipped testcase in JUnit); growth and peak budgets are judged as "
        "ever. So is a report written as a signal killed the program (status.moment signal): "
        "its frees never ran. Nor is the growth budget judged on a run too short for the "
        "growth rule (status.growth_judged false: its empty growth list says nothing): a SKIP "
        "line again. A budget that was not judged is not a pass: check exits 3 unless "
        "--allow-unjudged (check's default growth budget, judged where a report could, "
        "excepted). The origin options are report's.",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = check_main,
};
