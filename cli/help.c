/* help.c: the text of `gpuleak help [COMMAND]` and `gpuleak help --man`
 * (main.c runs that command over its table of commands), and `gpuleak
 * version`. The help and the manual page are written from the commands'
 * tables, the ones the parser reads, so neither can list an option that
 * does not exist or leave one out. */
#include "help.h"
#include "commands.h"
#include "frames.h"
#include "report_format.h"
#include "shim_options.h"
#include "units.h"

#include <string.h>

/* Help text is wrapped here; the option column starts at OPT_COLUMN. */
#define WIDTH 79
#define OPT_COLUMN 28

/* Writes text from column col (what the line holds already), breaking
 * lines between words at WIDTH and starting each new one at indent; a
 * '\n' in text starts a new paragraph after a blank line. Returns the
 * column it ended at, the line left open for more. */
static int wrap_on(FILE *f, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p != '\0') {
        if (*p == '\n') {
            fprintf(f, "\n\n%*s", indent, "");
            col = indent;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        int len = (int)strcspn(p, " \n");
        if (col > indent && col + 1 + len > WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, (size_t)len, f);
        col += len;
        p += len;
    }
    return col;
}

/* wrap_on, then the end of the line. */
static void wrap(FILE *f, const char *text, int col, int indent)
{
    wrap_on(f, text, col, indent);
    fputc('\n', f);
}

/* What an option's flags add to its help sentence, or "". */
static const char *flags_note(const opt_spec_t *o)
{
    if (o->flags & OPT_OPTIONAL)
        return "Given without a value: 0.";
    if (o->flags & OPT_REPEATED)
        return "May be given more than once.";
    if (o->flags & OPT_REQUIRED)
        return "Required.";
    return "";
}

static bool is_short(const char *name)
{
    return name != NULL && name[0] == '-' && name[1] != '-';
}

/* "--name SIZE", "--name[=SIZE]" or "--name": how an option is written.
 * Returns the columns written. */
static int put_spelling(FILE *f, const opt_spec_t *o, const char *name)
{
    if (o->kind == OPT_FLAG)
        return fprintf(f, "%s", name);
    if (o->flags & OPT_OPTIONAL)
        return fprintf(f, "%s[=%s]", name, o->metavar);
    return fprintf(f, "%s %s", name, o->metavar);
}

/* An option's line(s): "-o, --output FILE   help", and for a long alias
 * a line of its own saying which option it spells. */
static void put_option(FILE *f, const opt_spec_t *o)
{
    int col = fprintf(f, "  ");
    if (is_short(o->alias))
        col += fprintf(f, "%s, ", o->alias);
    col += put_spelling(f, o, o->name);
    if (col + 2 > OPT_COLUMN) {
        fputc('\n', f);
        col = 0;
    }
    fprintf(f, "%*s", OPT_COLUMN - col, "");
    col = wrap_on(f, o->help, OPT_COLUMN, OPT_COLUMN);
    wrap(f, flags_note(o), col, OPT_COLUMN);
    if (o->alias != NULL && !is_short(o->alias)) {
        col = fprintf(f, "  ");
        col += put_spelling(f, o, o->alias);
        fprintf(f, "%*s", col + 2 > OPT_COLUMN ? 2 : OPT_COLUMN - col, "");
        fprintf(f, "Another spelling of %s.\n", o->name);
    }
}

/* Whether one of cmd's options takes a value of this kind (OPT_FLAG: any). */
static bool takes(const cmd_spec_t *cmd, opt_kind_t kind)
{
    for (size_t i = 0; i < cmd->noptions; i++)
        if (kind == OPT_FLAG ? cmd->options[i].kind != OPT_FLAG : cmd->options[i].kind == kind)
            return true;
    return false;
}

void help_print_commands(FILE *f, const cmd_spec_t *const *commands)
{
    fputs("usage: gpuleak COMMAND [ARGS]\n\nCommands:\n", f);
    for (size_t i = 0; commands[i] != NULL; i++)
        fprintf(f, "  %-9s %s\n", commands[i]->name, commands[i]->summary);
    fputc('\n', f);
    wrap(f, "\"gpuleak help COMMAND\" or \"gpuleak COMMAND --help\" shows a command's options and "
            "exit codes; \"gpuleak help --man\" writes the manual page.", 0, 0);
}

void help_print_command(FILE *f, const cmd_spec_t *cmd)
{
    fputs("usage: ", f);
    opts_print_synopsis(f, cmd);
    fputs("\n\n", f);
    wrap(f, cmd->description, 0, 0);
    fputs("\nOptions:\n", f);
    for (size_t i = 0; i < cmd->noptions; i++)
        put_option(f, &cmd->options[i]);
    fprintf(f, "  %-*s%s\n", OPT_COLUMN - 2, "-h, --help", "Print this help.");
    fputs("\nExit codes:\n", f);
    for (size_t i = 0; i < cmd->nexits; i++) {
        int col = fprintf(f, "  %-6s ", cmd->exits[i].code);
        wrap(f, cmd->exits[i].meaning, col, col);
    }
    if (takes(cmd, OPT_FLAG)) {
        fputc('\n', f);
        wrap(f, "A value follows its option as \"--name VALUE\" or \"--name=VALUE\".", 0, 0);
    }
    if (takes(cmd, OPT_SIZE))
        wrap(f, "Sizes: " UNITS_SIZE_FORMS ".", 0, 0);
}

/* Writes text as roff: backslashes and minus signs escaped (an option
 * typed from the page must work), a control character at the start of a
 * line defused, and a '\n' a new paragraph. */
static void man_put(FILE *f, const char *text)
{
    bool line_start = true;
    for (const char *p = text; *p != '\0'; p++) {
        if (line_start && (*p == '.' || *p == '\''))
            fputs("\\&", f);
        line_start = false;
        if (*p == '\\')
            fputs("\\e", f);
        else if (*p == '-')
            fputs("\\-", f);
        else if (*p == '\n') {
            fputs("\n.PP\n", f);
            line_start = true;
        } else
            fputc(*p, f);
    }
}

/* An option's spelling in roff: bold name, italic value. */
static void man_spelling(FILE *f, const opt_spec_t *o, const char *name)
{
    fputs("\\fB", f);
    man_put(f, name);
    fputs("\\fR", f);
    if (o->kind == OPT_FLAG)
        return;
    fputs(o->flags & OPT_OPTIONAL ? "[=\\fI" : " \\fI", f);
    man_put(f, o->metavar);
    fputs(o->flags & OPT_OPTIONAL ? "\\fR]" : "\\fR", f);
}

static void man_command(FILE *f, const cmd_spec_t *cmd)
{
    fputs(".SS \"", f);
    man_put(f, "gpuleak ");
    man_put(f, cmd->name);
    fputs("\"\n.B gpuleak ", f);
    man_put(f, cmd->name);
    fputc('\n', f);
    if (cmd->noptions > 0)
        fputs(".RI [ options ]\n", f);
    if (cmd->operands[0] != '\0') {
        fputs(".I \"", f);
        man_put(f, cmd->operands);
        fputs("\"\n", f);
    }
    fputs(".PP\n", f);
    man_put(f, cmd->description);
    fputc('\n', f);
    for (size_t i = 0; i < cmd->noptions; i++) {
        const opt_spec_t *o = &cmd->options[i];
        fputs(".TP\n", f);
        if (is_short(o->alias)) {
            fputs("\\fB", f);
            man_put(f, o->alias);
            fputs("\\fR, ", f);
        }
        man_spelling(f, o, o->name);
        fputc('\n', f);
        man_put(f, o->help);
        fputc(' ', f);
        man_put(f, flags_note(o));
        fputc('\n', f);
        if (o->alias != NULL && !is_short(o->alias)) {
            fputs(".TP\n", f);
            man_spelling(f, o, o->alias);
            fputs("\nAnother spelling of ", f);
            man_put(f, o->name);
            fputs(".\n", f);
        }
    }
    fputs(".PP\nExit codes:\n.RS\n", f);
    for (size_t i = 0; i < cmd->nexits; i++) {
        fputs(".TP\n.B ", f);
        man_put(f, cmd->exits[i].code);
        fputc('\n', f);
        man_put(f, cmd->exits[i].meaning);
        fputc('\n', f);
    }
    fputs(".RE\n", f);
}

/* One variable of the shim's in ENVIRONMENT: its name, its default, what
 * it does. */
static void man_variable(FILE *f, const char *name, const char *default_text, const char *help)
{
    fputs(".TP\n.B ", f);
    man_put(f, name);
    fputs("\n", f);
    man_put(f, help);
    fputs(" Default: ", f);
    man_put(f, default_text[0] != '\0' ? default_text : "(empty)");
    fputs(".\n", f);
}

/* What people run, one example a line, each with what it does. */
static void man_examples(FILE *f)
{
    static const char *const examples[][2] = {
        { "LD_PRELOAD=/usr/local/lib/libgpuleak.so python train.py",
          "Track a program; at exit, the summary on stderr and ./gpuleak-PID.json." },
        { "gpuleak report gpuleak-1234.json",
          "What leaked, what grew, what was live at the peak, by line." },
        { "gpuleak html gpuleak-1234.json",
          "The same as one page, gpuleak-1234.html, beside the report." },
        { "gpuleak run --max-leaked --max-growth -- python train.py",
          "A CI gate: exit 23 when the program leaked or grew, 24 when that could not be judged." },
        { "gpuleak check --max-growth 10MiB gpuleak-*.json",
          "Judge reports kept earlier." },
        { "gpuleak diff --threshold 1MiB before.json after.json",
          "The lines that appeared or grew from one run to the next." },
        { "GPULEAK_OUTPUT=/shared/gpuleak/%j-%r.json torchrun --nproc-per-node 8 train.py",
          "A report per rank of a job (with LD_PRELOAD set for the ranks)." },
        { "gpuleak merge /shared/gpuleak/*.json", "The job's view: the rank that stands out first." },
    };
    fputs("\n.SH EXAMPLES\n", f);
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        fputs(".TP\n.B ", f);
        man_put(f, examples[i][0]);
        fputc('\n', f);
        man_put(f, examples[i][1]);
        fputc('\n', f);
    }
}

/* The shim's variables, from the rows its parser is made of. */
static void man_environment(FILE *f)
{
    fputs("\n.SH ENVIRONMENT\n", f);
    man_put(f, "libgpuleak.so reads these variables when tracking starts (gpuleak run sets "
               "some of them from its options); a value it cannot take is named on stderr and "
               "the default used.");
    fputc('\n', f);
#define MAN_INT(field, name, def, lo, hi, help) man_variable(f, name, #def, help);
#define MAN_TEXT(field, name, def, help) man_variable(f, name, def, help);
#define MAN_WORD(field, name, def, words, help) man_variable(f, name, def, help);
#define MAN_SIGNAL(field, name, def, help) man_variable(f, name, #def, help);
    SHIM_OPTIONS(MAN_INT, MAN_TEXT, MAN_WORD, MAN_SIGNAL)
#undef MAN_INT
#undef MAN_TEXT
#undef MAN_WORD
#undef MAN_SIGNAL
}

void help_print_man(FILE *f, const cmd_spec_t *const *commands)
{
    fputs(".TH GPULEAK 1 \"\" \"gpuleak " GPULEAK_VERSION "\" \"User Commands\"\n"
          ".SH NAME\ngpuleak \\- run CUDA programs under a GPU memory leak detector and read its reports\n"
          ".SH SYNOPSIS\n", f);
    for (size_t i = 0; commands[i] != NULL; i++) {
        fputs(i ? ".br\n.B gpuleak " : ".B gpuleak ", f);
        man_put(f, commands[i]->name);
        fputs("\n", f);
        if (commands[i]->noptions > 0 || commands[i]->operands[0] != '\0') {
            man_put(f, commands[i]->noptions > 0 ? "[options] " : "");
            man_put(f, commands[i]->operands);
            fputc('\n', f);
        }
    }
    fputs(".SH DESCRIPTION\n", f);
    man_put(f, "libgpuleak.so, preloaded into a process, sees every GPU allocation and free at "
               "the driver level, records a stack for each, and writes a JSON report and a "
               "summary when the process exits. The gpuleak command runs programs under it "
               "and reads the reports it writes. Options take their value as \"--name VALUE\" "
               "or \"--name=VALUE\"; -h or --help after a command prints its help.\n");
    fputs("\n.SH COMMANDS\n", f);
    for (size_t i = 0; commands[i] != NULL; i++)
        man_command(f, commands[i]);
    fputs(".SH SIZES\n", f);
    man_put(f, UNITS_SIZE_FORMS ".");
    man_environment(f);
    man_examples(f);
    fputs("\n.SH SEE ALSO\n", f);
    man_put(f, "README.md, docs/report-format.md, docs/suppressions.md, docs/origin-rules.md "
               "and docs/growth.md in gpuleak's sources.");
    fputc('\n', f);
}

static const cmd_exit_t version_exits[] = {
    { "0", "the version was printed" },
    { "2", "a failed write to stdout" },
};

static int version_main(const opts_t *o)
{
    (void)o;
    printf("gpuleak %s (report format %d)\n", GPULEAK_VERSION, REPORT_FORMAT_VERSION);
    return 0;
}

const cmd_spec_t version_command = {
    .name = "version",
    .operands = "",
    .summary = "the version of gpuleak and of the report format it reads",
    .description = "Prints gpuleak's version and the newest report format version it reads.",
    .exits = version_exits,
    .nexits = sizeof version_exits / sizeof version_exits[0],
    .main = version_main,
};
