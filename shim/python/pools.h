/* pools.h: the arrays JAX and CuPy place inside their own memory pools,
 * followed as tensors.
 *
 * Both frameworks take large blocks from the driver and hand out arrays
 * from inside them, as PyTorch's caching allocator does; the driver's view
 * (one 60 GiB block made by the first operation) names neither the arrays
 * nor the lines that made them. Each framework keeps what is needed, and
 * nothing here changes their allocators or settings:
 *   - JAX lists its live arrays with the Python frames that made each
 *     (jax.live_arrays(), an array's traceback): read in snapshots, at the
 *     moments the heap is walked (Python's finish, an OOM, a report on
 *     request) and at the pools' own checkpoints (search_pools_tick), each array a
 *     tensor record at its buffer's address, with a site from those frames;
 *     an array gone from the list is freed.
 *   - CuPy calls memory hooks on each array's allocation and free, per
 *     thread: the shim's hook, registered on the main thread once CuPy is
 *     loaded (pools_hook_functions), records each one as PyTorch's events
 *     are recorded, with the allocating thread's stack; arrays made before
 *     it was registered or on other threads are found in snapshots of the
 *     live PooledMemory objects (no line then).
 * A block an array lies in is marked as the framework's cache
 * (tracker_mark_reserve): its bytes are shown by the arrays inside it,
 * never as the user's leak. pools_sync, pools_oom and the hook run with
 * the GIL held; the readers (counts, a site's framework) from any thread. */
#ifndef GPULEAK_POOLS_H
#define GPULEAK_POOLS_H

#include <stddef.h>
#include <stdint.h>

#include "report_format.h"

/* What was seen of one framework's arrays. */
typedef struct pools_counts {
    uint64_t live_arrays, live_bytes;  /* recorded now */
    uint64_t events;                   /* allocations seen one by one (a hook) */
    uint64_t from_snapshots;           /* arrays first seen in a snapshot */
    uint64_t snapshots;                /* listings of every live array read */
} pools_counts_t;

/* Reconciles the records with listing, pools.py's arrays() answer: a new
 * array is recorded as a tensor (its site from the frames listed), one
 * listed at another size replaces the record there, and a record of a
 * framework whose every array was listed that is missing from it is freed.
 * Marks the blocks the arrays lie in as the framework's cache. Returns how
 * many arrays were listed. */
size_t pools_sync(const char *listing);

/* Makes the functions the CuPy hook calls (malloc_postprocess,
 * free_postprocess, alloc_postprocess, and one that does nothing for the
 * *_preprocess calls: CuPy calls them with keywords), as new references in
 * out[], in that order. Returns 0, or -1 when the interpreter's functions
 * could not be found. */
#define POOLS_HOOKS 4
int pools_hook_functions(void *out[POOLS_HOOKS]);

/* Notes that the hook was registered (arm answered "cupy"). */
void pools_armed(void);

/* Records JAX's out-of-memory error that ended the program (answer:
 * pools.py's oom(), "bytes asked \t frames", or "") as the OOM of kind
 * tensor: JAX raises it inside its pool, where the driver refuses
 * nothing. Returns 1 when it recorded one. */
int pools_oom(const char *answer);

/* 1 once any framework's arrays are recorded as tensors. */
int pools_followed(void);

/* 1 once a listing found JAX loaded (its arrays are seen only in
 * snapshots) or CuPy's hook is in (arrays other threads make are seen only
 * in snapshots): checkpoints are worth asking for. */
int pools_want_checkpoints(void);

/* 1 when the last listing with CuPy's arrays (a heap scan) found some that
 * no hook had seen: made on other threads, whose arrays only heap scans
 * find, so the next checkpoint scans again. */
int pools_cupy_unhooked(void);

/* A copy of one framework's counts (enum report_framework: jax, cupy;
 * PyTorch's are torch_events.h's), within bounded.h's wait. */
void pools_counts(int framework, pools_counts_t *out);

/* Whether CuPy's hook was registered (its arrays seen one by one on the
 * main thread). */
int pools_cupy_hooked(void);

/* The framework a tensor site's arrays belong to (enum report_framework),
 * or -1 for a site this module did not record (PyTorch's). Within
 * bounded.h's wait; -1 when given up. */
int pools_site_framework(uint32_t site);

#endif
