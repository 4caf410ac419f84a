#define _GNU_SOURCE
#include "config.h"
#include "log.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Zero until config_load gives every field its default from the table
 * below, which is the one place a default is written (the unwinder's was
 * once set there and not here, so it never ran). */
config_t config;

/* OPTION_MODULE: read and checked by the module that uses it (at report
 * time, or in a test that sets it per case); listed here so that the table
 * stays the one list of variables. */
enum option_type { OPTION_INT, OPTION_BOOL, OPTION_STRING, OPTION_TORCH, OPTION_MODULE };

/* secure_getenv, not getenv: in a setuid, setgid or file-capability
 * program (AT_SECURE) the user who started it chose the environment, and
 * an admin-wide preload (/etc/ld.so.preload) puts the shim there too; a
 * report path, a rank or a temporary directory taken from that environment
 * would let them create or replace files as the program's owner. */
const char *config_getenv(const char *name)
{
    return secure_getenv(name);
}

int config_torch_allocator_async(const char *value)
{
    if (value == NULL || strcmp(value, "native") == 0)
        return 0;
    return strcmp(value, "async") == 0 ? 1 : -1;
}

typedef struct option_spec {
    config_option_t doc;
    enum option_type type;
    void *field;
    long min, max, def;
} option_spec_t;

#define INT_OPTION(name, field, def, lo, hi, text) \
    { { name, #def, text }, OPTION_INT, &config.field, lo, hi, def }
#define BOOL_OPTION(name, field, def, text) \
    { { name, #def, text }, OPTION_BOOL, &config.field, 0, 1, def }

static const option_spec_t options[] = {
    { { "GPULEAK_OUTPUT", "./gpuleak-%p.json",
        "Report path; %p is the pid, %h the host name, %r the rank (RANK or LOCAL_RANK, "
        "digits only). Keep %p for a program of several processes: one path keeps only the "
        "last report." },
      OPTION_STRING, &config.output, 0, 0, 0 },
    INT_OPTION("GPULEAK_STACK_DEPTH", stack_depth, 64, 0, 256,
               "Native frames recorded per allocation; 0 records no stacks."),
    BOOL_OPTION("GPULEAK_PYTHON", python_frames, 1,
                "Record the Python frames of the allocating thread (1) or not (0)."),
    INT_OPTION("GPULEAK_PYTHON_DEPTH", python_depth, 32, 1, 256,
               "Python frames recorded per allocation."),
    BOOL_OPTION("GPULEAK_SUMMARY", summary, 1,
                "Print the leak summary on stderr at exit (1) or not (0)."),
    INT_OPTION("GPULEAK_SUMMARY_SITES", summary_sites, 5, 0, 1000,
               "Leaking sites shown in the exit summary."),
    INT_OPTION("GPULEAK_SUMMARY_FRAMES", summary_frames, 6, 1, 256,
               "Frames shown per site in the exit summary."),
    BOOL_OPTION("GPULEAK_ENABLE", enabled, 1,
                "0 forwards every call untouched and writes no report."),
    BOOL_OPTION("GPULEAK_REDACT_ARGV", redact_argv, 0,
                "1 keeps the command line out of the report (argv[0] only)."),
    INT_OPTION("GPULEAK_FLUSH_INTERVAL", flush_interval_s, 60, 0, 86400,
               "Seconds between snapshot reports, so a SIGKILL loses at most one; 0 turns them off."),
    INT_OPTION("GPULEAK_HOLDERS_MS", holders_ms, 1000, 0, 60000,
               "Milliseconds a Python program may spend at its exit naming the objects that hold its GPU memory; 0 skips it."),
    INT_OPTION("GPULEAK_DUMP_SIGNAL", dump_signal, 12, 0, 64,
               "Signal that writes a report now and lets the program run on (12 is SIGUSR2); "
               "0 turns it off; never taken when the program has its own handler; only SIGUSR1 "
               "(10), SIGUSR2 (12) or a real-time signal (34 to 64) is taken."),
    BOOL_OPTION("GPULEAK_FAST_UNWIND", fast_unwind, 1,
                "1 steps native frames by each address's cached unwind rule, asking libunwind "
                "only where a frame needs more; 0 always asks libunwind."),
    BOOL_OPTION("GPULEAK_SELF_TIME", self_time, 0,
                "1 times the shim's own work in each call (four clock reads a call) and reports it."),
    { { "GPULEAK_TORCH_ALLOCATOR", "native",
        "native leaves PyTorch's allocator as the program set it and follows its tensors "
        "through the caching allocator's own events; async sets "
        "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync when unset, which changes the "
        "program (its speed, fragmentation and peak; CUDA graph trees fail)." },
      OPTION_TORCH, NULL, 0, 0, 0 },
    { { "GPULEAK_ORIGIN_SKIP", "(empty)",
        "Extra globs, colon-separated, for frames that are never a site's origin; "
        "a leading ! keeps a frame instead (docs/origin-rules.md)." },
      OPTION_MODULE, NULL, 0, 0, 0 },
    { { "GPULEAK_ORIGIN_RULES", "default",
        "none drops the built-in origin rules, keeping only GPULEAK_ORIGIN_SKIP." },
      OPTION_MODULE, NULL, 0, 0, 0 },
    { { "GPULEAK_NO_LIBDW", "0",
        "1 symbolizes without libdw (names from the files' symbol tables, no source lines), "
        "as on a machine without elfutils." },
      OPTION_MODULE, NULL, 0, 0, 0 },
};

const config_option_t *config_options(size_t *count)
{
    static config_option_t docs[sizeof options / sizeof options[0]];
    *count = sizeof options / sizeof options[0];
    for (size_t i = 0; i < *count; i++)
        docs[i] = options[i].doc;
    return docs;
}

/* Parses a whole decimal integer within [min, max]; anything else (empty,
 * trailing characters, out of range) is invalid, so a typo never silently
 * becomes a different number. Returns 0 and sets *out, or -1. */
static int parse_bounded_long(const char *text, long min, long max, long *out)
{
    char *end;
    int saved_errno = errno;  /* strtol's ERANGE is the shim's, not the program's */
    errno = 0;
    long value = strtol(text, &end, 10);
    int bad = errno != 0 || end == text || *end != '\0' || value < min || value > max;
    errno = saved_errno;
    if (bad)
        return -1;
    *out = value;
    return 0;
}

int config_enabled_at_load(const char *value)
{
    long enabled;
    return value == NULL || parse_bounded_long(value, 0, 1, &enabled) != 0 || enabled == 1;
}

/* The signals a dump handler may take: those that mean nothing to the
 * system. Every other one already does something a report-and-run-on
 * handler would change: a fault's handler returns to the faulting
 * instruction (an endless loop of reports), SIGTERM or SIGINT would no
 * longer end the program, SIGCHLD would write a report at every child's
 * exit and cut its sleeps short, 32 and 33 are glibc's own (thread
 * cancellation, setxid), and SIGKILL and SIGSTOP cannot be caught. */
static int usable_dump_signal(int sig)
{
    return sig == 0 || sig == SIGUSR1 || sig == SIGUSR2 || (sig >= SIGRTMIN && sig <= SIGRTMAX);
}

int config_load(void)
{
    int invalid = 0;
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        const option_spec_t *spec = &options[i];
        int refused_signal = 0;  /* a whole number, in range, that no handler may take */
        if (spec->type == OPTION_STRING)
            *(const char **)spec->field = spec->doc.default_text;
        else if (spec->type == OPTION_INT || spec->type == OPTION_BOOL)
            *(int *)spec->field = (int)spec->def;
        const char *text = config_getenv(spec->doc.name);
        if (text == NULL || spec->type == OPTION_MODULE)
            continue;
        if (spec->type == OPTION_STRING) {
            if (*text != '\0') {
                *(const char **)spec->field = text;
                continue;
            }
        } else if (spec->type == OPTION_TORCH) {
            if (config_torch_allocator_async(text) >= 0)
                continue;
        } else {
            long value;
            if (parse_bounded_long(text, spec->min, spec->max, &value) == 0) {
                refused_signal = spec->field == &config.dump_signal && !usable_dump_signal((int)value);
                if (!refused_signal) {
                    *(int *)spec->field = (int)value;
                    continue;
                }
            }
        }
        invalid++;
        if (refused_signal)
            log_line("%s=%s is not SIGUSR1 (%d), SIGUSR2 (%d) or a real-time signal (%d to %d); "
                     "using the default %s", spec->doc.name, text, SIGUSR1, SIGUSR2, SIGRTMIN,
                     SIGRTMAX, spec->doc.default_text);
        else if (spec->type == OPTION_STRING)
            log_line("%s is empty; using the default %s", spec->doc.name,
                     spec->doc.default_text);
        else if (spec->type == OPTION_TORCH)
            log_line("%s=%s is neither native nor async; using the default %s",
                     spec->doc.name, text, spec->doc.default_text);
        else
            log_line("%s=%s is not a whole number from %ld to %ld; using the default %s",
                     spec->doc.name, text, spec->min, spec->max, spec->doc.default_text);
    }
    return invalid;
}
