/* doors.h: how driver calls reach the shim, and where the real ones are.
 *
 * Three doors lead to one set of wrappers (wrappers.c): the shim's exported
 * cu* definitions (programs linked with -lcuda), an interposed dlsym, and a
 * wrapped cuGetProcAddress that hands out a wrapper for the ABI the caller
 * asked for. The list below is the one place a wrapped function is named. */
#ifndef GPULEAK_DOORS_H
#define GPULEAK_DOORS_H

#include <stdatomic.h>
#include <stddef.h>

/* X(exported name, base name asked of cuGetProcAddress, CUDA version that
 *   introduced this ABI of it, 1 for a per-thread-default-stream variant) */
#define DOORS_FUNCTIONS(X)                                           \
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

#define DOORS_ENUM(name, base, since, ptsz) DOOR_##name,
enum door_id { DOORS_FUNCTIONS(DOORS_ENUM) DOOR_COUNT };
#undef DOORS_ENUM

/* X(name): the driver functions the shim calls for itself, never wrapped. */
#define DOORS_HELPERS(X)                                             \
    X(cuCtxGetCurrent)                                               \
    X(cuCtxGetDevice)                                                \
    X(cuDevicePrimaryCtxGetState)                                    \
    X(cuDevicePrimaryCtxRetain)                                      \
    X(cuDevicePrimaryCtxRelease_v2)                                  \
    X(cuDeviceGetMemPool)                                            \
    X(cuMemPoolGetAttribute)

#define DOORS_HELPER_ENUM(name) HELPER_##name,
enum helper_id { DOORS_HELPERS(DOORS_HELPER_ENUM) HELPER_COUNT };
#undef DOORS_HELPER_ENUM

/* The real driver function behind a door, looked up on first use in the
 * loaded libcuda.so.1 (the shim never loads the driver itself) and kept
 * until that driver is unloaded; NULL when the driver lacks it or is not
 * loaded. */
void *doors_real(enum door_id door);

/* Without a loaded driver, the definition a program linked against another
 * library of the driver's names (a stub, a test double) would call without
 * the shim: the next one after the shim's in the global scope, or NULL. */
void *doors_next(enum door_id door);

/* The cache behind doors_helper; only doors.c writes it. */
extern _Atomic(void *) doors_helper_cache[HELPER_COUNT];

/* doors_helper's first lookup of id, and the one after the driver was
 * unloaded: as doors_real. */
void *doors_helper_slow(enum helper_id id);

/* A driver function the shim calls for itself, as doors_real finds a
 * door's: NULL when absent. Inline, as the allocation path asks for the
 * current context at every call. */
static inline void *doors_helper(enum helper_id id)
{
    void *fn = atomic_load_explicit(&doors_helper_cache[id], memory_order_acquire);
    return fn != NULL ? fn : doors_helper_slow(id);
}

#endif
