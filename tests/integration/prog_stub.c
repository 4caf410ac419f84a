/* prog_stub: a program that calls another library of the driver's names
 * (tests/fakecuda/stubcuda.c), which must answer as it would without the
 * shim (issue 32, item 4). Modes:
 *   linked      linked against libstubcuda.so, no driver loaded: its own
 *               addresses and its refusal
 *   beside      dlopens the driver (the fake) and the stub, and looks the
 *               names up in each: the stub's answers from the stub's, the
 *               driver's from the driver's, whichever was asked first
 * Exit 0, or PROG_BAD_RESULT / PROG_BAD_STATE. */
#include "progs.h"

#include <dlfcn.h>

#define STUB_BASE 0x5100000000ull

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static void expect_stub(alloc_fn alloc, free_fn release)
{
    CUdeviceptr p = 0;
    CHECK(alloc(&p, 4096), CUDA_SUCCESS);
    EXPECT(p >= STUB_BASE && p < STUB_BASE + (1ull << 32));
    CHECK(release(p), CUDA_ERROR_ILLEGAL_ADDRESS);
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "linked");
    if (strcmp(mode, "linked") == 0) {
        expect_stub(cuMemAlloc_v2, cuMemFree_v2);
        return 0;
    }
    if (strcmp(mode, "beside") != 0)
        return prog_bad_mode(mode);
    void *stub = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(stub != NULL && driver != NULL);
    alloc_fn stub_alloc = (alloc_fn)dlsym(stub, "cuMemAlloc_v2");
    free_fn stub_free = (free_fn)dlsym(stub, "cuMemFree_v2");
    expect_stub(stub_alloc, stub_free);
    alloc_fn driver_alloc = (alloc_fn)dlsym(driver, "cuMemAlloc_v2");
    free_fn driver_free = (free_fn)dlsym(driver, "cuMemFree_v2");
    CUresult (*init)(unsigned) = (CUresult (*)(unsigned))dlsym(driver, "cuInit");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult (*)(CUcontext *, CUdevice))dlsym(driver, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult (*)(CUcontext))dlsym(driver, "cuCtxSetCurrent");
    CUcontext ctx;
    OK(init(0));
    OK(retain(&ctx, 0));
    OK(set(ctx));
    CUdeviceptr p = 0;
    OK(driver_alloc(&p, 4096));
    EXPECT(p < STUB_BASE || p >= STUB_BASE + (1ull << 32));
    OK(driver_free(p));
    expect_stub(stub_alloc, stub_free);
    return 0;
}
