/* rejudge.h: a report's origins judged again, with other rules, from the
 * frames the report holds, so that a user need not rerun a long job to see
 * its sites through other eyes (`--origin-skip`, `--origin-rules`). */
#ifndef GPULEAK_CLI_REJUDGE_H
#define GPULEAK_CLI_REJUDGE_H

#include "load.h"
#include "opts.h"

#include <stdbool.h>

/* The origin options of report and check, in this order (REJUDGE_OPT_*),
 * whose values rejudge_options reads. */
enum { REJUDGE_OPT_SKIP, REJUDGE_OPT_RULES, REJUDGE_OPT_COUNT };
extern const char *const rejudge_rule_choices[];
#define REJUDGE_OPTIONS                                                                              \
    { "--origin-skip", NULL, OPT_STRING, 0, "GLOBS", NULL, 0,                                        \
      "Judge every site's origin again from the report's frames, never placing it at a frame "      \
      "whose function, file or module matches one of these colon-separated globs ('!GLOB' keeps "   \
      "a frame), as GPULEAK_ORIGIN_SKIP would have in the run (docs/origin-rules.md)." },           \
    { "--origin-rules", NULL, OPT_CHOICE, 0, "none|default", rejudge_rule_choices, 0,                \
      "Judge every site's origin again with the built-in rules (default) or with --origin-skip's "  \
      "globs alone (none), as GPULEAK_ORIGIN_RULES would have in the run." }

/* Takes the rules from the REJUDGE_OPTIONS values at v (v's strings must
 * outlive the re-judging). Returns whether either option was given: the
 * reports are then to be judged again (rejudge_report); when not, they
 * keep the origins the shim wrote. */
bool rejudge_options(const opt_value_t *v);

/* Gives every site of r that has frames the origin, via and callers the
 * rules rejudge_options took pick (the globs before the built-in table,
 * and with it the rules of r's own "python_layout" when it has one), as
 * the shim would have written them with those rules; a site without
 * frames keeps the report's. The rules stay set for r's views. */
void rejudge_report(load_report_t *r);

#endif
