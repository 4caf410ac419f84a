/* commands.h: every gpuleak command, as the table that declares it
 * (opts.h); main.c lists and dispatches them (help is main.c's own). */
#ifndef GPULEAK_CLI_COMMANDS_H
#define GPULEAK_CLI_COMMANDS_H

#include "opts.h"

extern const cmd_spec_t run_command;     /* run.c */
extern const cmd_spec_t report_command;  /* report_cmd.c */
extern const cmd_spec_t check_command;   /* check_cmd.c */
extern const cmd_spec_t diff_command;    /* diff.c */
extern const cmd_spec_t merge_command;   /* merge.c */
extern const cmd_spec_t export_command;  /* export.c */
extern const cmd_spec_t html_command;    /* html.c */
extern const cmd_spec_t version_command; /* help.c */

#endif
