/* driver.h: the driver functions the shim wraps or calls, and where the
 * real ones are.
 *
 * The list below is the one place a wrapped function is named: the ways
 * (interpose.c) hand out their wrappers (wrappers.c), which call the real
 * function found here. The shim never loads the driver itself: it looks in
 * the libcuda.so.1 the program loaded, and forgets what it found when the
 * program unloads it. */
#ifndef GPULEAK_DRIVER_H
#define GPULEAK_DRIVER_H

#include <stdatomic.h>
#include <stddef.h>

/* X(exported name, base name asked of cuGetProcAddress, CUDA version that
 *   introduced this ABI of it, 1 for a per-thread-default-stream variant) */
#define DRIVER_WRAPPED(X)                                           \
    X(cuMemAlloc_v2, "cuMemAlloc", 3020, 0)                          \
    X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0)                \
    X(cuMemFree_v2, "cuMemFree", 3020, 0)                            \
    X(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0)                  \
    X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 1)             \
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0)  \
    X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 1) \
    X(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0)                    \
    X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 1)               \
    X(cuMemCreate, "cuMemCreate", 10020, 0)                          \
    X(cuMemRelease, "cuMemRelease", 10020, 0)                        \
    X(cuMemMap, "cuMemMap", 10020, 0)                                \
    X(cuMemUnmap, "cuMemUnmap", 10020, 0)                            \
    X(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0)               \
    X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0)                  \
    X(cuMemHostAlloc, "cuMemHostAlloc", 2020, 0)                     \
    X(cuMemFreeHost, "cuMemFreeHost", 2000, 0)                       \
    X(cuArrayCreate_v2, "cuArrayCreate", 3020, 0)                    \
    X(cuArray3DCreate_v2, "cuArray3DCreate", 3020, 0)                \
    X(cuArrayDestroy, "cuArrayDestroy", 2000, 0)                     \
    X(cuCtxDestroy_v2, "cuCtxDestroy", 4000, 0)                      \
    X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, 0) \
    X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0)             \
    X(cuGetProcAddress, "cuGetProcAddress", 11030, 0)

#define DRIVER_ENUM(name, base, since, ptsz) DRIVER_##name,
enum driver_fn { DRIVER_WRAPPED(DRIVER_ENUM) DRIVER_FN_COUNT };
#undef DRIVER_ENUM

/* X(name): the driver functions the shim calls for itself, never wrapped. */
#define DRIVER_HELPERS(X)                                             \
    X(cuCtxGetCurrent)                                               \
    X(cuCtxGetDevice)                                                \
    X(cuDevicePrimaryCtxGetState)                                    \
    X(cuDevicePrimaryCtxRetain)                                      \
    X(cuDevicePrimaryCtxRelease_v2)                                  \
    X(cuDeviceGetMemPool)                                            \
    X(cuMemPoolGetAttribute)

#define DRIVER_HELPER_ENUM(name) DRIVER_HELPER_##name,
enum driver_helper { DRIVER_HELPERS(DRIVER_HELPER_ENUM) DRIVER_HELPER_COUNT };
#undef DRIVER_HELPER_ENUM

/* One wrapped function: its exported name, the base name cuGetProcAddress
 * is asked for, the CUDA version that introduced this ABI of it, and 1 for
 * a per-thread-default-stream variant. */
typedef struct driver_row {
    const char *name;
    const char *base;
    int since;
    int ptsz;
} driver_row_t;

/* The row of a wrapped function. */
const driver_row_t *driver_row(enum driver_fn fn);

/* The wrapped function of that exported name, or -1 for every other name
 * (the common case: a quick reject on the prefix). */
int driver_by_name(const char *name);

/* The real driver function behind a wrapped one, looked up on first use in
 * the loaded libcuda.so.1 and kept until that driver is unloaded; NULL when
 * the driver lacks it or is not loaded. */
void *driver_real(enum driver_fn fn);

/* Keeps real as fn's real function (cuGetProcAddress handed it out), unless
 * one is kept already. */
void driver_keep(enum driver_fn fn, void *real);

/* name in the driver the process has loaded, or NULL; never loads it. */
void *driver_lookup(const char *name);

/* Without a loaded driver, the definition a program linked against another
 * library of the driver's names (a stub, a test double) would call without
 * the shim: the next one after the shim's in the global scope, or NULL. */
void *driver_next(enum driver_fn fn);

/* After any dlclose: when the driver the kept pointers came from is no
 * longer loaded, drops them all, so the next call looks the functions up
 * in whatever driver is loaded then. Leaves dlerror's state alone. */
void driver_forget_if_unloaded(void);

/* The cache behind driver_helper; only driver.c writes it. */
extern _Atomic(void *) driver_helper_cache[DRIVER_HELPER_COUNT];

/* driver_helper's first lookup of id, and the one after the driver was
 * unloaded: as driver_real. */
void *driver_helper_slow(enum driver_helper id);

/* A driver function the shim calls for itself, as driver_real finds a
 * wrapped one's: NULL when absent. Inline, as the allocation path asks for
 * the current context at every call. */
static inline void *driver_helper(enum driver_helper id)
{
    void *fn = atomic_load_explicit(&driver_helper_cache[id], memory_order_acquire);
    return fn != NULL ? fn : driver_helper_slow(id);
}

#endif
