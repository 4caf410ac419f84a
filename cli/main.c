/* main.c: `gpuleak COMMAND [ARGS]`: finds the command, parses its
 * arguments by its table and runs it. What each command does is in its own
 * file (commands.h); exit codes are listed in README.md, "Exit codes". */
#include "commands.h"
#include "frames.h"
#include "help.h"
#include "opts.h"

#include <stdio.h>
#include <string.h>

const cmd_spec_t *const cli_commands[] = {
    &run_command, &report_command, &check_command, &diff_command, &merge_command,
    &export_command, &html_command, &help_command, &version_command, NULL,
};

const cmd_spec_t *cli_command(const char *name)
{
    for (size_t i = 0; cli_commands[i] != NULL; i++)
        if (strcmp(cli_commands[i]->name, name) == 0)
            return cli_commands[i];
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
        help_print_commands(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    /* The spellings every tool has for these two. */
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    else if (strcmp(name, "--version") == 0)
        name = "version";
    const cmd_spec_t *cmd = cli_command(name);
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
