/* config.h: the GPULEAK_* variables, declared once (SHIM_OPTIONS), read
 * once when tracking starts.
 *
 * The same rows make the struct, the parser and `gpuleak options` (which
 * prints the README's list), so a variable cannot be documented and parsed
 * differently, and none is read anywhere else. */
#ifndef GPULEAK_CONFIG_H
#define GPULEAK_CONFIG_H

#include <stddef.h>

#include "shim_options.h"

#define CONFIG_INT_FIELD(field, name, def, lo, hi, help) int field;
#define CONFIG_TEXT_FIELD(field, name, def, help) const char *field;
#define CONFIG_WORD_FIELD(field, name, def, words, help) int field;
#define CONFIG_SIGNAL_FIELD(field, name, def, help) int field;
typedef struct config {
    SHIM_OPTIONS(CONFIG_INT_FIELD, CONFIG_TEXT_FIELD, CONFIG_WORD_FIELD, CONFIG_SIGNAL_FIELD)
} config_t;
#undef CONFIG_INT_FIELD
#undef CONFIG_TEXT_FIELD
#undef CONFIG_WORD_FIELD
#undef CONFIG_SIGNAL_FIELD

/* GPULEAK_TORCH_ALLOCATOR's and GPULEAK_ORIGIN_RULES' words, by index. */
enum { CONFIG_TORCH_NATIVE, CONFIG_TORCH_ASYNC };
enum { CONFIG_RULES_DEFAULT, CONFIG_RULES_NONE };

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
