/* report_format.h: the contract between the shim (writer) and the gpuleak
 * command (reader). docs/report-format.md describes every field. */
#ifndef GPULEAK_REPORT_FORMAT_H
#define GPULEAK_REPORT_FORMAT_H

#define REPORT_FORMAT_NAME "gpuleak-report"
#define REPORT_FORMAT_VERSION 2
#define GPULEAK_VERSION "0.1.0"

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
    X(tensor, "PyTorch tensor memory")      /* PyTorch's allocator events (inside \
                                               the driver kinds' segments) */

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
