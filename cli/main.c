/* main.c: `gpuleak SUBCOMMAND ...` dispatch, and the option parsing of the
 * two subcommands that are only glue (report, check). Exit codes are listed
 * in README.md, "Exit codes". */
#define _GNU_SOURCE
#include "check.h"
#include "diff.h"
#include "export.h"
#include "frames.h"
#include "load.h"
#include "merge.h"
#include "rejudge.h"
#include "report_format.h"
#include "run.h"
#include "supp.h"
#include "text.h"
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

static void usage(FILE *f)
{
    fputs("usage: gpuleak COMMAND [ARGS]\n"
          "  run [options] -- CMD [ARGS...]   run CMD with the shim preloaded; gates exit 23\n"
          "        [--output=PATTERN] [--stack-depth=N] [--no-python] [--quiet]\n"
          "        [--fail-on-leak[=SIZE]] [--fail-on-growth[=SIZE]] [--max-peak=SIZE]\n"
          "        [--suppressions=FILE]... [--no-default-suppressions]\n"
          "  report FILE... [--top N] [--kind K] [--device D] [--full-stacks]\n"
          "         [--origin-skip GLOBS] [--origin-rules none|default]\n"
          "  check FILE... [--max-leaked SIZE] [--max-growth SIZE] [--max-peak SIZE]\n"
          "        [--suppressions FILE]... [--no-default-suppressions] [--junit FILE]\n"
          "        [--origin-skip GLOBS] [--origin-rules none|default]\n"
          "  diff OLD NEW [--threshold SIZE]\n"
          "  merge FILE...\n"
          "  export FILE --format folded|csv|chrome-trace [-o OUT]\n"
          "  version\n"
          "Sizes: 123, 4KiB, 1.5MB, 2GiB (KB=1000, KiB=1024).\n", f);
}

/* Matches "--name VALUE" and "--name=VALUE", advancing *i past the value.
 * Returns 1 with *value set, 0 when arg is another option, -1 (after a
 * message) when the value is missing. */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "gpuleak: %s needs a value\n", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

/* The origin options report and check share. origin_set says one was
 * given: the reports are then judged again (rejudge.h). */
typedef struct {
    const char *skip;
    int builtin, set;
} origin_options_t;

/* Takes --origin-skip GLOBS or --origin-rules none|default at argv[*i]:
 * 1 when taken, 0 when argv[*i] is neither, -1 (said on stderr) when bad. */
static int origin_option(int argc, char **argv, int *i, const char *cmd, origin_options_t *o)
{
    const char *v;
    int rc;
    if ((rc = option_value(argc, argv, i, "--origin-skip", &v)) != 0) {
        if (rc > 0) {
            o->skip = v;
            o->set = 1;
        }
        return rc;
    }
    if ((rc = option_value(argc, argv, i, "--origin-rules", &v)) != 0) {
        if (rc > 0 && (strcmp(v, "none") == 0 || strcmp(v, "default") == 0)) {
            o->builtin = strcmp(v, "default") == 0;
            o->set = 1;
            return 1;
        }
        if (rc > 0)
            fprintf(stderr, "gpuleak %s: --origin-rules takes none or default\n", cmd);
        return -1;
    }
    return 0;
}

/* Judges r's origins again when an origin option was given. */
static void origin_apply(const origin_options_t *o, load_report_t *r)
{
    if (o->set && r != NULL)
        rejudge_report(r);
}

static int size_option(const char *name, const char *value, uint64_t *out)
{
    if (units_parse_size(value, out) == 0)
        return 0;
    fprintf(stderr, "gpuleak: %s: bad size \"", name);
    frames_put(stderr, value);
    fputs("\" (sizes: 123, 4KiB, 1.5MB, 2GiB)\n", stderr);
    return -1;
}

/* Loads every file, printing one line per bad one; returns 0 only when all
 * loaded, so a command never judges a partial set. */
static int load_all(char **files, int n, load_report_t **out)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char *err = NULL;
        out[i] = load_file(files[i], &err);
        if (out[i] == NULL) {
            fputs("gpuleak: ", stderr);
            frames_put(stderr, err ? err : "out of memory");
            fputc('\n', stderr);
            bad = 1;
        }
        free(err);
    }
    return bad ? -1 : 0;
}

static void free_all(load_report_t **reports, int n)
{
    for (int i = 0; i < n; i++)
        load_free(reports[i]);
    free(reports);
}

/* `gpuleak report`: prints each report's human view on stdout. Exits 0, or
 * 2 when a file cannot be read or an option is wrong. */
static int cmd_report(int argc, char **argv)
{
    text_options_t o = { 10, NULL, -1, 0 };
    origin_options_t origin = { NULL, 1, 0 };
    char **files = calloc((size_t)argc + 1, sizeof *files);
    int nfiles = 0, rc;
    if (files == NULL)
        return EXIT_USAGE;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((rc = origin_option(argc, argv, &i, "report", &origin)) != 0) {
            if (rc < 0) {
                free(files);
                return EXIT_USAGE;
            }
        } else if ((rc = option_value(argc, argv, &i, "--top", &v)) != 0) {
            char *end;
            errno = 0;
            unsigned long long n = rc > 0 ? strtoull(v, &end, 10) : 0;
            if (rc < 0 || *v < '0' || *v > '9' || *end != '\0' || errno != 0 || n > 1000000000ULL) {
                if (rc > 0)
                    fputs("gpuleak report: --top takes a number (0: all)\n", stderr);
                free(files);
                return EXIT_USAGE;
            }
            o.top = (size_t)n;
        } else if ((rc = option_value(argc, argv, &i, "--kind", &v)) != 0) {
            if (rc < 0 || load_kind_index(v) < 0) {
                if (rc > 0)
                    fputs("gpuleak report: --kind takes device, pool, vmm, managed, host or array\n", stderr);
                free(files);
                return EXIT_USAGE;
            }
            o.kind = v;
        } else if ((rc = option_value(argc, argv, &i, "--device", &v)) != 0) {
            char *end;
            long d = rc > 0 ? strtol(v, &end, 10) : -1;
            if (rc < 0 || *v < '0' || *v > '9' || *end != '\0' || d > 1000000) {
                if (rc > 0)
                    fputs("gpuleak report: --device takes a device number\n", stderr);
                free(files);
                return EXIT_USAGE;
            }
            o.device = d;
        } else if (strcmp(argv[i], "--full-stacks") == 0) {
            o.full_stacks = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "gpuleak report: unknown option %s\n", argv[i]);
            free(files);
            return EXIT_USAGE;
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (nfiles == 0) {
        fputs("usage: gpuleak report FILE... [--top N] [--kind K] [--device D] [--full-stacks]\n"
              "       [--origin-skip GLOBS] [--origin-rules none|default]\n", stderr);
        free(files);
        return EXIT_USAGE;
    }
    load_report_t **reports = calloc((size_t)nfiles, sizeof *reports);
    if (reports == NULL || load_all(files, nfiles, reports) != 0) {
        free_all(reports, reports ? nfiles : 0);
        free(files);
        return EXIT_USAGE;
    }
    if (origin.set)
        rejudge_rules(origin.skip, origin.builtin);
    for (int i = 0; i < nfiles; i++) {
        if (i > 0)
            fputc('\n', stdout);
        origin_apply(&origin, reports[i]);
        text_print(stdout, reports[i], &o);
    }
    free_all(reports, nfiles);
    free(files);
    return 0;
}

/* `gpuleak check`: exits 0 when every budget holds on every file, 1 when
 * one fails, 2 for bad usage or input. Without a budget, any unsuppressed
 * leak fails (--max-leaked 0), which is what "check for leaks" means. */
static int cmd_check(int argc, char **argv)
{
    check_budget_t b;
    memset(&b, 0, sizeof b);
    b.leaked_flag = "--max-leaked";
    b.growth_flag = "--max-growth";
    b.peak_flag = "--max-peak";
    const char *junit_path = NULL;
    origin_options_t origin = { NULL, 1, 0 };
    int no_defaults = 0, nfiles = 0, nsupp = 0, rc, code = EXIT_USAGE;
    char **files = calloc((size_t)argc + 1, sizeof *files);
    const char **supp_files = calloc((size_t)argc + 1, sizeof *supp_files);
    supp_set_t *supp = supp_new();
    check_junit_t *junit = NULL;
    load_report_t **reports = NULL;
    if (files == NULL || supp_files == NULL || supp == NULL)
        goto out;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((rc = origin_option(argc, argv, &i, "check", &origin)) != 0) {
            if (rc < 0)
                goto out;
        } else if ((rc = option_value(argc, argv, &i, "--max-leaked", &v)) != 0) {
            if (rc < 0 || size_option("--max-leaked", v, &b.max_leaked) != 0)
                goto out;
            b.leaked = true;
        } else if ((rc = option_value(argc, argv, &i, "--max-growth", &v)) != 0) {
            if (rc < 0 || size_option("--max-growth", v, &b.max_growth) != 0)
                goto out;
            b.growth = true;
        } else if ((rc = option_value(argc, argv, &i, "--max-peak", &v)) != 0) {
            if (rc < 0 || size_option("--max-peak", v, &b.max_peak) != 0)
                goto out;
            b.peak = true;
        } else if ((rc = option_value(argc, argv, &i, "--suppressions", &v)) != 0) {
            if (rc < 0)
                goto out;
            supp_files[nsupp++] = v;
        } else if ((rc = option_value(argc, argv, &i, "--junit", &v)) != 0) {
            if (rc < 0)
                goto out;
            junit_path = v;
        } else if (strcmp(argv[i], "--no-default-suppressions") == 0) {
            no_defaults = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "gpuleak check: unknown option %s\n", argv[i]);
            goto out;
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (nfiles == 0) {
        fputs("usage: gpuleak check FILE... [--max-leaked SIZE] [--max-growth SIZE] [--max-peak SIZE]\n"
              "       [--suppressions FILE] [--no-default-suppressions] [--junit FILE]\n"
              "       [--origin-skip GLOBS] [--origin-rules none|default]\n", stderr);
        goto out;
    }
    if (!b.leaked && !b.growth && !b.peak)
        b.leaked = true;
    if (!no_defaults && supp_add_defaults(supp) != 0)
        goto out;
    for (int i = 0; i < nsupp; i++) {
        char *err = NULL;
        if (supp_load_file(supp, supp_files[i], &err) != 0) {
            fputs("gpuleak: ", stderr);
            frames_put(stderr, err ? err : "out of memory");
            fputc('\n', stderr);
            free(err);
            goto out;
        }
    }
    junit = junit_path ? check_junit_new() : NULL;
    if (origin.set)
        rejudge_rules(origin.skip, origin.builtin);
    reports = calloc((size_t)nfiles, sizeof *reports);
    if (reports == NULL)
        goto out;
    int verdict = CHECK_PASS;
    /* Every file is judged even after a bad one, so the JUnit file and the
     * output cover the whole set; the exit code is the worst verdict. */
    for (int i = 0; i < nfiles; i++) {
        char *err = NULL;
        reports[i] = load_file(files[i], &err);
        if (reports[i] == NULL) {
            fputs("gpuleak: ", stderr);
            frames_put(stderr, err ? err : "out of memory");
            fputc('\n', stderr);
            check_junit_error(junit, files[i], err ? err : "unreadable");
            free(err);
            verdict = CHECK_ERROR;
            continue;
        }
        origin_apply(&origin, reports[i]);
        int v = check_report(stdout, reports[i], &b, supp, junit);
        verdict = v > verdict ? v : verdict;
    }
    supp_print_used(stdout, supp);
    code = verdict;
    if (junit_path != NULL && check_junit_write(junit, junit_path) != 0) {
        fprintf(stderr, "gpuleak check: cannot write %s: %s\n", junit_path, strerror(errno));
        code = EXIT_USAGE;
    }
out:
    if (reports != NULL)
        for (int i = 0; i < nfiles; i++)
            load_free(reports[i]);
    free(reports);
    check_junit_free(junit);
    supp_free(supp);
    free(files);
    free(supp_files);
    return code;
}

/* The exit code of a subcommand that wrote its results on stdout: 2, with
 * one line, when a write failed (a full disk, a closed pipe with SIGPIPE
 * ignored), whatever the subcommand decided, since a verdict whose output
 * was lost must not pass a gate silently. */
static int stdout_checked(const char *cmd, int code)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return code;
    fprintf(stderr, "gpuleak %s: writing stdout failed\n", cmd);
    return EXIT_USAGE;
}

/* Dispatches on the subcommand; every subcommand returns its exit code. */
int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    int sub_argc = argc - 2;
    char **sub_argv = argv + 2;
    /* "gpuleak COMMAND --help": the usage, which names every command's
     * options, rather than "unknown option". */
    if (sub_argc >= 1 && (strcmp(sub_argv[0], "--help") == 0 || strcmp(sub_argv[0], "-h") == 0)) {
        usage(stdout);
        return stdout_checked(cmd, 0);
    }
    if (strcmp(cmd, "run") == 0)
        return run_main(sub_argc, sub_argv);
    if (strcmp(cmd, "report") == 0)
        return stdout_checked(cmd, cmd_report(sub_argc, sub_argv));
    if (strcmp(cmd, "check") == 0)
        return stdout_checked(cmd, cmd_check(sub_argc, sub_argv));
    if (strcmp(cmd, "diff") == 0)
        return stdout_checked(cmd, diff_main(sub_argc, sub_argv));
    if (strcmp(cmd, "merge") == 0)
        return stdout_checked(cmd, merge_main(sub_argc, sub_argv));
    if (strcmp(cmd, "export") == 0)
        return stdout_checked(cmd, export_main(sub_argc, sub_argv));
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("gpuleak %s (report format %d)\n", GPULEAK_VERSION, REPORT_FORMAT_VERSION);
        return stdout_checked(cmd, 0);
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return stdout_checked(cmd, 0);
    }
    fprintf(stderr, "gpuleak: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
