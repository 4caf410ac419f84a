/* pylayout.h: where the watched program's Python keeps its standard library
 * and its installed packages, as the interpreter itself said at its finish
 * (shim/python/layout.py, which search.c runs from its atexit callback). The
 * origin rules judge Python frames by it before their built-in globs
 * (origin.c, docs/origin-rules.md), and the report records it
 * ("python_layout"). A report written before Python's atexit (a snapshot,
 * a fatal signal, a program without Python) has none: the built-in globs
 * judge alone. */
#ifndef GPULEAK_PYLAYOUT_H
#define GPULEAK_PYLAYOUT_H

#include "origin_rules.h"

/* Keeps answer (layout.py's lines, "stdlib\tFOLDER" and
 * "packages\tFOLDER"; copied) as the layout of every report from now on;
 * other lines, and folders that are not absolute, are left out. Call once,
 * from any thread. Returns 0, or -1 when the answer names no folder or
 * memory is lacking (or a layout is already kept): then nothing changes. */
int pylayout_set(const char *answer);

/* The layout pylayout_set kept, or NULL before. Valid until exit. */
const origin_layout_t *pylayout_get(void);

#endif
