/* fakecudart.c: a fake CUDA runtime (libcudart.so.13) over the fake driver,
 * so that a program written against the runtime API (cudaMalloc, nvcc's
 * kernel launches) runs without a GPU.
 *
 * Why not NVIDIA's own libcudart over the fake driver: CUDA 13's runtime
 * asks the driver for private tables at start (cuGetExportTable) and, among
 * them, for an integrity check whose answer only NVIDIA's driver can give;
 * without it every runtime call fails (error 801, then 103). This fake takes
 * the runtime's place instead, found first through LD_LIBRARY_PATH.
 *
 * What it serves: device, managed, pinned, pitched, 3D, array and
 * stream-ordered memory, copies and sets (device memory is host memory in
 * the fake, and a __device__ variable is its host shadow), streams, events
 * (host clocks), device queries, errors, and what nvcc's generated code
 * calls to register and launch kernels. Kernels do not run: a launch
 * succeeds and does nothing, which is all a memory tool needs. Hints with
 * no effect on memory (advice, prefetch, limits, flags) succeed.
 * Its symbols carry the version node libcudart.so.13, as the real
 * library's do, so binaries linked against the real one bind to them.
 *
 * Like NVIDIA's runtime, it reaches the driver through cuGetProcAddress,
 * and each thread works on the primary context of its current device. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDART_EXPORT __attribute__((visibility("default")))
#define FCR_MAX_DEVICES 16

/* The driver entry points the runtime uses, from cuGetProcAddress. */
static struct {
    CUresult (*init)(unsigned int);
    CUresult (*device_get_count)(int *);
    CUresult (*device_get_name)(char *, int, CUdevice);
    CUresult (*device_total_mem)(size_t *, CUdevice);
    CUresult (*driver_get_version)(int *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_reset)(CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_synchronize)(void);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_alloc_managed)(CUdeviceptr *, size_t, unsigned int);
    CUresult (*mem_alloc_host)(void **, size_t);
    CUresult (*mem_host_alloc)(void **, size_t, unsigned int);
    CUresult (*mem_free_host)(void *);
    CUresult (*mem_alloc_async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*mem_free_async)(CUdeviceptr, CUstream);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*stream_create)(CUstream *, unsigned int);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*array_create)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    CUresult (*array_destroy)(CUarray);
} drv;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cudaError_t g_init_error;
static CUcontext g_primary[FCR_MAX_DEVICES];
static pthread_mutex_t g_primary_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread int t_device;
static __thread cudaError_t t_last_error;
static __thread struct {
    dim3 grid, block;
    size_t shared;
    void *stream;
} t_launch;

static cudaError_t from_driver(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
    }
}

/* Every API call returns through here, so the last error is kept as the
 * real runtime keeps it. */
static cudaError_t done(cudaError_t e)
{
    if (e != cudaSuccess)
        t_last_error = e;
    return e;
}

static void resolve(void **slot, const char *name)
{
    CUdriverProcAddressQueryResult found;
    if (cuGetProcAddress(name, slot, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS || !*slot)
        g_init_error = cudaErrorInitializationError;
}

static void init_once(void)
{
    resolve((void **)&drv.init, "cuInit");
    resolve((void **)&drv.device_get_count, "cuDeviceGetCount");
    resolve((void **)&drv.device_get_name, "cuDeviceGetName");
    resolve((void **)&drv.device_total_mem, "cuDeviceTotalMem");
    resolve((void **)&drv.driver_get_version, "cuDriverGetVersion");
    resolve((void **)&drv.primary_retain, "cuDevicePrimaryCtxRetain");
    resolve((void **)&drv.primary_reset, "cuDevicePrimaryCtxReset");
    resolve((void **)&drv.ctx_set_current, "cuCtxSetCurrent");
    resolve((void **)&drv.ctx_get_current, "cuCtxGetCurrent");
    resolve((void **)&drv.ctx_synchronize, "cuCtxSynchronize");
    resolve((void **)&drv.mem_alloc, "cuMemAlloc");
    resolve((void **)&drv.mem_alloc_pitch, "cuMemAllocPitch");
    resolve((void **)&drv.mem_free, "cuMemFree");
    resolve((void **)&drv.mem_alloc_managed, "cuMemAllocManaged");
    resolve((void **)&drv.mem_alloc_host, "cuMemAllocHost");
    resolve((void **)&drv.mem_host_alloc, "cuMemHostAlloc");
    resolve((void **)&drv.mem_free_host, "cuMemFreeHost");
    resolve((void **)&drv.mem_alloc_async, "cuMemAllocAsync");
    resolve((void **)&drv.mem_free_async, "cuMemFreeAsync");
    resolve((void **)&drv.mem_get_info, "cuMemGetInfo");
    resolve((void **)&drv.memset_d8, "cuMemsetD8");
    resolve((void **)&drv.stream_create, "cuStreamCreate");
    resolve((void **)&drv.stream_destroy, "cuStreamDestroy");
    resolve((void **)&drv.stream_synchronize, "cuStreamSynchronize");
    resolve((void **)&drv.array_create, "cuArrayCreate");
    resolve((void **)&drv.array_destroy, "cuArrayDestroy");
    if (g_init_error == cudaSuccess && drv.init(0) != CUDA_SUCCESS)
        g_init_error = cudaErrorInitializationError;
}

/* Makes device's primary context the thread's current one, retaining it
 * once per process, as the runtime does. */
static cudaError_t make_current(int device)
{
    if (device < 0 || device >= FCR_MAX_DEVICES)
        return cudaErrorInvalidDevice;
    pthread_mutex_lock(&g_primary_lock);
    CUresult rc = CUDA_SUCCESS;
    if (!g_primary[device])
        rc = drv.primary_retain(&g_primary[device], device);
    CUcontext ctx = g_primary[device];
    pthread_mutex_unlock(&g_primary_lock);
    if (rc != CUDA_SUCCESS)
        return from_driver(rc);
    return from_driver(drv.ctx_set_current(ctx));
}

/* Starts the runtime once: cudaSuccess, or why it could not start. */
static cudaError_t started(void)
{
    pthread_once(&g_once, init_once);
    return g_init_error;
}

/* Starts the runtime and, on a thread's first call, makes its device's
 * primary context current. */
static cudaError_t ready(void)
{
    if (started() != cudaSuccess)
        return g_init_error;
    CUcontext cur = NULL;
    if (drv.ctx_get_current(&cur) == CUDA_SUCCESS && cur)
        return cudaSuccess;
    return make_current(t_device);
}

#define READY()                          \
    do {                                 \
        cudaError_t ready_error = ready(); \
        if (ready_error != cudaSuccess)  \
            return done(ready_error);    \
    } while (0)

/* ---- devices ------------------------------------------------------------ */

CUDART_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
    if (started() != cudaSuccess)
        return done(g_init_error);
    return done(from_driver(drv.device_get_count(count)));
}

/* cudaSuccess when device is one the driver has, else the error, kept. */
static cudaError_t known_device(int device)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return e;
    return device >= 0 && device < count ? cudaSuccess : done(cudaErrorInvalidDevice);
}

CUDART_EXPORT cudaError_t cudaSetDevice(int device)
{
    cudaError_t e = known_device(device);
    if (e != cudaSuccess)
        return e;
    t_device = device;
    return done(make_current(device));
}

CUDART_EXPORT cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return done(cudaErrorInvalidValue);
    *device = t_device;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    READY();
    return done(from_driver(drv.ctx_synchronize()));
}

/* Frees what the device's primary context holds, as the real reset does;
 * the next call on the device starts a new one. */
CUDART_EXPORT cudaError_t cudaDeviceReset(void)
{
    READY();
    pthread_mutex_lock(&g_primary_lock);
    CUresult rc = drv.primary_reset(t_device);
    g_primary[t_device] = NULL;
    pthread_mutex_unlock(&g_primary_lock);
    drv.ctx_set_current(NULL);
    return done(from_driver(rc));
}

CUDART_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop)
        return done(cudaErrorInvalidValue);
    cudaError_t e = known_device(device);
    if (e != cudaSuccess)
        return e;
    memset(prop, 0, sizeof *prop);
    drv.device_get_name(prop->name, (int)sizeof prop->name, device);
    drv.device_total_mem(&prop->totalGlobalMem, device);
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->sharedMemPerBlock = 48 << 10;
    prop->regsPerBlock = 65536;
    prop->managedMemory = 1;
    prop->unifiedAddressing = 1;
    prop->concurrentKernels = 1;
    return cudaSuccess;
}

/* What device queries programs make most, as cudaGetDeviceProperties
 * gives them; 0 for the rest. */
CUDART_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess)
        return e;
    if (!value)
        return done(cudaErrorInvalidValue);
    switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = prop.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = prop.minor; break;
    case cudaDevAttrMultiProcessorCount: *value = prop.multiProcessorCount; break;
    case cudaDevAttrWarpSize: *value = prop.warpSize; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = prop.maxThreadsPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)prop.sharedMemPerBlock; break;
    case cudaDevAttrManagedMemory: *value = prop.managedMemory; break;
    case cudaDevAttrUnifiedAddressing: *value = prop.unifiedAddressing; break;
    case cudaDevAttrConcurrentManagedAccess: *value = 1; break;
    case cudaDevAttrMemoryPoolsSupported: *value = 1; break;
    default: *value = 0; break;
    }
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer)
{
    if (!can)
        return done(cudaErrorInvalidValue);
    *can = device != peer;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    (void)flags;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    (void)limit, (void)value;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (!version)
        return done(cudaErrorInvalidValue);
    *version = 13000;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaDriverGetVersion(int *version)
{
    if (started() != cudaSuccess)
        return done(g_init_error);
    return done(from_driver(drv.driver_get_version(version)));
}

/* ---- memory ------------------------------------------------------------- */

/* What an allocation gives its caller: the driver's pointer in *ptr when
 * rc is success, else NULL; the runtime's error, kept. */
static cudaError_t give(void **ptr, CUresult rc, CUdeviceptr d)
{
    cudaError_t e = from_driver(rc);
    *ptr = e == cudaSuccess ? (void *)(uintptr_t)d : NULL;
    return done(e);
}

CUDART_EXPORT cudaError_t cudaMalloc(void **ptr, size_t size)
{
    if (!ptr)
        return done(cudaErrorInvalidValue);
    READY();
    CUdeviceptr d = 0;
    CUresult rc = drv.mem_alloc(&d, size);
    return give(ptr, rc, d);
}

/* cudaFree(NULL) is the idiom that starts the runtime. */
CUDART_EXPORT cudaError_t cudaFree(void *ptr)
{
    READY();
    if (!ptr)
        return cudaSuccess;
    return done(from_driver(drv.mem_free((CUdeviceptr)(uintptr_t)ptr)));
}

/* cudaMallocPitch and cudaMalloc3D, each the entry its caller called. */
static cudaError_t pitched_alloc(void **ptr, size_t *pitch, size_t width, size_t height)
{
    if (!ptr || !pitch)
        return done(cudaErrorInvalidValue);
    READY();
    CUdeviceptr d = 0;
    CUresult rc = drv.mem_alloc_pitch(&d, pitch, width, height, 16);
    return give(ptr, rc, d);
}

CUDART_EXPORT cudaError_t cudaMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
    return pitched_alloc(ptr, pitch, width, height);
}

CUDART_EXPORT cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags)
{
    if (!ptr)
        return done(cudaErrorInvalidValue);
    READY();
    CUdeviceptr d = 0;
    CUresult rc = drv.mem_alloc_managed(&d, size, flags ? flags : CU_MEM_ATTACH_GLOBAL);
    return give(ptr, rc, d);
}

CUDART_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    READY();
    return done(from_driver(drv.mem_alloc_host(ptr, size)));
}

/* The runtime's flags are the driver's (portable 1, mapped 2, write-combined 4). */
CUDART_EXPORT cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
    READY();
    return done(from_driver(drv.mem_host_alloc(ptr, size, flags)));
}

CUDART_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    READY();
    return done(from_driver(drv.mem_free_host(ptr)));
}

CUDART_EXPORT cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
    if (!ptr)
        return done(cudaErrorInvalidValue);
    READY();
    CUdeviceptr d = 0;
    CUresult rc = drv.mem_alloc_async(&d, size, (CUstream)stream);
    return give(ptr, rc, d);
}

CUDART_EXPORT cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
    READY();
    return done(from_driver(drv.mem_free_async((CUdeviceptr)(uintptr_t)ptr, (CUstream)stream)));
}

CUDART_EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    READY();
    return done(from_driver(drv.mem_get_info(free_bytes, total_bytes)));
}

/* Device memory is host memory in the fake: every kind of copy is one. */
CUDART_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    (void)kind;
    READY();
    if (count && (!dst || !src))
        return done(cudaErrorInvalidValue);
    memmove(dst, src, count);
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                          enum cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpy(dst, src, count, kind);
}

CUDART_EXPORT cudaError_t cudaMemset(void *ptr, int value, size_t count)
{
    READY();
    return done(from_driver(drv.memset_d8((CUdeviceptr)(uintptr_t)ptr, (unsigned char)value, count)));
}

CUDART_EXPORT cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream)
{
    (void)stream;
    return cudaMemset(ptr, value, count);
}

CUDART_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitched, struct cudaExtent extent)
{
    if (!pitched)
        return done(cudaErrorInvalidValue);
    void *ptr = NULL;
    size_t pitch = 0;
    cudaError_t e = pitched_alloc(&ptr, &pitch, extent.width, extent.height * extent.depth);
    *pitched = (struct cudaPitchedPtr){ .ptr = ptr, .pitch = pitch, .xsize = extent.width,
                                        .ysize = extent.height };
    return e;
}

/* An array of the channel's whole element size: the fake driver keeps
 * arrays by their bytes. */
CUDART_EXPORT cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                          size_t width, size_t height, unsigned int flags)
{
    (void)flags;
    if (!array || !desc)
        return done(cudaErrorInvalidValue);
    READY();
    int bytes = (desc->x + desc->y + desc->z + desc->w) / 8;
    CUDA_ARRAY_DESCRIPTOR d = { .Width = width, .Height = height };
    if (bytes > 0 && bytes % 4 == 0 && bytes <= 16) {
        d.Format = CU_AD_FORMAT_FLOAT;
        d.NumChannels = (unsigned int)bytes / 4;
    } else if (bytes == 1 || bytes == 2) {
        d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
        d.NumChannels = (unsigned int)bytes;
    } else {
        return done(cudaErrorInvalidValue);
    }
    return done(from_driver(drv.array_create((CUarray *)array, &d)));
}

CUDART_EXPORT cudaError_t cudaFreeArray(cudaArray_t array)
{
    READY();
    if (!array)
        return cudaSuccess;
    return done(from_driver(drv.array_destroy((CUarray)array)));
}

CUDART_EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                       size_t width, size_t height, enum cudaMemcpyKind kind)
{
    (void)kind;
    READY();
    if (width > dpitch || width > spitch || (height && (!dst || !src)))
        return done(cudaErrorInvalidValue);
    for (size_t row = 0; row < height; row++)
        memmove((char *)dst + row * dpitch, (const char *)src + row * spitch, width);
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                            size_t width, size_t height, enum cudaMemcpyKind kind,
                                            cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

/* A __device__ variable's symbol is its host shadow, which stands for the
 * device copy here. */
CUDART_EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count,
                                             size_t offset, enum cudaMemcpyKind kind)
{
    return cudaMemcpy((char *)(uintptr_t)symbol + offset, src, count, kind);
}

CUDART_EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count,
                                               size_t offset, enum cudaMemcpyKind kind)
{
    return cudaMemcpy(dst, (const char *)symbol + offset, count, kind);
}

CUDART_EXPORT cudaError_t cudaGetSymbolAddress(void **address, const void *symbol)
{
    if (!address || !symbol)
        return done(cudaErrorInvalidValue);
    *address = (void *)(uintptr_t)symbol;
    return cudaSuccess;
}

/* Page-locking has nothing to lock in the fake. */
CUDART_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    (void)flags;
    return ptr && size ? cudaSuccess : done(cudaErrorInvalidValue);
}

CUDART_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
    return ptr ? cudaSuccess : done(cudaErrorInvalidValue);
}

CUDART_EXPORT cudaError_t cudaMemPrefetchAsync(const void *ptr, size_t count, struct cudaMemLocation location,
                                               unsigned int flags, cudaStream_t stream)
{
    (void)ptr, (void)count, (void)location, (void)flags, (void)stream;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaMemAdvise(const void *ptr, size_t count, enum cudaMemoryAdvise advice,
                                        struct cudaMemLocation location)
{
    (void)ptr, (void)count, (void)advice, (void)location;
    return cudaSuccess;
}

/* ---- streams and events ------------------------------------------------- */

CUDART_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
    READY();
    return done(from_driver(drv.stream_create((CUstream *)stream, flags)));
}

CUDART_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, 0);
}

CUDART_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    READY();
    return done(from_driver(drv.stream_destroy((CUstream)stream)));
}

CUDART_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    READY();
    return done(from_driver(drv.stream_synchronize((CUstream)stream)));
}

CUDART_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int flags, int priority)
{
    (void)priority;
    return cudaStreamCreateWithFlags(stream, flags);
}

CUDART_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return cudaSuccess;
}

/* The fake's work is done when it is asked for. */
CUDART_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    (void)stream, (void)flags;
    return event ? cudaSuccess : done(cudaErrorInvalidResourceHandle);
}

/* The fake driver has no events; an event is the host clock when it was
 * recorded, which is when the fake's work finished. */
struct CUevent_st {
    struct timespec at;
};

CUDART_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    if (!event)
        return done(cudaErrorInvalidValue);
    READY();
    *event = calloc(1, sizeof **event);
    return *event ? cudaSuccess : done(cudaErrorMemoryAllocation);
}

CUDART_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    (void)flags;
    return cudaEventCreate(event);
}

CUDART_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    free(event);
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    (void)stream;
    if (!event)
        return done(cudaErrorInvalidResourceHandle);
    clock_gettime(CLOCK_MONOTONIC, &event->at);
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
    return event ? cudaSuccess : done(cudaErrorInvalidResourceHandle);
}

CUDART_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    return event ? cudaSuccess : done(cudaErrorInvalidResourceHandle);
}

CUDART_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms || !start || !end)
        return done(cudaErrorInvalidValue);
    *ms = (float)((double)(end->at.tv_sec - start->at.tv_sec) * 1e3 +
                  (double)(end->at.tv_nsec - start->at.tv_nsec) / 1e6);
    return cudaSuccess;
}

/* ---- errors ------------------------------------------------------------- */

static const struct {
    cudaError_t code;
    const char *name, *text;
} errors[] = {
    { cudaSuccess, "cudaSuccess", "no error" },
    { cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument" },
    { cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory" },
    { cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error" },
    { cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal" },
    { cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context" },
    { cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle" },
    { cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported" },
    { cudaErrorUnknown, "cudaErrorUnknown", "unknown error" },
};

static int error_index(cudaError_t e)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return (int)i;
    return -1;
}

CUDART_EXPORT const char *cudaGetErrorString(cudaError_t error)
{
    int i = error_index(error);
    return i < 0 ? "unrecognized error code" : errors[i].text;
}

CUDART_EXPORT const char *cudaGetErrorName(cudaError_t error)
{
    int i = error_index(error);
    return i < 0 ? "cudaErrorUnknown" : errors[i].name;
}

CUDART_EXPORT cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

CUDART_EXPORT cudaError_t cudaPeekAtLastError(void)
{
    return t_last_error;
}

/* ---- what nvcc's generated code calls ----------------------------------- */

/* One handle serves every module: nothing is loaded. */
static void *g_module_handle;

CUDART_EXPORT void **__cudaRegisterFatBinary(void *fat_cubin)
{
    (void)fat_cubin;
    return &g_module_handle;
}

CUDART_EXPORT void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }
CUDART_EXPORT void __cudaUnregisterFatBinary(void **handle) { (void)handle; }

CUDART_EXPORT void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
                                          const char *device_name, int thread_limit, uint3 *tid,
                                          uint3 *bid, dim3 *block, dim3 *grid, int *warp_size)
{
    (void)handle, (void)host_fun, (void)device_fun, (void)device_name, (void)thread_limit;
    (void)tid, (void)bid, (void)block, (void)grid, (void)warp_size;
}

CUDART_EXPORT void __cudaRegisterVar(void **handle, char *host_var, char *device_address,
                                     const char *device_name, int ext, size_t size, int constant,
                                     int global)
{
    (void)handle, (void)host_var, (void)device_address, (void)device_name;
    (void)ext, (void)size, (void)constant, (void)global;
}

CUDART_EXPORT char __cudaInitModule(void **handle)
{
    (void)handle;
    return 1;
}

CUDART_EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, void *stream)
{
    t_launch.grid = grid;
    t_launch.block = block;
    t_launch.shared = shared;
    t_launch.stream = stream;
    return 0;
}

CUDART_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream)
{
    *grid = t_launch.grid;
    *block = t_launch.block;
    *shared = t_launch.shared;
    *(void **)stream = t_launch.stream;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *fun)
{
    *kernel = (cudaKernel_t)fun;
    return cudaSuccess;
}

/* Kernels do not run in the fake; a launch needs a context, as a real one does. */
CUDART_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                             size_t shared, cudaStream_t stream)
{
    (void)kernel, (void)grid, (void)block, (void)args, (void)shared, (void)stream;
    READY();
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaFuncSetAttribute(const void *fun, enum cudaFuncAttribute attr, int value)
{
    (void)fun, (void)attr, (void)value;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *fun,
                                                                        int block_size, size_t shared)
{
    (void)fun, (void)shared;
    if (!blocks || block_size <= 0)
        return done(cudaErrorInvalidValue);
    *blocks = 2048 / block_size > 0 ? 2048 / block_size : 1;
    return cudaSuccess;
}

CUDART_EXPORT cudaError_t cudaLaunchKernel(const void *fun, dim3 grid, dim3 block, void **args,
                                           size_t shared, cudaStream_t stream)
{
    return __cudaLaunchKernel((cudaKernel_t)fun, grid, block, args, shared, stream);
}
