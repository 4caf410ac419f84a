/* gpuleak.h: what a running program may ask libgpuleak.so.
 *
 * The shim exports these when it is preloaded; a program (or the Python
 * package `gpuleak`, through ctypes) finds them with dlsym and does
 * nothing when they are absent. Each call is cheap next to an allocation
 * except where it says otherwise, thread-safe, and harmless while tracking
 * is off (it then answers 0). Sizes are bytes; kinds are the report's
 * names ("device", "pool", "vmm", "managed", "host", "array", "tensor"). */
#ifndef GPULEAK_H
#define GPULEAK_H

#include <stddef.h>
#include <stdint.h>

#define GPULEAK_API_VERSION 5

/* GPULEAK_API_VERSION of the loaded shim. */
int gpuleak_api_version(void);

/* The name of kind (as gpuleak_site_t.kind numbers it), or NULL past the
 * last: the report's table, for callers that have no copy of it. */
const char *gpuleak_kind_name(int kind);

/* 1 while the shim tracks this process, 0 before its first CUDA call, after
 * it stopped, or in a forked child. */
int gpuleak_tracking(void);

/* Live bytes now: of kind (NULL: the driver's GPU memory, the tensors in
 * it not counted twice) on device (-1: every device). 0 for an unknown
 * kind. */
uint64_t gpuleak_live_bytes(const char *kind, int device);

/* Puts a named mark on the report's timeline (the name cut to 63 bytes)
 * and remembers what each site held then, for gpuleak_live_since; before
 * the process's first CUDA call, nothing. Returns the mark's id (1, 2,
 * ...), or 0 once tracking is off (or in a forked child). O(sites). */
uint64_t gpuleak_mark(const char *name);

/* A site that holds more now than at a mark. */
typedef struct gpuleak_site {
    uint32_t site;           /* the report's site id */
    int kind, device;        /* kind as the index of its name above */
    uint64_t bytes;          /* live bytes gained since the mark */
    uint64_t live_bytes;     /* live bytes now */
    uint64_t live_allocations;
} gpuleak_site_t;

/* The sites whose live bytes rose since mark (PyTorch's cache left out, and
 * what CUDA libraries keep for the process: PyTorch's cuBLAS workspaces,
 * cuDNN's and NCCL's handles; docs/origin-rules.md, "Owners"),
 * largest gain first, up to max into out; returns how many there are in
 * all (more than max when out was too small). A mark older than the last
 * 64 is forgotten: then 0. O(sites), and a site's native frames are
 * symbolized the first time it gains, to know its owner. */
size_t gpuleak_live_since(uint64_t mark, gpuleak_site_t *out, size_t max);

/* The line a site's Python frames point at, by the report's origin rules:
 * "file:line in function" into out. Returns 0, or -1 when the site has no
 * Python frame the rules keep. */
int gpuleak_site_origin(uint32_t site, char *out, size_t size);

/* The thread that made the site, as pthread_self() (Python's
 * threading.get_ident()) gives it, when its stack had Python frames; 0 for
 * a thread that ran no Python (a native worker, PyTorch's autograd threads)
 * or an unknown site. Two threads with the same stack share one site, then
 * the first one's. Since version 4. */
uint64_t gpuleak_site_thread(uint32_t site);

/* The site's Python frames, innermost first, one "file:line in function"
 * a line, into out (cut at a whole line). Returns how many frames the site
 * has (more than written when out was too small), 0 for none or an
 * unknown site. Since version 4. */
int gpuleak_site_python_frames(uint32_t site, char *out, size_t size);

/* The start address and size of up to max of the site's live allocations;
 * returns how many it has in all. O(live allocations). */
size_t gpuleak_site_records(uint32_t site, uint64_t *addresses, uint64_t *sizes, size_t max);

/* The source of the search that names the Python objects holding memory
 * (the shim runs it at Python's exit; see the report's "held_by"). Its
 * find() takes the answer of layout() from gpuleak_layout_source's. */
const char *gpuleak_holders_source(void);

/* The walker find() takes as its fourth argument: a new reference to a
 * Python tuple of functions (shim/python/refwalk.h), or NULL. Call it with the GIL
 * held (ctypes.PyDLL, restype ctypes.py_object). */
void *gpuleak_holders_walker(void); /* since version 3 */

/* How every view names one holder that search found (its answer's fields:
 * the expression, its type, the type it is an attribute of or "", the file,
 * graph 1 for an autograd graph's saved tensors, and the path the name was
 * cut from or ""), into out: "history[...] (list in train.py)". Returns what
 * snprintf returns. Since version 3 (version 2 had no path). */
int gpuleak_holder_phrase(const char *name, const char *type, const char *owner,
                          const char *file, int graph, const char *path, char *out, size_t size);

/* The cause and cure one holder of a finding's memory shows by itself, as
 * every view words it (docs/diagnosis.md): its autograd graph kept (graph
 * 1: bytes it holds saved for backward), or, for memory that grew (grew
 * 1), tensors kept across steps by a container (role: the answer's role
 * word, "held" for tensors kept themselves). Lines indented by indent, into
 * out; "" when the holder shows no cause. Returns the text's length, or
 * -1. Since version 5. */
int gpuleak_diagnosis(const char *name, int graph, const char *role, uint64_t bytes, int grew,
                      int indent, char *out, size_t size);

/* The source of layout(), which asks the interpreter where it keeps its
 * standard library and installed packages (the shim runs it at Python's
 * exit; see the report's "python_layout"). Since version 2. */
const char *gpuleak_layout_source(void);

/* Writes a report now, as GPULEAK_DUMP_SIGNAL does; the program runs on.
 * Returns 0, or -1 when not tracking. Takes as long as a report. */
int gpuleak_snapshot(void);

#endif
