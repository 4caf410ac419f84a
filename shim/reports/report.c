#define _GNU_SOURCE
#include "report.h"
#include "rank.h"
#include "report_json.h"
#include "report_summary.h"
#include "config.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "origin.h"
#include "bounded.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int report_expand_path(const char *pattern, char *out, size_t size)
{
    size_t used = 0;
    for (const char *p = pattern; *p != '\0'; p++) {
        char piece[256];
        const char *text = piece;
        if (*p != '%' || p[1] == '\0') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            p++;
            if (*p == 'p') {
                snprintf(piece, sizeof piece, "%d", (int)getpid());
            } else if (*p == 'h') {
                if (gethostname(piece, sizeof piece) != 0)
                    snprintf(piece, sizeof piece, "unknown-host");
                piece[sizeof piece - 1] = '\0';
            } else if (*p == 'r') {
                const char *rank = rank_of_process();
                text = rank != NULL ? rank : "0";
            } else if (*p == 'l') {
                const char *local = rank_local();
                text = local != NULL ? local : "0";
            } else if (*p == 'j') {
                const char *job = rank_job();
                text = job != NULL ? job : "none";
            } else if (*p == '%') {
                text = "%";
            } else {
                piece[0] = '%';
                piece[1] = *p;
                piece[2] = '\0';
            }
        }
        size_t len = strlen(text);
        if (used + len + 1 > size)
            return -1;
        memcpy(out + used, text, len);
        used += len;
    }
    out[used] = '\0';
    return 0;
}

static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static int primary_failed;       /* warned once; the fallback is used directly */
static char fallback[4096];      /* the fallback name this process took, or "" */

#define FALLBACK_NAMES 16

/* Writes the report into the temporary directory, which every process can
 * write: to the name this process took before, else to a new name it takes
 * without replacing anything, since in a shared directory the first choice
 * (gpuleak-PID.json) may be another user's file, made there to block or to
 * catch the report; then names with an unguessable suffix are tried.
 * Returns fallback (the name written), or NULL with errno set. */
static const char *write_fallback(const report_view_t *view)
{
    if (fallback[0] != '\0' && report_json_write(fallback, view, REPORT_REPLACE_REPORT) == 0)
        return fallback;
    const char *dir = config_getenv("TMPDIR");
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    for (int i = 0; i < FALLBACK_NAMES; i++) {
        uint32_t noise = 0;
        if (i > 0 && getrandom(&noise, sizeof noise, GRND_NONBLOCK) != (ssize_t)sizeof noise)
            noise = (uint32_t)i;
        int n = i == 0 ? snprintf(fallback, sizeof fallback, "%s/gpuleak-%d.json", dir, (int)getpid())
                       : snprintf(fallback, sizeof fallback, "%s/gpuleak-%d-%08x.json", dir,
                                  (int)getpid(), noise);
        if (n < 0 || (size_t)n >= sizeof fallback) {
            errno = ENAMETOOLONG;
            break;
        }
        if (report_json_write(fallback, view, REPORT_CREATE_ONLY) == 0)
            return fallback;
        if (errno != EEXIST)
            break;
    }
    fallback[0] = '\0';
    return NULL;
}

/* A report larger than the file size limit (ulimit -f) fits in no path:
 * one warning in the run says so, and no fallback is tried. Returns 1 when
 * the write that set errno failed so. */
static int too_large(const char *path)
{
    static int warned;
    if (errno != EFBIG)
        return 0;
    if (!warned)
        log_line("cannot write the report to %s: it passes the file size limit (ulimit -f)",
                 path);
    warned = 1;
    return 1;
}

/* The file this process last put at its report's path (an earlier
 * snapshot or dump), told apart from another process's by its identity. */
static struct stat own_file;
static int own_file_known;
static int shared_path_warned;

/* The escapes of pattern as report_expand_path reads them: sets *pid when
 * %p is among them, and returns the first letter it does not know (a
 * typo such as %P, kept as written), or 0. */
static int pattern_escapes(const char *pattern, int *pid)
{
    int unknown = 0;
    *pid = 0;
    for (const char *p = pattern; *p != '\0'; p++) {
        if (*p != '%' || p[1] == '\0')
            continue;
        p++;
        if (*p == 'p')
            *pid = 1;
        else if (unknown == 0 && strchr("hrlj%", *p) == NULL)
            unknown = (unsigned char)*p;
    }
    return unknown;
}

void report_check_pattern(void)
{
    int pid;
    int unknown = pattern_escapes(config.output, &pid);
    if (unknown != 0)
        log_line("GPULEAK_OUTPUT=%s: %%%c is no escape (%%p is the pid, %%h the host, %%r the rank, "
                 "%%l the local rank, %%j the job, %%%% a percent sign); it is kept as written",
                 config.output, unknown);
}

/* Whether the file at path is one another process put there while this
 * one tracked: a regular file this process did not write, modified since
 * tracking began. A file of an earlier run is older, and is replaced in
 * silence as ever. Every process of a multi-process program (torchrun's
 * ranks, a launcher's children) writes its own report, and a path they
 * share keeps only the last: the first writer cannot know that a later one
 * will come, but the later one sees the earlier one's file, and says so.
 * Only the file's identity and times are read, and nothing is changed, the
 * program's environment included. */
static int another_process_wrote(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    if (own_file_known && st.st_dev == own_file.st_dev && st.st_ino == own_file.st_ino
        && st.st_mtim.tv_sec == own_file.st_mtim.tv_sec && st.st_mtim.tv_nsec == own_file.st_mtim.tv_nsec)
        return 0;
    uint64_t modified_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    return modified_ns >= lifecycle_started_ns() + lifecycle_epoch_offset_ns();
}

/* Writes the report to path, replacing only a report. When every
 * descriptor is taken (ulimit -n), the symbolizer's open files (the
 * program's objects, libdw's) are let go and the write tried once more;
 * the frames not named yet are then named from the dynamic symbols only.
 * Returns 0, or -1 with errno set. */
static int write_primary(const report_view_t *view, const char *path)
{
    if (report_json_write(path, view, REPORT_REPLACE_REPORT) == 0)
        return 0;
    if (errno != EMFILE)
        return -1;
    symbolize_end();
    return report_json_write(path, view, REPORT_REPLACE_REPORT);
}

/* Writes the report to its path or, when that fails, to the fallback, and
 * says so in one line the first time (and once more should the fallback
 * fail later). Returns the path written, or NULL. */
static const char *write_somewhere(const report_view_t *view, char *path, size_t size)
{
    static int fallback_warned;
    const char *why = NULL;
    if (!primary_failed) {
        int expanded = report_expand_path(config.output, path, size) == 0;
        int shared = expanded && !shared_path_warned && another_process_wrote(path);
        if (expanded && write_primary(view, path) == 0) {
            own_file_known = lstat(path, &own_file) == 0;
            if (shared) {
                int names_pid;
                pattern_escapes(config.output, &names_pid);
                log_line("another process wrote %s while this one ran; this report replaces "
                         "its report: %s", path,
                         names_pid
                             ? "GPULEAK_OUTPUT names the same file in both (add %h or %r to it "
                               "where processes of several hosts or containers share a directory)"
                             : "GPULEAK_OUTPUT has no %p, so every process writes that one file and "
                               "the last one wins (use gpuleak-%p.json for a report per process)");
                shared_path_warned = 1;
            }
            return path;
        }
        if (expanded && too_large(path))
            return NULL;
        int failure = errno;  /* the stat below must not stand in for the reason */
        struct stat st;
        why = !expanded ? "too long once expanded"
            : failure == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)
                ? "it is a directory; GPULEAK_OUTPUT names the report's file, as DIR/gpuleak-%p.json"
            : failure == EEXIST && stat(path, &st) == 0 && st.st_uid != geteuid()
                ? "it is another user's file"
            : failure == EEXIST ? "it exists and is not a gpuleak report" : strerror(failure);
        if (!expanded)
            snprintf(path, size, "%s", config.output);
        primary_failed = 1;
    }
    const char *written = write_fallback(view);
    if (written == NULL && too_large("the temporary directory"))
        return NULL;
    if (why != NULL && written != NULL) {
        log_line("cannot write the report to %s (%s); writing to fallback %s", path, why, written);
    } else if (written == NULL && (why != NULL || !fallback_warned)) {
        const char *fallback_why = strerror(errno);
        if (why != NULL)
            log_line("cannot write the report to %s (%s), nor to a fallback in the temporary "
                     "directory (%s)", path, why, fallback_why);
        else
            log_line("cannot write the report to a fallback in the temporary directory either (%s)",
                     fallback_why);
        fallback_warned = 1;
    }
    return written;
}

int report_python_origin(uint32_t site, char *out, size_t size)
{
    if (size == 0)
        return -1;
    /* The rules and their cache are the report's: one user at a time. */
    pthread_mutex_lock(&write_lock);
    origin_init();
    origin_frame_t o;
    int rc = origin_python_site(site, &o);
    if (rc == 0)
        snprintf(out, size, "%s:%d in %s", o.file ? o.file : "?", o.line, o.function ? o.function : "?");
    origin_end();
    pthread_mutex_unlock(&write_lock);
    return rc;
}

void report_sites_kept(const uint32_t *sites, const int *kinds, size_t count, uint8_t *answers)
{
    pthread_mutex_lock(&write_lock);
    symbolize_begin();
    origin_init();
    for (size_t i = 0; i < count; i++) {
        origin_site_t o;
        origin_site(sites[i], kinds[i], &o);
        answers[i] = (uint8_t)origin_owner_keeps(o.owner);
    }
    origin_end();
    symbolize_end();
    pthread_mutex_unlock(&write_lock);
}

/* The final report's progress: a signal's handler and the exit wait for
 * it, and nothing replaces it once begun. */
enum { FINAL_NONE, FINAL_WRITING, FINAL_DONE };
static _Atomic int final_state;

int report_final_wait(unsigned ms)
{
    struct timespec tick = { 0, 1000 * 1000 };
    for (unsigned waited = 0; atomic_load(&final_state) != FINAL_DONE; waited++) {
        if (waited >= ms)
            return 0;
        nanosleep(&tick, NULL);
    }
    return 1;
}

static __thread int quiet_driver __attribute__((tls_model("initial-exec")));

int report_may_call_driver(void)
{
    return !quiet_driver;
}

/* Takes write_lock within REPORT_WAIT_S: the report before this one is
 * written by a running thread, but one stalled for good (in malloc, say,
 * on an arena a thread a signal interrupted holds) must not hang the exit. */
static int lock_writer(void)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += REPORT_WAIT_S;
    if (pthread_mutex_clocklock(&write_lock, CLOCK_MONOTONIC, &until) == 0)
        return 1;
    log_line("the report before this one did not finish in %d s; this one is not written",
             REPORT_WAIT_S);
    return 0;
}

/* The summary on stderr. A thread a signal interrupted may hold stderr's
 * stdio lock for good (it was printing): for its report the summary is
 * made in memory and written to descriptor 2 in one call, without that
 * lock (or not at all when memory is out). */
static void print_summary(const report_view_t *view, const char *written, int interrupted)
{
    if (!interrupted) {
        report_summary_print(stderr, view, written);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return;
    report_summary_print(f, view, written);
    if (fclose(f) == 0) {
        for (size_t done = 0; done < len;) {
            ssize_t n = write(STDERR_FILENO, text + done, len - done);
            if (n <= 0)
                break;
            done += (size_t)n;
        }
    }
    free(text);
}

/* A report on request keeps a name of its own, the report's path with
 * ".request-N" before its ".json" (N counts this process's requests): the
 * report at exit, written to the path itself later, must not replace it.
 * Returns the path written, or NULL after one line saying why. */
static const char *write_request(const report_view_t *view, char *path, size_t size)
{
    static unsigned requests;
    char base[4096];
    if (report_expand_path(config.output, base, sizeof base) != 0) {
        log_line("cannot write the report on request: GPULEAK_OUTPUT is too long once expanded");
        return NULL;
    }
    size_t len = strlen(base);
    int json = len > 5 && strcmp(base + len - 5, ".json") == 0;
    if (json)
        base[len - 5] = '\0';
    int n = snprintf(path, size, "%s.request-%u%s", base, ++requests, json ? ".json" : "");
    if (n < 0 || (size_t)n >= size) {
        log_line("cannot write the report on request: its path is too long");
        return NULL;
    }
    if (report_json_write(path, view, REPORT_REPLACE_REPORT) == 0)
        return path;
    log_line("cannot write the report on request to %s: %s", path, strerror(errno));
    return NULL;
}

/* Writes the report and its lines on stderr, SIGPIPE and SIGXFSZ quiet
 * (log.h): a reader of stderr gone, or the file size limit, fails a write,
 * never ends the program. */
static void write_locked(report_moment_t moment, int signal, int interrupted)
{
    log_quiet_t quiet;
    log_quiet_begin(&quiet);
    report_view_t view;
    symbolize_begin();
    origin_init();
    bounded_begin();
    int gathered = report_view_gather(&view, moment, signal) == 0;
    view.locks_skipped = bounded_end();
    if (!gathered) {
        log_line("no memory to gather the report; none written");
    } else {
        char path[4096];
        const char *written = moment == REPORT_ON_REQUEST ? write_request(&view, path, sizeof path)
                                                          : write_somewhere(&view, path, sizeof path);
        if (config.summary && (moment == REPORT_AT_EXIT || moment == REPORT_ON_SIGNAL))
            print_summary(&view, written, interrupted);
        else if (moment == REPORT_ON_REQUEST && written != NULL)
            log_line("report written to %s (on request; the program runs on)", written);
    }
    origin_end();
    symbolize_end();
    report_view_release(&view);
    log_quiet_end(&quiet);
}

void report_write(report_moment_t moment, int signal, int interrupted)
{
    int final = moment == REPORT_AT_EXIT || moment == REPORT_ON_SIGNAL;
    int none = FINAL_NONE;
    if (final ? !atomic_compare_exchange_strong(&final_state, &none, FINAL_WRITING)
              : atomic_load(&final_state) != FINAL_NONE)
        return;
    if (lock_writer()) {
        quiet_driver = interrupted;
        write_locked(moment, signal, interrupted);
        quiet_driver = 0;
        pthread_mutex_unlock(&write_lock);
    }
    if (final) {
        metrics_end();  /* the process is ending: its live numbers with it */
        atomic_store(&final_state, FINAL_DONE);
    }
}
