/* prog_teardown.c: memory freed by the driver when its context goes.
 * leak_in_ctx() leaves 2 x 4096 in a cuCtxCreate_v4 context and 1 x 2048 in a
 * cuCtxCreate_v2 one, both destroyed with cuCtxDestroy_v2; leak_in_primary()
 * leaves 8192 in the primary context, reset with cuDevicePrimaryCtxReset_v2.
 * A pointer freed by the teardown is then freed again (an unknown free,
 * CUDA_ERROR_INVALID_VALUE), and leak_after_reset() leaks 1000 in the
 * retained-again primary context: the one real leak at exit.
 *
 * The fake driver's books after each run: prog_teardown.expect.json.
 */
#include "progs.h"

/* The pre-12.5 ABI, which cuda.h no longer declares. */
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);

__attribute__((noinline)) CUdeviceptr leak_in_ctx(size_t n)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, n));
    return p;
}

__attribute__((noinline)) void leak_in_primary(void)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 8192));
}

__attribute__((noinline)) void leak_after_reset(void)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 1000));
}

int main(void)
{
    CUcontext a, b, cur;
    OK(cuInit(0));
    OK(cuCtxCreate_v4(&a, NULL, 0, 0));
    leak_in_ctx(4096);
    CUdeviceptr stale = leak_in_ctx(4096);
    OK(cuCtxDestroy_v2(a));
    /* Freed by the teardown, so the driver no longer knows it. */
    CHECK(cuMemFree_v2(stale), CUDA_ERROR_INVALID_VALUE);

    OK(cuCtxCreate_v2(&b, 0, 0));
    OK(cuCtxGetCurrent(&cur));
    EXPECT(cur == b);
    leak_in_ctx(2048);
    OK(cuCtxDestroy_v2(b));

    use_primary(0);
    leak_in_primary();
    OK(cuDevicePrimaryCtxReset_v2(0));

    use_primary(0);
    leak_after_reset();
    return 0;
}
