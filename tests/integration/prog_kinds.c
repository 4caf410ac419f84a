/* prog_kinds.c: managed, pinned host and array memory. Leaks, one site
 * each: managed_leak() 6000 managed; host_leak() 7000 (cuMemAllocHost_v2)
 * and hostalloc_leak() 7100 (cuMemHostAlloc) host; array2d_leak() 32768
 * (64 x 32, 4 float channels), array3d_leak() 2048 (16 x 8 x 4, 2 x 16-bit
 * channels), array1d_leak() 200 (100 halves, height 0) array. One pair of
 * each function is freed.
 *
 * The fake driver's books after each run: prog_kinds.expect.json.
 */
#include "progs.h"

__attribute__((noinline)) void managed_leak(void)
{
    CUdeviceptr p = 0;
    OK(cuMemAllocManaged(&p, 6000, CU_MEM_ATTACH_GLOBAL));
}

__attribute__((noinline)) void host_leak(void)
{
    void *p = NULL;
    OK(cuMemAllocHost_v2(&p, 7000));
    memset(p, 1, 7000); /* pinned host memory is host memory */
}

__attribute__((noinline)) void hostalloc_leak(void)
{
    void *p = NULL;
    OK(cuMemHostAlloc(&p, 7100, CU_MEMHOSTALLOC_PORTABLE));
}

static CUDA_ARRAY3D_DESCRIPTOR desc3d(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
    CUDA_ARRAY3D_DESCRIPTOR a;
    memset(&a, 0, sizeof a);
    a.Width = w;
    a.Height = h;
    a.Depth = d;
    a.Format = f;
    a.NumChannels = ch;
    return a;
}

static CUDA_ARRAY_DESCRIPTOR desc2d(size_t w, size_t h, CUarray_format f, unsigned ch)
{
    CUDA_ARRAY_DESCRIPTOR a;
    memset(&a, 0, sizeof a);
    a.Width = w;
    a.Height = h;
    a.Format = f;
    a.NumChannels = ch;
    return a;
}

__attribute__((noinline)) void array2d_leak(void)
{
    CUarray a;
    CUDA_ARRAY_DESCRIPTOR d = desc2d(64, 32, CU_AD_FORMAT_FLOAT, 4);
    OK(cuArrayCreate_v2(&a, &d));
}

__attribute__((noinline)) void array3d_leak(void)
{
    CUarray a;
    CUDA_ARRAY3D_DESCRIPTOR d = desc3d(16, 8, 4, CU_AD_FORMAT_UNSIGNED_INT16, 2);
    OK(cuArray3DCreate_v2(&a, &d));
}

__attribute__((noinline)) void array1d_leak(void)
{
    CUarray a;
    CUDA_ARRAY_DESCRIPTOR d = desc2d(100, 0, CU_AD_FORMAT_HALF, 1);
    OK(cuArrayCreate_v2(&a, &d));
}

__attribute__((noinline)) void balanced_pairs(void)
{
    CUdeviceptr m = 0;
    void *h1 = NULL, *h2 = NULL;
    CUarray a2, a3;
    CUDA_ARRAY_DESCRIPTOR d2 = desc2d(8, 8, CU_AD_FORMAT_UNSIGNED_INT8, 1);
    CUDA_ARRAY3D_DESCRIPTOR d3 = desc3d(8, 8, 8, CU_AD_FORMAT_SIGNED_INT32, 1);
    OK(cuMemAllocManaged(&m, 100, CU_MEM_ATTACH_HOST));
    OK(cuMemFree_v2(m));
    OK(cuMemAllocHost_v2(&h1, 100));
    OK(cuMemFreeHost(h1));
    OK(cuMemHostAlloc(&h2, 100, 0));
    OK(cuMemFreeHost(h2));
    OK(cuArrayCreate_v2(&a2, &d2));
    OK(cuArrayDestroy(a2));
    OK(cuArray3DCreate_v2(&a3, &d3));
    OK(cuArrayDestroy(a3));
}

int main(void)
{
    use_primary(0);
    managed_leak();
    host_leak();
    hostalloc_leak();
    array2d_leak();
    array3d_leak();
    array1d_leak();
    balanced_pairs();
    return 0;
}
