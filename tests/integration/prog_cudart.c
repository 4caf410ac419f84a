/* prog_cudart.c: a program shaped like one nvcc links with its static
 * cudart: the runtime's own functions (named as the static library names
 * them, libcudart_static_*) between the user's cudaMalloc and the driver.
 * keep_buffer() leaks 1 MiB through cudaMalloc. The views fold the
 * runtime's two frames under cudaMalloc; the report keeps them. */
#include "progs.h"

__attribute__((noinline)) CUresult libcudart_static_3a5f0c11(CUdeviceptr *p, size_t n)
{
    CUresult rc = cuMemAlloc_v2(p, n);
    return rc;
}

__attribute__((noinline)) CUresult libcudart_static_9b2e7d40(CUdeviceptr *p, size_t n)
{
    CUresult rc = libcudart_static_3a5f0c11(p, n);
    return rc;
}

/* The runtime's API entry, as the static library exports it. */
__attribute__((noinline)) int cudaMalloc(void **p, size_t n)
{
    CUdeviceptr d = 0;
    CUresult rc = libcudart_static_9b2e7d40(&d, n);
    *p = (void *)(uintptr_t)d;
    return (int)rc;
}

__attribute__((noinline)) void keep_buffer(void)
{
    void *p = NULL;
    EXPECT(cudaMalloc(&p, 1 << 20) == 0 && p != NULL);
}

int main(void)
{
    use_primary(0);
    keep_buffer();
    return 0;
}
