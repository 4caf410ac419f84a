/* help.h: the help of the gpuleak command, printed from the commands'
 * tables (opts.h), so it lists exactly what the parser accepts. */
#ifndef GPULEAK_CLI_HELP_H
#define GPULEAK_CLI_HELP_H

#include "opts.h"

#include <stdio.h>

/* Writes the list of commands with a line each, and how to get more. */
void help_print_commands(FILE *f);

/* Writes cmd's help: its usage line, what it does, every option with its
 * help sentence (aliases too), its exit codes, and how values and sizes
 * are written. */
void help_print_command(FILE *f, const cmd_spec_t *cmd);

#endif
