/* prog_procaddr.c: the door a static cudart uses. Nothing here calls an
 * exported allocation symbol: libcuda.so.1 is dlopen'ed, cuGetProcAddress_v2
 * is found with dlsym, and every other function is asked for by base name.
 *
 *   static  cudaVersion 13000: procaddr_leak() leaks 1 MiB, 4 pairs are
 *           freed; nested_leak() leaks 2 MiB through the cuGetProcAddress
 *           that cuGetProcAddress returned; v1gpa_leak() leaks 3 MiB through
 *           the CUDA 11.3 cuGetProcAddress (asked for with 11030); lookups
 *           that must fail are checked (unknown name, version too old)
 *   ptsz    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: ptsz_leak() leaks
 *           4096 and ptsz_pool_leak() 8192 from the _ptsz functions, 3 _ptsz
 *           pairs are freed; one default-stream pair is freed
 *   legacy  cudaVersion 3000 asking for "cuMemAlloc" gets the 32-bit ABI:
 *           legacy_leak() leaks 4096 through it, 2 pairs go through the
 *           32-bit cuMemFree
 *
 * The fake driver's books after each run: prog_procaddr.expect.json.
 */
#include "progs.h"

#include <dlfcn.h>
#include <stdint.h>

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_current_fn)(CUcontext);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*alloc_v1_fn)(unsigned int *, unsigned int);
typedef CUresult (*free_v1_fn)(unsigned int);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*default_pool_fn)(CUmemoryPool *, CUdevice);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);
typedef CUresult (*export_table_fn)(const void **, const CUuuid *);

static gpa_v2_fn gpa;

/* Asks the driver for name and insists on success, as cudart does for the
 * functions it cannot run without. */
static void *resolve(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CHECK(gpa(name, &fn, version, flags, &status), CUDA_SUCCESS);
    EXPECT(status == CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT(fn != NULL);
    return fn;
}

/* Opens the driver the way cudart does, and makes the primary context of
 * device 0 current through functions it looked up. */
static void open_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(h != NULL);
    gpa = (gpa_v2_fn)dlsym(h, "cuGetProcAddress_v2");
    EXPECT(gpa != NULL);
    init_fn init = (init_fn)resolve("cuInit", 13000, 0);
    retain_fn retain = (retain_fn)resolve("cuDevicePrimaryCtxRetain", 13000, 0);
    set_current_fn set_current = (set_current_fn)resolve("cuCtxSetCurrent", 13000, 0);
    CUcontext ctx;
    OK(init(0));
    OK(retain(&ctx, 0));
    OK(set_current(ctx));
}

__attribute__((noinline)) void procaddr_leak(alloc_fn alloc)
{
    CUdeviceptr p = 0;
    OK(alloc(&p, 1 << 20));
}

__attribute__((noinline)) void procaddr_pairs(alloc_fn alloc, free_fn release, int count)
{
    for (int i = 0; i < count; i++) {
        CUdeviceptr p = 0;
        OK(alloc(&p, 4096));
        OK(release(p));
    }
}

__attribute__((noinline)) void nested_leak(alloc_fn alloc)
{
    CUdeviceptr p = 0;
    OK(alloc(&p, 2 << 20));
}

__attribute__((noinline)) void v1gpa_leak(alloc_fn alloc)
{
    CUdeviceptr p = 0;
    OK(alloc(&p, 3 << 20));
}

/* Lookups that must fail, with the status the driver gives and pfn
 * cleared, so a shim that answers them itself is caught. */
static void check_failed_lookups(void)
{
    void *fn = (void *)&fn;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK(gpa("cuNoSuchFunction", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
    EXPECT(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT(fn == NULL);
    fn = (void *)&fn;
    status = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK(gpa("cuMemAllocAsync", &fn, 11000, 0, &status), CUDA_ERROR_NOT_FOUND);
    EXPECT(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(fn == NULL);
    /* symbolStatus may be NULL. */
    CHECK(gpa("cuMemFree", &fn, 13000, 0, NULL), CUDA_SUCCESS);
    EXPECT(fn != NULL);
    export_table_fn export_table = (export_table_fn)resolve("cuGetExportTable", 13000, 0);
    const void *table = NULL;
    CUuuid id;
    memset(&id, 0, sizeof id);
    CHECK(export_table(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
}

static void run_static(void)
{
    alloc_fn alloc = (alloc_fn)resolve("cuMemAlloc", 13000, 0);
    free_fn release = (free_fn)resolve("cuMemFree", 13000, 0);
    procaddr_leak(alloc);
    procaddr_pairs(alloc, release, 4);

    gpa_v2_fn gpa_again = (gpa_v2_fn)resolve("cuGetProcAddress", 13000, 0);
    void *fn = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    OK(gpa_again("cuMemAlloc", &fn, 13000, 0, &status));
    EXPECT(status == CU_GET_PROC_ADDRESS_SUCCESS && fn != NULL);
    nested_leak((alloc_fn)fn);

    gpa_v1_fn gpa_v1 = (gpa_v1_fn)resolve("cuGetProcAddress", 11030, 0);
    fn = NULL;
    OK(gpa_v1("cuMemAlloc", &fn, 13000, 0));
    EXPECT(fn != NULL);
    v1gpa_leak((alloc_fn)fn);

    check_failed_lookups();
}

__attribute__((noinline)) void ptsz_leak(alloc_async_fn alloc)
{
    CUdeviceptr p = 0;
    OK(alloc(&p, 4096, NULL));
}

__attribute__((noinline)) void ptsz_pool_leak(alloc_pool_fn alloc, CUmemoryPool pool)
{
    CUdeviceptr p = 0;
    OK(alloc(&p, 8192, pool, NULL));
}

static void run_ptsz(void)
{
    const cuuint64_t per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    alloc_async_fn alloc_ptsz = (alloc_async_fn)resolve("cuMemAllocAsync", 13000, per_thread);
    free_async_fn free_ptsz = (free_async_fn)resolve("cuMemFreeAsync", 13000, per_thread);
    alloc_pool_fn pool_ptsz = (alloc_pool_fn)resolve("cuMemAllocFromPoolAsync", 13000, per_thread);
    alloc_async_fn alloc_legacy = (alloc_async_fn)resolve("cuMemAllocAsync", 13000, 0);
    free_async_fn free_legacy = (free_async_fn)resolve("cuMemFreeAsync", 13000, 0);
    default_pool_fn default_pool = (default_pool_fn)resolve("cuDeviceGetDefaultMemPool", 13000, 0);

    ptsz_leak(alloc_ptsz);
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p = 0;
        OK(alloc_ptsz(&p, 1000, NULL));
        OK(free_ptsz(p, NULL));
    }
    CUmemoryPool pool;
    OK(default_pool(&pool, 0));
    ptsz_pool_leak(pool_ptsz, pool);

    CUdeviceptr p = 0;
    OK(alloc_legacy(&p, 1000, NULL));
    OK(free_legacy(p, NULL));
}

/* The 32-bit ABI writes 4 bytes; a 64-bit one would clobber the canary. */
__attribute__((noinline)) unsigned int legacy_alloc(alloc_v1_fn alloc, unsigned int n)
{
    struct { unsigned int ptr; unsigned int canary; } slot = { 0, 0xC0FFEEu };
    OK(alloc(&slot.ptr, n));
    EXPECT(slot.canary == 0xC0FFEEu);
    EXPECT(slot.ptr != 0);
    return slot.ptr;
}

/* Leaks 4096 from the legacy ABI after checking the memory is usable
 * through the 64-bit copy functions. */
__attribute__((noinline)) void legacy_leak(alloc_v1_fn alloc)
{
    htod_fn htod = (htod_fn)resolve("cuMemcpyHtoD", 13000, 0);
    dtoh_fn dtoh = (dtoh_fn)resolve("cuMemcpyDtoH", 13000, 0);
    unsigned int p = legacy_alloc(alloc, 4096);
    char in[32] = "thirty-two bit pointers", out[32];
    OK(htod((CUdeviceptr)p, in, sizeof in));
    OK(dtoh(out, (CUdeviceptr)p, sizeof out));
    EXPECT(memcmp(in, out, sizeof in) == 0);
}

static void run_legacy(void)
{
    alloc_v1_fn alloc = (alloc_v1_fn)resolve("cuMemAlloc", 3000, 0);
    free_v1_fn release = (free_v1_fn)resolve("cuMemFree", 3000, 0);
    legacy_leak(alloc);
    for (int i = 0; i < 2; i++)
        OK(release(legacy_alloc(alloc, 256)));
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "static");
    if (strcmp(mode, "static") != 0 && strcmp(mode, "ptsz") != 0 && strcmp(mode, "legacy") != 0)
        return prog_bad_mode(mode);
    open_driver();
    if (strcmp(mode, "static") == 0)
        run_static();
    else if (strcmp(mode, "ptsz") == 0)
        run_ptsz();
    else
        run_legacy();
    return 0;
}
