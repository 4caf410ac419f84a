/* unwind_probe.c: what a native stack costs on PyTorch's allocation path.
 *
 *   LD_PRELOAD=unwind_probe.so PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
 *       python3 gpu_train.py 100
 *
 * A diagnostic, not part of the shim: it defines cudaMallocAsync (an
 * unversioned definition in a preloaded object satisfies libc10_cuda's
 * versioned reference), and on each call, before forwarding to cudart's,
 * times two ways of taking the stack: unw_backtrace (what the shim calls:
 * libunwind's fast trace with its per-thread cache, which on a frame it
 * cannot trace starts again with an unw_step walk of the whole stack), and
 * that unw_step walk alone. When the two cost the same, the fast trace is
 * giving up on every call. It also times the shim's own unwinder
 * (shim/stacks/unwind.c, built in: cc ... unwind_probe.c shim/stacks/unwind.c -Ishim/stacks),
 * counts the calls where it gave up and where its frames differ from
 * unw_backtrace's, and counts the objects the frames are in.
 * At exit it prints "PROBE ..." lines on stderr. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unwind.h"

#define MAX_FRAMES 80
#define OBJECTS 24
#define SAMPLES 65536  /* unw_backtrace times kept, for the median */

typedef int (*malloc_async_fn)(void **, size_t, void *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t calls, frames_full, frames_slow, ns_full, ns_slow, ns_full_min = UINT64_MAX;
static struct { const char *object; uint64_t frames; } objects[OBJECTS];
static uint64_t samples[SAMPLES], own_samples[SAMPLES];
static uint64_t own_ns, own_gave_up, own_differs, own_frames, own_reused;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int slow_walk(void **out, int max)
{
    unw_context_t uc;
    unw_cursor_t cursor;
    unw_getcontext(&uc);
    if (unw_init_local(&cursor, &uc) < 0)
        return 0;
    int n = 0;
    while (n < max && unw_step(&cursor) > 0) {
        unw_word_t ip;
        unw_get_reg(&cursor, UNW_REG_IP, &ip);
        out[n++] = (void *)ip;
    }
    return n;
}

/* The shim's caching policy, so that the walk is timed as the shim's. */
__attribute__((constructor)) static void per_thread_cache(void)
{
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

/* Counts the frame at ip under its object (first call only: the stacks of
 * one loop repeat). */
static void note_object(uintptr_t ip)
{
    Dl_info info;
    const char *object = dladdr((void *)ip, &info) != 0 && info.dli_fname ? info.dli_fname : "?";
    for (int i = 0; i < OBJECTS; i++) {
        if (objects[i].object == NULL || strcmp(objects[i].object, object) == 0) {
            objects[i].object = object;
            objects[i].frames++;
            return;
        }
    }
}

static void probe(void)
{
    void *full[MAX_FRAMES], *slow[MAX_FRAMES];
    uintptr_t own[MAX_FRAMES + 1];
    uint64_t t0 = now_ns();
    int n_full = unw_backtrace(full, MAX_FRAMES);
    uint64_t t1 = now_ns();
    int n_slow = slow_walk(slow, MAX_FRAMES);
    uint64_t reused_before = unwind_counts().reused;
    uint64_t t2 = now_ns();
    int n_own = unwind_capture(own, MAX_FRAMES + 1);
    uint64_t t3 = now_ns();
    uint64_t reused = unwind_counts().reused - reused_before;
    /* unwind_capture's first two frames are in itself and here, where
     * unw_backtrace's first is here: from the caller on they must agree. */
    int differs = n_own >= 0 && n_own - 2 != n_full - 1;
    for (int i = 2; n_own >= 0 && !differs && i < n_own; i++)
        differs = own[i] != (uintptr_t)full[i - 1];
    pthread_mutex_lock(&lock);
    own_gave_up += n_own < 0;
    own_differs += differs;
    own_ns += t3 - t2;
    own_frames += n_own > 0 ? (uint64_t)n_own : 0;
    own_reused += reused;
    if (calls < 200)
        for (int i = 0; i < n_full; i++)
            note_object((uintptr_t)full[i]);
    calls++;
    ns_full += t1 - t0;
    ns_slow += t2 - t1;
    if (calls <= SAMPLES) {
        samples[calls - 1] = t1 - t0;
        own_samples[calls - 1] = t3 - t2;
    }
    if (t1 - t0 < ns_full_min)
        ns_full_min = t1 - t0;
    frames_full += (uint64_t)n_full;
    frames_slow += (uint64_t)n_slow;
    pthread_mutex_unlock(&lock);
}

int cudaMallocAsync(void **p, size_t size, void *stream)
{
    static malloc_async_fn real;
    if (real == NULL)
        real = (malloc_async_fn)dlsym(RTLD_NEXT, "cudaMallocAsync");
    probe();
    return real(p, size, stream);
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

__attribute__((destructor)) static void report(void)
{
    if (calls == 0) {
        fprintf(stderr, "PROBE no cudaMallocAsync call was seen\n");
        return;
    }
    fprintf(stderr, "PROBE calls=%llu\n", (unsigned long long)calls);
    size_t kept = calls < SAMPLES ? (size_t)calls : SAMPLES;
    qsort(samples, kept, sizeof samples[0], compare_u64);
    fprintf(stderr, "PROBE unw_backtrace: %.0f ns a call (fastest %llu, median %llu, 90th %llu), "
            "%.1f frames\n", (double)ns_full / (double)calls, (unsigned long long)ns_full_min,
            (unsigned long long)samples[kept / 2], (unsigned long long)samples[kept * 9 / 10],
            (double)frames_full / (double)calls);
    qsort(own_samples, kept, sizeof own_samples[0], compare_u64);
    fprintf(stderr, "PROBE shim unwinder: %.0f ns a call (median %llu, 90th %llu); gave up on "
            "%llu calls, frames differ from unw_backtrace's on %llu\n",
            (double)own_ns / (double)calls, (unsigned long long)own_samples[kept / 2],
            (unsigned long long)own_samples[kept * 9 / 10], (unsigned long long)own_gave_up,
            (unsigned long long)own_differs);
    fprintf(stderr, "PROBE shim unwinder: %.1f frames a call, %.1f of them reused from the "
            "thread's last stack\n", (double)own_frames / (double)calls,
            (double)own_reused / (double)calls);
    fprintf(stderr, "PROBE unw_step walk: %.0f ns a call, %.1f frames\n",
            (double)ns_slow / (double)calls, (double)frames_slow / (double)calls);
    for (int i = 0; i < OBJECTS && objects[i].object; i++)
        fprintf(stderr, "PROBE frames in %s: %llu (first 200 calls)\n", objects[i].object,
                (unsigned long long)objects[i].frames);
}
