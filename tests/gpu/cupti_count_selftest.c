/* cupti_count_selftest.c: drives cupti_count.c's callback with made-up
 * callback records (no GPU, no CUPTI subscription) and writes its JSON, so
 * the counter's bookkeeping can be checked on a machine without a GPU.
 * gpu-check.sh builds and runs it before trusting the counter; the expected
 * numbers are checked by the script with python3 (see gpu-check.sh).
 *
 *   cc -I$CUDA/include cupti_count_selftest.c -L... -lcupti && ./a.out out.json
 */
#include "cupti_count.c"

static void call(CUpti_CallbackId cbid, const void *params, CUresult rc) {
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = CUPTI_API_ENTER; /* ignored: only exits count */
    d.functionParams = params;
    d.functionReturnValue = &rc;
    on_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
    d.callbackSite = CUPTI_API_EXIT;
    on_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    expand_path(argv[1]);
    initialized = subscribe_ok = 1;

    /* device: 3 allocs (one pitched), 2 freed, 1 failed; one NULL free, one unknown */
    CUdeviceptr d1 = 0x7f0000001000, d2 = 0x7f0000002000, d3 = 0x7f0000003000;
    cuMemAlloc_v2_params a1 = {&d1, 1000};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a1, CUDA_SUCCESS);
    cuMemAlloc_v2_params a2 = {&d2, 2000};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a2, CUDA_SUCCESS);
    size_t pitch = 512;
    cuMemAllocPitch_v2_params a3 = {&d3, &pitch, 500, 10, 4};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, &a3, CUDA_SUCCESS);
    CUdeviceptr dfail = 0;
    cuMemAlloc_v2_params af = {&dfail, (size_t)1 << 50};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &af, CUDA_ERROR_OUT_OF_MEMORY);
    cuMemFree_v2_params f1 = {d1};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f1, CUDA_SUCCESS);
    cuMemFree_v2_params f3 = {d3};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f3, CUDA_SUCCESS);
    cuMemFree_v2_params fnull = {0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fnull, CUDA_SUCCESS);
    cuMemFree_v2_params funk = {0x1234};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &funk, CUDA_SUCCESS);
    cuMemFree_v2_params fbad = {0x5678};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fbad, CUDA_ERROR_INVALID_VALUE);

    /* pool: 2 allocs (async, ptsz), freed by cuMemFreeAsync_ptsz and by cuMemFree_v2 */
    CUdeviceptr p1 = 0x7f0000100000, p2 = 0x7f0000200000;
    cuMemAllocAsync_params pa1 = {&p1, 4096, NULL};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &pa1, CUDA_SUCCESS);
    cuMemAllocFromPoolAsync_ptsz_params pa2 = {&p2, 8192, NULL, NULL};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, &pa2, CUDA_SUCCESS);
    cuMemFreeAsync_ptsz_params pf1 = {p1, NULL};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, &pf1, CUDA_SUCCESS);
    cuMemFree_v2_params pf2 = {p2};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &pf2, CUDA_SUCCESS);

    /* vmm: create 2, map 2, unmap 1, release 1 (the same number as a device pointer: no clash) */
    CUmemGenericAllocationHandle h1 = 0x7f0000001000, h2 = 42;
    cuMemCreate_params c1 = {&h1, 2 << 20, NULL, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c1, CUDA_SUCCESS);
    cuMemCreate_params c2 = {&h2, 4 << 20, NULL, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c2, CUDA_SUCCESS);
    cuMemMap_params m1 = {0x7e0000000000, 2 << 20, 0, h1, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &m1, CUDA_SUCCESS);
    cuMemMap_params m2 = {0x7e0000200000, 4 << 20, 0, h2, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &m2, CUDA_SUCCESS);
    cuMemUnmap_params u1 = {0x7e0000000000, 2 << 20};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &u1, CUDA_SUCCESS);
    cuMemRelease_params r1 = {h1};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &r1, CUDA_SUCCESS);

    /* managed 1 (leaked), host 2 (one freed), array 2 (one destroyed) */
    CUdeviceptr mm = 0x7f0000900000;
    cuMemAllocManaged_params ma = {&mm, 4096, 1};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, &ma, CUDA_SUCCESS);
    void *hp1 = (void *)0x100000, *hp2 = (void *)0x200000;
    cuMemAllocHost_v2_params ha = {&hp1, 65536};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, &ha, CUDA_SUCCESS);
    cuMemHostAlloc_params hb = {&hp2, 8192, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, &hb, CUDA_SUCCESS);
    cuMemFreeHost_params hf = {hp2};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, &hf, CUDA_SUCCESS);
    CUarray ar1 = (CUarray)0x10, ar2 = (CUarray)0x20;
    cuArrayCreate_v2_params aa = {&ar1, NULL};
    call(CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2, &aa, CUDA_SUCCESS);
    cuArray3DCreate_v2_params ab = {&ar2, NULL};
    call(CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, &ab, CUDA_SUCCESS);
    cuArrayDestroy_params ad = {ar1};
    call(CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy, &ad, CUDA_SUCCESS);

    /* a callback id it does not count */
    call(CUPTI_DRIVER_TRACE_CBID_cuInit, NULL, CUDA_SUCCESS);

    write_at_exit();
    /* a late free after the first write: counted and rewritten */
    cuMemFree_v2_params f2 = {d2};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f2, CUDA_SUCCESS);
    return 0;
}
