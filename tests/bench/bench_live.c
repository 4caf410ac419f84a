/* bench_live.c: many live allocations from few or many distinct call paths.
 *
 *   bench_live COUNT SITES [free]
 *
 * Makes COUNT cuMemAlloc_v2 allocations of 16 bytes spread round-robin over
 * SITES distinct native stacks (1 <= SITES <= 100000), keeps them live to the
 * end (or frees them all when "free" is given), then prints VmRSS and the
 * CLOCK_MONOTONIC time at the end of main, and returns. tests/bench/run.py
 * compares VmRSS with and without the shim (bytes per live allocation) and
 * takes the time from the end of main to the parent's wait (the report
 * written at exit).
 *
 * Distinct stacks without 100000 functions: ten level functions that differ
 * in a constant, LEVELS deep; at each level the decimal digit of the site
 * number picks which of the ten is called next, so the chain of return
 * addresses spells the site number: 10^5 = 100000 distinct stacks from 5
 * levels. The functions differ in their bodies so identical-code folding
 * cannot merge them. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEVELS 5
#define MAX_SITES 100000u

typedef int (*level_fn)(int level, unsigned site, CUdeviceptr *out);

static volatile unsigned sink;
static const unsigned digit_div[LEVELS] = { 1, 10, 100, 1000, 10000 };
static level_fn levels[10];

static __attribute__((noinline)) int leaf(CUdeviceptr *out)
{
    int rc = cuMemAlloc(out, 16) == CUDA_SUCCESS ? 0 : -1;
    __asm__ volatile("" ::: "memory");
    return rc;
}

#define LEVEL_FN(k)                                                          \
    static __attribute__((noinline)) int level_##k(int level, unsigned site, \
                                                   CUdeviceptr *out)         \
    {                                                                        \
        sink += k;                                                           \
        int rc;                                                              \
        if (level == LEVELS)                                                 \
            rc = leaf(out);                                                  \
        else                                                                 \
            rc = levels[(site / digit_div[level]) % 10](level + 1, site, out); \
        __asm__ volatile("" ::: "memory");                                   \
        return rc;                                                           \
    }
LEVEL_FN(0) LEVEL_FN(1) LEVEL_FN(2) LEVEL_FN(3) LEVEL_FN(4)
LEVEL_FN(5) LEVEL_FN(6) LEVEL_FN(7) LEVEL_FN(8) LEVEL_FN(9)

static long vm_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f != NULL)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_live COUNT SITES [free]\n");
        return 2;
    }
    long count = atol(argv[1]);
    unsigned sites = (unsigned)atol(argv[2]);
    int free_all = argc > 3 && strcmp(argv[3], "free") == 0;
    if (count < 1 || sites < 1 || sites > MAX_SITES) {
        fprintf(stderr, "bench_live: bad arguments\n");
        return 2;
    }
    level_fn all[10] = { level_0, level_1, level_2, level_3, level_4,
                         level_5, level_6, level_7, level_8, level_9 };
    memcpy(levels, all, sizeof all);
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS
        || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "bench_live: no driver\n");
        return 1;
    }
    CUdeviceptr *ptrs = malloc(sizeof *ptrs * (size_t)count);
    if (ptrs == NULL)
        return 1;
    long rss_before = vm_rss_kb();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < count; i++) {
        unsigned site = (unsigned)(i % sites);
        if (levels[site % 10](1, site, &ptrs[i]) != 0) {
            fprintf(stderr, "bench_live: allocation %ld failed\n", i);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (free_all)
        for (long i = 0; i < count; i++)
            cuMemFree(ptrs[i]);
    long rss = vm_rss_kb();
    free(ptrs);
    double alloc_ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    printf("rss_before_kb=%ld rss_kb=%ld alloc_ns_each=%.1f main_end_ns=%llu\n", rss_before, rss,
           alloc_ns / (double)count,
           (unsigned long long)end.tv_sec * 1000000000ull + (unsigned long long)end.tv_nsec);
    fflush(stdout);
    return 0;
}
