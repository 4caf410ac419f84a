/* search.h: what a Python program still held when it finished, and who held it.
 *
 * CPython runs its atexit callbacks with the interpreter whole, then tears
 * its modules down, which frees what a script kept in its globals before any
 * C destructor can look. So the shim registers an atexit callback of its
 * own (through a pending call, which CPython's main thread runs with the
 * GIL held: no thread waits for the GIL). Registered once tracking starts,
 * it runs after the callbacks the program registered before that. There it takes the
 * held-at-finish snapshot (tracker_take_held), asks the interpreter where
 * it keeps its standard library and installed packages (shim/python/layout.py,
 * kept by pylayout.h for the origin rules and the report), and which
 * objects keep the live allocations alive (shim/python/holders.py): module
 * globals, attributes, containers, closures, autograd graphs, each named as
 * the program would name it. A program that skips atexit (os._exit, a fatal
 * signal) keeps the held snapshot the first free after Python's finish takes
 * (python_finished), without names or layout.
 *
 * The same search answers while the program runs: at its first
 * out-of-memory failure and for a report on request (GPULEAK_DUMP_SIGNAL),
 * each from a pending call the main thread runs. */
#ifndef GPULEAK_FINISH_H
#define GPULEAK_FINISH_H

#include "holder_set.h"

#include <stddef.h>
#include <stdint.h>

/* shim/python/holders.py, layout.py and pools.py, NUL-terminated (embedded_py.S). */
extern const char search_holders_py[] __attribute__((visibility("hidden")));
extern const char search_layout_py[] __attribute__((visibility("hidden")));
extern const char search_pools_py[] __attribute__((visibility("hidden")));

/* Registers the atexit callback when a CPython interpreter is up in this
 * process: asks its main thread to do it (Py_AddPendingCall), and returns
 * at once.
 * Call once, from the start of tracking; harmless without Python or with
 * GPULEAK_HOLDERS_MS=0 (then only the snapshot is taken at atexit). */
void search_watch(void);

/* The moments a search answers for. */
typedef enum search_moment {
    SEARCH_AT_EXIT,      /* Python's finish (its atexit) */
    SEARCH_AT_OOM,       /* the first out-of-memory failure */
    SEARCH_ON_REQUEST,   /* the latest report asked for while the program runs */
    SEARCH_MOMENTS
} search_moment_t;

/* The moment's search, or NULL before it ran (or when it found no Python,
 * or was turned off). The set stays valid until search_release(*ticket),
 * which every call must be paired with (ticket NULL: nothing to release).
 * Takes a lock within bounded.h's bounds. */
const holder_set_t *search_acquire(search_moment_t moment, void **ticket);
void search_release(void *ticket);

/* Asks for a search of who holds the live memory, once, at the first
 * out-of-memory failure: any thread, no GIL needed; returns at once. The
 * main thread answers at its next bytecode, while the exception in flight
 * (or being handled) still holds the memory. */
void search_at_oom(void);

/* Asks the main thread for a search now, for a report written on request
 * (GPULEAK_DUMP_SIGNAL), and waits at most wait_ns for it. Returns 1 when a fresh
 * SEARCH_ON_REQUEST set was made, 0 otherwise (no Python, Python
 * finishing, the main thread busy in C code past the wait). Call from the
 * reporter thread only: a thread that holds the GIL would wait in vain. */
int search_on_request(uint64_t wait_ns);

/* The pools' checkpoints (pools.h): JAX's arrays are seen only in its
 * listings of them, taken by the main thread from a pending call. The
 * reporter thread calls search_pools_tick when the time it returned has
 * come: it asks for a checkpoint (at most one waits at a time) and returns
 * when the next is due: SEARCH_POOLS_IDLE_NS while no JAX is found (the
 * checkpoint also registers CuPy's hook once CuPy is loaded), then
 * SEARCH_POOLS_INTERVAL_NS or SEARCH_POOLS_COST_FACTOR times what the last
 * one took, whichever is longer, so that they cost the program at most
 * about 1% of its time; UINT64_MAX without Python. */
#define SEARCH_POOLS_IDLE_NS (1000ull * 1000 * 1000)
/* A checkpoint also scans the heap for CuPy's arrays (every object the
 * collector tracks) when the last scan found arrays no hook saw, else once
 * this long, or SEARCH_POOLS_COST_FACTOR times the last scan's cost, after
 * the last scan. */
#define SEARCH_POOLS_HEAP_NS (1000ull * 1000 * 1000)
#define SEARCH_POOLS_INTERVAL_NS (100ull * 1000 * 1000)
#define SEARCH_POOLS_COST_FACTOR 100
uint64_t search_pools_tick(uint64_t now_ns);

/* A driver allocation was made at now_ns (clock.h's coarse clock): asks
 * for a checkpoint at once, at most every SEARCH_POOLS_SOON_NS, until
 * CuPy's hook is registered, so that the hook sees the arrays after a
 * pool's first chunk. Any thread, no GIL; costs a load once the hook is in. */
#define SEARCH_POOLS_SOON_NS (100ull * 1000 * 1000)
void search_pools_soon(uint64_t now_ns);

#endif
