/* opts.h: what a command accepts, declared once as data: its options (name,
 * alias, kind of value, help sentence), its operands, its exit codes. One
 * parser reads every command's arguments from these tables, and the help,
 * the usage lines and the manual page are printed from them, so that what
 * gpuleak accepts and what it says it accepts cannot drift apart. */
#ifndef GPULEAK_CLI_OPTS_H
#define GPULEAK_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bad usage (an unknown option, a bad value, a missing operand) and
 * unreadable input: README.md, "Exit codes". */
#define CLI_EXIT_USAGE 2

/* The kind of value an option takes. */
typedef enum {
    OPT_FLAG,   /* none */
    OPT_SIZE,   /* bytes as people write them (units_parse_size) */
    OPT_COUNT,  /* a whole number from 0 to the option's max */
    OPT_STRING, /* any non-empty text */
    OPT_CHOICE, /* one of the option's choices */
} opt_kind_t;

/* Option flags. */
#define OPT_REPEATED 1u /* may be given many times; every value is kept */
#define OPT_OPTIONAL 2u /* the value may be left out: then only "--name=VALUE",
                           or a next word that begins with a digit, gives one */
#define OPT_REQUIRED 4u /* the command cannot run without it */

typedef struct {
    const char *name;           /* "--max-leaked" */
    const char *alias;          /* another spelling ("--fail-on-leak", "-o"), or NULL */
    opt_kind_t kind;
    unsigned flags;
    const char *metavar;        /* the value in the help: SIZE, FILE, N */
    const char *const *choices; /* OPT_CHOICE: the accepted values, NULL-terminated */
    uint64_t max;               /* OPT_COUNT: the largest accepted */
    const char *help;           /* what it does, in a sentence or two */
} opt_spec_t;

/* One exit code of a command and what it means. */
typedef struct {
    const char *code; /* "0", "128+N", "CMD's" */
    const char *meaning;
} cmd_exit_t;

/* One option's value after parsing. */
typedef struct {
    bool set;               /* given at least once */
    const char *given;      /* the spelling used last (name or alias), for messages */
    const char *text;       /* the last value as written; NULL when given without one */
    uint64_t number;        /* OPT_SIZE, OPT_COUNT: the last value (0 without one) */
    int choice;             /* OPT_CHOICE: the index of the last value in choices */
    const char **all;       /* OPT_REPEATED: every value, in order */
    size_t count;           /* how many in all */
} opt_value_t;

/* A command's arguments once parsed. */
typedef struct {
    opt_value_t *v;   /* one per option of the command, in table order */
    size_t nv;
    char **operands;  /* NULL-terminated, in order (run: CMD and its arguments) */
    size_t noperands;
} opts_t;

#define OPERANDS_ANY SIZE_MAX

typedef struct cmd_spec {
    const char *name;
    const char *operands;       /* the operands in the usage line: "FILE...", "OLD NEW" */
    size_t min_operands;
    size_t max_operands;        /* OPERANDS_ANY: no limit */
    bool options_first;         /* options end at the first operand (run: CMD's own follow) */
    const char *summary;        /* one line, for the list of commands */
    const char *description;    /* paragraphs separated by "\n", for --help and the manual */
    const opt_spec_t *options;
    size_t noptions;
    const cmd_exit_t *exits;
    size_t nexits;
    int (*main)(const opts_t *opts); /* returns the exit code */
} cmd_spec_t;

/* What opts_parse found. */
enum { OPTS_OK = 0, OPTS_HELP = 1, OPTS_ERROR = -1 };

/* Parses argv[0..argc) (the words after the command's name) by cmd's
 * table into *out: options as "--name VALUE" or "--name=VALUE" (a short
 * alias as "-o VALUE"), anywhere among the operands unless
 * cmd->options_first, "--" ending the options. Returns OPTS_OK (free *out
 * with opts_free), OPTS_HELP when -h or --help came among the options, or
 * OPTS_ERROR after one line on stderr naming the problem (an unknown
 * option, a missing or bad value, too few or too many operands). */
int opts_parse(const cmd_spec_t *cmd, int argc, char **argv, opts_t *out);

/* Frees what opts_parse allocated; a zeroed opts_t is a no-op. */
void opts_free(opts_t *opts);

/* Writes cmd's usage, as "gpuleak check [options] FILE...". */
void opts_print_synopsis(FILE *f, const cmd_spec_t *cmd);

#endif
