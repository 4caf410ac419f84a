/* doors.h: how driver calls reach the shim, and where the real ones are.
 *
 * Three doors lead to one set of wrappers (wrappers.c): the shim's exported
 * cu* definitions (programs linked with -lcuda), an interposed dlsym, and a
 * wrapped cuGetProcAddress that hands out a wrapper for the ABI the caller
 * asked for. The list below is the one place a wrapped function is named. */
#ifndef GPULEAK_DOORS_H
#define GPULEAK_DOORS_H

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

/* The real driver function behind a door, resolved on first use from
 * libcuda.so.1; NULL when the driver lacks it or is absent. */
void *doors_real(enum door_id door);

/* A driver function the shim calls for itself (cuCtxGetCurrent, ...), not
 * wrapped; NULL when absent. Looked up once per name by the caller. */
void *doors_driver_symbol(const char *name);

#endif
