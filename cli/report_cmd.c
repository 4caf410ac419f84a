/* report_cmd.c: `gpuleak report FILE...`, each report's human view
 * (text.c) on stdout, its origins judged again first when asked. */
#include "commands.h"
#include "load.h"
#include "rejudge.h"
#include "report_format.h"
#include "text.h"

#include <stdio.h>

enum { O_TOP, O_KIND, O_DEVICE, O_FULL_STACKS, O_ORIGIN, O_COUNT = O_ORIGIN + REJUDGE_OPT_COUNT };

static const char *const kinds[] = { REPORT_KINDS(REPORT_KIND_NAME) NULL };

static const opt_spec_t options[] = {
    { "--top", NULL, OPT_COUNT, 0, "N", NULL, 1000000000,
      "List at most N sites in each section (default 10; 0 lists them all)." },
    { "--kind", NULL, OPT_CHOICE, 0, "KIND", kinds, 0, "Show only the sites of this kind of memory." },
    { "--device", NULL, OPT_COUNT, 0, "D", NULL, 1000000, "Show only the sites on device D." },
    { "--full-stacks", NULL, OPT_FLAG, 0, NULL, NULL, 0,
      "Print every frame of each site, not the first eight." },
    REJUDGE_OPTIONS,
};
_Static_assert(sizeof options / sizeof options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t exits[] = {
    { "0", "every report was printed" },
    { "2", "bad usage, a report that cannot be read, or a failed write to stdout" },
};

static int report_main(const opts_t *o)
{
    text_options_t view = { 10, NULL, -1, 0 };
    if (o->v[O_TOP].set)
        view.top = (size_t)o->v[O_TOP].number;
    view.kind = o->v[O_KIND].text;
    if (o->v[O_DEVICE].set)
        view.device = (long)o->v[O_DEVICE].number;
    view.full_stacks = o->v[O_FULL_STACKS].set;
    load_set_t set;
    int code = CLI_EXIT_USAGE;
    /* No report is printed unless all load: a partial set reads as whole. */
    if (load_files(&set, o->operands, o->noperands) == 0 && set.bad == 0) {
        bool again = rejudge_options(&o->v[O_ORIGIN]);
        for (size_t i = 0; i < set.n; i++) {
            if (i > 0)
                fputc('\n', stdout);
            if (again)
                rejudge_report(set.v[i]);
            text_print(stdout, set.v[i], &view);
        }
        code = 0;
    }
    load_set_free(&set);
    return code;
}

const cmd_spec_t report_command = {
    .name = "report",
    .operands = "FILE...",
    .min_operands = 1,
    .max_operands = OPERANDS_ANY,
    .summary = "print reports as a person reads them",
    .description =
        "Prints each report: a summary (with when it was taken: at exit, on a signal, or while "
        "the program ran, whose leaks were live then, not left at exit), totals by kind, the "
        "leaks in LeakSanitizer's wording (Python frames first), teardown leaks, failed "
        "allocations, the first out-of-memory failure (what was asked, from where, and the "
        "largest holders then), and when the report has them "
        "the growth table, what Python still held when it finished, the peak's composition and "
        "a timeline chart, then the sites table. Under each site, the Python objects that held "
        "its memory (held by history[...] (list in train.py)).\n"
        "The origin options judge every site's origin again from the frames in the report, as "
        "the shim's variables would have in the run: no rerun is needed.",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = report_main,
};
