/* bench_pairs.c: allocation+free pairs through the driver API, timed.
 *
 *   bench_pairs MODE DEPTH PAIRS THREADS [SIZE [PATHS]]
 *
 * MODE sync (cuMemAlloc_v2 + cuMemFree_v2) or async (cuMemAllocAsync +
 * cuMemFreeAsync on the thread's own stream). Each of THREADS threads first
 * recurses DEPTH frames (noinline, no sibling calls: every level is a real
 * frame on the stack), then does a warm-up, waits on a barrier with the
 * others, and does PAIRS pairs of SIZE bytes (default 256). PATHS "shared"
 * (the default) gives every thread the same call path, so one site; "own"
 * gives each thread its own (levels 2-9 pick one of two functions by a bit
 * of the thread's number), as threads doing different work have;
 * "alternating" makes each pair through 8 more frames under one of two
 * callers, taken in turn, so that a capture must step those frames again
 * where the outer ones stay (the way a training step's allocations differ
 * in their inner frames only). Run with and
 * without LD_PRELOAD=libgpuleak.so over the fake driver; tests/bench/run.py
 * takes the difference.
 *
 * Prints one line: "ns_per_pair=<per thread> pairs_per_s=<all threads>
 * wall_ns=<first start to last end>".
 *
 * BENCH_CHUNKS=N splits each thread's timed pairs into N chunks, between
 * timed chains of dependent adds, and adds "core_ns=<median ns an add>"
 * and "chunks=<add ns>:<pair ns>,..." (every thread's chunks, thread by
 * thread; a chunk's add ns the slower of the chains before and after it)
 * to the line; ns_per_pair is then the threads' mean time a pair
 * in the chunks alone, and pairs_per_s the threads' pairs at that speed.
 * On a host whose cores are shared (the H200 machine's vCPUs run dependent
 * adds at 0.36 or 0.7 ns from one moment to the next) the pairs' speed
 * follows the core's; tests/bench/run.py keeps the chunks measured at the
 * core's full speed apart. */
#define _GNU_SOURCE
#include <cuda.h>
#include "core_speed.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARMUP_PAIRS 2000
#define MAX_CHUNKS 1000

typedef struct worker {
    pthread_t thread;
    int async;
    int depth;
    unsigned path;        /* bits choosing the function at levels 2 to 9 */
    int alternating;      /* each pair under 8 more frames, their caller alternating */
    long pairs;
    size_t size;
    CUcontext ctx;
    pthread_barrier_t *start;
    uint64_t t0, t1;
    uint64_t busy_ns;        /* chunked: the time in pairs alone */
    int chunks;              /* BENCH_CHUNKS, 0 for one timed stretch */
    double *add_ns, *pair_ns;  /* per chunk, when chunked */
    int failed;
} worker_t;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define DIE(...) do { fprintf(stderr, "bench_pairs: " __VA_ARGS__); exit(1); } while (0)

static int one_pair(worker_t *w, CUstream s)
{
    CUdeviceptr p = 0;
    if (w->async)
        return cuMemAllocAsync(&p, w->size, s) != CUDA_SUCCESS || cuMemFreeAsync(p, s) != CUDA_SUCCESS;
    return cuMemAlloc(&p, w->size) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS;
}

#define ALTERNATING_FRAMES 8

/* Real frames, as recurse_a and recurse_b below; under_a and under_b are
 * the two callers, the same frame apart from their return addresses. */
static volatile int inner_marks[3];

static __attribute__((noinline)) int inner(worker_t *w, CUstream s, int level)
{
    int rc = level <= 1 ? one_pair(w, s) : inner(w, s, level - 1);
    inner_marks[0] = level;
    return rc;
}

static __attribute__((noinline)) int under_a(worker_t *w, CUstream s)
{
    int rc = inner(w, s, ALTERNATING_FRAMES - 1);
    inner_marks[1] = 1;
    return rc;
}

static __attribute__((noinline)) int under_b(worker_t *w, CUstream s)
{
    int rc = inner(w, s, ALTERNATING_FRAMES - 1);
    inner_marks[2] = 2;
    return rc;
}

static int pairs(worker_t *w, CUstream s, long n)
{
    for (long i = 0; i < n; i++) {
        int failed = !w->alternating ? one_pair(w, s) : (i & 1) ? under_b(w, s) : under_a(w, s);
        if (failed)
            return -1;
    }
    return 0;
}

/* w->pairs pairs in w->chunks chunks, the core's speed measured between
 * them and at both ends; a chunk's is the slower of the two measures
 * around it, so that a core that slowed down during the chunk is seen.
 * Every thread starts each chunk's pairs together, so that threads meet
 * in the shim as often as unchunked. */
static int chunked_pairs(worker_t *w, CUstream s)
{
    uint64_t busy = 0;
    double before = core_speed_ns_per_add();
    for (int c = 0; c < w->chunks; c++) {
        long n = w->pairs / w->chunks + (c < w->pairs % w->chunks);
        pthread_barrier_wait(w->start);
        uint64_t t = now_ns();
        if (pairs(w, s, n) != 0)
            return -1;
        uint64_t took = now_ns() - t;
        double after = core_speed_ns_per_add();
        w->add_ns[c] = before > after ? before : after;
        w->pair_ns[c] = (double)took / (double)n;
        busy += took;
        before = after;
    }
    w->busy_ns = busy;
    return 0;
}

/* The innermost frame: warm up, line up with the other threads, time. */
static __attribute__((noinline)) int body(worker_t *w)
{
    CUstream s = NULL;
    if (w->async && cuStreamCreate(&s, 0) != CUDA_SUCCESS)
        return -1;
    if (pairs(w, s, WARMUP_PAIRS) != 0)
        return -1;
    pthread_barrier_wait(w->start);
    w->t0 = now_ns();
    int rc = w->chunks > 0 ? chunked_pairs(w, s) : pairs(w, s, w->pairs);
    w->t1 = now_ns();
    if (s != NULL)
        cuStreamDestroy(s);
    return rc;
}

static int recurse_a(worker_t *w, int level);
static int recurse_b(worker_t *w, int level);

/* The next level down, through the function the thread's path picks. */
static int descend(worker_t *w, int level)
{
    if (level <= 1)
        return body(w);
    unsigned bit = level >= 2 && level <= 9 ? (w->path >> (level - 2)) & 1 : 0;
    return bit ? recurse_b(w, level - 1) : recurse_a(w, level - 1);
}

/* One real frame per level: the call is not in tail position (the barrier
 * after it), and noinline keeps the compiler from folding levels. The two
 * bodies differ by a constant, so identical-code folding keeps both. */
static volatile int level_marks[2];

static __attribute__((noinline)) int recurse_a(worker_t *w, int level)
{
    int rc = descend(w, level);
    level_marks[0] = 1;
    return rc;
}

static __attribute__((noinline)) int recurse_b(worker_t *w, int level)
{
    int rc = descend(w, level);
    level_marks[1] = 2;
    return rc;
}

static void *run_worker(void *arg)
{
    worker_t *w = arg;
    if (cuCtxSetCurrent(w->ctx) != CUDA_SUCCESS) {
        w->failed = 1;
        return NULL;
    }
    w->failed = recurse_a(w, w->depth) != 0;
    return NULL;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 5)
        DIE("usage: bench_pairs sync|async DEPTH PAIRS THREADS [SIZE [shared|own|alternating]]\n");
    int async = strcmp(argv[1], "async") == 0;
    if (!async && strcmp(argv[1], "sync") != 0)
        DIE("unknown mode %s\n", argv[1]);
    int depth = atoi(argv[2]);
    long npairs = atol(argv[3]);
    int nthreads = atoi(argv[4]);
    size_t size = argc > 5 ? (size_t)atol(argv[5]) : 256;
    int own_paths = argc > 6 && strcmp(argv[6], "own") == 0;
    int alternating = argc > 6 && strcmp(argv[6], "alternating") == 0;
    if (argc > 6 && !own_paths && !alternating && strcmp(argv[6], "shared") != 0)
        DIE("unknown paths %s\n", argv[6]);
    if (depth < 1 || npairs < 1 || nthreads < 1 || nthreads > 256 || size == 0)
        DIE("bad arguments\n");
    const char *chunks_env = getenv("BENCH_CHUNKS");
    char *chunks_end = NULL;
    long chunks = chunks_env ? strtol(chunks_env, &chunks_end, 10) : 0;
    if ((chunks_env != NULL && (*chunks_env == '\0' || *chunks_end != '\0'))
        || chunks < 0 || chunks > MAX_CHUNKS || chunks > npairs)
        DIE("BENCH_CHUNKS must be a number from 0 to %d and at most PAIRS\n", MAX_CHUNKS);
    size_t all_chunks = (size_t)chunks * (size_t)nthreads;
    double *add_ns = calloc(all_chunks + 1, sizeof *add_ns);
    double *pair_ns = calloc(all_chunks + 1, sizeof *pair_ns);
    if (add_ns == NULL || pair_ns == NULL)
        DIE("out of memory\n");

    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)
        DIE("no driver\n");
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    worker_t *w = calloc((size_t)nthreads, sizeof *w);
    if (w == NULL)
        DIE("out of memory\n");
    for (int i = 0; i < nthreads; i++) {
        w[i] = (worker_t){ .async = async, .depth = depth, .pairs = npairs, .size = size,
                           .ctx = ctx, .start = &start, .path = own_paths ? (unsigned)i : 0,
                           .alternating = alternating, .chunks = (int)chunks,
                           .add_ns = add_ns + (size_t)i * chunks,
                           .pair_ns = pair_ns + (size_t)i * chunks };
        /* Deep recursion at 256 frames fits easily in the default stack. */
        if (pthread_create(&w[i].thread, NULL, run_worker, &w[i]) != 0)
            DIE("pthread_create failed\n");
    }
    uint64_t first = UINT64_MAX, last = 0;
    double busy = 0;  /* chunked: the threads' time in pairs, summed */
    for (int i = 0; i < nthreads; i++) {
        pthread_join(w[i].thread, NULL);
        if (w[i].failed)
            DIE("a driver call failed in thread %d\n", i);
        if (w[i].t0 < first)
            first = w[i].t0;
        if (w[i].t1 > last)
            last = w[i].t1;
        busy += (double)w[i].busy_ns;
    }
    double wall = (double)(last - first);
    double per_pair = chunks > 0 ? busy / nthreads / (double)npairs : wall / (double)npairs;
    printf("ns_per_pair=%.2f pairs_per_s=%.0f wall_ns=%.0f",
           per_pair, nthreads * 1e9 / per_pair, wall);
    if (chunks > 0) {
        double *sorted = malloc(all_chunks * sizeof *sorted);
        if (sorted == NULL)
            DIE("out of memory\n");
        memcpy(sorted, add_ns, all_chunks * sizeof *sorted);
        qsort(sorted, all_chunks, sizeof *sorted, compare_doubles);
        printf(" core_ns=%.4f chunks=", sorted[all_chunks / 2]);
        for (size_t c = 0; c < all_chunks; c++)
            printf("%s%.4f:%.2f", c ? "," : "", add_ns[c], pair_ns[c]);
        free(sorted);
    }
    printf("\n");
    free(add_ns);
    free(pair_ns);
    free(w);
    cuDevicePrimaryCtxRelease(0);
    return 0;
}
