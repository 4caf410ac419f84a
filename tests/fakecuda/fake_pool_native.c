/* fake_pool_native.c: the native frame through which JAX's and CuPy's
 * pools take blocks from the driver, for the fakes of tests/python/frameworks.
 * Built twice, to build/fakepools/jaxlib/xla.fake.so and
 * build/fakepools/cupy/cuda/memory.fake.so, so that a block's stack passes
 * through a module where the real one's does (XLA's CUDA plugin or jaxlib;
 * CuPy's memory module) and the origin rules name the pool its owner. */
#include <cuda.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

/* A block of size bytes from the driver, as a pool takes one: cuMemAlloc. */
EXPORT CUresult fake_pool_alloc(CUdeviceptr *ptr, size_t size)
{
    return cuMemAlloc(ptr, size);
}

/* VMM memory mapped into a reserved range, as XLA's pool grows: reserve,
 * create, map. *va gets the range, *handle the memory. */
EXPORT CUresult fake_pool_map(CUdeviceptr *va, CUmemGenericAllocationHandle *handle, size_t size,
                              int device)
{
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    CUresult rc = cuMemAddressReserve(va, size, 0, 0, 0);
    if (rc == CUDA_SUCCESS)
        rc = cuMemCreate(handle, size, &prop, 0);
    if (rc == CUDA_SUCCESS)
        rc = cuMemMap(*va, size, 0, *handle, 0);
    return rc;
}
