/* help.h: the help of the gpuleak command, printed from the commands'
 * tables (opts.h), so it lists exactly what the parser accepts. */
#ifndef GPULEAK_CLI_HELP_H
#define GPULEAK_CLI_HELP_H

#include "opts.h"

#include <stdio.h>

/* Writes the list of commands (NULL-terminated) with a line each, and how
 * to get more. */
void help_print_commands(FILE *f, const cmd_spec_t *const *commands);

/* Writes cmd's help: its usage line, what it does, every option with its
 * help sentence (aliases too), its exit codes, and how values and sizes
 * are written. */
void help_print_command(FILE *f, const cmd_spec_t *cmd);

/* Writes the manual page, in roff: every command of commands
 * (NULL-terminated) with every option. */
void help_print_man(FILE *f, const cmd_spec_t *const *commands);

#endif
