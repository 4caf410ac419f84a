/* holder_set.h: one holder search's answer, kept for the reports.
 *
 * shim/python/holders.py answers with one line per allocation it named (its
 * contract is at the top of that file); a set is that answer read once,
 * grouped by site and holder, largest first, with the allocations it named
 * by address. A set never changes once made: a report reads it while the
 * program runs on. */
#ifndef GPULEAK_HOLDER_SET_H
#define GPULEAK_HOLDER_SET_H

#include "composition.h"
#include "tracker.h"

#include <stddef.h>
#include <stdint.h>

/* One object that held some of a site's live memory. */
typedef struct holder {
    uint32_t site;
    const char *name;     /* as the program names it: "history[...]", "net.kept" */
    const char *type;     /* the named object's type: "list", "Parameter" */
    const char *owner;    /* for an attribute, its object's type ("Net"); else "" */
    const char *file;     /* the module the name lives in: "train.py" */
    const char *path;     /* the whole path from a name when name starts at an object's
                           * type ("Net.kept[...]"), else "" */
    int graph;            /* 1: held by the autograd graph of name, not by name itself */
    int role;             /* what the memory is: composition.h's role (outside_torch
                           * for any kind but tensors) */
    const char *part;     /* what it belongs to: the outermost module of a parameter,
                           * an optimizer, else name */
    int kind;             /* the allocations' kind: REPORT_KIND_tensor for PyTorch's
                           * memory, else the driver call's */
    uint64_t bytes, allocations;
} holder_t;

/* How the search went, for the report. */
typedef struct holder_search {
    int ran;               /* 0: no search (no Python, no atexit, turned off) */
    uint64_t objects;      /* Python objects looked at */
    uint64_t elapsed_ns;
    const char *ended;     /* "done", "all" (every allocation named), "budget", "error" */
    uint64_t named_allocations, named_bytes;
    uint64_t made_ns;      /* clock_monotonic_ns() when it ended */
    composition_t composition;  /* the GPU memory by role then; owners' names valid
                                   while the set lives */
} holder_search_t;

typedef struct holder_set holder_set_t;

/* Reads answer (holders.py's text, malloc'd; owned by the set from now on,
 * freed here on failure) about records[0..count), the targets it was given
 * by index (every live record but PyTorch's segments). elapsed_ns: the
 * search's time; gpu_bytes: the driver's live GPU bytes then, whose part
 * the records do not account for is PyTorch's cache. Returns the set, or
 * NULL when memory ran out. An answer of NULL (the search failed) makes a
 * set that says so. */
holder_set_t *holder_set_make(char *answer, const tracker_record_t *records, size_t count,
                              uint64_t elapsed_ns, uint64_t gpu_bytes);

void holder_set_free(holder_set_t *set);

/* The holders of site's memory, largest first, into *out; returns how many
 * (0 and *out NULL for a NULL set). Valid while the set lives. */
size_t holder_set_site(const holder_set_t *set, uint32_t site, const holder_t **out);

/* Whether the search named the allocation that starts at key in site. */
int holder_set_named(const holder_set_t *set, uint64_t key, uint32_t site);

/* How the search went; all zero for a NULL set. */
void holder_set_search(const holder_set_t *set, holder_search_t *out);

#endif
