/* stubcuda.c: another library that exports two of the driver's names, as a
 * stub, a test double or another interposer does (libstubcuda.so, soname
 * its own). Its answers are its own, told apart from any driver's: the
 * addresses it hands out start at STUB_BASE and its free refuses with 700.
 * tests/integration/prog_stub.c checks that a program under the shim gets
 * them unchanged (issue 32, item 4). */
#include <cuda.h>
#include <stdint.h>

#define STUB_BASE 0x5100000000ull

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    static uint64_t next = STUB_BASE;
    *dptr = (CUdeviceptr)next;
    next += (bytesize + 0xfff) & ~0xfffull;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    (void)dptr;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}
