/* opts.c: the one parser of every command's arguments, driven by the
 * command's table (opts.h). Every refusal is one line on stderr naming the
 * command and the word at fault; the caller exits CLI_EXIT_USAGE. */
#define _GNU_SOURCE
#include "opts.h"
#include "frames.h"
#include "units.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Starts the one line of a refusal: "gpuleak CMD: ". */
static void say(const cmd_spec_t *cmd)
{
    fprintf(stderr, "gpuleak %s: ", cmd->name);
}

/* Whether arg spells name, alone (*value NULL) or, for a long name, as
 * "name=VALUE" (*value after the '='). */
static bool spells(const char *arg, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return false;
    if (arg[n] == '\0') {
        *value = NULL;
        return true;
    }
    if (arg[n] == '=' && strncmp(name, "--", 2) == 0) {
        *value = arg + n + 1;
        return true;
    }
    return false;
}

/* "a, b or c": an option's choices in a message. */
static void put_choices(FILE *f, const char *const *choices)
{
    for (size_t i = 0; choices[i] != NULL; i++) {
        if (i > 0)
            fputs(choices[i + 1] == NULL ? " or " : ", ", f);
        fputs(choices[i], f);
    }
}

/* Converts text into v by spec's kind. Returns 0, or -1 after saying why. */
static int take_value(const cmd_spec_t *cmd, const opt_spec_t *spec, const char *given, const char *text,
                      opt_value_t *v)
{
    if (spec->kind == OPT_SIZE && units_parse_size(text, &v->number) != 0) {
        say(cmd);
        if (access(text, F_OK) == 0) {
            /* "check --fail-on-leak FILE", as run takes the gate alone. */
            fprintf(stderr, "%s needs a SIZE before the files: \"", given);
            frame_text_put(stderr, text);
            fprintf(stderr, "\" is a file (%s 0 allows none)\n", given);
            return -1;
        }
        fprintf(stderr, "%s: bad size \"", given);
        frame_text_put(stderr, text);
        fputs("\" (sizes: " UNITS_SIZE_FORMS ")\n", stderr);
        return -1;
    }
    if (spec->kind == OPT_COUNT) {
        size_t len = strlen(text);
        uint64_t n = 0;
        /* Digits only, and few enough that the sum below cannot wrap. */
        bool ok = len > 0 && len <= 19 && strspn(text, "0123456789") == len;
        for (size_t i = 0; ok && i < len; i++)
            n = n * 10 + (uint64_t)(text[i] - '0');
        if (!ok || n > spec->max) {
            say(cmd);
            fprintf(stderr, "%s takes a whole number from 0 to %llu, not \"", given,
                    (unsigned long long)spec->max);
            frame_text_put(stderr, text);
            fputs("\"\n", stderr);
            return -1;
        }
        v->number = n;
    }
    if (spec->kind == OPT_CHOICE) {
        int found = -1;
        for (int i = 0; spec->choices[i] != NULL && found < 0; i++)
            if (strcmp(text, spec->choices[i]) == 0)
                found = i;
        if (found < 0) {
            say(cmd);
            fprintf(stderr, "%s takes ", given);
            put_choices(stderr, spec->choices);
            fputs(", not \"", stderr);
            frame_text_put(stderr, text);
            fputs("\"\n", stderr);
            return -1;
        }
        v->choice = found;
    }
    v->text = text;
    if (spec->flags & OPT_REPEATED)
        v->all[v->count++] = text;
    return 0;
}

/* Parses the option at argv[*i] (which starts with '-'), advancing *i past
 * a value taken from the next word. Returns OPTS_OK, OPTS_HELP or
 * OPTS_ERROR (said). */
static int take_option(const cmd_spec_t *cmd, int argc, char **argv, int *i, opts_t *out)
{
    const char *arg = argv[*i], *value = NULL;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
        return OPTS_HELP;
    size_t k = 0;
    const char *given = NULL;
    for (; k < cmd->noptions; k++) {
        const opt_spec_t *o = &cmd->options[k];
        if (spells(arg, o->name, &value))
            given = o->name;
        else if (o->alias != NULL && spells(arg, o->alias, &value))
            given = o->alias;
        if (given != NULL)
            break;
    }
    if (given == NULL) {
        say(cmd);
        fputs("unknown option ", stderr);
        frame_text_put(stderr, arg);
        fprintf(stderr, " (gpuleak %s --help lists them)\n", cmd->name);
        return OPTS_ERROR;
    }
    const opt_spec_t *spec = &cmd->options[k];
    opt_value_t *v = &out->v[k];
    v->set = true;
    v->given = given;
    if (spec->kind == OPT_FLAG) {
        if (value == NULL)
            return OPTS_OK;
        say(cmd);
        fprintf(stderr, "%s takes no value\n", given);
        return OPTS_ERROR;
    }
    const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (value == NULL && next != NULL && strcmp(next, "--") != 0) {
        /* An optional value is taken from the next word only when that
         * word is a number: "--max-leaked 20MiB -- cmd" is a budget, and
         * "--max-leaked python train.py" runs python. A word that begins
         * with a digit but is no size is refused, not run. */
        if (!(spec->flags & OPT_OPTIONAL) || (*next >= '0' && *next <= '9'))
            value = argv[++*i];
    }
    if (value == NULL && (spec->flags & OPT_OPTIONAL)) {
        v->text = NULL;
        v->number = 0;
        return OPTS_OK;
    }
    if (value == NULL || *value == '\0') {
        say(cmd);
        fprintf(stderr, "%s needs a value (%s)\n", given, spec->metavar);
        return OPTS_ERROR;
    }
    return take_value(cmd, spec, given, value, v) == 0 ? OPTS_OK : OPTS_ERROR;
}

/* One line about the operands: which are missing, or which is one too many. */
static int operand_error(const cmd_spec_t *cmd, const char *extra)
{
    say(cmd);
    if (extra != NULL) {
        fputs("unexpected operand \"", stderr);
        frame_text_put(stderr, extra);
        fputs("\"", stderr);
    } else {
        fputs(cmd->min_operands > 1 ? "missing operands" : "missing operand", stderr);
    }
    fputs(" (usage: ", stderr);
    opts_print_synopsis(stderr, cmd);
    fputs(")\n", stderr);
    return OPTS_ERROR;
}

int opts_parse(const cmd_spec_t *cmd, int argc, char **argv, opts_t *out)
{
    memset(out, 0, sizeof *out);
    out->v = calloc(cmd->noptions + 1, sizeof *out->v);
    out->nv = out->v != NULL ? cmd->noptions : 0;
    out->operands = calloc((size_t)argc + 1, sizeof *out->operands);
    bool fail = out->v == NULL || out->operands == NULL;
    for (size_t k = 0; !fail && k < cmd->noptions; k++)
        if (cmd->options[k].flags & OPT_REPEATED) {
            out->v[k].all = calloc((size_t)argc + 1, sizeof *out->v[k].all);
            fail = out->v[k].all == NULL;
        }
    if (fail) {
        say(cmd);
        fputs("out of memory\n", stderr);
        opts_free(out);
        return OPTS_ERROR;
    }
    bool options_over = false;
    int rc = OPTS_OK;
    for (int i = 0; i < argc && rc == OPTS_OK; i++) {
        const char *a = argv[i];
        if (!options_over && strcmp(a, "--") == 0) {
            options_over = true;
        } else if (options_over || a[0] != '-' || a[1] == '\0') {
            out->operands[out->noperands++] = argv[i];
            options_over = options_over || cmd->options_first;
        } else {
            rc = take_option(cmd, argc, argv, &i, out);
        }
    }
    for (size_t k = 0; rc == OPTS_OK && k < cmd->noptions; k++)
        if ((cmd->options[k].flags & OPT_REQUIRED) && !out->v[k].set) {
            say(cmd);
            fprintf(stderr, "%s is needed (gpuleak %s --help)\n", cmd->options[k].name, cmd->name);
            rc = OPTS_ERROR;
        }
    if (rc == OPTS_OK && out->noperands < cmd->min_operands)
        rc = operand_error(cmd, NULL);
    else if (rc == OPTS_OK && out->noperands > cmd->max_operands)
        rc = operand_error(cmd, out->operands[cmd->max_operands]);
    if (rc != OPTS_OK)
        opts_free(out);
    return rc;
}

void opts_free(opts_t *opts)
{
    for (size_t k = 0; opts->v != NULL && k < opts->nv; k++)
        free(opts->v[k].all);
    free(opts->v);
    free(opts->operands);
    memset(opts, 0, sizeof *opts);
}

void opts_print_synopsis(FILE *f, const cmd_spec_t *cmd)
{
    fprintf(f, "gpuleak %s%s%s%s", cmd->name, cmd->noptions > 0 ? " [options]" : "",
            cmd->operands[0] != '\0' ? " " : "", cmd->operands);
}
