/* prog_errors.c MODE: failures and the process's own state.
 *
 *   oom      needs FAKECUDA_OOM_AFTER=N: N allocations of 1 MiB succeed and
 *            are freed; oom_attempt() then fails twice with
 *            CUDA_ERROR_OUT_OF_MEMORY (dptr untouched) and
 *            oom_managed_attempt() once for 4096 managed bytes
 *   zero     zero_size_attempt(): cuMemAlloc_v2 of 0 bytes,
 *            CUDA_ERROR_INVALID_VALUE
 *   unknown  three unknown frees, each CUDA_ERROR_INVALID_VALUE: a made-up
 *            device pointer, a double free, a made-up host pointer
 *   exit3    leak_before_exit() leaks 4096, then exit(3)
 *   errno    errno set before calls (succeeding and failing) is unchanged
 *            after them
 *
 * The fake driver's books after each run: prog_errors.expect.json.
 */
#include "progs.h"

#include <errno.h>

#define SENTINEL ((CUdeviceptr)0x5e17e1)

/* The failure must leave *dptr as the caller left it. */
__attribute__((noinline)) void oom_attempt(void)
{
    CUdeviceptr p = SENTINEL;
    CHECK(cuMemAlloc_v2(&p, 1 << 20), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(p == SENTINEL);
}

__attribute__((noinline)) void oom_managed_attempt(void)
{
    CUdeviceptr p = SENTINEL;
    CHECK(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(p == SENTINEL);
}

static void run_oom(void)
{
    const char *budget = getenv("FAKECUDA_OOM_AFTER");
    EXPECT(budget != NULL);
    long n = atol(budget);
    EXPECT(n >= 0 && n <= 64);
    CUdeviceptr kept[64];
    for (long i = 0; i < n; i++)
        OK(cuMemAlloc_v2(&kept[i], 1 << 20));
    for (int i = 0; i < 2; i++) /* one call site, so one failure site */
        oom_attempt();
    oom_managed_attempt();
    for (long i = 0; i < n; i++)
        OK(cuMemFree_v2(kept[i]));
}

__attribute__((noinline)) void zero_size_attempt(void)
{
    CUdeviceptr p = SENTINEL;
    CHECK(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p == SENTINEL);
}

__attribute__((noinline)) void free_unknown(void)
{
    int on_stack;
    CHECK(cuMemFree_v2((CUdeviceptr)0xdead0000), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree_v2(0)); /* a NULL free: no free at all, and not unknown */
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 4096));
    OK(cuMemFree_v2(p));
    CHECK(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFreeHost(&on_stack), CUDA_ERROR_INVALID_VALUE);
}

__attribute__((noinline)) void leak_before_exit(void)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 4096));
}

/* Each value is distinct so a call that restores the wrong saved errno is
 * told apart from one that leaves it alone. */
static void run_errno(void)
{
    CUdeviceptr p = 0, q = 0;
    errno = ENOTTY;
    OK(cuInit(0));
    EXPECT(errno == ENOTTY);
    CUcontext ctx;
    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxSetCurrent(ctx));
    errno = EDOM;
    OK(cuMemAlloc_v2(&p, 4096));
    EXPECT(errno == EDOM);
    errno = ERANGE;
    OK(cuMemAllocAsync(&q, 4096, NULL));
    EXPECT(errno == ERANGE);
    errno = EXDEV;
    OK(cuMemFreeAsync(q, NULL));
    EXPECT(errno == EXDEV);
    errno = ESPIPE;
    OK(cuMemFree_v2(p));
    EXPECT(errno == ESPIPE);
    errno = EROFS;
    CHECK(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
    EXPECT(errno == EROFS);
    errno = EMLINK;
    CHECK(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(errno == EMLINK);
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "");
    if (strcmp(mode, "errno") == 0) {
        run_errno();
        return 0;
    }
    use_primary(0);
    if (strcmp(mode, "oom") == 0)
        run_oom();
    else if (strcmp(mode, "zero") == 0)
        zero_size_attempt();
    else if (strcmp(mode, "unknown") == 0)
        free_unknown();
    else if (strcmp(mode, "exit3") == 0) {
        leak_before_exit();
        exit(3);
    } else
        return prog_bad_mode(mode);
    return 0;
}
