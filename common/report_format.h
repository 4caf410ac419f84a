/* report_format.h: the contract between the shim (writer) and the gpuleak
 * command (reader). docs/report-format.md describes every field. */
#ifndef GPULEAK_REPORT_FORMAT_H
#define GPULEAK_REPORT_FORMAT_H

#define REPORT_FORMAT_NAME "gpuleak-report"
#define REPORT_FORMAT_VERSION 2
#define GPULEAK_VERSION "0.1.0"

/* "holders_search"'s "ended" where the search did not run because the
 * program has audit hooks, which would have seen it. */
#define REPORT_SEARCH_AUDIT_HOOKS "audit_hooks"

/* The allocation kinds: the name the report spells, the phrase every view
 * prints, and (for the reader of this table) the calls that make each. One
 * table, so the shim, the command and the fake driver cannot drift apart: a
 * new kind is one line here plus its wrappers. Their ids are enum
 * report_kind's (REPORT_KIND_device, ...), the shim's alloc_kind_t. */
#define REPORT_KINDS(X)                                                         \
    X(device, "device memory")              /* cuMemAlloc_v2, cuMemAllocPitch_v2 */ \
    X(pool, "stream-ordered pool memory")   /* cuMemAllocAsync, ...FromPoolAsync */ \
    X(vmm, "VMM physical memory")           /* cuMemCreate, keyed by handle */   \
    X(managed, "managed memory")            /* cuMemAllocManaged */              \
    X(host, "pinned host memory")           /* cuMemAllocHost_v2, cuMemHostAlloc */ \
    X(array, "CUDA array memory")           /* cuArrayCreate_v2, cuArray3DCreate_v2 */ \
    X(tensor, "tensor memory")              /* a framework's arrays inside its pool \
                                               (inside the driver kinds' blocks): \
                                               REPORT_FRAMEWORKS says whose */

#define REPORT_KIND_NAME(name, phrase) #name,
#define REPORT_KIND_PHRASE(name, phrase) phrase,
#define REPORT_KIND_ONE(name, phrase) +1
#define REPORT_KIND_COUNT (0 REPORT_KINDS(REPORT_KIND_ONE))
#define REPORT_KIND_ENUM(name, phrase) REPORT_KIND_##name,
/* The kinds' ids: the shim's alloc_kind_t, for code both sides share. */
enum report_kind { REPORT_KINDS(REPORT_KIND_ENUM) };

/* The report's name of kind, "unknown" for none of them. */
static inline const char *report_kind_name(int kind)
{
    static const char *const names[] = { REPORT_KINDS(REPORT_KIND_NAME) };
    return kind >= 0 && kind < REPORT_KIND_COUNT ? names[kind] : "unknown";
}

/* The frameworks whose arrays a tensor site's memory is: X(name the report
 * spells, what its arrays' memory is, what its unused pool is, how a kept
 * array becomes a number or host memory, what its arrays are called).
 * PyTorch's tensors come from its allocator's events, JAX's and CuPy's
 * from their own records of the arrays in their pools (docs/frameworks.md).
 * A tensor site with no framework in the report is PyTorch's (reports
 * before 2026-12-07). */
#define REPORT_FRAMEWORKS(X)                                                         \
    X(torch, "PyTorch tensor memory", "PyTorch's cache", "as numbers (.item()) or on the CPU (.cpu())", \
      "PyTorch tensors") \
    X(jax, "JAX array memory", "JAX's pool", "as numbers (float(x)) or on the host (jax.device_get)", \
      "JAX arrays") \
    X(cupy, "CuPy array memory", "CuPy's pool", "as numbers (float(x)) or on the host (.get())", \
      "CuPy arrays")

#define REPORT_FRAMEWORK_ENUM(name, phrase, cache, to_host, arrays) REPORT_FRAMEWORK_##name,
enum report_framework { REPORT_FRAMEWORKS(REPORT_FRAMEWORK_ENUM) REPORT_FRAMEWORK_COUNT };

/* The framework's report name ("torch"), its arrays' phrase, its cache's
 * phrase, its way to the host and its arrays' name ("JAX arrays");
 * framework out of range reads as torch. */
#define REPORT_FRAMEWORK_FIELD(name, phrase, cache, to_host, arrays) \
    { #name, phrase, cache, to_host, arrays },
static inline const char *report_framework_text(int framework, int field)
{
    static const char *const table[][5] = { REPORT_FRAMEWORKS(REPORT_FRAMEWORK_FIELD) };
    if (framework < 0 || framework >= REPORT_FRAMEWORK_COUNT)
        framework = REPORT_FRAMEWORK_torch;
    return table[framework][field];
}
#define REPORT_FRAMEWORK_NAME 0
#define REPORT_FRAMEWORK_PHRASE 1
#define REPORT_FRAMEWORK_CACHE 2
#define REPORT_FRAMEWORK_TO_HOST 3
#define REPORT_FRAMEWORK_ARRAYS 4

/* The framework a report spells name, or -1. */
#include <string.h>
static inline int report_framework_of(const char *name)
{
    for (int f = 0; name != NULL && f < REPORT_FRAMEWORK_COUNT; f++)
        if (strcmp(name, report_framework_text(f, REPORT_FRAMEWORK_NAME)) == 0)
            return f;
    return -1;
}

/* The cache of the frameworks in mask (1 << enum report_framework):
 * "PyTorch's cache", "JAX's pool", or, for several, "the frameworks'
 * caches" (capital: "The ..."). */
static inline const char *report_frameworks_cache(unsigned mask, int capital)
{
    for (int f = 0; f < REPORT_FRAMEWORK_COUNT; f++)
        if (mask == 1u << f)
            return report_framework_text(f, REPORT_FRAMEWORK_CACHE);
    if (mask == 0)
        return "PyTorch's cache";
    return capital ? "The frameworks' caches" : "the frameworks' caches";
}

/* How every view names a site's memory: its kind's phrase, or for tensors
 * its framework's ("JAX array memory"). */
static inline const char *report_site_phrase(int kind, int framework)
{
    static const char *const phrases[] = { REPORT_KINDS(REPORT_KIND_PHRASE) };
    if (kind == REPORT_KIND_tensor)
        return report_framework_text(framework, REPORT_FRAMEWORK_PHRASE);
    return kind >= 0 && kind < REPORT_KIND_COUNT ? phrases[kind] : "memory of an unknown kind";
}

/* How every view names an object that held memory at Python's finish (a
 * site's "held_by" entry): `history[...]` (list in train.py), `net.kept`
 * (list, attribute of a Net, in train.py), the autograd graph of
 * `losses[...]` (in train.py); a name that starts at an object's type says
 * the whole path it was reached by: `Net.kept[...]` (list, attribute of a
 * Net, in train.py; reached as t._selector.model.kept[...]). path may be
 * NULL or "". Returns what snprintf returns. */
#include <stdio.h>
static inline int report_holder_phrase(char *out, size_t size, const char *name, const char *type,
                                       const char *owner, const char *file, int graph,
                                       const char *path)
{
    const char *via = path != NULL && path[0] != '\0' ? "; reached as " : "";
    path = via[0] != '\0' ? path : "";
    if (graph)
        return snprintf(out, size, "the autograd graph of %s (in %s%s%s)", name, file, via, path);
    if (owner != NULL && owner[0] != '\0')
        return snprintf(out, size, "%s (%s, attribute of a %s, in %s%s%s)", name, type, owner, file,
                        via, path);
    return snprintf(out, size, "%s (%s in %s%s%s)", name, type, file, via, path);
}

#endif
