/* prog_runtime.c: a program written against the CUDA runtime API, as most
 * CUDA programs are, run over the fake runtime (libcudart.so.13 in
 * build/fakecuda) and the fake driver under it.
 *
 * keep_device() leaks 1 MiB of cudaMalloc, keep_pinned() 64 KiB of
 * cudaMallocHost, keep_async() 256 KiB of cudaMallocAsync on a stream and
 * keep_array() a 64x64 float4 array (64 KiB); managed, pitched, 3D, array
 * and stream-ordered allocations made and freed in balanced() leak nothing,
 * and the calls programs make around them (2D and symbol copies, device
 * attributes, events, hints) work. With two devices, a thread keeps 32 KiB
 * on the second. Every call's result is checked, an
 * out-of-memory failure's code and text too, so the exit status says that
 * the runtime's results passed through the shim unchanged. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG_BAD_RESULT 90
#define PROG_BAD_STATE 92

#define RT_OK(call)                                                                \
    do {                                                                           \
        cudaError_t rt_rc_ = (call);                                               \
        if (rt_rc_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__,    \
                    #call, (int)rt_rc_, cudaGetErrorString(rt_rc_));               \
            exit(PROG_BAD_RESULT);                                                 \
        }                                                                          \
    } while (0)

#define EXPECT(cond)                                                               \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);    \
            exit(PROG_BAD_STATE);                                                  \
        }                                                                          \
    } while (0)

__attribute__((noinline)) void keep_device(void)
{
    void *p = NULL;
    RT_OK(cudaMalloc(&p, 1 << 20));
    char out[16] = "";
    RT_OK(cudaMemcpy(p, "on the device", 14, cudaMemcpyHostToDevice));
    RT_OK(cudaMemcpy(out, p, 14, cudaMemcpyDeviceToHost));
    EXPECT(strcmp(out, "on the device") == 0);
}

__attribute__((noinline)) void keep_pinned(void)
{
    void *h = NULL;
    RT_OK(cudaMallocHost(&h, 64 << 10));
    memset(h, 1, 64 << 10);
}

__attribute__((noinline)) void keep_async(cudaStream_t s)
{
    void *p = NULL;
    RT_OK(cudaMallocAsync(&p, 256 << 10, s));
    RT_OK(cudaMemsetAsync(p, 0, 256 << 10, s));
}

__attribute__((noinline)) void keep_array(void)
{
    cudaArray_t array = NULL;
    struct cudaChannelFormatDesc desc = { 32, 32, 32, 32, cudaChannelFormatKindFloat };
    RT_OK(cudaMallocArray(&array, &desc, 64, 64, 0));
    EXPECT(array != NULL);
}

/* With a second device (FAKECUDA_DEVICES=2): a thread of its own keeps
 * 32 KiB there, its first call on the device it chose. */
static void *keep_on_second_device(void *arg)
{
    (void)arg;
    void *p = NULL;
    int device = -1;
    RT_OK(cudaSetDevice(1));
    RT_OK(cudaMalloc(&p, 32 << 10));
    RT_OK(cudaGetDevice(&device));
    EXPECT(device == 1);
    return NULL;
}

/* A __device__ variable's host shadow, as nvcc makes one. */
static int step_count;

__attribute__((noinline)) void balanced(cudaStream_t s)
{
    void *m = NULL, *pitched = NULL, *a = NULL;
    size_t pitch = 0;
    RT_OK(cudaMallocManaged(&m, 1 << 20, cudaMemAttachGlobal));
    struct cudaMemLocation here = { cudaMemLocationTypeDevice, 0 };
    RT_OK(cudaMemAdvise(m, 1 << 20, cudaMemAdviseSetPreferredLocation, here));
    RT_OK(cudaMemPrefetchAsync(m, 1 << 20, here, 0, s));
    RT_OK(cudaMallocPitch(&pitched, &pitch, 1000, 64));
    EXPECT(pitch >= 1000);
    char rows[2][1000];
    memset(rows[0], 7, sizeof rows[0]);
    memset(rows[1], 9, sizeof rows[1]);
    RT_OK(cudaMemcpy2D(pitched, pitch, rows, 1000, 1000, 2, cudaMemcpyHostToDevice));
    EXPECT(((char *)pitched)[pitch] == 9);
    RT_OK(cudaMallocAsync(&a, 1 << 20, s));

    struct cudaPitchedPtr cube;
    struct cudaExtent extent = { 256, 16, 4 };
    RT_OK(cudaMalloc3D(&cube, extent));
    EXPECT(cube.ptr != NULL && cube.pitch >= 256);
    cudaArray_t array = NULL;
    struct cudaChannelFormatDesc desc = { 8, 0, 0, 0, cudaChannelFormatKindUnsigned };
    RT_OK(cudaMallocArray(&array, &desc, 128, 0, 0));

    int steps = 41, back = 0;
    RT_OK(cudaMemcpyToSymbol(&step_count, &steps, sizeof steps, 0, cudaMemcpyHostToDevice));
    RT_OK(cudaMemcpyFromSymbol(&back, &step_count, sizeof back, 0, cudaMemcpyDeviceToHost));
    EXPECT(back == 41);
    int major = 0;
    RT_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    EXPECT(major >= 7);
    cudaEvent_t start, stop;
    float ms = -1;
    RT_OK(cudaEventCreate(&start));
    RT_OK(cudaEventCreate(&stop));
    RT_OK(cudaEventRecord(start, s));
    RT_OK(cudaEventRecord(stop, s));
    RT_OK(cudaStreamWaitEvent(s, stop, 0));
    RT_OK(cudaEventSynchronize(stop));
    RT_OK(cudaEventElapsedTime(&ms, start, stop));
    EXPECT(ms >= 0);
    RT_OK(cudaEventDestroy(start));
    RT_OK(cudaEventDestroy(stop));

    RT_OK(cudaFree(m));
    RT_OK(cudaFree(pitched));
    RT_OK(cudaFreeAsync(a, s));
    RT_OK(cudaFree(cube.ptr));
    RT_OK(cudaFreeArray(array));
}

int main(void)
{
    int n = 0, version = 0;
    RT_OK(cudaGetDeviceCount(&n));
    EXPECT(n >= 1);
    RT_OK(cudaSetDevice(0));
    RT_OK(cudaFree(NULL));
    RT_OK(cudaRuntimeGetVersion(&version));
    EXPECT(version >= 13000);

    cudaStream_t s;
    RT_OK(cudaStreamCreate(&s));
    keep_device();
    keep_pinned();
    keep_async(s);
    keep_array();
    balanced(s);
    if (n > 1) {
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, keep_on_second_device, NULL) == 0);
        EXPECT(pthread_join(t, NULL) == 0);
        int device = -1;
        RT_OK(cudaGetDevice(&device));
        EXPECT(device == 0); /* the main thread's own */
    }
    RT_OK(cudaStreamSynchronize(s));

    /* A failed allocation: its code and text, and the sticky last error. */
    void *huge = NULL;
    EXPECT(cudaMalloc(&huge, (size_t)1 << 50) == cudaErrorMemoryAllocation);
    EXPECT(huge == NULL);
    EXPECT(strcmp(cudaGetErrorString(cudaGetLastError()), "out of memory") == 0);
    EXPECT(cudaGetLastError() == cudaSuccess);

    RT_OK(cudaDeviceSynchronize());
    puts("runtime program done");
    return 0;
}
