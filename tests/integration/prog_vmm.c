/* prog_vmm.c: virtual memory management. One handle of 2 granules is
 * created, mapped, written, unmapped and released; vmm_leak() creates one
 * granule, maps it and never releases it (1 handle leaked, 2 maps,
 * 1 unmap).
 *
 * The fake driver's books after each run: prog_vmm.expect.json.
 */
#include "progs.h"

static CUmemAllocationProp device_prop(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return prop;
}

static void map_rw(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    OK(cuMemMap(va, size, 0, h, 0));
    OK(cuMemSetAccess(va, size, &access, 1));
}

__attribute__((noinline)) void vmm_round_trip(CUdeviceptr va, size_t gran)
{
    CUmemAllocationProp prop = device_prop();
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, 2 * gran, &prop, 0));
    map_rw(va, 2 * gran, h);
    OK(cuMemsetD8_v2(va, 0x11, 2 * gran));
    OK(cuMemUnmap(va, 2 * gran));
    OK(cuMemRelease(h));
}

__attribute__((noinline)) void vmm_leak(CUdeviceptr va, size_t gran)
{
    CUmemAllocationProp prop = device_prop();
    CUmemGenericAllocationHandle h;
    OK(cuMemCreate(&h, gran, &prop, 0));
    map_rw(va, gran, h);
}

int main(void)
{
    use_primary(0);
    CUmemAllocationProp prop = device_prop();
    size_t gran = 0;
    OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(gran > 0);
    CUdeviceptr va = 0;
    OK(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
    vmm_round_trip(va, gran);
    vmm_leak(va + 2 * gran, gran);
    /* The reservation still holds a mapping, so it cannot be freed. */
    CHECK(cuMemAddressFree(va, 4 * gran), CUDA_ERROR_INVALID_VALUE);
    return 0;
}
