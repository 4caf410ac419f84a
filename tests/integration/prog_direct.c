/* prog_direct.c: the -lcuda door, the exported driver symbols.
 *
 *   basic    leak_here() leaks 2 x 4096 from one site, leak_pitch() one
 *            pitched 1024 x 10 block, leak_big() 65536; alloc_and_free()
 *            allocates and frees 10 x 1 MiB (and checks the memory works)
 *   devices  (FAKECUDA_DEVICES=2) frees 3 x 4096 on device 0, leaks
 *            2 x 12288 on device 1 from leak_on_device1()
 *   legacy   the 32-bit cuMemAlloc/cuMemFree exports: legacy_direct_leak()
 *            leaks 2048, one more is allocated and freed
 *
 * The leaking functions are non-static and not inlined so that the test can
 * find them by name in the report's stacks.
 *
 * The fake driver's books after each run: prog_direct.expect.json.
 */
#include "progs.h"

#include <stdint.h>

/* The legacy ABI, hidden by cuda.h's macros. */
#undef cuMemAlloc
#undef cuMemFree
CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize);
CUresult cuMemFree(unsigned int dptr);

/* Allocates n bytes and keeps nothing of them: the leak the test looks for. */
__attribute__((noinline)) void leak_here(size_t n)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, n));
    EXPECT(p != 0);
}

__attribute__((noinline)) void leak_big(void)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 65536));
}

/* A pitched block: width 1000 rounds up to a pitch of 1024 on the fake, so
 * 10 rows are charged 10240 bytes. */
__attribute__((noinline)) void leak_pitch(void)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    OK(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4));
    EXPECT(pitch == 1024);
}

/* Balanced allocations, with a round trip through the memory so a shim
 * that hands back a wrong pointer is caught here. */
__attribute__((noinline)) void alloc_and_free(int count, size_t n)
{
    for (int i = 0; i < count; i++) {
        CUdeviceptr p = 0;
        unsigned char in[64], out[64];
        memset(in, i + 1, sizeof in);
        OK(cuMemAlloc_v2(&p, n));
        OK(cuMemcpyHtoD_v2(p, in, sizeof in));
        OK(cuMemcpyDtoH_v2(out, p, sizeof out));
        EXPECT(memcmp(in, out, sizeof in) == 0);
        OK(cuMemFree_v2(p));
    }
}

__attribute__((noinline)) void leak_on_device1(size_t n)
{
    CUdeviceptr p = 0;
    CUdevice dev = -1;
    OK(cuCtxGetDevice(&dev));
    EXPECT(dev == 1);
    OK(cuMemAlloc_v2(&p, n));
}

/* The 32-bit ABI: the pointer comes back in an unsigned int, so a shim
 * that forwards to the 64-bit entry point writes past it into the canary. */
__attribute__((noinline)) unsigned int legacy_alloc(unsigned int n)
{
    struct { unsigned int ptr; unsigned int canary; } slot = { 0, 0xC0FFEEu };
    OK(cuMemAlloc(&slot.ptr, n));
    EXPECT(slot.canary == 0xC0FFEEu);
    EXPECT(slot.ptr != 0);
    return slot.ptr;
}

__attribute__((noinline)) void legacy_direct_leak(void)
{
    unsigned int p = legacy_alloc(2048);
    OK(cuMemsetD8_v2((CUdeviceptr)p, 0x5a, 2048));
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "basic");
    if (strcmp(mode, "basic") == 0) {
        use_primary(0);
        for (int i = 0; i < 2; i++)
            leak_here(4096);
        leak_pitch();
        leak_big();
        alloc_and_free(10, 1 << 20);
    } else if (strcmp(mode, "devices") == 0) {
        int n = 0;
        use_primary(0);
        OK(cuDeviceGetCount(&n));
        EXPECT(n == 2);
        alloc_and_free(3, 4096);
        use_primary(1);
        for (int i = 0; i < 2; i++)
            leak_on_device1(12288);
    } else if (strcmp(mode, "legacy") == 0) {
        use_primary(0);
        legacy_direct_leak();
        OK(cuMemFree(legacy_alloc(512)));
    } else {
        return prog_bad_mode(mode);
    }
    return 0;
}
