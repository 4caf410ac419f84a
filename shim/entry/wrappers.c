#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include "wrappers.h"
#include "clock.h"
#include "capture.h"
#include "config.h"
#include "search.h"
#include "guard.h"
#include "start.h"
#include "python.h"
#include "report.h"
#include "selftime.h"
#include "timeline.h"
#include "torch_trace.h"
#include "tracker.h"
#include "vmm_maps.h"

#include <cuda.h>
#include <errno.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

#define WRAPPER_ENTRY(name, base, since, ptsz) [DRIVER_##name] = (void *)&name,
void *const wrappers_table[DRIVER_FN_COUNT] = { DRIVER_WRAPPED(WRAPPER_ENTRY) };
#undef WRAPPER_ENTRY

/* Looks the real function up once per call site into a typed pointer: the
 * driver's, else (no driver loaded) the definition the program would have
 * called without the shim, a stub's; with neither, it answers as a missing
 * driver would. */
#define REAL(name, ...)                                            \
    CUresult (*real)(__VA_ARGS__) = driver_real(DRIVER_##name);        \
    if (__builtin_expect(real == NULL, 0))                         \
        real = (CUresult (*)(__VA_ARGS__))driver_next(DRIVER_##name);  \
    if (real == NULL)                                              \
        return CUDA_ERROR_NOT_INITIALIZED

/* Whether this call is recorded: tracking is on and the thread is not
 * already inside the shim (a nested driver call is recorded once, by the
 * outermost wrapper). On 1 the caller must end with search_call. */
static int begin_call(void)
{
    if (guard_depth != 0 || !start_tracking(wrappers_sample_point))
        return 0;
    guard_depth++;
    selftime_resume();
    return 1;
}

/* The driver call inside a recorded wrapper: its time is the driver's, not
 * the shim's (selftime.h), and a signal arriving then is not put off
 * (guard.h: the call may block for long, and no shim lock is held). */
#define DRIVER(call) ({ selftime_pause(0); guard_in_driver = 1;                 \
                        CUresult driver_result_ = (call);                      \
                        guard_in_driver = 0; selftime_resume(); driver_result_; })

/* Leaves the shim, giving the caller back the errno the driver left. */
static void search_call(int driver_errno)
{
    selftime_pause(1);
    guard_leave();
    errno = driver_errno;
}

/* The context current on this thread and its device, cached per thread:
 * cuCtxGetCurrent is a cheap read inside the driver, cuCtxGetDevice less so,
 * and a thread rarely switches contexts. Device -1 when there is none. The
 * driver's functions come from driver_helper each time, never a static of
 * their own: a driver dlclosed and loaded again elsewhere invalidates them. */
static int current_device(const void **context_out)
{
    static __thread const void *cached_context __attribute__((tls_model("initial-exec")));
    static __thread int cached_device __attribute__((tls_model("initial-exec"))) = -1;
    CUresult (*get_current)(CUcontext *) = driver_helper(DRIVER_HELPER_cuCtxGetCurrent);
    CUcontext ctx = NULL;
    if (get_current == NULL || get_current(&ctx) != CUDA_SUCCESS || ctx == NULL) {
        *context_out = NULL;
        return -1;
    }
    *context_out = ctx;
    if (ctx != cached_context) {
        CUresult (*get_device)(CUdevice *) = driver_helper(DRIVER_HELPER_cuCtxGetDevice);
        CUdevice dev = -1;
        if (get_device == NULL || get_device(&dev) != CUDA_SUCCESS)
            dev = -1;
        cached_context = ctx;
        cached_device = dev;
    }
    return cached_device;
}

/* Records the outcome of an allocation call: live memory on success, a
 * failure (with its size and stack) otherwise, never both. */
static void record_alloc(alloc_kind_t kind, CUresult result, uint64_t key, size_t size,
                         const void *context, int device)
{
    uint32_t site = capture_site(kind, device);
    if (__builtin_expect(result != CUDA_SUCCESS, 0)) {
        tracker_failure(kind, size, (int)result, device, site);
        if (result == CUDA_ERROR_OUT_OF_MEMORY)
            search_at_oom();  /* who holds what filled the GPU, asked of Python */
        return;
    }
    uint64_t now = clock_coarse_ns();
    if (__builtin_expect(tracker_alloc_at(kind, key, size, device, context, site, now) != 0, 0)) {
        lifecycle_disable("no memory left for allocation records");
        return;
    }
    /* How PyTorch's segments arrive (device, VMM), or its cudaMallocAsync
     * backend's tensors (pool), which the adapter then names as refused. */
    if (kind == REPORT_KIND_device || kind == REPORT_KIND_vmm || kind == REPORT_KIND_pool) {
        torch_trace_notice_segment(kind, key, now);
        search_pools_soon(now);  /* CuPy's first chunk: its hook, registered soon, sees the arrays */
    }
}

/* The common shape of a free: the record leaves the table before the driver
 * frees, so a thread that gets the same address back at once cannot have
 * its fresh record removed by this free; a free the driver refuses puts the
 * record back. */
#define RECORDED_FREE(space, key, call)                        \
    do {                                                       \
        if ((key) == 0 || !begin_call())                       \
            return call; /* freeing NULL is no free at all */  \
        int entry_errno_ = errno;                              \
        if (python_finished())                                 \
            tracker_take_held();                               \
        tracker_pending_t pending;                             \
        tracker_free_begin((space), (key), &pending);          \
        errno = entry_errno_;                                  \
        CUresult result_ = DRIVER(call);                       \
        int errno_ = errno;                                    \
        tracker_free_end(&pending, result_ == CUDA_SUCCESS);   \
        search_call(errno_);                                   \
        return result_;                                        \
    } while (0)

/* The common shape of an allocation that returns an address or handle
 * through out (NULL-safe: a NULL out fails in the driver, never here). */
#define RECORDED_ALLOC(kind, out, size, call)                  \
    do {                                                       \
        if (!begin_call())                                     \
            return call;                                       \
        int entry_errno_ = errno;                              \
        const void *context_;                                  \
        int device_ = current_device(&context_);               \
        errno = entry_errno_;                                  \
        CUresult result_ = DRIVER(call);                       \
        int errno_ = errno;                                    \
        record_alloc((kind), result_, result_ == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*(out) : 0, \
                     (size), context_, device_);               \
        search_call(errno_);                                   \
        return result_;                                        \
    } while (0)

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    REAL(cuMemAlloc_v2, CUdeviceptr *, size_t);
    RECORDED_ALLOC(REPORT_KIND_device, dptr, bytesize, real(dptr, bytesize));
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                   size_t Height, unsigned int ElementSizeBytes)
{
    REAL(cuMemAllocPitch_v2, CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    if (!begin_call())
        return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    int entry_errno = errno;
    const void *context;
    int device = current_device(&context);
    errno = entry_errno;
    CUresult result = DRIVER(real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
    int driver_errno = errno;
    size_t size = WidthInBytes * Height;
    if (result == CUDA_SUCCESS && pPitch != NULL)
        size = *pPitch * Height;
    record_alloc(REPORT_KIND_device, result, result == CUDA_SUCCESS ? *dptr : 0, size, context, device);
    search_call(driver_errno);
    return result;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    REAL(cuMemFree_v2, CUdeviceptr);
    RECORDED_FREE(SPACE_DEVICE, dptr, real(dptr));
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    REAL(cuMemAllocAsync, CUdeviceptr *, size_t, CUstream);
    RECORDED_ALLOC(REPORT_KIND_pool, dptr, bytesize, real(dptr, bytesize, hStream));
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    REAL(cuMemAllocAsync_ptsz, CUdeviceptr *, size_t, CUstream);
    RECORDED_ALLOC(REPORT_KIND_pool, dptr, bytesize, real(dptr, bytesize, hStream));
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream hStream)
{
    REAL(cuMemAllocFromPoolAsync, CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    RECORDED_ALLOC(REPORT_KIND_pool, dptr, bytesize, real(dptr, bytesize, pool, hStream));
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                             CUmemoryPool pool, CUstream hStream)
{
    REAL(cuMemAllocFromPoolAsync_ptsz, CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    RECORDED_ALLOC(REPORT_KIND_pool, dptr, bytesize, real(dptr, bytesize, pool, hStream));
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    REAL(cuMemFreeAsync, CUdeviceptr, CUstream);
    RECORDED_FREE(SPACE_DEVICE, dptr, real(dptr, hStream));
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    REAL(cuMemFreeAsync_ptsz, CUdeviceptr, CUstream);
    RECORDED_FREE(SPACE_DEVICE, dptr, real(dptr, hStream));
}

/* VMM physical memory belongs to the device named in its properties, not
 * to the current context, and outlives context teardown until released. */
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    REAL(cuMemCreate, CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
         unsigned long long);
    if (!begin_call())
        return real(handle, size, prop, flags);
    CUresult result = DRIVER(real(handle, size, prop, flags));
    int driver_errno = errno;
    int device = -1;
    if (prop != NULL && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        device = prop->location.id;
    record_alloc(REPORT_KIND_vmm, result, result == CUDA_SUCCESS ? *handle : 0, size, NULL, device);
    search_call(driver_errno);
    return result;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    REAL(cuMemRelease, CUmemGenericAllocationHandle);
    RECORDED_FREE(SPACE_VMM, handle, real(handle));
}

/* Maps and unmaps move no physical memory; they are counted for the report
 * (a handle released while still mapped stays resident until unmapped), and
 * where each handle is mapped is kept (vmm_maps.h): the program's objects
 * name VMM memory by those addresses. */
static CUresult count_mapping(CUresult result, CUdeviceptr ptr, size_t size,
                              CUmemGenericAllocationHandle handle, int is_unmap)
{
    if (result != CUDA_SUCCESS || guard_depth != 0 || !start_tracking(wrappers_sample_point))
        return result;
    tracker_map(size, is_unmap);
    if (is_unmap)
        vmm_maps_remove(ptr, size);
    else
        vmm_maps_add(ptr, size, handle);
    return result;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    REAL(cuMemMap, CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult result = real(ptr, size, offset, handle, flags);
    int driver_errno = errno;
    result = count_mapping(result, ptr, size, handle, 0);
    errno = driver_errno;
    return result;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    REAL(cuMemUnmap, CUdeviceptr, size_t);
    CUresult result = real(ptr, size);
    int driver_errno = errno;
    result = count_mapping(result, ptr, size, 0, 1);
    errno = driver_errno;
    return result;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    REAL(cuMemAllocManaged, CUdeviceptr *, size_t, unsigned int);
    RECORDED_ALLOC(REPORT_KIND_managed, dptr, bytesize, real(dptr, bytesize, flags));
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    REAL(cuMemAllocHost_v2, void **, size_t);
    RECORDED_ALLOC(REPORT_KIND_host, pp, bytesize, real(pp, bytesize));
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    REAL(cuMemHostAlloc, void **, size_t, unsigned int);
    RECORDED_ALLOC(REPORT_KIND_host, pp, bytesize, real(pp, bytesize, Flags));
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    REAL(cuMemFreeHost, void *);
    RECORDED_FREE(SPACE_HOST, (uint64_t)(uintptr_t)p, real(p));
}

/* Bytes of one element of an array format; block-compressed and video
 * formats count as one byte an element (an estimate, documented). */
static size_t format_bytes(CUarray_format format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 1;
    }
}

/* Estimated bytes of an array from its extent: height and depth 0 mean a
 * 1D or 2D array, counted as 1. */
static size_t array_bytes(size_t width, size_t height, size_t depth, unsigned channels,
                          CUarray_format format)
{
    return width * (height ? height : 1) * (depth ? depth : 1) * (channels ? channels : 1)
         * format_bytes(format);
}

EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    REAL(cuArrayCreate_v2, CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    size_t size = desc ? array_bytes(desc->Width, desc->Height, 1, desc->NumChannels, desc->Format) : 0;
    RECORDED_ALLOC(REPORT_KIND_array, pHandle, size, real(pHandle, desc));
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    REAL(cuArray3DCreate_v2, CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
    size_t size = desc ? array_bytes(desc->Width, desc->Height, desc->Depth, desc->NumChannels,
                                     desc->Format) : 0;
    RECORDED_ALLOC(REPORT_KIND_array, pHandle, size, real(pHandle, desc));
}

EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    REAL(cuArrayDestroy, CUarray);
    RECORDED_FREE(SPACE_ARRAY, (uint64_t)(uintptr_t)hArray, real(hArray));
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    REAL(cuCtxDestroy_v2, CUcontext);
    if (!begin_call())
        return real(ctx);
    CUresult result = DRIVER(real(ctx));
    int driver_errno = errno;
    if (result == CUDA_SUCCESS && ctx != NULL)
        tracker_teardown(ctx, -1, TEARDOWN_CTX_DESTROY);
    search_call(driver_errno);
    return result;
}

/* The primary context's handle, found without changing its reference count
 * for good; NULL when it is not active (then nothing lives in it). */
static const void *primary_context(CUdevice dev)
{
    CUresult (*get_state)(CUdevice, unsigned int *, int *) =
        driver_helper(DRIVER_HELPER_cuDevicePrimaryCtxGetState);
    CUresult (*retain)(CUcontext *, CUdevice) = driver_helper(DRIVER_HELPER_cuDevicePrimaryCtxRetain);
    CUresult (*release)(CUdevice) = driver_helper(DRIVER_HELPER_cuDevicePrimaryCtxRelease_v2);
    unsigned int flags;
    int active = 0;
    CUcontext ctx = NULL;
    if (get_state == NULL || retain == NULL || release == NULL
        || get_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return NULL;
    if (retain(&ctx, dev) != CUDA_SUCCESS)
        return NULL;
    release(dev);
    return ctx;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    REAL(cuDevicePrimaryCtxReset_v2, CUdevice);
    if (!begin_call())
        return real(dev);
    int entry_errno = errno;
    const void *ctx = primary_context(dev);
    errno = entry_errno;
    CUresult result = DRIVER(real(dev));
    int driver_errno = errno;
    if (result == CUDA_SUCCESS && ctx != NULL)
        tracker_teardown(ctx, dev, TEARDOWN_PRIMARY_RESET);
    search_call(driver_errno);
    return result;
}

void wrappers_sample_point(struct timeline_point *point)
{
    tracker_sample(point);
    /* Inside PyTorch's allocator event the reservation is not asked: no
     * CUDA call may run under its mutex; nor in a report for a thread a
     * signal interrupted, which may hold the driver's locks. The point goes
     * without it. */
    if (point->kind_bytes[REPORT_KIND_pool] == 0 || torch_trace_in_event() || !report_may_call_driver())
        return;
    CUresult (*get_pool)(CUmemoryPool *, CUdevice) = driver_helper(DRIVER_HELPER_cuDeviceGetMemPool);
    CUresult (*get_attribute)(CUmemoryPool, CUmemPool_attribute, void *) =
        driver_helper(DRIVER_HELPER_cuMemPoolGetAttribute);
    if (get_pool == NULL || get_attribute == NULL)
        return;
    for (int d = 0; d < TIMELINE_DEVICES; d++) {
        CUmemoryPool pool;
        cuuint64_t reserved = 0;
        totals_t totals;
        if (tracker_device_totals(d, &totals) != 0 || get_pool(&pool, d) != CUDA_SUCCESS
            || get_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS)
            continue;
        point->pool_reserved_bytes += reserved;
    }
}
