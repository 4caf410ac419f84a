/* run.c: runs a command with the shim preloaded, then judges the reports
 * the command (and its children) wrote. The command's own exit status wins
 * over a gate: a crashing test is the first thing to fix. */
#define _GNU_SOURCE
#include "check.h"
#include "commands.h"
#include "frames.h"
#include "load.h"
#include "supp.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Exit status when a gate fails, chosen like LeakSanitizer's exitcode=23 so
 * that CI tells a leak from a crash or a failing test. */
#define RUN_EXIT_GATE 23
/* CMD exited 0, no gate failed, but one could not be judged. */
#define RUN_EXIT_UNJUDGED 24
/* gpuleak itself could not do its part (no shim, no report to judge). */
#define RUN_EXIT_INTERNAL 125
#define RUN_EXIT_NOEXEC 126
#define RUN_EXIT_NOTFOUND 127

enum { O_OUTPUT, O_STACK_DEPTH, O_NO_PYTHON, O_QUIET, O_BUDGETS,
       O_COUNT = O_BUDGETS + CHECK_OPT_COUNT };

static const opt_spec_t options[] = {
    { "--output", "-o", OPT_STRING, 0, "PATTERN", NULL, 0,
      "Write the reports to PATTERN (GPULEAK_OUTPUT: %p pid, %h host, %r rank, %% a percent "
      "sign), a file's name, not a directory's; its directory, when it has no % escape, must "
      "be writable before CMD starts." },
    { "--stack-depth", NULL, OPT_COUNT, 0, "N", NULL, 256,
      "Native frames recorded per allocation, 0 to 256 (GPULEAK_STACK_DEPTH); 0 records no "
      "stacks." },
    { "--no-python", NULL, OPT_FLAG, 0, NULL, NULL, 0, "Record no Python frames (GPULEAK_PYTHON=0)." },
    { "--quiet", "-q", OPT_FLAG, 0, NULL, NULL, 0, "Print no summary at exit (GPULEAK_SUMMARY=0)." },
    CHECK_OPTIONS(OPT_OPTIONAL),
};
_Static_assert(sizeof options / sizeof options[0] == O_COUNT, "one table entry per option");

static const cmd_exit_t exits[] = {
    { "0", "CMD exited 0 and every gate held" },
    { "CMD's", "CMD exited non-zero: its code wins over any gate" },
    { "128+N", "CMD died from signal N (one line on stderr says so)" },
    { "23", "CMD exited 0 but a gate failed (23 as in LeakSanitizer's exitcode)" },
    { "24", "CMD exited 0, no gate failed, but one could not be judged on its report (a run too "
            "short for the growth rule, a report a signal cut short): nothing was judged, so "
            "nothing passed; --allow-unjudged makes it 0" },
    { "125", "gpuleak could not do its part: the shim was not found, or a gate was set and no "
             "readable report was written (CMD made no CUDA call, or was killed by SIGKILL)" },
    { "126", "CMD could not be executed" },
    { "127", "CMD was not found" },
    { "2", "bad usage, found before CMD was started: an unknown option, a bad value, a "
           "suppressions file that cannot be read, an --output directory that cannot be written" },
};

/* What run was asked to do: the parsed options and the gates from them. */
typedef struct {
    const opts_t *opts;
    check_budget_t budget;
} run_options_t;

typedef struct {
    char *path;
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
} seen_t;

typedef struct {
    seen_t *v;
    size_t n;
} seen_list_t;

static volatile sig_atomic_t child_pid;

/* The running executable's path, malloc'd; readlink truncates silently, so
 * the buffer grows until the answer fits. */
static char *self_exe(void)
{
    for (size_t cap = 256; cap <= (1u << 20); cap *= 2) {
        char *buf = malloc(cap);
        if (buf == NULL)
            return NULL;
        ssize_t n = readlink("/proc/self/exe", buf, cap);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if ((size_t)n < cap) {
            buf[n] = '\0';
            return buf;
        }
        free(buf);
    }
    return NULL;
}

/* The shim beside the binary (the build tree) or in ../lib (an install
 * under PREFIX). Malloc'd; NULL when neither exists. */
static char *find_shim(void)
{
    char *exe = self_exe();
    if (exe == NULL)
        return NULL;
    char *slash = strrchr(exe, '/');
    if (slash != NULL)
        *slash = '\0';
    static const char *const places[] = { "%s/libgpuleak.so", "%s/../lib/libgpuleak.so" };
    for (size_t i = 0; i < 2; i++) {
        char *path = NULL;
        if (asprintf(&path, places[i], exe) < 0)
            break;
        if (access(path, R_OK) == 0) {
            char *real = realpath(path, NULL);
            free(path);
            free(exe);
            return real;
        }
        free(path);
    }
    free(exe);
    return NULL;
}

/* Turns the output pattern into a glob: %p, %h and %r become '*', %% a
 * percent sign, and glob metacharacters in the literal text are escaped so
 * a directory named "[x]" still matches itself. Malloc'd. */
static char *pattern_glob(const char *pattern)
{
    size_t n = strlen(pattern);
    char *g = malloc(2 * n + 1);
    if (g == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (pattern[i] == '%' && i + 1 < n) {
            char c = pattern[++i];
            if (c == 'p' || c == 'h' || c == 'r') {
                if (k == 0 || g[k - 1] != '*')
                    g[k++] = '*';
                continue;
            }
            if (c != '%')
                g[k++] = '%'; /* the shim keeps unknown escapes as written */
            g[k++] = c == '%' ? '%' : c;
            continue;
        }
        if (strchr("*?[]\\", pattern[i]))
            g[k++] = '\\';
        g[k++] = pattern[i];
    }
    g[k] = '\0';
    return g;
}

static void seen_free(seen_list_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].path);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* Every report-looking file matching the pattern now, with its identity;
 * a report is renamed into place, so a new one has a new inode or mtime. */
static void snapshot(const char *glob_pattern, seen_list_t *out)
{
    glob_t g;
    out->v = NULL;
    out->n = 0;
    if (glob(glob_pattern, 0, NULL, &g) != 0)
        return;
    out->v = calloc(g.gl_pathc + 1, sizeof *out->v);
    for (size_t i = 0; out->v != NULL && i < g.gl_pathc; i++) {
        struct stat st;
        const char *p = g.gl_pathv[i];
        size_t len = strlen(p);
        /* The shim's temporary names end in .tmp.PID; they are not reports. */
        if (strstr(p, ".tmp.") != NULL || stat(p, &st) != 0 || !S_ISREG(st.st_mode) || len == 0)
            continue;
        seen_t *s = &out->v[out->n];
        s->path = strdup(p);
        if (s->path == NULL)
            continue;
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        s->mtime = st.st_mtim;
        out->n++;
    }
    globfree(&g);
}

static bool was_seen(const seen_list_t *before, const seen_t *s)
{
    for (size_t i = 0; i < before->n; i++) {
        const seen_t *b = &before->v[i];
        if (strcmp(b->path, s->path) == 0 && b->dev == s->dev && b->ino == s->ino &&
            b->mtime.tv_sec == s->mtime.tv_sec && b->mtime.tv_nsec == s->mtime.tv_nsec)
            return true;
    }
    return false;
}

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

/* The signal the shim takes as a request for a report: GPULEAK_DUMP_SIGNAL
 * when it is one the shim accepts (SIGUSR1, SIGUSR2, a real-time signal),
 * else its default, SIGUSR2. */
static int dump_signal(void)
{
    const char *v = getenv("GPULEAK_DUMP_SIGNAL");
    char *end;
    long n = v != NULL && *v != '\0' ? strtol(v, &end, 10) : SIGUSR2;
    if (v != NULL && *v != '\0' && *end != '\0')
        return SIGUSR2;
    if (n == SIGUSR1 || (n >= SIGRTMIN && n <= SIGRTMAX))
        return (int)n;
    return SIGUSR2;
}

/* Sets the variables the shim reads. LD_PRELOAD keeps what was there,
 * after the shim, so the shim's cu* symbols come first. */
static int set_environment(const run_options_t *o, const char *shim, const char *output,
                           bool temporary)
{
    const char *old = getenv("LD_PRELOAD");
    char *preload = NULL;
    if (asprintf(&preload, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "") < 0)
        return -1;
    int rc = setenv("LD_PRELOAD", preload, 1);
    free(preload);
    const opt_value_t *v = o->opts->v;
    if (output != NULL)
        rc |= setenv("GPULEAK_OUTPUT", output, 1);
    if (temporary)  /* the summary names no path that is about to go */
        rc |= setenv("GPULEAK_REPORT_TEMPORARY", "1", 1);
    if (v[O_STACK_DEPTH].set)
        rc |= setenv("GPULEAK_STACK_DEPTH", v[O_STACK_DEPTH].text, 1);
    if (v[O_NO_PYTHON].set)
        rc |= setenv("GPULEAK_PYTHON", "0", 1);
    if (v[O_QUIET].set)
        rc |= setenv("GPULEAK_SUMMARY", "0", 1);
    return rc;
}

/* The signals gpuleak takes while CMD runs, and what they did before. */
typedef struct job_signals {
    int dump;                      /* the shim's dump signal */
    struct sigaction old_int, old_quit, old_term, old_hup, old_usr[2], old_dump;
} job_signals_t;

/* Like a shell waiting on a job: the terminal's ^C reaches CMD, which
 * decides; gpuleak stays alive to judge its report. The shim's dump signal
 * (GPULEAK_DUMP_SIGNAL, SIGUSR2 by default) sent to the pid a person sees,
 * gpuleak's, is meant for CMD: passed on, it writes a report there instead
 * of killing gpuleak and leaving CMD running unwatched. SIGUSR1 as well,
 * the other one the shim takes. */
static void job_signals_take(job_signals_t *js)
{
    struct sigaction ignore = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = forward_signal };
    sigaction(SIGINT, &ignore, &js->old_int);
    sigaction(SIGQUIT, &ignore, &js->old_quit);
    sigaction(SIGTERM, &fwd, &js->old_term);
    sigaction(SIGHUP, &fwd, &js->old_hup);
    js->dump = dump_signal();
    sigaction(SIGUSR1, &fwd, &js->old_usr[0]);
    sigaction(SIGUSR2, &fwd, &js->old_usr[1]);
    if (js->dump != SIGUSR1 && js->dump != SIGUSR2)
        sigaction(js->dump, &fwd, &js->old_dump);
}

/* Gives every signal back what it did before job_signals_take (in CMD's
 * child before its exec, and in gpuleak once CMD is done). */
static void job_signals_give_back(const job_signals_t *js)
{
    sigaction(SIGINT, &js->old_int, NULL);
    sigaction(SIGQUIT, &js->old_quit, NULL);
    sigaction(SIGTERM, &js->old_term, NULL);
    sigaction(SIGHUP, &js->old_hup, NULL);
    sigaction(SIGUSR1, &js->old_usr[0], NULL);
    sigaction(SIGUSR2, &js->old_usr[1], NULL);
    if (js->dump != SIGUSR1 && js->dump != SIGUSR2)
        sigaction(js->dump, &js->old_dump, NULL);
}

/* CMD's wait status as a shell reports it: its exit code, or 128+N for
 * death by signal N, which one line of stderr says (128+N alone reads as
 * an exit code CMD chose: the OOM killer's SIGKILL, a crash). */
static int shell_status(const char *cmd, int status)
{
    if (WIFSIGNALED(status)) {
        const char *name = text_signal_name(WTERMSIG(status));
        fputs("gpuleak: ", stderr);
        frame_text_put(stderr, cmd);
        fprintf(stderr, " killed by signal %d%s%s%s\n", WTERMSIG(status), name ? " (" : "",
                name ? name : "", name ? ")" : "");
        return 128 + WTERMSIG(status);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : RUN_EXIT_INTERNAL;
}

/* In CMD's child: its exec, or the reason it failed on the pipe. */
static _Noreturn void exec_child(char **cmd, const job_signals_t *js, const int pipefd[2])
{
    job_signals_give_back(js);
    close(pipefd[0]);
    execvp(cmd[0], cmd);
    int err = errno;
    if (write(pipefd[1], &err, sizeof err) < 0)
        _exit(RUN_EXIT_INTERNAL);
    _exit(err == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC);
}

/* Forks and execs CMD; returns its exit status as a shell reports it
 * (shell_status; 126/127 when it could not be executed). */
static int exec_and_wait(char **cmd)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        fprintf(stderr, "gpuleak run: pipe: %s\n", strerror(errno));
        return RUN_EXIT_INTERNAL;
    }
    job_signals_t js;
    job_signals_take(&js);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpuleak run: fork: %s\n", strerror(errno));
        job_signals_give_back(&js);
        return RUN_EXIT_INTERNAL;
    }
    if (pid == 0)
        exec_child(cmd, &js, pipefd);
    child_pid = pid;
    close(pipefd[1]);
    int err = 0;
    ssize_t got;
    while ((got = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "gpuleak run: waitpid: %s\n", strerror(errno));
            return RUN_EXIT_INTERNAL;
        }
    }
    child_pid = 0;
    job_signals_give_back(&js);
    if (got == (ssize_t)sizeof err) {
        fprintf(stderr, "gpuleak run: %s: %s\n", cmd[0], strerror(err));
        return err == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC;
    }
    return shell_status(cmd[0], status);
}

/* Removes the temporary report directory run made (and only that). */
static void remove_tmpdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Whether report i was taken while its process ran (a report on request, a
 * snapshot) and the same process wrote its final report too: the gates
 * judge the final one. */
static bool superseded(const load_set_t *set, size_t i)
{
    const load_report_t *r = set->v[i];
    if (r->complete)
        return false;
    for (size_t j = 0; j < set->n; j++)
        if (j != i && set->v[j] != NULL && set->v[j]->complete && set->v[j]->pid == r->pid)
            return true;
    return false;
}

/* Judges the reports written during the run against supp. Returns
 * CHECK_PASS, CHECK_UNJUDGED, CHECK_FAIL, or CHECK_ERROR when there is nothing trustworthy
 * to judge (an unreadable report among failing ones included); *failed
 * says whether a report failed a gate or left one unjudged (then the
 * reports are kept). */
static int judge(const run_options_t *o, supp_set_t *supp, const char *glob_pattern,
                 const seen_list_t *before, bool *failed)
{
    seen_list_t after;
    snapshot(glob_pattern, &after);
    char **fresh = calloc(after.n + 1, sizeof *fresh);
    if (fresh == NULL) {
        fputs("gpuleak run: out of memory\n", stderr);
        seen_free(&after);
        return CHECK_ERROR;
    }
    size_t found = 0;
    for (size_t i = 0; i < after.n; i++)
        if (!was_seen(before, &after.v[i]))
            fresh[found++] = after.v[i].path;
    load_set_t set = { NULL, NULL, 0, 0 };
    int verdict = load_files(&set, fresh, found) == 0 && set.bad == 0 ? CHECK_PASS : CHECK_ERROR;
    bool gate_failed = false;
    for (size_t i = 0; i < set.n; i++) {
        if (set.v[i] == NULL || superseded(&set, i))
            continue;
        int v = check_report(stderr, set.v[i], &o->budget, supp, NULL);
        /* The reports a FAIL or SKIP line names are kept for the user. */
        *failed = *failed || v == CHECK_FAIL || (v == CHECK_UNJUDGED && !o->budget.allow_unjudged);
        gate_failed = gate_failed || v == CHECK_FAIL;
        verdict = v > verdict ? v : verdict;
    }
    load_set_free(&set);
    free(fresh);
    if (found == 0) {
        fprintf(stderr, "gpuleak run: no report was written (no CUDA call, or the process was killed "
                        "by SIGKILL); the gates could not be judged\n");
        verdict = CHECK_ERROR;
    } else if (gate_failed) {
        supp_print_used(stderr, supp);
    }
    seen_free(&after);
    return verdict;
}

/* Whether --output's directory cannot take the report: a usage error found
 * before CMD runs, where the shim would only fall back to $TMPDIR after it
 * and the gates find nothing. A directory with a % escape in it is left to
 * the shim, which alone knows what it expands to. Prints why. */
static bool output_dir_unusable(const char *pattern)
{
    /* A directory is not a report's name (the shim would say "it exists
     * and is not a gpuleak report" and write to $TMPDIR): say what to
     * write instead. */
    struct stat st;
    size_t len = strlen(pattern);
    if (strchr(pattern, '%') == NULL &&
        ((len > 0 && pattern[len - 1] == '/') || (stat(pattern, &st) == 0 && S_ISDIR(st.st_mode)))) {
        fprintf(stderr, "gpuleak run: --output: %s names a directory; name the report in it, as "
                        "%s%sgpuleak-%%p.json\n", pattern, pattern,
                len > 0 && pattern[len - 1] == '/' ? "" : "/");
        return true;
    }
    const char *slash = strrchr(pattern, '/');
    if (slash == NULL)
        return false;
    char *dir = strndup(pattern, slash == pattern ? 1 : (size_t)(slash - pattern));
    if (dir == NULL || strchr(dir, '%') != NULL) {
        free(dir);
        return false;
    }
    bool unusable = access(dir, W_OK | X_OK) != 0;
    if (unusable)
        fprintf(stderr, "gpuleak run: --output: cannot write in %s: %s\n", dir, strerror(errno));
    free(dir);
    return unusable;
}

/* Where the reports go when gates judge a run that named no output: a
 * new folder in $TMPDIR (or /tmp), whose pattern is put in *tmp_output and
 * the folder's own path in dir (size bytes). Returns 0, or -1 said on
 * stderr. */
static int make_report_folder(char **tmp_output, char *dir, size_t size)
{
    const char *base = getenv("TMPDIR");
    int made = 0;
    if (base != NULL && *base != '\0' && (size_t)snprintf(dir, size, "%s/gpuleak-run.XXXXXX", base) < size)
        made = mkdtemp(dir) != NULL;
    if (!made) {
        snprintf(dir, size, "/tmp/gpuleak-run.XXXXXX");
        made = mkdtemp(dir) != NULL;
    }
    if (!made || asprintf(tmp_output, "%s/gpuleak-%%p.json", dir) < 0) {
        fprintf(stderr, "gpuleak run: cannot make a temporary directory: %s\n", strerror(errno));
        if (made)
            rmdir(dir);
        *tmp_output = NULL;
        return -1;
    }
    return 0;
}

/* Runs CMD with the shim and, when gates are set, judges the reports it
 * wrote at output (new since the run began; temporary: in the folder run
 * removes). Returns the exit code; *failed says a gate failed. */
static int run_and_judge(run_options_t *o, supp_set_t *supp, const char *shim, const char *output,
                         bool temporary, bool gates, bool *failed)
{
    char *glob_pattern = NULL;
    seen_list_t before = { NULL, 0 };
    if (gates) {
        glob_pattern = pattern_glob(output);
        if (glob_pattern != NULL)
            snapshot(glob_pattern, &before);
    }
    int code;
    if (set_environment(o, shim, output, temporary) != 0) {
        fprintf(stderr, "gpuleak run: cannot set the environment: %s\n", strerror(errno));
        code = RUN_EXIT_INTERNAL;
    } else {
        code = exec_and_wait(o->opts->operands);
        if (gates && glob_pattern != NULL && code != RUN_EXIT_NOTFOUND && code != RUN_EXIT_NOEXEC) {
            int verdict = judge(o, supp, glob_pattern, &before, failed);
            if (code == 0 && verdict == CHECK_FAIL)
                code = RUN_EXIT_GATE;
            else if (code == 0 && verdict == CHECK_UNJUDGED && !o->budget.allow_unjudged)
                code = RUN_EXIT_UNJUDGED;
            else if (code == 0 && verdict == CHECK_ERROR)
                code = RUN_EXIT_INTERNAL;
        } else if (gates && glob_pattern == NULL && code == 0) {
            code = RUN_EXIT_INTERNAL;
        }
    }
    free(glob_pattern);
    seen_free(&before);
    return code;
}

/* Everything that can be refused is refused before CMD starts (a usage
 * error costs no run); then CMD runs, and the gates judge its reports. */
static int run_main(const opts_t *opts)
{
    run_options_t o;
    memset(&o, 0, sizeof o);
    o.opts = opts;
    o.budget.quiet_pass = true;
    if (opts->v[O_OUTPUT].set && output_dir_unusable(opts->v[O_OUTPUT].text))
        return CLI_EXIT_USAGE;
    supp_set_t *supp = check_setup(&o.budget, &opts->v[O_BUDGETS]);
    if (supp == NULL)
        return CLI_EXIT_USAGE;
    bool gates = o.budget.leaked || o.budget.growth || o.budget.peak;
    char *shim = find_shim();
    if (shim == NULL) {
        fputs("gpuleak run: libgpuleak.so not found beside the gpuleak binary or in ../lib\n", stderr);
        supp_free(supp);
        return RUN_EXIT_INTERNAL;
    }
    const char *output = opts->v[O_OUTPUT].text;
    const char *env = getenv("GPULEAK_OUTPUT");
    char folder[4096] = "";
    char *tmp_output = NULL;
    if (output == NULL && gates && env != NULL && *env != '\0') {
        output = env;
    } else if (output == NULL && gates) {
        if (make_report_folder(&tmp_output, folder, sizeof folder) != 0) {
            free(shim);
            supp_free(supp);
            return RUN_EXIT_INTERNAL;
        }
        output = tmp_output;
    }
    bool failed = false;
    int code = run_and_judge(&o, supp, shim, output, tmp_output != NULL, gates, &failed);
    free(shim);
    supp_free(supp);
    /* The temporary reports go once judged, unless a gate failed (whatever
     * the exit code says first): the paths in the FAIL lines must still
     * lead somewhere. */
    if (tmp_output != NULL && failed)
        fprintf(stderr, "gpuleak run: the report(s) are kept in %s\n", folder);
    else if (tmp_output != NULL)
        remove_tmpdir(folder);
    free(tmp_output);
    return code;
}

const cmd_spec_t run_command = {
    .name = "run",
    .operands = "-- CMD [ARGS...]",
    .min_operands = 1,
    .max_operands = OPERANDS_ANY,
    .options_first = true,
    .summary = "run a command with the shim preloaded; gates exit 23",
    .description =
        "Runs CMD with libgpuleak.so preloaded (the one beside the gpuleak binary, else "
        "../lib/libgpuleak.so), before any LD_PRELOAD already set. With a gate (--max-leaked, "
        "--max-growth, --max-peak), the reports written during the run by CMD and its children "
        "(files matching the output pattern that are new or changed, in a temporary directory "
        "unless --output or GPULEAK_OUTPUT names one) are judged as check judges them; each "
        "failure prints one line naming the gate, the report, the site's bytes and its origin. "
        "The temporary directory is removed afterwards, or kept and named when a gate failed. "
        "SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and GPULEAK_DUMP_SIGNAL's signal (SIGUSR2 by default: "
        "a report now) sent to gpuleak are passed on to CMD; ^C and ^\\ from the terminal reach CMD itself, and "
        "gpuleak waits for it.\n"
        "Options end at CMD, or at \"--\". A gate given without a value is 0 (--max-leaked: "
        "any unsuppressed leak); its value is the next word only when that word begins with a "
        "digit (--max-leaked 20MiB -- CMD), else write --max-leaked=SIZE.",
    .options = options,
    .noptions = O_COUNT,
    .exits = exits,
    .nexits = sizeof exits / sizeof exits[0],
    .main = run_main,
};
