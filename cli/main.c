/* main.c: `gpuleak COMMAND [ARGS]`: finds the command, parses its
 * arguments by its table and runs it, and `gpuleak help` over that table.
 * What each other command does is in its own file (commands.h); exit codes
 * are listed in README.md, "Exit codes". */
#include "commands.h"
#include "frames.h"
#include "help.h"
#include "opts.h"

#include <stdio.h>
#include <string.h>

/* `gpuleak help`: the one command that needs the table of every command,
 * so it lives beside it; help.c writes the text. */
enum { O_MAN, O_COUNT };

static const opt_spec_t help_options[] = {
    { "--man", NULL, OPT_FLAG, 0, NULL, NULL, 0,
      "Write the manual page of every command, in roff, to stdout (make man builds "
      "build/gpuleak.1 from it)." },
};
_Static_assert(sizeof help_options / sizeof help_options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t help_exits[] = {
    { "0", "the help was printed" },
    { "2", "an unknown command, or a failed write to stdout" },
};

static const cmd_spec_t *const commands[];
static const cmd_spec_t *find_command(const char *name);

static int help_main(const opts_t *o)
{
    if (o->v[O_MAN].set) {
        help_print_man(stdout, commands);
        return 0;
    }
    if (o->noperands == 0) {
        help_print_commands(stdout, commands);
        return 0;
    }
    const cmd_spec_t *cmd = find_command(o->operands[0]);
    if (cmd == NULL) {
        fputs("gpuleak help: unknown command \"", stderr);
        frame_text_put(stderr, o->operands[0]);
        fputs("\" (gpuleak --help lists them)\n", stderr);
        return CLI_EXIT_USAGE;
    }
    help_print_command(stdout, cmd);
    return 0;
}

static const cmd_spec_t help_command = {
    .name = "help",
    .operands = "[COMMAND]",
    .max_operands = 1,
    .summary = "the commands, or one command's options and exit codes",
    .description = "Lists the commands, or prints COMMAND's usage, options and exit codes (as "
                   "\"gpuleak COMMAND --help\" does), or with --man the whole manual page.",
    .options = help_options,
    .noptions = O_COUNT,
    .exits = help_exits,
    .nexits = sizeof help_exits / sizeof help_exits[0],
    .main = help_main,
};

/* Every command, in the order the help and the manual list them. */
static const cmd_spec_t *const commands[] = {
    &run_command, &report_command, &check_command, &diff_command, &merge_command,
    &export_command, &html_command, &help_command, &version_command, NULL,
};

/* The command named name, or NULL. */
static const cmd_spec_t *find_command(const char *name)
{
    for (size_t i = 0; commands[i] != NULL; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

/* The exit code of a command that wrote its results on stdout: 2, with
 * one line, when a write failed (a full disk, a closed pipe with SIGPIPE
 * ignored), whatever the command decided, since a verdict whose output
 * was lost must not pass a gate silently. */
static int stdout_checked(const char *cmd, int code)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return code;
    fprintf(stderr, "gpuleak %s: writing stdout failed\n", cmd);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        help_print_commands(stderr, commands);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    /* The spellings every tool has for these two. */
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    else if (strcmp(name, "--version") == 0)
        name = "version";
    const cmd_spec_t *cmd = find_command(name);
    if (cmd == NULL) {
        fputs("gpuleak: unknown command \"", stderr);
        frame_text_put(stderr, name);
        fputs("\" (gpuleak --help lists them)\n", stderr);
        return CLI_EXIT_USAGE;
    }
    opts_t opts;
    int rc = opts_parse(cmd, argc - 2, argv + 2, &opts);
    if (rc == OPTS_ERROR)
        return CLI_EXIT_USAGE;
    if (rc == OPTS_HELP) {
        help_print_command(stdout, cmd);
        return stdout_checked(cmd->name, 0);
    }
    int code = cmd->main(&opts);
    opts_free(&opts);
    return stdout_checked(cmd->name, code);
}
