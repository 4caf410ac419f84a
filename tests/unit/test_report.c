/* Unit tests for report_json.c: the report is written with its stacks and
 * frames, and an allocation that fails at any point while writing it never
 * ends the process (uthash's default would exit(-1), changing the watched
 * program's exit status) and never leaves a half-written file in place.
 *
 * This binary is linked with --wrap for malloc, calloc and realloc, so the
 * shim's objects allocate through the wrappers below and a test can make
 * exactly one of their allocations fail. */
#define _GNU_SOURCE
#include "suite.h"
#include "rank.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "origin.h"
#include "report.h"
#include "report_json.h"
#include "report_summary.h"
#include "stacks.h"
#include "tracker.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);

static unsigned long allocations_seen;  /* by the wrappers, since the last reset */
static unsigned long fail_at;           /* 1-based; 0: none fails */

/* Whether the allocation being made is the one chosen to fail. */
static int chosen_to_fail(void)
{
    return ++allocations_seen == fail_at;
}

void *__wrap_malloc(size_t size)
{
    return chosen_to_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return chosen_to_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    return chosen_to_fail() ? NULL : __real_realloc(p, size);
}

#define SITES 6

static report_site_t sites[SITES];
static report_view_t view;
static char path[64];

/* Distinct call paths, so that each site has its own stack. */
static __attribute__((noinline)) uint32_t intern_here(int depth)
{
    if (depth > 0) {
        uint32_t id = intern_here(depth - 1);
        __asm__ volatile("" ::: "memory");  /* keep the call a call */
        return id;
    }
    uintptr_t frames[64];
    int n = stacks_capture(frames, 64, NULL);
    return stacks_intern(REPORT_KIND_device, frames, n, NULL, 0);
}

static void setup(void)
{
    ck_assert_int_eq(tracker_init(tracker_sample), 0);
    stacks_init(1);
    origin_init();
    for (int i = 0; i < SITES; i++) {
        uint32_t site = intern_here(i);
        ck_assert_uint_ne(site, 0);
        ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, 0x10000 + (uint64_t)i * 0x1000,
                                       (size_t)(i + 1) * 256, 0, NULL, site), 0);
        sites[i].id = site;
        ck_assert_int_eq(tracker_site(site, &sites[i].stats), 0);
    }
    view.moment = REPORT_AT_EXIT;
    view.leaks = (report_list_t){ sites, SITES };
    view.sites = (report_list_t){ sites, SITES };
    tracker_totals(&view.totals);
    view.run.site_count = tracker_site_count();  /* the writer lists stacks up to it */
    snprintf(path, sizeof path, "/tmp/gpuleak-unit-report-%d.json", (int)getpid());
    unlink(path);
}

/* The file at path, NUL-terminated, in buf; returns its length. */
static size_t read_report(char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s was not written", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

static char report[1 << 20];

START_TEST(report_lists_stacks_and_frames)
{
    fail_at = 0;
    ck_assert_int_eq(report_json_write(path, &view, REPORT_REPLACE_REPORT), 0);
    size_t n = read_report(report, sizeof report);
    ck_assert_str_eq(report + n - 2, "}\n");
    char key[32];
    for (int i = 0; i < SITES; i++) {
        snprintf(key, sizeof key, "\"%u\":{\"stack\":[", sites[i].id);
        const char *entry = strstr(report, key);
        ck_assert_msg(entry != NULL && entry[strlen(key)] >= '0' && entry[strlen(key)] <= '9',
                      "no stack entry with frames for site %u", sites[i].id);
    }
    /* (The capture drops the leading frames inside the shim, which here is
     * this whole binary, so only the frames below it are named.) */
    ck_assert_ptr_nonnull(strstr(report, "\"frames\":[{\"function\":"));
    unlink(path);
}
END_TEST

/* Every allocation the writer makes is failed once, in turn. Each run must
 * return (the process goes on), and a run that says it succeeded must
 * leave a whole report; a failed one leaves none behind. */
START_TEST(report_survives_each_failed_allocation)
{
    allocations_seen = 0;
    fail_at = 0;
    ck_assert_int_eq(report_json_write(path, &view, REPORT_REPLACE_REPORT), 0);
    unsigned long needed = allocations_seen;
    ck_assert_uint_gt(needed, 3);
    for (unsigned long n = 1; n <= needed; n++) {
        unlink(path);
        allocations_seen = 0;
        fail_at = n;
        int rc = report_json_write(path, &view, REPORT_REPLACE_REPORT);
        fail_at = 0;
        if (rc != 0) {
            ck_assert_int_ne(access(path, F_OK), 0);
            continue;
        }
        size_t got = read_report(report, sizeof report);
        ck_assert_msg(got > 0 && report[got - 1] == '\n' && report[got - 2] == '}',
                      "allocation %lu failed: the report is cut short", n);
    }
    unlink(path);
}
END_TEST

/* An empty file at the path is someone's (a placeholder with its own mode,
 * a hard link): it stays as it was, same inode, mode and links. */
START_TEST(an_empty_file_is_never_replaced)
{
    char other[80];
    snprintf(other, sizeof other, "%s.link", path);
    unlink(path);
    unlink(other);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(chmod(path, 0600), 0);
    ck_assert_int_eq(link(path, other), 0);
    struct stat before, after;
    ck_assert_int_eq(stat(path, &before), 0);
    errno = 0;
    ck_assert_int_eq(report_json_write(path, &view, REPORT_REPLACE_REPORT), -1);
    ck_assert_int_eq(errno, EEXIST);
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert_uint_eq(after.st_ino, before.st_ino);
    ck_assert_uint_eq(after.st_mode & 0777, 0600);
    ck_assert_uint_eq(after.st_nlink, 2);
    ck_assert_int_eq(after.st_size, 0);
    unlink(other);
    unlink(path);
}
END_TEST

/* A name taken in a shared directory replaces nothing, a report included;
 * an old report at the report's own path is replaced. */
START_TEST(create_only_replaces_nothing)
{
    unlink(path);
    ck_assert_int_eq(report_json_write(path, &view, REPORT_CREATE_ONLY), 0);
    struct stat first, again;
    ck_assert_int_eq(stat(path, &first), 0);
    errno = 0;
    ck_assert_int_eq(report_json_write(path, &view, REPORT_CREATE_ONLY), -1);
    ck_assert_int_eq(errno, EEXIST);
    ck_assert_int_eq(stat(path, &again), 0);
    ck_assert_uint_eq(again.st_ino, first.st_ino);
    ck_assert_int_eq(report_json_write(path, &view, REPORT_REPLACE_REPORT), 0);
    ck_assert_int_eq(stat(path, &again), 0);
    ck_assert_uint_ne(again.st_ino, first.st_ino);
    unlink(path);
}
END_TEST

/* %r takes RANK, then LOCAL_RANK, only as digits: a value that would climb
 * out of the report's directory is not used. */
START_TEST(rank_in_the_path_is_digits_only)
{
    char out[256];
    unsetenv("LOCAL_RANK");
    setenv("RANK", "../../x", 1);
    ck_assert_int_eq(report_expand_path("/d/r-%r.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "/d/r-0.json");
    ck_assert_ptr_null(rank_of_process());
    setenv("LOCAL_RANK", "3", 1);
    ck_assert_int_eq(report_expand_path("/d/r-%r.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "/d/r-3.json");
    setenv("RANK", "12", 1);
    ck_assert_int_eq(report_expand_path("/d/r-%r.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "/d/r-12.json");
    setenv("RANK", "1/2", 1);
    setenv("LOCAL_RANK", "", 1);
    ck_assert_int_eq(report_expand_path("/d/r-%r.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "/d/r-0.json");
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
}
END_TEST

/* The launchers' variables: torchrun's RANK before Slurm's task id, Open
 * MPI's and PMI's when they are the ones set; the local rank as %l; the job
 * id as %j, only letters, digits, '.', '_' and '-' (torchrun's "none" is
 * no id). */
START_TEST(the_launchers_name_rank_local_rank_and_job)
{
    static const char *const vars[] = { "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                        "PMIX_RANK", "LOCAL_RANK", "SLURM_LOCALID",
                                        "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                        "PMI_LOCAL_RANK", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID",
                                        "TORCHELASTIC_RUN_ID" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    char out[256];
    ck_assert_int_eq(report_expand_path("/d/%j-%r-%l.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "/d/none-0-0.json");
    setenv("SLURM_PROCID", "7", 1);
    setenv("SLURM_LOCALID", "3", 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    ck_assert_int_eq(report_expand_path("/d/%j-%r-%l.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "/d/4242-7-3.json");
    setenv("RANK", "12", 1);  /* torchrun under srun: its rank, not the task's */
    ck_assert_str_eq(rank_of_process(), "12");
    unsetenv("RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_LOCALID");
    unsetenv("SLURM_JOB_ID");
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    ck_assert_str_eq(rank_of_process(), "5");
    ck_assert_str_eq(rank_local(), "1");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    setenv("PMI_RANK", "9", 1);
    ck_assert_str_eq(rank_of_process(), "9");
    unsetenv("PMI_RANK");
    setenv("TORCHELASTIC_RUN_ID", "none", 1);
    ck_assert_ptr_null(rank_job());
    setenv("TORCHELASTIC_RUN_ID", "5b2c-9e.run_1", 1);
    ck_assert_str_eq(rank_job(), "5b2c-9e.run_1");
    setenv("TORCHELASTIC_RUN_ID", "../../x", 1);
    ck_assert_ptr_null(rank_job());
    ck_assert_int_eq(report_expand_path("/d/%j.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "/d/none.json");
    unsetenv("TORCHELASTIC_RUN_ID");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("json");
    tcase_add_unchecked_fixture(tc, setup, NULL);
    tcase_add_test(tc, report_lists_stacks_and_frames);
    tcase_add_test(tc, report_survives_each_failed_allocation);
    tcase_add_test(tc, an_empty_file_is_never_replaced);
    tcase_add_test(tc, create_only_replaces_nothing);
    tcase_add_test(tc, rank_in_the_path_is_digits_only);
    tcase_add_test(tc, the_launchers_name_rank_local_rank_and_job);
    suite_add_tcase(s, tc);
    return suite_run(s, 1);
}
