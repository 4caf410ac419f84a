/* rejudge.h: a report's origins judged again, with other rules, from the
 * frames the report holds, so that a user need not rerun a long job to see
 * its sites through other eyes (`--origin-skip`, `--origin-rules`). */
#ifndef GPULEAK_CLI_REJUDGE_H
#define GPULEAK_CLI_REJUDGE_H

#include "load.h"

/* Sets the rules: skip's globs (colon-separated, '!' keeps; NULL for none)
 * before the built-in table, which builtin 0 drops. */
void rejudge_rules(const char *skip, int builtin);

/* Gives every site of r that has frames the origin, via and callers the
 * rules set by rejudge_rules pick, as the shim would have written them
 * with those rules; a site without frames keeps the report's. */
void rejudge_report(load_report_t *r);

#endif
