/* config.h: the GPULEAK_* variables, read once from one table.
 *
 * The same table feeds the parser and `gpuleak options` (which prints the
 * README's list), so a variable cannot be documented and parsed differently. */
#ifndef GPULEAK_CONFIG_H
#define GPULEAK_CONFIG_H

#include <stddef.h>

typedef struct config {
    const char *output;   /* report path pattern: %p pid, %h host, %r rank */
    int stack_depth;      /* native frames per stack; 0 turns stacks off */
    int python_frames;    /* 1: record Python frames of the allocating thread */
    int python_depth;     /* Python frames per stack */
    int summary;          /* 1: print the exit summary on stderr */
    int summary_sites;    /* sites shown in the exit summary */
    int summary_frames;   /* frames shown per site in the summary */
    int enabled;          /* 0: forward every call untouched, write nothing */
    int redact_argv;      /* 1: the report keeps argv[0] only */
    int flush_interval_s; /* seconds between snapshot reports; 0: none */
    int dump_signal;      /* signal that writes a report now; 0: none */
    int self_time;        /* 1: time the shim's own work in each call (selftime.h) */
    int fast_unwind;      /* 1: step frames by cached rules (unwind.h) before libunwind */
    int holders_ms;       /* time Python may spend naming holders at its finish (finish.h) */
} config_t;

/* The value of the environment variable name, or NULL when it is unset or
 * the process runs in secure-execution mode (setuid, setgid, file
 * capabilities), where every variable reads as unset and the defaults
 * apply. Every variable the shim reads (GPULEAK_*, RANK, TMPDIR, ...) is
 * read through this one function. */
const char *config_getenv(const char *name);

/* The values in force: zero until config_load has run, then each option's
 * default or its variable's value. */
extern config_t config;

/* Reads every GPULEAK_* variable. An invalid value gets one line on stderr
 * naming the variable, the value and the default used, and the default is
 * kept. Returns the number of invalid values found. */
int config_load(void);

/* Reads a GPULEAK_TORCH_ALLOCATOR value: 1 for "async" (switch PyTorch to
 * its cudaMallocAsync backend, on request only), 0 for "native" or unset
 * (the default: the program's allocator untouched), -1 for anything else
 * (then the default applies, and config_load says so). */
int config_torch_allocator_async(const char *value);

/* Reads a GPULEAK_ENABLE value before config_load (at load time): 0 only
 * when it parses as 0, exactly as config_load would read it; unset or
 * invalid is the default, 1 (config_load says so later). */
int config_enabled_at_load(const char *value);

/* One documented option, for `gpuleak options` and the tests that keep the
 * README honest. */
typedef struct config_option {
    const char *name;        /* "GPULEAK_STACK_DEPTH" */
    const char *default_text;/* "64" */
    const char *description; /* one sentence */
} config_option_t;

/* The table of options, and its length in *count. */
const config_option_t *config_options(size_t *count);

#endif
