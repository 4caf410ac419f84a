/* The demo `make demo` runs under the shim: a small "training loop" that
 * frees its activations every step but keeps one buffer in ten, the classic
 * slow leak, plus a pinned staging buffer it forgets. It runs on a real GPU
 * when one is present and on the fake driver otherwise. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define STEPS 50

static void check(CUresult result, const char *what)
{
    if (result != CUDA_SUCCESS) {
        fprintf(stderr, "demo: %s failed with CUresult %d\n", what, (int)result);
        exit(1);
    }
}

/* Keeps one activation buffer in ten: what a `history.append(loss)` does. */
__attribute__((noinline)) static void keep_for_logging(CUdeviceptr *kept, int *count, size_t bytes)
{
    check(cuMemAlloc(&kept[*count], bytes), "cuMemAlloc (kept)");
    (*count)++;
}

__attribute__((noinline)) static void train_step(CUstream stream, int step, CUdeviceptr *kept, int *count)
{
    CUdeviceptr activations, gradients;
    check(cuMemAlloc(&activations, 4 << 20), "cuMemAlloc");
    check(cuMemAllocAsync(&gradients, 1 << 20, stream), "cuMemAllocAsync");
    if (step % 10 == 0)
        keep_for_logging(kept, count, 2 << 20);
    check(cuMemFreeAsync(gradients, stream), "cuMemFreeAsync");
    check(cuMemFree(activations), "cuMemFree");
}

__attribute__((noinline)) static void *stage_batch_buffer(void)
{
    void *pinned;
    check(cuMemAllocHost(&pinned, 1 << 20), "cuMemAllocHost");
    return pinned;
}

int main(void)
{
    CUdevice device;
    CUcontext context;
    CUstream stream;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&device, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    check(cuStreamCreate(&stream, 0), "cuStreamCreate");
    CUdeviceptr kept[STEPS];
    int count = 0;
    void *staging = stage_batch_buffer();
    (void)staging;
    /* A step takes 20 ms, as a small model's would: the run lasts about a
     * second, long enough for the timeline and the growth checkpoints. */
    struct timespec step_time = { 0, 20 * 1000 * 1000 };
    for (int step = 0; step < STEPS; step++) {
        train_step(stream, step, kept, &count);
        nanosleep(&step_time, NULL);
    }
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    printf("demo: %d steps done, %d buffers kept by mistake\n", STEPS, count);
    return 0;
}
