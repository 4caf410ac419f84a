/* Unit tests for config.c: values parsed, invalid values named with the
 * default kept, every option documented in the README, and every variable
 * read with secure_getenv semantics. */
#define _GNU_SOURCE
#include "suite.h"
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "report.h"

/* A setuid program cannot be started by a unit test, so this binary
 * defines secure_getenv itself (the shim's objects are linked in, and
 * bind to it): with secure_mode set it answers as glibc does in
 * secure-execution mode, and secure_calls shows the shim asked it. */
static int secure_mode;
static int secure_calls;

char *secure_getenv(const char *name)
{
    secure_calls++;
    return secure_mode ? NULL : getenv(name);
}

/* Runs config_load with stderr captured into buf. Returns its result. */
static int load_capturing(char *buf, size_t size)
{
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    int saved = dup(STDERR_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    int invalid = config_load();
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(pipefd[1]);
    ssize_t n = read(pipefd[0], buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(pipefd[0]);
    return invalid;
}

START_TEST(valid_values_are_taken)
{
    char err[1024];
    setenv("GPULEAK_STACK_DEPTH", "12", 1);
    setenv("GPULEAK_PYTHON", "0", 1);
    setenv("GPULEAK_OUTPUT", "/tmp/x-%p.json", 1);
    ck_assert_int_eq(load_capturing(err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(config.stack_depth, 12);
    ck_assert_int_eq(config.python_frames, 0);
    ck_assert_str_eq(config.output, "/tmp/x-%p.json");
    unsetenv("GPULEAK_STACK_DEPTH");
    unsetenv("GPULEAK_PYTHON");
    unsetenv("GPULEAK_OUTPUT");
}
END_TEST

START_TEST(invalid_values_name_variable_and_default)
{
    char err[1024];
    config.stack_depth = 64;
    setenv("GPULEAK_STACK_DEPTH", "banana", 1);
    setenv("GPULEAK_SUMMARY", "2", 1);
    ck_assert_int_eq(load_capturing(err, sizeof err), 2);
    ck_assert_int_eq(config.stack_depth, 64);
    ck_assert_ptr_nonnull(strstr(err, "GPULEAK_STACK_DEPTH=banana"));
    ck_assert_ptr_nonnull(strstr(err, "default 64"));
    ck_assert_ptr_nonnull(strstr(err, "GPULEAK_SUMMARY=2"));
    /* One line per invalid variable. */
    int lines = 0;
    for (const char *p = err; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 2);
    setenv("GPULEAK_STACK_DEPTH", "300", 1);
    unsetenv("GPULEAK_SUMMARY");
    ck_assert_int_eq(load_capturing(err, sizeof err), 1);
    ck_assert_int_eq(config.stack_depth, 64);
    unsetenv("GPULEAK_STACK_DEPTH");
}
END_TEST

/* With no variable set, every option holds the default its documentation
 * gives (the unwinder's once read 0 where its line said 1). */
START_TEST(unset_options_hold_their_documented_defaults)
{
    char err[1024];
    const struct { const char *name; const int *field; } fields[] = {
        { "GPULEAK_STACK_DEPTH", &config.stack_depth },
        { "GPULEAK_PYTHON", &config.python_frames },
        { "GPULEAK_PYTHON_DEPTH", &config.python_depth },
        { "GPULEAK_SUMMARY", &config.summary },
        { "GPULEAK_SUMMARY_SITES", &config.summary_sites },
        { "GPULEAK_SUMMARY_FRAMES", &config.summary_frames },
        { "GPULEAK_ENABLE", &config.enabled },
        { "GPULEAK_REDACT_ARGV", &config.redact_argv },
        { "GPULEAK_FLUSH_INTERVAL", &config.flush_interval_s },
        { "GPULEAK_DUMP_SIGNAL", &config.dump_signal },
        { "GPULEAK_FAST_UNWIND", &config.fast_unwind },
        { "GPULEAK_SELF_TIME", &config.self_time },
    };
    size_t count, checked = 0;
    const config_option_t *docs = config_options(&count);
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        unsetenv(fields[f].name);
    unsetenv("GPULEAK_OUTPUT");
    ck_assert_int_eq(load_capturing(err, sizeof err), 0);
    for (size_t i = 0; i < count; i++) {
        if (strcmp(docs[i].name, "GPULEAK_OUTPUT") == 0)
            ck_assert_str_eq(config.output, docs[i].default_text);
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            if (strcmp(docs[i].name, fields[f].name) != 0)
                continue;
            ck_assert_msg(*fields[f].field == atoi(docs[i].default_text), "%s is %d, documented %s",
                          docs[i].name, *fields[f].field, docs[i].default_text);
            checked++;
        }
    }
    ck_assert_uint_eq(checked, sizeof fields / sizeof fields[0]);
}
END_TEST

/* Only a signal that means nothing to the system is taken: a fault's
 * handler returns to the faulting instruction (an endless loop of reports),
 * SIGTERM would no longer end the program, SIGCHLD would report at every
 * child's exit, 32 and 33 are glibc's own; each is one warning. */
START_TEST(only_free_signals_are_taken_as_the_dump_signal)
{
    char err[1024];
    const char *refused[] = { "11", "7", "8", "4", "5", "31", "9", "19", "15", "2", "1", "17",
                              "13", "14", "3", "6", "32", "33" };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        setenv("GPULEAK_DUMP_SIGNAL", refused[i], 1);
        ck_assert_int_eq(load_capturing(err, sizeof err), 1);
        ck_assert_int_eq(config.dump_signal, 12);
        ck_assert_ptr_nonnull(strstr(err, "GPULEAK_DUMP_SIGNAL="));
        ck_assert_ptr_nonnull(strstr(err, "default 12"));
    }
    const char *taken[] = { "10", "12", "34", "64", "0" };
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        setenv("GPULEAK_DUMP_SIGNAL", taken[i], 1);
        ck_assert_int_eq(load_capturing(err, sizeof err), 0);
        ck_assert_int_eq(config.dump_signal, atoi(taken[i]));
    }
    unsetenv("GPULEAK_DUMP_SIGNAL");
}
END_TEST

/* The load-time reading of GPULEAK_ENABLE (which decides whether PyTorch's
 * allocator setting is touched) agrees with config_load's. */
START_TEST(enable_at_load_reads_as_config_load_does)
{
    char err[1024];
    const char *values[] = { "0", "00", "+0", " 0", "1", "01", "2", "abc", "", "0x0" };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        setenv("GPULEAK_ENABLE", values[i], 1);
        load_capturing(err, sizeof err);
        ck_assert_msg(config_enabled_at_load(values[i]) == config.enabled,
                      "GPULEAK_ENABLE=\"%s\": at load %d, config_load %d", values[i],
                      config_enabled_at_load(values[i]), config.enabled);
    }
    ck_assert_int_eq(config_enabled_at_load("00"), 0);
    ck_assert_int_eq(config_enabled_at_load(NULL), 1);
    unsetenv("GPULEAK_ENABLE");
}
END_TEST

/* The program's allocator is switched only on request: unset and "native"
 * leave it alone, "async" asks for the switch, anything else is refused
 * (and the default, native, used). */
START_TEST(torch_allocator_switches_only_on_request)
{
    ck_assert_int_eq(config_torch_allocator_async(NULL), 0);
    ck_assert_int_eq(config_torch_allocator_async("native"), 0);
    ck_assert_int_eq(config_torch_allocator_async("async"), 1);
    ck_assert_int_eq(config_torch_allocator_async("Async"), -1);
    ck_assert_int_eq(config_torch_allocator_async(""), -1);
    setenv("GPULEAK_TORCH_ALLOCATOR", "cudaMallocAsync", 1);
    ck_assert_int_eq(config_load(), 1);
    unsetenv("GPULEAK_TORCH_ALLOCATOR");
}
END_TEST

START_TEST(every_option_is_in_the_readme)
{
    static char text[1 << 20];
    suite_read_file("README.md", text, sizeof text);
    size_t count;
    const config_option_t *options = config_options(&count);
    ck_assert_uint_gt(count, 5);
    for (size_t i = 0; i < count; i++)
        ck_assert_msg(strstr(text, options[i].name) != NULL, "%s missing from README.md",
                      options[i].name);
}
END_TEST

/* In secure-execution mode every variable reads as unset: the defaults
 * apply, and the report path's %r is not the user's RANK. */
START_TEST(secure_mode_reads_every_variable_as_unset)
{
    char err[1024], path[256];
    setenv("GPULEAK_STACK_DEPTH", "12", 1);
    setenv("GPULEAK_OUTPUT", "/etc/x-%p.json", 1);
    setenv("RANK", "5", 1);
    secure_calls = 0;
    secure_mode = 1;
    ck_assert_int_eq(load_capturing(err, sizeof err), 0);
    ck_assert_int_eq(config.stack_depth, 64);
    ck_assert_str_eq(config.output, "./gpuleak-%p.json");
    ck_assert_ptr_null(config_getenv("RANK"));
    ck_assert_int_eq(report_expand_path("r%r", path, sizeof path), 0);
    ck_assert_str_eq(path, "r0");
    ck_assert_int_gt(secure_calls, 3);
    secure_mode = 0;
    ck_assert_int_eq(load_capturing(err, sizeof err), 0);
    ck_assert_int_eq(config.stack_depth, 12);
    ck_assert_str_eq(config_getenv("RANK"), "5");
    ck_assert_int_eq(report_expand_path("r%r", path, sizeof path), 0);
    ck_assert_str_eq(path, "r5");
    unsetenv("GPULEAK_STACK_DEPTH");
    unsetenv("GPULEAK_OUTPUT");
    unsetenv("RANK");
}
END_TEST

/* "In one place": no shim source but config.c calls getenv, so a new
 * variable cannot slip past secure_getenv. */
START_TEST(only_config_reads_the_environment)
{
    static char text[1 << 20];
    glob_t g;
    ck_assert_int_eq(glob("shim/*/*.c", 0, NULL, &g), 0);
    ck_assert_uint_gt(g.gl_pathc, 10);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (strcmp(g.gl_pathv[i], "shim/base/config.c") == 0)
            continue;
        suite_read_file(g.gl_pathv[i], text, sizeof text);
        for (const char *p = text; (p = strstr(p, "getenv(")) != NULL; p++)
            ck_assert_msg(p > text && p[-1] == '_',
                          "%s calls getenv; use config_getenv", g.gl_pathv[i]);
    }
    globfree(&g);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("config");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, valid_values_are_taken);
    tcase_add_test(tc, invalid_values_name_variable_and_default);
    tcase_add_test(tc, unset_options_hold_their_documented_defaults);
    tcase_add_test(tc, only_free_signals_are_taken_as_the_dump_signal);
    tcase_add_test(tc, enable_at_load_reads_as_config_load_does);
    tcase_add_test(tc, torch_allocator_switches_only_on_request);
    tcase_add_test(tc, every_option_is_in_the_readme);
    tcase_add_test(tc, secure_mode_reads_every_variable_as_unset);
    tcase_add_test(tc, only_config_reads_the_environment);
    suite_add_tcase(suite, tc);
    return suite_run(suite, 0);
}
