/* finish.h: what a Python program still held when it finished, and who held it.
 *
 * CPython runs its atexit callbacks with the interpreter whole, then tears
 * its modules down, which frees what a script kept in its globals before any
 * C destructor can look. So the shim registers an atexit callback of its
 * own (through a pending call, which CPython's main thread runs with the
 * GIL held: no thread waits for the GIL). Registered once tracking starts,
 * it runs after the callbacks the program registered before that. There it takes the
 * held-at-finish snapshot (tracker_take_held), asks the interpreter where
 * it keeps its standard library and installed packages (shim/layout.py,
 * kept by pylayout.h for the origin rules and the report), and which
 * objects keep the live allocations alive (shim/holders.py): module
 * globals, attributes, containers, closures, autograd graphs, each named as
 * the program would name it. A program that skips atexit (os._exit, a fatal
 * signal) keeps the held snapshot the first free after Python's finish takes
 * (python_finished), without names or layout. */
#ifndef GPULEAK_FINISH_H
#define GPULEAK_FINISH_H

#include <stddef.h>
#include <stdint.h>

/* shim/holders.py and shim/layout.py, NUL-terminated (embedded_py.S). */
extern const char finish_holders_py[] __attribute__((visibility("hidden")));
extern const char finish_layout_py[] __attribute__((visibility("hidden")));

/* Registers the atexit callback when a CPython interpreter is up in this
 * process: asks its main thread to do it (Py_AddPendingCall), and returns
 * at once.
 * Call once, from the start of tracking; harmless without Python or with
 * GPULEAK_HOLDERS_MS=0 (then only the snapshot is taken at atexit). */
void finish_watch(void);

/* One object that held some of a site's live memory at Python's finish. */
typedef struct finish_holder {
    uint32_t site;
    const char *name;     /* as the program names it: "history[...]", "net.kept" */
    const char *type;     /* the named object's type: "list", "Parameter" */
    const char *owner;    /* for an attribute, its object's type ("Net"); else "" */
    const char *file;     /* the module the name lives in: "train.py" */
    const char *path;     /* the whole path from a name when name starts at an object's
                           * type ("Net.kept[...]"), else "" */
    int graph;            /* 1: held by the autograd graph of name, not by name itself */
    uint64_t bytes, allocations;
} finish_holder_t;

/* The holders of site's memory, largest first, into *out; returns how many
 * (0 before the callback ran, or when none was found). Valid until exit. */
size_t finish_holders(uint32_t site, const finish_holder_t **out);

/* Whether the search named the allocation that starts at key in site: the
 * program held it by a name as it finished. 0 before the callback ran. */
int finish_named(uint64_t key, uint32_t site);

/* How the search went, for the report. */
typedef struct finish_search {
    int ran;               /* 0: no search (no Python, no atexit, turned off) */
    uint64_t objects;      /* Python objects looked at */
    uint64_t elapsed_ns;
    const char *ended;     /* "done", "all" (every allocation named), "budget", "error" */
    uint64_t named_allocations, named_bytes;
} finish_search_t;

void finish_search(finish_search_t *out);

#endif
