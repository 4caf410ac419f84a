/* rank.c: the process's rank (rank.h). */
#include "rank.h"
#include "config.h"
#include "log.h"

#include <stdatomic.h>
#include <string.h>

/* A rank variable's value when it is 1 to 9 decimal digits, else NULL,
 * naming a set but refused value once. */
static const char *rank_from(const char *name, _Atomic int *warned)
{
    const char *value = config_getenv(name);
    if (value == NULL || *value == '\0')
        return NULL;
    size_t digits = strspn(value, "0123456789");
    if (digits > 0 && digits <= 9 && value[digits] == '\0')
        return value;
    if (!atomic_exchange(warned, 1)) {
        /* One line, whatever the value holds (a newline would split it). */
        char shown[64];
        size_t n = 0;
        for (; value[n] != '\0' && n < sizeof shown - 1; n++)
            shown[n] = (unsigned char)value[n] < 0x20 || value[n] == 0x7f ? '?' : value[n];
        shown[n] = '\0';
        log_line("%s=%s is not a whole number; it is not used as the rank", name, shown);
    }
    return NULL;
}

const char *rank_of_process(void)
{
    static _Atomic int warned_rank, warned_local;
    const char *rank = rank_from("RANK", &warned_rank);
    return rank != NULL ? rank : rank_from("LOCAL_RANK", &warned_local);
}
