#define _GNU_SOURCE
#include "config.h"
#include "log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Zero until config_load gives every field its default from the table
 * below, which is the one place a default is written (the unwinder's was
 * once set there and not here, so it never ran). */
config_t config;

enum option_type { OPTION_INT, OPTION_TEXT, OPTION_WORD, OPTION_SIGNAL };

/* secure_getenv, not getenv: in a setuid, setgid or file-capability
 * program (AT_SECURE) the user who started it chose the environment, and
 * an admin-wide preload (/etc/ld.so.preload) puts the shim there too; a
 * report path, a rank or a temporary directory taken from that environment
 * would let them create or replace files as the program's owner. */
const char *config_getenv(const char *name)
{
    return secure_getenv(name);
}

/* The index of value among words (space separated), or -1. */
static int word_index(const char *words, const char *value)
{
    size_t length = strlen(value);
    int index = 0;
    for (const char *w = words; *w; index++) {
        size_t n = strcspn(w, " ");
        if (n == length && length > 0 && strncmp(w, value, n) == 0)
            return index;
        w += n;
        w += *w == ' ';
    }
    return -1;
}

/* words (space separated) as a sentence says them: "a, b or c". */
static const char *say_words(const char *words, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *w = words; *w && used < size;) {
        size_t n = strcspn(w, " ");
        const char *next = w + n + (w[n] == ' ');
        const char *joint = w == words ? "" : *next ? ", " : " or ";
        int wrote = snprintf(out + used, size - used, "%s%.*s", joint, (int)n, w);
        used += wrote > 0 ? (size_t)wrote : 0;
        w = next;
    }
    return out;
}

typedef struct option_spec {
    config_option_t doc;
    enum option_type type;
    void *field;
    long min, max, def;
    const char *text_default;  /* TEXT: the field's default ("" shows as "(empty)") */
    const char *words;         /* WORD: the words taken */
} option_spec_t;

#define INT_ROW(field, name, def, lo, hi, help) \
    { { name, #def, help }, OPTION_INT, &config.field, lo, hi, def, NULL, NULL },
#define TEXT_ROW(field, name, def, help) \
    { { name, sizeof(def) > 1 ? def : "(empty)", help }, OPTION_TEXT, &config.field, 0, 0, 0, def, NULL },
#define WORD_ROW(field, name, def, words, help) \
    { { name, def, help }, OPTION_WORD, &config.field, 0, 0, 0, def, words },
#define SIGNAL_ROW(field, name, def, help) \
    { { name, #def, help }, OPTION_SIGNAL, &config.field, 0, 64, def, NULL, NULL },
static const option_spec_t options[] = { SHIM_OPTIONS(INT_ROW, TEXT_ROW, WORD_ROW, SIGNAL_ROW) };
#undef INT_ROW
#undef TEXT_ROW
#undef WORD_ROW
#undef SIGNAL_ROW

int config_torch_allocator_async(const char *value)
{
    if (value == NULL)
        return CONFIG_TORCH_NATIVE;
    return word_index("native async", value);
}

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

/* Puts spec's default into its field. */
static void set_default(const option_spec_t *spec)
{
    if (spec->type == OPTION_TEXT)
        *(const char **)spec->field = spec->text_default;
    else if (spec->type == OPTION_WORD)
        *(int *)spec->field = word_index(spec->words, spec->text_default);
    else
        *(int *)spec->field = (int)spec->def;
}

/* Puts text, spec's variable's value, into its field. Returns 0, or -1
 * after one line saying why it is refused (the default is kept). */
static int set_value(const option_spec_t *spec, const char *text)
{
    long value;
    int word;
    if (spec->type == OPTION_TEXT) {
        if (*text != '\0' || spec->text_default[0] == '\0') {
            *(const char **)spec->field = text;
            return 0;
        }
        log_line("%s is empty; using the default %s", spec->doc.name, spec->doc.default_text);
    } else if (spec->type == OPTION_WORD) {
        if ((word = word_index(spec->words, text)) >= 0) {
            *(int *)spec->field = word;
            return 0;
        }
        char choices[128];
        log_line("%s=%s is not %s; using the default %s", spec->doc.name, text,
                 say_words(spec->words, choices, sizeof choices), spec->doc.default_text);
    } else if (parse_bounded_long(text, spec->min, spec->max, &value) != 0) {
        log_line("%s=%s is not a whole number from %ld to %ld; using the default %s",
                 spec->doc.name, text, spec->min, spec->max, spec->doc.default_text);
    } else if (spec->type == OPTION_SIGNAL && !usable_dump_signal((int)value)) {
        log_line("%s=%s is not SIGUSR1 (%d), SIGUSR2 (%d) or a real-time signal (%d to %d); "
                 "using the default %s", spec->doc.name, text, SIGUSR1, SIGUSR2, SIGRTMIN,
                 SIGRTMAX, spec->doc.default_text);
    } else {
        *(int *)spec->field = (int)value;
        return 0;
    }
    return -1;
}

int config_load(void)
{
    int invalid = 0;
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        set_default(&options[i]);
        const char *text = config_getenv(options[i].doc.name);
        if (text != NULL && set_value(&options[i], text) != 0)
            invalid++;
    }
    return invalid;
}
