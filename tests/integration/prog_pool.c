/* prog_pool.c: stream-ordered allocation through the exported symbols.
 * async_leak() leaks 3000 from cuMemAllocAsync, pool_leak() leaks 5000 from
 * a created pool with cuMemAllocFromPoolAsync; 5 async pairs and 3 pairs
 * from the default pool are freed with cuMemFreeAsync.
 *
 * The fake driver's books after each run: prog_pool.expect.json.
 */
#include "progs.h"

__attribute__((noinline)) void async_leak(CUstream s)
{
    CUdeviceptr p = 0;
    OK(cuMemAllocAsync(&p, 3000, s));
}

__attribute__((noinline)) void pool_leak(CUmemoryPool pool, CUstream s)
{
    CUdeviceptr p = 0;
    OK(cuMemAllocFromPoolAsync(&p, 5000, pool, s));
}

__attribute__((noinline)) void async_pairs(CUmemoryPool pool, CUstream s)
{
    for (int i = 0; i < 5; i++) {
        CUdeviceptr p = 0;
        OK(cuMemAllocAsync(&p, 1000, s));
        OK(cuMemFreeAsync(p, s));
    }
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p = 0;
        OK(cuMemAllocFromPoolAsync(&p, 2000, pool, s));
        OK(cuMemFreeAsync(p, s));
    }
}

int main(void)
{
    use_primary(0);
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    CUmemoryPool def, made;
    OK(cuDeviceGetDefaultMemPool(&def, 0));
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    OK(cuMemPoolCreate(&made, &props));
    async_leak(s);
    pool_leak(made, s);
    async_pairs(def, s);
    OK(cuStreamSynchronize(s));
    /* Destroying a pool with an outstanding allocation defers the release:
     * the leak stays a leak. */
    OK(cuMemPoolDestroy(made));
    OK(cuStreamDestroy_v2(s));
    return 0;
}
