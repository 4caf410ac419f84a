/* pylayout.c: the interpreter's layout, kept once for every report after
 * Python's finish. Written by one thread, read by any (the reporter's, a
 * signal's): published with a release store once whole, never changed or
 * freed after. */
#define _GNU_SOURCE
#include "pylayout.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static origin_layout_t layout;
static _Atomic(const origin_layout_t *) published;

int pylayout_set(const char *answer)
{
    if (atomic_load_explicit(&published, memory_order_acquire) != NULL)
        return -1;
    size_t lines = 1;
    for (const char *p = answer; *p != '\0'; p++)
        lines += *p == '\n';
    char *text = strdup(answer);
    const char **stdlib = calloc(lines, sizeof *stdlib);
    const char **packages = calloc(lines, sizeof *packages);
    size_t nstdlib = 0, npackages = 0;
    char *save = NULL;
    for (char *line = text != NULL && stdlib != NULL && packages != NULL ? strtok_r(text, "\n", &save) : NULL;
         line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *folder = strchr(line, '\t');
        if (folder == NULL || folder[1] != '/')
            continue;
        *folder++ = '\0';
        if (strcmp(line, "stdlib") == 0)
            stdlib[nstdlib++] = folder;
        else if (strcmp(line, "packages") == 0)
            packages[npackages++] = folder;
    }
    if (nstdlib + npackages == 0) {
        free(text);
        free(stdlib);
        free(packages);
        return -1;
    }
    layout = (origin_layout_t){ stdlib, nstdlib, packages, npackages };
    atomic_store_explicit(&published, &layout, memory_order_release);
    return 0;
}

const origin_layout_t *pylayout_get(void)
{
    return atomic_load_explicit(&published, memory_order_acquire);
}
