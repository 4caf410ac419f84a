/* fakecuda.c: a fake libcuda.so.1 for testing gpuleak without a GPU.
 *
 * "Device" memory is host memory, so a test program can allocate, copy and
 * free exactly as it would on a GPU. The fake keeps its own books (which
 * allocations are live, how many calls each entry point got) and writes them
 * at exit when FAKECUDA_COUNTS names a file, so a test can check the shim's
 * report against an account the shim had no part in.
 *
 * Environment:
 *   FAKECUDA_DEVICES=N     devices reported (1..16, default 1)
 *   FAKECUDA_OOM_AFTER=N   after N successful allocations of any family,
 *                          every allocation fails with CUDA_ERROR_OUT_OF_MEMORY
 *   FAKECUDA_COUNTS=path   write the JSON account to path at exit
 *   FAKECUDA_BOOKLESS=1    cuMemAlloc_v2 and cuMemFree_v2 keep no books and
 *                          take no lock: addresses are made up per thread
 *                          and never backed. For the thread benchmark, so
 *                          that the driver under the shim scales like a
 *                          real one and what does not scale is the shim's.
 *
 * Test hook: fakecuda_raise_at_pool_query(sig) (see below).
 *
 * Every exported name is an alias of a static function, and the
 * cuGetProcAddress table holds the static addresses. Taking the address of
 * an exported function from inside a shared object yields whatever the
 * dynamic linker bound the name to, which under LD_PRELOAD is the shim's
 * wrapper; the table must hand out the fake's own code, like the real driver.
 * For the same reason the fake never calls its own exported names. */
#define _GNU_SOURCE
#include "report_format.h"

#include <cuda.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* cuda.h maps the base names to their newest ABI; the fake also exports the
 * legacy ABIs under the base names, so those macros must go. */
#undef cuMemAlloc
#undef cuMemAllocPitch
#undef cuMemFree
#undef cuMemAllocHost
#undef cuArrayCreate
#undef cuArray3DCreate
#undef cuCtxDestroy
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuGetProcAddress
#undef cuCtxCreate

#define FK_EXPORT(name, impl) \
    extern __typeof__(impl) name __attribute__((alias(#impl), visibility("default")));

#define FK_MAX_DEVICES 16
#define FK_STACK_MAX 64
#define FK_GRANULARITY ((size_t)2 << 20)
#define FK_TOTAL_MEM ((size_t)80 << 30)
#define FK_PITCH_ALIGN 512
/* VMM handles are numbers, not addresses: put them where no user-space
 * address lives, so they never collide with a malloc'd key in the table. */
#define FK_VMM_HANDLE_BASE (UINT64_C(1) << 62)

/* Legacy (pre-3.2) array descriptors: 32-bit sizes. */
typedef struct {
    unsigned int Width, Height;
    CUarray_format Format;
    unsigned int NumChannels;
} fk_array_desc_v1;

typedef struct {
    unsigned int Width, Height, Depth;
    CUarray_format Format;
    unsigned int NumChannels, Flags;
} fk_array3d_desc_v1;

/* The entry points whose calls are counted: every allocation, free, map and
 * teardown function, each ABI under its own name. */
#define FK_COUNTED(X)                                                       \
    X(cuMemAlloc) X(cuMemAlloc_v2) X(cuMemAllocPitch) X(cuMemAllocPitch_v2) \
    X(cuMemFree) X(cuMemFree_v2)                                            \
    X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)                              \
    X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz)              \
    X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)                                \
    X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap)                \
    X(cuMemAddressReserve) X(cuMemAddressFree)                              \
    X(cuMemAllocManaged) X(cuMemAllocHost) X(cuMemAllocHost_v2)             \
    X(cuMemHostAlloc) X(cuMemFreeHost)                                      \
    X(cuArrayCreate) X(cuArrayCreate_v2) X(cuArray3DCreate)                 \
    X(cuArray3DCreate_v2) X(cuArrayDestroy)                                 \
    X(cuCtxDestroy) X(cuCtxDestroy_v2)                                      \
    X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRelease_v2)            \
    X(cuDevicePrimaryCtxReset) X(cuDevicePrimaryCtxReset_v2)

#define FK_ENUM(name) FN_##name,
#define FK_NAME(name) #name,
enum { FK_COUNTED(FK_ENUM) FN_COUNT };
static const char *const fn_names[FN_COUNT] = { FK_COUNTED(FK_NAME) };

/* The report's kinds (common/report_format.h), of which a driver makes all
 * but the last, PyTorch's tensors. */
#define K_COUNT REPORT_KIND_tensor
static const char *const kind_names[REPORT_KIND_COUNT] = { REPORT_KINDS(REPORT_KIND_NAME) };
#define KM(k) (1u << (k))

enum { B_MALLOC, B_CALLOC, B_MMAP32, B_NONE };

typedef struct fk_ctx {
    int device;
    atomic_int alive; /* read unlocked by every allocation, so atomic */
    int primary;
    int refcount;            /* primary contexts only */
    struct fk_ctx *all_next; /* every context ever made stays reachable */
} fk_ctx;

typedef struct rec {
    uint64_t key;
    struct rec *next;
    size_t bytes;    /* what the caller is charged (pitch * height, ...) */
    size_t mem_len;  /* what backs it (mmap length for 32-bit allocations) */
    int kind, device, backing, fn;
    fk_ctx *ctx;     /* NULL for VMM handles: they outlive contexts */
    int released;    /* VMM: cuMemRelease called, kept while mapped */
    int maps;        /* VMM: live mappings of this handle */
} rec_t;

typedef struct range {
    uint64_t va;
    size_t size;
    uint64_t handle; /* mappings only */
    struct range *next;
} range_t;

typedef struct fk_stream { fk_ctx *ctx; } fk_stream;
typedef struct fk_pool { int device; int is_default; struct fk_pool *next; } fk_pool;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static rec_t **g_buckets;
static size_t g_nbuckets;
static unsigned g_bucket_bits;
static size_t g_count;
static uint64_t g_vmm_next;
static range_t *g_reservations, *g_mappings;
static fk_pool *g_pools;
static fk_ctx *g_all_ctx;
static fk_ctx g_primary[FK_MAX_DEVICES];
static fk_pool g_default_pool[FK_MAX_DEVICES];

static int g_bookless;       /* FAKECUDA_BOOKLESS: see the top */
static _Atomic uint64_t g_bookless_threads;

/* A bookless allocation's address: unique per thread (the thread's number
 * in the top bits), never backed by memory. */
static uint64_t bookless_address(void)
{
    static __thread uint64_t thread_base, next;
    if (thread_base == 0)
        thread_base = (atomic_fetch_add(&g_bookless_threads, 1) + 1) << 40;
    next += 256;
    return thread_base + next;
}

/* Books kept under g_lock. */
static unsigned long long g_live[K_COUNT], g_live_bytes[K_COUNT];
static unsigned long long g_dev_live[FK_MAX_DEVICES], g_dev_live_bytes[FK_MAX_DEVICES];
static unsigned long long g_dev_allocs[FK_MAX_DEVICES], g_dev_frees[FK_MAX_DEVICES];
static unsigned long long g_dev_peak[FK_MAX_DEVICES];
static unsigned long long g_allocs[K_COUNT], g_alloc_bytes[K_COUNT], g_frees[K_COUNT];
static unsigned long long g_kind_peak[K_COUNT], g_live_total, g_peak_total;
static unsigned long long g_gpu_live, g_gpu_peak; /* every kind but pinned host */
static unsigned long long g_teardown_allocs[FN_COUNT], g_teardown_bytes[FN_COUNT];
static unsigned long long g_successes; /* all families, for FAKECUDA_OOM_AFTER */

static atomic_ullong g_calls[FN_COUNT], g_succeeded[FN_COUNT];
static atomic_ullong g_unknown_frees, g_oom_failures;
static atomic_int g_inited;

static int g_ndevices = 1;
static long long g_oom_after = -1;
static const char *g_counts_path;

static __thread fk_ctx *tls_stack[FK_STACK_MAX];
static __thread int tls_depth;

/* fork while another thread holds g_lock would leave the child's copy
 * locked for good: hold it across fork, so both sides start unlocked. */
static void fk_before_fork(void) { pthread_mutex_lock(&g_lock); }
static void fk_after_fork(void) { pthread_mutex_unlock(&g_lock); }

/* Reads the environment once at load, before any program code can call in,
 * so every entry point sees the same settings without locking. */
__attribute__((constructor)) static void fk_load(void)
{
    const char *s = getenv("FAKECUDA_DEVICES");
    if (s && *s) {
        long n = strtol(s, NULL, 10);
        if (n >= 0 && n <= FK_MAX_DEVICES)
            g_ndevices = (int)n;
    }
    s = getenv("FAKECUDA_OOM_AFTER");
    if (s && *s)
        g_oom_after = strtoll(s, NULL, 10);
    s = getenv("FAKECUDA_COUNTS");
    if (s && *s)
        g_counts_path = s;
    s = getenv("FAKECUDA_BOOKLESS");
    g_bookless = s && strcmp(s, "1") == 0;
    pthread_atfork(fk_before_fork, fk_after_fork, fk_after_fork);
    for (int d = 0; d < FK_MAX_DEVICES; d++) {
        g_primary[d].device = d;
        g_primary[d].primary = 1;
        g_default_pool[d].device = d;
        g_default_pool[d].is_default = 1;
    }
}

/* Fibonacci hashing: allocator addresses share their low bits, so the
 * multiply spreads them across buckets. Caller holds g_lock. */
static size_t bucket_of(uint64_t key)
{
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - g_bucket_bits));
}

/* Doubles the table when it is full, so chains stay short under the
 * 16-thread stress test. A failed resize keeps the old table: lookups stay
 * correct, just slower. Caller holds g_lock. */
static void table_grow(void)
{
    unsigned bits = g_nbuckets ? g_bucket_bits + 1 : 10;
    size_t n = (size_t)1 << bits;
    rec_t **nb = calloc(n, sizeof *nb);
    if (!nb)
        return;
    size_t old_n = g_nbuckets;
    rec_t **old = g_buckets;
    g_buckets = nb;
    g_nbuckets = n;
    g_bucket_bits = bits;
    for (size_t i = 0; i < old_n; i++) {
        for (rec_t *r = old[i], *next; r; r = next) {
            next = r->next;
            size_t b = bucket_of(r->key);
            r->next = nb[b];
            nb[b] = r;
        }
    }
    free(old);
}

/* Caller holds g_lock. */
static void table_insert(rec_t *r)
{
    if (g_count >= g_nbuckets)
        table_grow();
    size_t b = bucket_of(r->key);
    r->next = g_buckets[b];
    g_buckets[b] = r;
    g_count++;
}

/* Returns the record for key or NULL. Caller holds g_lock. */
static rec_t *table_find(uint64_t key)
{
    if (!g_nbuckets)
        return NULL;
    for (rec_t *r = g_buckets[bucket_of(key)]; r; r = r->next)
        if (r->key == key)
            return r;
    return NULL;
}

/* Unlinks r (which must be in the table). Caller holds g_lock. */
static void table_remove(rec_t *r)
{
    rec_t **p = &g_buckets[bucket_of(r->key)];
    while (*p != r)
        p = &(*p)->next;
    *p = r->next;
    g_count--;
}

/* Enters a new allocation in the live books and raises the peaks, which
 * are exact because every change happens under the one lock. The per-device
 * books leave host memory out. Caller holds g_lock. */
static void books_add(const rec_t *r)
{
    g_successes++;
    g_allocs[r->kind]++;
    g_alloc_bytes[r->kind] += r->bytes;
    g_live[r->kind]++;
    g_live_bytes[r->kind] += r->bytes;
    g_live_total += r->bytes;
    if (g_live_bytes[r->kind] > g_kind_peak[r->kind])
        g_kind_peak[r->kind] = g_live_bytes[r->kind];
    if (g_live_total > g_peak_total)
        g_peak_total = g_live_total;
    /* Pinned host memory is in host RAM: no device holds it. */
    if (r->kind == REPORT_KIND_host)
        return;
    g_gpu_live += r->bytes;
    if (g_gpu_live > g_gpu_peak)
        g_gpu_peak = g_gpu_live;
    g_dev_live[r->device]++;
    g_dev_live_bytes[r->device] += r->bytes;
    g_dev_allocs[r->device]++;
    if (g_dev_live_bytes[r->device] > g_dev_peak[r->device])
        g_dev_peak[r->device] = g_dev_live_bytes[r->device];
}

/* Moves r's bytes out of the live books: on free, release or teardown
 * (explicit frees are also counted by the caller). Caller holds g_lock. */
static void books_drop(const rec_t *r)
{
    g_live[r->kind]--;
    g_live_bytes[r->kind] -= r->bytes;
    g_live_total -= r->bytes;
    if (r->kind != REPORT_KIND_host) {
        g_gpu_live -= r->bytes;
        g_dev_live[r->device]--;
        g_dev_live_bytes[r->device] -= r->bytes;
    }
}

/* Returns the backing memory of a record that has left the table. */
static void release_memory(rec_t *r)
{
    if (r->backing == B_MALLOC || r->backing == B_CALLOC)
        free((void *)(uintptr_t)r->key);
    else if (r->backing == B_MMAP32)
        munmap((void *)(uintptr_t)r->key, r->mem_len);
    free(r);
}

/* Creates one allocation of any family and enters it in the books. fn is
 * the entry point charged with the success; bytes is what the caller is
 * charged, mem_len what backs it. FAKECUDA_OOM_AFTER is checked under the
 * lock after the memory is obtained, so the budget is exact across threads.
 * On failure *key_out is untouched and errno is as the caller left it. */
static CUresult track_new(int fn, int kind, size_t bytes, size_t mem_len, int backing,
                          fk_ctx *ctx, int device, uint64_t *key_out)
{
    int saved_errno = errno;
    rec_t *r = malloc(sizeof *r);
    void *mem = NULL;
    if (!r)
        goto oom;
    if (backing == B_MALLOC)
        mem = malloc(mem_len);
    else if (backing == B_CALLOC)
        mem = calloc(1, mem_len);
    else if (backing == B_MMAP32) {
        long page = sysconf(_SC_PAGESIZE);
        mem_len = (mem_len + (size_t)page - 1) & ~((size_t)page - 1);
        mem = mmap(NULL, mem_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
        if (mem == MAP_FAILED)
            mem = NULL;
    }
    if (backing != B_NONE && !mem) {
        free(r);
        goto oom;
    }
    *r = (rec_t){ .bytes = bytes, .mem_len = mem_len, .kind = kind, .device = device,
                  .backing = backing, .fn = fn, .ctx = ctx };
    pthread_mutex_lock(&g_lock);
    if (g_oom_after >= 0 && g_successes >= (unsigned long long)g_oom_after) {
        pthread_mutex_unlock(&g_lock);
        r->key = (uint64_t)(uintptr_t)mem;
        if (backing == B_NONE)
            free(r);
        else
            release_memory(r);
        goto oom;
    }
    r->key = backing == B_NONE ? FK_VMM_HANDLE_BASE + ++g_vmm_next : (uint64_t)(uintptr_t)mem;
    table_insert(r);
    books_add(r);
    uint64_t key = r->key; /* r may be torn down by another thread once unlocked */
    pthread_mutex_unlock(&g_lock);
    atomic_fetch_add(&g_succeeded[fn], 1);
    *key_out = key;
    errno = saved_errno;
    return CUDA_SUCCESS;
oom:
    atomic_fetch_add(&g_oom_failures, 1);
    errno = saved_errno;
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Frees the allocation at key if it is live and of a kind in kinds; anything
 * else (never given out, already freed, wrong family) is an unknown free and
 * returns CUDA_ERROR_INVALID_VALUE, as the driver does. */
static CUresult track_free(int fn, uint64_t key, unsigned kinds)
{
    if (key == 0)
        return CUDA_SUCCESS; /* as the real driver: freeing NULL does nothing */
    int saved_errno = errno;
    pthread_mutex_lock(&g_lock);
    rec_t *r = table_find(key);
    if (!r || !(kinds & KM(r->kind)) || r->released) {
        pthread_mutex_unlock(&g_lock);
        atomic_fetch_add(&g_unknown_frees, 1);
        errno = saved_errno;
        return CUDA_ERROR_INVALID_VALUE;
    }
    books_drop(r);
    g_frees[r->kind]++;
    if (r->kind != REPORT_KIND_host)
        g_dev_frees[r->device]++;
    if (r->kind == REPORT_KIND_vmm && r->maps > 0) {
        /* Released but still mapped: the memory lives until the last unmap,
         * but the handle is gone, so it leaves the live books now. */
        r->released = 1;
        r = NULL;
    } else {
        table_remove(r);
    }
    pthread_mutex_unlock(&g_lock);
    if (r)
        release_memory(r);
    atomic_fetch_add(&g_succeeded[fn], 1);
    errno = saved_errno;
    return CUDA_SUCCESS;
}

/* Frees everything still live in ctx, the way the driver does when a
 * context is destroyed or reset, charging it to fn in the teardown books.
 * VMM handles belong to the process, not a context, and survive. */
static void teardown(fk_ctx *ctx, int fn)
{
    int saved_errno = errno;
    rec_t *dead = NULL;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nbuckets; i++) {
        for (rec_t **p = &g_buckets[i]; *p;) {
            rec_t *r = *p;
            if (r->ctx == ctx && r->kind != REPORT_KIND_vmm) {
                *p = r->next;
                g_count--;
                books_drop(r);
                g_teardown_allocs[fn]++;
                g_teardown_bytes[fn] += r->bytes;
                r->next = dead;
                dead = r;
            } else {
                p = &r->next;
            }
        }
    }
    pthread_mutex_unlock(&g_lock);
    while (dead) {
        rec_t *next = dead->next;
        release_memory(dead);
        dead = next;
    }
    errno = saved_errno;
}

static fk_ctx *tls_current(void)
{
    return tls_depth ? tls_stack[tls_depth - 1] : NULL;
}

/* The calling thread's usable context, or the error the driver gives when
 * there is none: allocations need one. */
static CUresult current_ctx(fk_ctx **out)
{
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    fk_ctx *c = tls_current();
    if (!c || !c->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = c;
    return CUDA_SUCCESS;
}

/* The context a stream belongs to; the special handles (NULL, legacy,
 * per-thread) mean the calling thread's current context. */
static CUresult stream_ctx(CUstream s, fk_ctx **out)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return current_ctx(out);
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    fk_ctx *c = ((fk_stream *)s)->ctx;
    if (!c || !c->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = c;
    return CUDA_SUCCESS;
}

static int valid_device(CUdevice d)
{
    return d >= 0 && d < g_ndevices;
}

/* True when [addr, addr+n) lies inside memory the fake handed out (a live
 * allocation or a mapped VMM range), so copies never touch stray memory. */
static int range_is_backed(uint64_t addr, size_t n)
{
    int ok = 0;
    pthread_mutex_lock(&g_lock);
    rec_t *r = table_find(addr);
    if (r && r->backing != B_NONE && n <= r->mem_len) {
        ok = 1;
    } else {
        for (size_t i = 0; i < g_nbuckets && !ok; i++)
            for (rec_t *q = g_buckets[i]; q && !ok; q = q->next)
                if (q->backing != B_NONE && addr >= q->key && addr - q->key <= q->mem_len &&
                    n <= q->mem_len - (addr - q->key))
                    ok = 1;
        for (range_t *m = g_mappings; m && !ok; m = m->next)
            if (addr >= m->va && addr - m->va <= m->size && n <= m->size - (addr - m->va))
                ok = 1;
    }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

/* ---- initialisation, devices ------------------------------------------ */

/* Flags must be 0, as for the driver. */
static CUresult impl_cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&g_inited, 1);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuInit, impl_cuInit)

/* Reports CUDA 13.0, the toolkit the shim is built against; works before
 * cuInit, as the driver's does. */
static CUresult impl_cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDriverGetVersion, impl_cuDriverGetVersion)

static CUresult impl_cuDeviceGetCount(int *n)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    *n = g_ndevices;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDeviceGetCount, impl_cuDeviceGetCount)

static CUresult impl_cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDeviceGet, impl_cuDeviceGet)

static CUresult impl_cuDeviceGetName(char *name, int len, CUdevice dev)
{
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "fakecuda device %d", dev);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDeviceGetName, impl_cuDeviceGetName)

static CUresult impl_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = FK_TOTAL_MEM;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDeviceTotalMem_v2, impl_cuDeviceTotalMem_v2)

/* ---- contexts ----------------------------------------------------------- */

/* Pushes c on the calling thread's stack, as cuCtxCreate and
 * cuCtxPushCurrent do. */
static CUresult tls_push(fk_ctx *c)
{
    if (tls_depth >= FK_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tls_stack[tls_depth++] = c;
    return CUDA_SUCCESS;
}

/* Shared body of every cuCtxCreate ABI: a new context on dev, made current. */
static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fk_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->device = dev;
    c->alive = 1;
    CUresult rc = tls_push(c);
    if (rc != CUDA_SUCCESS) {
        free(c);
        return rc;
    }
    pthread_mutex_lock(&g_lock);
    c->all_next = g_all_ctx;
    g_all_ctx = c;
    pthread_mutex_unlock(&g_lock);
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

/* CUDA 12.5+ ABI; the parameters (affinity, CIG) have no meaning here. */
static CUresult impl_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
                                    unsigned int flags, CUdevice dev)
{
    (void)params;
    (void)flags;
    return ctx_create(pctx, dev);
}
FK_EXPORT(cuCtxCreate_v4, impl_cuCtxCreate_v4)

/* CUDA 11.4-12.4 ABI, handed out by cuGetProcAddress for those versions. */
static CUresult impl_cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params,
                                    int nparams, unsigned int flags, CUdevice dev)
{
    (void)params;
    (void)nparams;
    (void)flags;
    return ctx_create(pctx, dev);
}
FK_EXPORT(cuCtxCreate_v3, impl_cuCtxCreate_v3)

static CUresult impl_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    return ctx_create(pctx, dev);
}
FK_EXPORT(cuCtxCreate_v2, impl_cuCtxCreate_v2)

/* Destroys a created context and frees what is live in it. Primary
 * contexts are refused: they go through Release/Reset. Other threads that
 * still have it current see CUDA_ERROR_INVALID_CONTEXT afterwards. */
static CUresult ctx_destroy(int fn, CUcontext ctx)
{
    atomic_fetch_add(&g_calls[fn], 1);
    fk_ctx *c = (fk_ctx *)ctx;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!c || !c->alive || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    teardown(c, fn);
    c->alive = 0;
    int keep = 0;
    for (int i = 0; i < tls_depth; i++)
        if (tls_stack[i] != c)
            tls_stack[keep++] = tls_stack[i];
    tls_depth = keep;
    atomic_fetch_add(&g_succeeded[fn], 1);
    return CUDA_SUCCESS;
}

static CUresult impl_cuCtxDestroy_v2(CUcontext ctx) { return ctx_destroy(FN_cuCtxDestroy_v2, ctx); }
FK_EXPORT(cuCtxDestroy_v2, impl_cuCtxDestroy_v2)
static CUresult impl_cuCtxDestroy(CUcontext ctx) { return ctx_destroy(FN_cuCtxDestroy, ctx); }
FK_EXPORT(cuCtxDestroy, impl_cuCtxDestroy)

/* Replaces the top of the thread's stack (pushes on an empty one); NULL
 * unbinds the current context. */
static CUresult impl_cuCtxSetCurrent(CUcontext ctx)
{
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    fk_ctx *c = (fk_ctx *)ctx;
    if (!c) {
        if (tls_depth)
            tls_depth--;
        return CUDA_SUCCESS;
    }
    if (!c->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tls_depth)
        tls_stack[tls_depth - 1] = c;
    else
        tls_stack[tls_depth++] = c;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuCtxSetCurrent, impl_cuCtxSetCurrent)

static CUresult impl_cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    *pctx = (CUcontext)tls_current();
    return CUDA_SUCCESS;
}
FK_EXPORT(cuCtxGetCurrent, impl_cuCtxGetCurrent)

static CUresult impl_cuCtxGetDevice(CUdevice *dev)
{
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    fk_ctx *c;
    CUresult rc = current_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    *dev = c->device;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuCtxGetDevice, impl_cuCtxGetDevice)

static CUresult impl_cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    fk_ctx *c = (fk_ctx *)ctx;
    if (!c || !c->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    return tls_push(c);
}
FK_EXPORT(cuCtxPushCurrent_v2, impl_cuCtxPushCurrent_v2)

static CUresult impl_cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!tls_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    fk_ctx *c = tls_stack[--tls_depth];
    if (pctx)
        *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuCtxPopCurrent_v2, impl_cuCtxPopCurrent_v2)

/* Nothing is ever in flight, so synchronising only checks for a context. */
static CUresult impl_cuCtxSynchronize(void)
{
    fk_ctx *c;
    return current_ctx(&c);
}
FK_EXPORT(cuCtxSynchronize, impl_cuCtxSynchronize)

static CUresult impl_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&g_lock);
    g_primary[dev].refcount++;
    g_primary[dev].alive = 1;
    pthread_mutex_unlock(&g_lock);
    *pctx = (CUcontext)&g_primary[dev];
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDevicePrimaryCtxRetain, impl_cuDevicePrimaryCtxRetain)

/* Active means retained and not reset since: what cudart and the shim
 * ask before touching the primary context. Flags are always 0. */
static CUresult impl_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&g_lock);
    *active = g_primary[dev].alive;
    pthread_mutex_unlock(&g_lock);
    *flags = 0;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDevicePrimaryCtxGetState, impl_cuDevicePrimaryCtxGetState)

/* Drops one reference; the last one destroys the primary context and
 * frees what is live in it, as the driver does. */
static CUresult primary_release(int fn, CUdevice dev)
{
    atomic_fetch_add(&g_calls[fn], 1);
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fk_ctx *c = &g_primary[dev];
    pthread_mutex_lock(&g_lock);
    int last = 0;
    if (c->refcount == 0) {
        pthread_mutex_unlock(&g_lock);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--c->refcount == 0) {
        c->alive = 0;
        last = 1;
    }
    pthread_mutex_unlock(&g_lock);
    if (last)
        teardown(c, fn);
    atomic_fetch_add(&g_succeeded[fn], 1);
    return CUDA_SUCCESS;
}

static CUresult impl_cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release(FN_cuDevicePrimaryCtxRelease_v2, dev); }
FK_EXPORT(cuDevicePrimaryCtxRelease_v2, impl_cuDevicePrimaryCtxRelease_v2)
static CUresult impl_cuDevicePrimaryCtxRelease(CUdevice dev) { return primary_release(FN_cuDevicePrimaryCtxRelease, dev); }
FK_EXPORT(cuDevicePrimaryCtxRelease, impl_cuDevicePrimaryCtxRelease)

/* Destroys the primary context whatever its reference count, freeing what
 * is live in it; a later Retain brings it back under the same handle. */
static CUresult primary_reset(int fn, CUdevice dev)
{
    atomic_fetch_add(&g_calls[fn], 1);
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fk_ctx *c = &g_primary[dev];
    pthread_mutex_lock(&g_lock);
    c->refcount = 0;
    c->alive = 0;
    pthread_mutex_unlock(&g_lock);
    teardown(c, fn);
    atomic_fetch_add(&g_succeeded[fn], 1);
    return CUDA_SUCCESS;
}

static CUresult impl_cuDevicePrimaryCtxReset_v2(CUdevice dev) { return primary_reset(FN_cuDevicePrimaryCtxReset_v2, dev); }
FK_EXPORT(cuDevicePrimaryCtxReset_v2, impl_cuDevicePrimaryCtxReset_v2)
static CUresult impl_cuDevicePrimaryCtxReset(CUdevice dev) { return primary_reset(FN_cuDevicePrimaryCtxReset, dev); }
FK_EXPORT(cuDevicePrimaryCtxReset, impl_cuDevicePrimaryCtxReset)

/* ---- streams ------------------------------------------------------------ */

static CUresult impl_cuStreamCreate(CUstream *ps, unsigned int flags)
{
    (void)flags;
    if (!ps)
        return CUDA_ERROR_INVALID_VALUE;
    fk_ctx *c;
    CUresult rc = current_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    fk_stream *s = malloc(sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = c;
    *ps = (CUstream)s;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuStreamCreate, impl_cuStreamCreate)

static CUresult impl_cuStreamDestroy_v2(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    free(s);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuStreamDestroy_v2, impl_cuStreamDestroy_v2)

static CUresult impl_cuStreamSynchronize(CUstream s)
{
    fk_ctx *c;
    return stream_ctx(s, &c);
}
FK_EXPORT(cuStreamSynchronize, impl_cuStreamSynchronize)

/* ---- errors ------------------------------------------------------------- */

static const struct { CUresult code; const char *name, *text; } error_table[] = {
    { CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
    { CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
    { CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
    { CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
    { CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
};

/* Unknown codes give CUDA_ERROR_INVALID_VALUE and a NULL string, like the
 * driver, so callers that print the string must cope. */
static CUresult error_lookup(CUresult code, const char **out, int want_name)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++) {
        if (error_table[i].code == code) {
            *out = want_name ? error_table[i].name : error_table[i].text;
            return CUDA_SUCCESS;
        }
    }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult impl_cuGetErrorString(CUresult e, const char **s) { return error_lookup(e, s, 0); }
FK_EXPORT(cuGetErrorString, impl_cuGetErrorString)
static CUresult impl_cuGetErrorName(CUresult e, const char **s) { return error_lookup(e, s, 1); }
FK_EXPORT(cuGetErrorName, impl_cuGetErrorName)

/* The fake has no private tables to hand out. NVIDIA's runtime asks for
 * them first thing (static or shared: nvcc's default), and without them
 * every call of the program fails with error 801; once, the fake says why
 * and what runs instead (tests/fakecuda/fakecudart.c, README). */
static CUresult impl_cuGetExportTable(const void **table, const CUuuid *id)
{
    static atomic_int told;
    static const CUuuid none;
    if (id && memcmp(id, &none, sizeof none) != 0 && atomic_exchange(&told, 1) == 0)
        fputs("fakecuda: NVIDIA's CUDA runtime cannot run over the fake driver (its calls fail"
              " with error 801); build with -cudart shared and keep build/fakecuda first in"
              " LD_LIBRARY_PATH, so that the fake runtime serves it (README: Trying it without"
              " a GPU)\n", stderr);
    if (table)
        *table = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}
FK_EXPORT(cuGetExportTable, impl_cuGetExportTable)

/* ---- device memory ------------------------------------------------------ */

/* Free is the total less what is live on the context's device. */
static CUresult impl_cuMemGetInfo_v2(size_t *freeb, size_t *total)
{
    fk_ctx *c;
    CUresult rc = current_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!freeb || !total)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    unsigned long long used = g_dev_live_bytes[c->device];
    pthread_mutex_unlock(&g_lock);
    *total = FK_TOTAL_MEM;
    *freeb = used >= FK_TOTAL_MEM ? 0 : FK_TOTAL_MEM - (size_t)used;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemGetInfo_v2, impl_cuMemGetInfo_v2)

/* Shared body of the linear device allocations: counts the call, checks
 * the arguments the driver checks, and serves the bytes. low32 asks for an
 * address below 4 GiB, which the 32-bit legacy ABI needs. */
static CUresult device_alloc(int fn, uint64_t *out, size_t bytes, int low32)
{
    if (!g_bookless)
        atomic_fetch_add(&g_calls[fn], 1);
    if (!out || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    fk_ctx *c;
    CUresult rc = current_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (g_bookless && fn == FN_cuMemAlloc_v2) {
        *out = bookless_address();
        return CUDA_SUCCESS;
    }
    return track_new(fn, REPORT_KIND_device, bytes, bytes, low32 ? B_MMAP32 : B_MALLOC, c, c->device, out);
}

static CUresult impl_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    uint64_t key;
    CUresult rc = device_alloc(FN_cuMemAlloc_v2, dptr ? &key : NULL, bytesize, 0);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)key;
    return rc;
}
FK_EXPORT(cuMemAlloc_v2, impl_cuMemAlloc_v2)

/* The pre-3.2 ABI: 32-bit pointer and size. */
static CUresult impl_cuMemAlloc_v1(unsigned int *dptr, unsigned int bytesize)
{
    uint64_t key;
    CUresult rc = device_alloc(FN_cuMemAlloc, dptr ? &key : NULL, bytesize, 1);
    if (rc == CUDA_SUCCESS)
        *dptr = (unsigned int)key;
    return rc;
}
FK_EXPORT(cuMemAlloc, impl_cuMemAlloc_v1)

/* Rows are padded to FK_PITCH_ALIGN and the caller is charged
 * pitch * height, what the memory really occupies. Element sizes other
 * than 4, 8 and 16 are refused, as by the driver. */
static CUresult pitch_args(size_t width, size_t height, unsigned elem, size_t *pitch)
{
    if (width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (width + FK_PITCH_ALIGN - 1) / FK_PITCH_ALIGN * FK_PITCH_ALIGN;
    return CUDA_SUCCESS;
}

static CUresult impl_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t width,
                                        size_t height, unsigned int elem)
{
    size_t pitch = 0;
    if (!dptr || !pPitch || pitch_args(width, height, elem, &pitch) != CUDA_SUCCESS) {
        atomic_fetch_add(&g_calls[FN_cuMemAllocPitch_v2], 1);
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t key;
    CUresult rc = device_alloc(FN_cuMemAllocPitch_v2, &key, pitch * height, 0);
    if (rc == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)key;
        *pPitch = pitch;
    }
    return rc;
}
FK_EXPORT(cuMemAllocPitch_v2, impl_cuMemAllocPitch_v2)

static CUresult impl_cuMemAllocPitch_v1(unsigned int *dptr, unsigned int *pPitch,
                                        unsigned int width, unsigned int height,
                                        unsigned int elem)
{
    size_t pitch = 0;
    if (!dptr || !pPitch || pitch_args(width, height, elem, &pitch) != CUDA_SUCCESS ||
        pitch * height > UINT32_MAX) {
        atomic_fetch_add(&g_calls[FN_cuMemAllocPitch], 1);
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t key;
    CUresult rc = device_alloc(FN_cuMemAllocPitch, &key, pitch * height, 1);
    if (rc == CUDA_SUCCESS) {
        *dptr = (unsigned int)key;
        *pPitch = (unsigned int)pitch;
    }
    return rc;
}
FK_EXPORT(cuMemAllocPitch, impl_cuMemAllocPitch_v1)

/* cuMemFree takes linear, managed and stream-ordered memory, as the
 * driver's does (it synchronises for the last). */
#define FREE_KINDS (KM(REPORT_KIND_device) | KM(REPORT_KIND_pool) | KM(REPORT_KIND_managed))

static CUresult impl_cuMemFree_v2(CUdeviceptr dptr)
{
    if (g_bookless)
        return CUDA_SUCCESS;  /* as the books would for NULL, too */
    atomic_fetch_add(&g_calls[FN_cuMemFree_v2], 1);
    return track_free(FN_cuMemFree_v2, dptr, FREE_KINDS);
}
FK_EXPORT(cuMemFree_v2, impl_cuMemFree_v2)

static CUresult impl_cuMemFree_v1(unsigned int dptr)
{
    atomic_fetch_add(&g_calls[FN_cuMemFree], 1);
    return track_free(FN_cuMemFree, dptr, FREE_KINDS);
}
FK_EXPORT(cuMemFree, impl_cuMemFree_v1)

/* ---- stream-ordered (pool) memory -------------------------------------- */

static int pool_is_known(fk_pool *p)
{
    if (!p)
        return 0;
    for (int d = 0; d < g_ndevices; d++)
        if (p == &g_default_pool[d])
            return 1;
    int found = 0;
    pthread_mutex_lock(&g_lock);
    for (fk_pool *q = g_pools; q && !found; q = q->next)
        found = q == p;
    pthread_mutex_unlock(&g_lock);
    return found;
}

/* Shared body of the four stream-ordered allocation entry points; the
 * _ptsz twins differ only in the counter they charge. The allocation
 * belongs to the stream's context, so tearing that down frees it. */
static CUresult pool_alloc(int fn, CUdeviceptr *dptr, size_t bytes, fk_pool *pool,
                           int need_pool, CUstream s)
{
    atomic_fetch_add(&g_calls[fn], 1);
    if (!dptr || bytes == 0 || (need_pool && !pool_is_known(pool)))
        return CUDA_ERROR_INVALID_VALUE;
    fk_ctx *c;
    CUresult rc = stream_ctx(s, &c);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t key;
    rc = track_new(fn, REPORT_KIND_pool, bytes, bytes, B_MALLOC, c, c->device, &key);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)key;
    return rc;
}

static CUresult impl_cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s)
{
    return pool_alloc(FN_cuMemAllocAsync, dptr, n, NULL, 0, s);
}
FK_EXPORT(cuMemAllocAsync, impl_cuMemAllocAsync)

static CUresult impl_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s)
{
    return pool_alloc(FN_cuMemAllocAsync_ptsz, dptr, n, NULL, 0, s);
}
FK_EXPORT(cuMemAllocAsync_ptsz, impl_cuMemAllocAsync_ptsz)

static CUresult impl_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool p, CUstream s)
{
    return pool_alloc(FN_cuMemAllocFromPoolAsync, dptr, n, (fk_pool *)p, 1, s);
}
FK_EXPORT(cuMemAllocFromPoolAsync, impl_cuMemAllocFromPoolAsync)

static CUresult impl_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool p, CUstream s)
{
    return pool_alloc(FN_cuMemAllocFromPoolAsync_ptsz, dptr, n, (fk_pool *)p, 1, s);
}
FK_EXPORT(cuMemAllocFromPoolAsync_ptsz, impl_cuMemAllocFromPoolAsync_ptsz)

/* Stream-ordered free of pool memory (and of cuMemAlloc memory, which the
 * driver also accepts). */
static CUresult pool_free(int fn, CUdeviceptr dptr, CUstream s)
{
    atomic_fetch_add(&g_calls[fn], 1);
    fk_ctx *c;
    CUresult rc = stream_ctx(s, &c);
    if (rc != CUDA_SUCCESS)
        return rc;
    return track_free(fn, dptr, KM(REPORT_KIND_pool) | KM(REPORT_KIND_device));
}

static CUresult impl_cuMemFreeAsync(CUdeviceptr dptr, CUstream s) { return pool_free(FN_cuMemFreeAsync, dptr, s); }
FK_EXPORT(cuMemFreeAsync, impl_cuMemFreeAsync)
static CUresult impl_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) { return pool_free(FN_cuMemFreeAsync_ptsz, dptr, s); }
FK_EXPORT(cuMemFreeAsync_ptsz, impl_cuMemFreeAsync_ptsz)

static CUresult impl_cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *out = (CUmemoryPool)&g_default_pool[dev];
    return CUDA_SUCCESS;
}
FK_EXPORT(cuDeviceGetDefaultMemPool, impl_cuDeviceGetDefaultMemPool)

/* The current pool is the default one: the fake has no cuDeviceSetMemPool. */
static CUresult impl_cuDeviceGetMemPool(CUmemoryPool *out, CUdevice dev)
{
    return impl_cuDeviceGetDefaultMemPool(out, dev);
}
FK_EXPORT(cuDeviceGetMemPool, impl_cuDeviceGetMemPool)

static _Atomic int g_pool_query_signal;

/* A test's hook, not a driver function: the next cuMemPoolGetAttribute
 * raises sig in its caller first (-sig: sends it to the process with
 * kill, as another process's `kill -SIG` does). The shim asks it in the
 * last timeline point of the report at exit: a signal landing there lands
 * in the middle of that report, every time. */
__attribute__((visibility("default"))) void fakecuda_raise_at_pool_query(int sig)
{
    atomic_store(&g_pool_query_signal, sig);
}

/* The fake's model of a pool's reservation: every live pool byte, rounded
 * up to 2 MiB chunks, as reserved by device 0's default pool (the only one
 * the tests allocate from); other attributes are not supported. */
static CUresult impl_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    int sig = atomic_exchange(&g_pool_query_signal, 0);
    if (sig > 0)
        raise(sig);
    else if (sig < 0)
        kill(getpid(), -sig);
    if (!value || pool != (CUmemoryPool)&g_default_pool[0])
        return CUDA_ERROR_INVALID_VALUE;
    if (attr != CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&g_lock);
    unsigned long long live = g_live_bytes[REPORT_KIND_pool];
    pthread_mutex_unlock(&g_lock);
    unsigned long long chunk = 2ull << 20;
    *(cuuint64_t *)value = (live + chunk - 1) / chunk * chunk;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemPoolGetAttribute, impl_cuMemPoolGetAttribute)

/* Only pinned pools on a device, the one combination the driver requires. */
static CUresult impl_cuMemPoolCreate(CUmemoryPool *out, const CUmemPoolProps *props)
{
    if (!out || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(props->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    fk_pool *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->device = props->location.id;
    pthread_mutex_lock(&g_lock);
    p->next = g_pools;
    g_pools = p;
    pthread_mutex_unlock(&g_lock);
    *out = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemPoolCreate, impl_cuMemPoolCreate)

/* Like the driver, outstanding allocations from the pool stay valid: the
 * fake's records do not point at the pool, so it can go at once. */
static CUresult impl_cuMemPoolDestroy(CUmemoryPool pool)
{
    fk_pool *p = (fk_pool *)pool;
    pthread_mutex_lock(&g_lock);
    fk_pool **pp = &g_pools;
    while (*pp && *pp != p)
        pp = &(*pp)->next;
    if (!*pp) {
        pthread_mutex_unlock(&g_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pp = p->next;
    pthread_mutex_unlock(&g_lock);
    free(p);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemPoolDestroy, impl_cuMemPoolDestroy)

/* ---- virtual memory management ----------------------------------------- */

static CUresult impl_cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!g || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *g = FK_GRANULARITY;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemGetAllocationGranularity, impl_cuMemGetAllocationGranularity)

/* A handle is only a number: its memory is whatever reservation it is
 * mapped into. Sizes must be multiples of the granularity, as for the
 * driver, and the handle is charged to prop's device. */
static CUresult impl_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags)
{
    atomic_fetch_add(&g_calls[FN_cuMemCreate], 1);
    if (!handle || !prop || flags != 0 || size == 0 || size % FK_GRANULARITY != 0 ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    uint64_t key;
    CUresult rc = track_new(FN_cuMemCreate, REPORT_KIND_vmm, size, 0, B_NONE, NULL, prop->location.id, &key);
    if (rc == CUDA_SUCCESS)
        *handle = key;
    return rc;
}
FK_EXPORT(cuMemCreate, impl_cuMemCreate)

/* The handle leaves the books at once; if it is still mapped its record
 * stays until the last cuMemUnmap (the driver frees the memory then). */
static CUresult impl_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    atomic_fetch_add(&g_calls[FN_cuMemRelease], 1);
    return track_free(FN_cuMemRelease, handle, KM(REPORT_KIND_vmm));
}
FK_EXPORT(cuMemRelease, impl_cuMemRelease)

/* Reserves address space backed by zero pages, so mapped ranges can really
 * be written. The hint address and alignment are ignored. */
static CUresult impl_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags)
{
    (void)alignment;
    (void)addr;
    atomic_fetch_add(&g_calls[FN_cuMemAddressReserve], 1);
    if (!ptr || size == 0 || size % FK_GRANULARITY != 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_load(&g_inited))
        return CUDA_ERROR_NOT_INITIALIZED;
    int saved_errno = errno;
    void *va = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    range_t *r = va == MAP_FAILED ? NULL : malloc(sizeof *r);
    if (!r) {
        if (va != MAP_FAILED)
            munmap(va, size);
        errno = saved_errno;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->va = (uint64_t)(uintptr_t)va;
    r->size = size;
    r->handle = 0;
    pthread_mutex_lock(&g_lock);
    r->next = g_reservations;
    g_reservations = r;
    pthread_mutex_unlock(&g_lock);
    atomic_fetch_add(&g_succeeded[FN_cuMemAddressReserve], 1);
    *ptr = (CUdeviceptr)r->va;
    errno = saved_errno;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemAddressReserve, impl_cuMemAddressReserve)

/* Frees a whole reservation; one with mappings left in it is refused. */
static CUresult impl_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    atomic_fetch_add(&g_calls[FN_cuMemAddressFree], 1);
    int saved_errno = errno;
    pthread_mutex_lock(&g_lock);
    range_t **pp = &g_reservations;
    while (*pp && ((*pp)->va != ptr || (*pp)->size != size))
        pp = &(*pp)->next;
    range_t *r = *pp;
    int busy = 0;
    for (range_t *m = g_mappings; r && m; m = m->next)
        if (m->va >= r->va && m->va - r->va < r->size)
            busy = 1;
    if (!r || busy) {
        pthread_mutex_unlock(&g_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pp = r->next;
    pthread_mutex_unlock(&g_lock);
    munmap((void *)(uintptr_t)r->va, r->size);
    free(r);
    atomic_fetch_add(&g_succeeded[FN_cuMemAddressFree], 1);
    errno = saved_errno;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemAddressFree, impl_cuMemAddressFree)

/* Maps [offset, offset+size) of a live handle at ptr, which must lie in a
 * reservation and not overlap another mapping. */
static CUresult impl_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    atomic_fetch_add(&g_calls[FN_cuMemMap], 1);
    if (flags != 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    range_t *m = malloc(sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    rec_t *r = table_find(handle);
    int in_reservation = 0, overlaps = 0;
    for (range_t *v = g_reservations; v; v = v->next)
        if (ptr >= v->va && ptr - v->va < v->size && size <= v->size - (ptr - v->va))
            in_reservation = 1;
    for (range_t *q = g_mappings; q; q = q->next)
        if (ptr < q->va + q->size && q->va < ptr + size)
            overlaps = 1;
    if (r && r->kind == REPORT_KIND_vmm && !r->released && offset <= r->bytes &&
        size <= r->bytes - offset && in_reservation && !overlaps) {
        m->va = ptr;
        m->size = size;
        m->handle = handle;
        m->next = g_mappings;
        g_mappings = m;
        r->maps++;
        m = NULL;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&g_lock);
    free(m);
    if (rc == CUDA_SUCCESS)
        atomic_fetch_add(&g_succeeded[FN_cuMemMap], 1);
    return rc;
}
FK_EXPORT(cuMemMap, impl_cuMemMap)

/* Unmaps every mapping inside [ptr, ptr+size); a handle released earlier
 * is freed with its last mapping. Nothing there is an error. */
static CUresult impl_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    atomic_fetch_add(&g_calls[FN_cuMemUnmap], 1);
    int found = 0;
    rec_t *dead = NULL;
    pthread_mutex_lock(&g_lock);
    for (range_t **pp = &g_mappings; *pp;) {
        range_t *m = *pp;
        if (m->va >= ptr && m->va - ptr < size && m->size <= size - (m->va - ptr)) {
            *pp = m->next;
            rec_t *r = table_find(m->handle);
            if (r && --r->maps == 0 && r->released) {
                table_remove(r);
                r->next = dead;
                dead = r;
            }
            free(m);
            found = 1;
        } else {
            pp = &m->next;
        }
    }
    pthread_mutex_unlock(&g_lock);
    while (dead) {
        rec_t *next = dead->next;
        release_memory(dead);
        dead = next;
    }
    if (!found)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&g_succeeded[FN_cuMemUnmap], 1);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemUnmap, impl_cuMemUnmap)

/* Access is always granted; the range must start at a mapping, so a test
 * that forgets to map fails here as it would on a GPU. */
static CUresult impl_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                    size_t count)
{
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int found = 0;
    pthread_mutex_lock(&g_lock);
    for (range_t *m = g_mappings; m && !found; m = m->next)
        found = m->va == ptr;
    pthread_mutex_unlock(&g_lock);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FK_EXPORT(cuMemSetAccess, impl_cuMemSetAccess)

/* ---- managed, host and array memory ------------------------------------ */

static CUresult impl_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags)
{
    atomic_fetch_add(&g_calls[FN_cuMemAllocManaged], 1);
    if (!dptr || bytes == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    fk_ctx *c;
    CUresult rc = current_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t key;
    rc = track_new(FN_cuMemAllocManaged, REPORT_KIND_managed, bytes, bytes, B_CALLOC, c, c->device, &key);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)key;
    return rc;
}
FK_EXPORT(cuMemAllocManaged, impl_cuMemAllocManaged)

/* Pinned host memory belongs to a context in the driver, so it needs one
 * here too. */
static CUresult host_alloc(int fn, void **pp, size_t bytes)
{
    atomic_fetch_add(&g_calls[fn], 1);
    if (!pp || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    fk_ctx *c;
    CUresult rc = current_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t key;
    rc = track_new(fn, REPORT_KIND_host, bytes, bytes, B_MALLOC, c, c->device, &key);
    if (rc == CUDA_SUCCESS)
        *pp = (void *)(uintptr_t)key;
    return rc;
}

static CUresult impl_cuMemAllocHost_v2(void **pp, size_t n) { return host_alloc(FN_cuMemAllocHost_v2, pp, n); }
FK_EXPORT(cuMemAllocHost_v2, impl_cuMemAllocHost_v2)
static CUresult impl_cuMemAllocHost_v1(void **pp, unsigned int n) { return host_alloc(FN_cuMemAllocHost, pp, n); }
FK_EXPORT(cuMemAllocHost, impl_cuMemAllocHost_v1)

static CUresult impl_cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    (void)flags;
    return host_alloc(FN_cuMemHostAlloc, pp, n);
}
FK_EXPORT(cuMemHostAlloc, impl_cuMemHostAlloc)

static CUresult impl_cuMemFreeHost(void *p)
{
    atomic_fetch_add(&g_calls[FN_cuMemFreeHost], 1);
    return track_free(FN_cuMemFreeHost, (uint64_t)(uintptr_t)p, KM(REPORT_KIND_host));
}
FK_EXPORT(cuMemFreeHost, impl_cuMemFreeHost)

/* Bytes per channel of the classic formats; 0 (refused) for the packed
 * and block-compressed ones the fake does not model. */
static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

/* Shared body of every array ABI: bytes are width * height * depth *
 * channels * format size, a height or depth of 0 counting as 1 (1D and 2D
 * arrays), the estimate the report documents. */
static CUresult array_create(int fn, CUarray *out, size_t w, size_t h, size_t d,
                             CUarray_format format, unsigned channels)
{
    atomic_fetch_add(&g_calls[fn], 1);
    size_t fb = format_bytes(format);
    if (!out || w == 0 || fb == 0 || (channels != 1 && channels != 2 && channels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = w * (h ? h : 1) * (d ? d : 1) * channels * fb;
    fk_ctx *c;
    CUresult rc = current_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t key;
    rc = track_new(fn, REPORT_KIND_array, bytes, bytes, B_CALLOC, c, c->device, &key);
    if (rc == CUDA_SUCCESS)
        *out = (CUarray)(uintptr_t)key;
    return rc;
}

static CUresult impl_cuArrayCreate_v2(CUarray *out, const CUDA_ARRAY_DESCRIPTOR *a)
{
    if (!a) {
        atomic_fetch_add(&g_calls[FN_cuArrayCreate_v2], 1);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return array_create(FN_cuArrayCreate_v2, out, a->Width, a->Height, 1, a->Format, a->NumChannels);
}
FK_EXPORT(cuArrayCreate_v2, impl_cuArrayCreate_v2)

static CUresult impl_cuArrayCreate_v1(CUarray *out, const fk_array_desc_v1 *a)
{
    if (!a) {
        atomic_fetch_add(&g_calls[FN_cuArrayCreate], 1);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return array_create(FN_cuArrayCreate, out, a->Width, a->Height, 1, a->Format, a->NumChannels);
}
FK_EXPORT(cuArrayCreate, impl_cuArrayCreate_v1)

static CUresult impl_cuArray3DCreate_v2(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *a)
{
    if (!a) {
        atomic_fetch_add(&g_calls[FN_cuArray3DCreate_v2], 1);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return array_create(FN_cuArray3DCreate_v2, out, a->Width, a->Height, a->Depth, a->Format,
                        a->NumChannels);
}
FK_EXPORT(cuArray3DCreate_v2, impl_cuArray3DCreate_v2)

static CUresult impl_cuArray3DCreate_v1(CUarray *out, const fk_array3d_desc_v1 *a)
{
    if (!a) {
        atomic_fetch_add(&g_calls[FN_cuArray3DCreate], 1);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return array_create(FN_cuArray3DCreate, out, a->Width, a->Height, a->Depth, a->Format,
                        a->NumChannels);
}
FK_EXPORT(cuArray3DCreate, impl_cuArray3DCreate_v1)

static CUresult impl_cuArrayDestroy(CUarray a)
{
    atomic_fetch_add(&g_calls[FN_cuArrayDestroy], 1);
    return track_free(FN_cuArrayDestroy, (uint64_t)(uintptr_t)a, KM(REPORT_KIND_array));
}
FK_EXPORT(cuArrayDestroy, impl_cuArrayDestroy)

/* ---- copies ------------------------------------------------------------- */

/* Copies refuse ranges the fake never handed out, so a pointer mangled by
 * a wrong ABI fails loudly instead of scribbling on the test's memory. */
static CUresult impl_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    if (!src || !range_is_backed(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemcpyHtoD_v2, impl_cuMemcpyHtoD_v2)

static CUresult impl_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    if (!dst || !range_is_backed(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemcpyDtoH_v2, impl_cuMemcpyDtoH_v2)

static CUresult impl_cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
    if (!range_is_backed(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, v, n);
    return CUDA_SUCCESS;
}
FK_EXPORT(cuMemsetD8_v2, impl_cuMemsetD8_v2)

/* ---- cuGetProcAddress --------------------------------------------------- */

/* One row per ABI of a base name: the version that introduced it and its
 * function, plus the per-thread-default-stream twin where one exists. A
 * lookup takes the newest row not newer than the caller's cudaVersion. */
typedef struct {
    const char *name;
    int version;
    void *fn;
    void *fn_ptsz;
} proc_row;

static CUresult impl_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status);
static CUresult impl_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags);

#define ROW(name, ver, fn) { name, ver, (void *)(fn), NULL }
#define ROWP(name, ver, fn, ptsz) { name, ver, (void *)(fn), (void *)(ptsz) }
static const proc_row proc_table[] = {
    ROW("cuInit", 2000, impl_cuInit),
    ROW("cuDriverGetVersion", 2020, impl_cuDriverGetVersion),
    ROW("cuDeviceGet", 2000, impl_cuDeviceGet),
    ROW("cuDeviceGetCount", 2000, impl_cuDeviceGetCount),
    ROW("cuDeviceGetName", 2000, impl_cuDeviceGetName),
    ROW("cuDeviceTotalMem", 3020, impl_cuDeviceTotalMem_v2),
    ROW("cuCtxCreate", 3020, impl_cuCtxCreate_v2),
    ROW("cuCtxCreate", 11040, impl_cuCtxCreate_v3),
    ROW("cuCtxCreate", 12050, impl_cuCtxCreate_v4),
    ROW("cuCtxDestroy", 2000, impl_cuCtxDestroy),
    ROW("cuCtxDestroy", 4000, impl_cuCtxDestroy_v2),
    ROW("cuCtxSetCurrent", 4000, impl_cuCtxSetCurrent),
    ROW("cuCtxGetCurrent", 4000, impl_cuCtxGetCurrent),
    ROW("cuCtxGetDevice", 2000, impl_cuCtxGetDevice),
    ROW("cuCtxPushCurrent", 4000, impl_cuCtxPushCurrent_v2),
    ROW("cuCtxPopCurrent", 4000, impl_cuCtxPopCurrent_v2),
    ROW("cuCtxSynchronize", 2000, impl_cuCtxSynchronize),
    ROW("cuDevicePrimaryCtxRetain", 7000, impl_cuDevicePrimaryCtxRetain),
    ROW("cuDevicePrimaryCtxGetState", 7000, impl_cuDevicePrimaryCtxGetState),
    ROW("cuDevicePrimaryCtxRelease", 7000, impl_cuDevicePrimaryCtxRelease),
    ROW("cuDevicePrimaryCtxRelease", 11000, impl_cuDevicePrimaryCtxRelease_v2),
    ROW("cuDevicePrimaryCtxReset", 7000, impl_cuDevicePrimaryCtxReset),
    ROW("cuDevicePrimaryCtxReset", 11000, impl_cuDevicePrimaryCtxReset_v2),
    ROW("cuStreamCreate", 2000, impl_cuStreamCreate),
    ROW("cuStreamDestroy", 4000, impl_cuStreamDestroy_v2),
    ROW("cuStreamSynchronize", 2000, impl_cuStreamSynchronize),
    ROW("cuGetErrorString", 6000, impl_cuGetErrorString),
    ROW("cuGetErrorName", 6000, impl_cuGetErrorName),
    ROW("cuGetExportTable", 3000, impl_cuGetExportTable),
    ROW("cuGetProcAddress", 11030, impl_cuGetProcAddress_v1),
    ROW("cuGetProcAddress", 12000, impl_cuGetProcAddress_v2),
    ROW("cuMemGetInfo", 3020, impl_cuMemGetInfo_v2),
    ROW("cuMemAlloc", 2000, impl_cuMemAlloc_v1),
    ROW("cuMemAlloc", 3020, impl_cuMemAlloc_v2),
    ROW("cuMemAllocPitch", 2000, impl_cuMemAllocPitch_v1),
    ROW("cuMemAllocPitch", 3020, impl_cuMemAllocPitch_v2),
    ROW("cuMemFree", 2000, impl_cuMemFree_v1),
    ROW("cuMemFree", 3020, impl_cuMemFree_v2),
    ROWP("cuMemAllocAsync", 11020, impl_cuMemAllocAsync, impl_cuMemAllocAsync_ptsz),
    ROWP("cuMemAllocFromPoolAsync", 11020, impl_cuMemAllocFromPoolAsync,
         impl_cuMemAllocFromPoolAsync_ptsz),
    ROWP("cuMemFreeAsync", 11020, impl_cuMemFreeAsync, impl_cuMemFreeAsync_ptsz),
    ROW("cuDeviceGetDefaultMemPool", 11020, impl_cuDeviceGetDefaultMemPool),
    ROW("cuDeviceGetMemPool", 11020, impl_cuDeviceGetMemPool),
    ROW("cuMemPoolGetAttribute", 11020, impl_cuMemPoolGetAttribute),
    ROW("cuMemPoolCreate", 11020, impl_cuMemPoolCreate),
    ROW("cuMemPoolDestroy", 11020, impl_cuMemPoolDestroy),
    ROW("cuMemCreate", 10020, impl_cuMemCreate),
    ROW("cuMemRelease", 10020, impl_cuMemRelease),
    ROW("cuMemAddressReserve", 10020, impl_cuMemAddressReserve),
    ROW("cuMemAddressFree", 10020, impl_cuMemAddressFree),
    ROW("cuMemMap", 10020, impl_cuMemMap),
    ROW("cuMemUnmap", 10020, impl_cuMemUnmap),
    ROW("cuMemSetAccess", 10020, impl_cuMemSetAccess),
    ROW("cuMemGetAllocationGranularity", 10020, impl_cuMemGetAllocationGranularity),
    ROW("cuMemAllocManaged", 6000, impl_cuMemAllocManaged),
    ROW("cuMemAllocHost", 2000, impl_cuMemAllocHost_v1),
    ROW("cuMemAllocHost", 3020, impl_cuMemAllocHost_v2),
    ROW("cuMemHostAlloc", 2020, impl_cuMemHostAlloc),
    ROW("cuMemFreeHost", 2000, impl_cuMemFreeHost),
    ROW("cuArrayCreate", 2000, impl_cuArrayCreate_v1),
    ROW("cuArrayCreate", 3020, impl_cuArrayCreate_v2),
    ROW("cuArray3DCreate", 2000, impl_cuArray3DCreate_v1),
    ROW("cuArray3DCreate", 3020, impl_cuArray3DCreate_v2),
    ROW("cuArrayDestroy", 2000, impl_cuArrayDestroy),
    ROW("cuMemcpyHtoD", 3020, impl_cuMemcpyHtoD_v2),
    ROW("cuMemcpyDtoH", 3020, impl_cuMemcpyDtoH_v2),
    ROW("cuMemsetD8", 3020, impl_cuMemsetD8_v2),
};

/* Resolves a base name the way the driver does: the newest ABI the
 * caller's version knows, the _ptsz twin when asked for per-thread default
 * streams, NOT_FOUND with VERSION_NOT_SUFFICIENT when the name is newer
 * than the caller, SYMBOL_NOT_FOUND for names it does not have (suffixed
 * names included). *pfn is NULL on every failure. Needs no cuInit: cudart
 * asks for cuInit through it. */
static CUresult impl_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    const proc_row *best = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; i++) {
        const proc_row *r = &proc_table[i];
        if (strcmp(r->name, symbol) != 0)
            continue;
        known = 1;
        if (r->version <= cudaVersion && (!best || r->version > best->version))
            best = r;
    }
    *pfn = NULL;
    if (!best) {
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    *pfn = ptsz && best->fn_ptsz ? best->fn_ptsz : best->fn;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}
FK_EXPORT(cuGetProcAddress_v2, impl_cuGetProcAddress_v2)

/* The CUDA 11.3 ABI: no status out-parameter. */
static CUresult impl_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags)
{
    return impl_cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
FK_EXPORT(cuGetProcAddress, impl_cuGetProcAddress_v1)

/* ---- the account at exit ------------------------------------------------ */

static void write_fn_map(FILE *f, const char *key, atomic_ullong *v)
{
    fprintf(f, "  \"%s\": {", key);
    for (int i = 0; i < FN_COUNT; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", fn_names[i], atomic_load(&v[i]));
    fprintf(f, "},\n");
}

static void write_kind_map(FILE *f, const char *key, const unsigned long long *v)
{
    fprintf(f, "  \"%s\": {", key);
    for (int k = 0; k < K_COUNT; k++)
        fprintf(f, "%s\"%s\": %llu", k ? ", " : "", kind_names[k], v[k]);
    fprintf(f, "},\n");
}

/* Writes the fake's own account for the test to check the shim against.
 * Runs as a destructor, after the program's threads are done; the lock is
 * still taken so a straggler cannot tear the numbers. */
__attribute__((destructor)) static void fk_write_counts(void)
{
    if (!g_counts_path)
        return;
    int saved_errno = errno;
    FILE *f = fopen(g_counts_path, "w");
    if (!f) {
        fprintf(stderr, "fakecuda: cannot write %s\n", g_counts_path);
        errno = saved_errno;
        return;
    }
    pthread_mutex_lock(&g_lock);
    fprintf(f, "{\n  \"pid\": %ld,\n", (long)getpid());
    write_fn_map(f, "calls", g_calls);
    write_fn_map(f, "succeeded", g_succeeded);
    write_kind_map(f, "live", g_live);
    write_kind_map(f, "live_bytes", g_live_bytes);
    write_kind_map(f, "allocations", g_allocs);
    write_kind_map(f, "bytes_allocated", g_alloc_bytes);
    write_kind_map(f, "frees", g_frees);
    write_kind_map(f, "peak_bytes", g_kind_peak);
    fprintf(f, "  \"total_peak_bytes\": %llu,\n", g_peak_total);
    fprintf(f, "  \"gpu_peak_bytes\": %llu,\n", g_gpu_peak);
    fprintf(f, "  \"teardown\": {");
    int first = 1;
    for (int i = 0; i < FN_COUNT; i++) {
        if (i != FN_cuCtxDestroy && i != FN_cuCtxDestroy_v2 &&
            i != FN_cuDevicePrimaryCtxRelease && i != FN_cuDevicePrimaryCtxRelease_v2 &&
            i != FN_cuDevicePrimaryCtxReset && i != FN_cuDevicePrimaryCtxReset_v2)
            continue;
        fprintf(f, "%s\"%s\": {\"allocations\": %llu, \"bytes\": %llu}", first ? "" : ", ",
                fn_names[i], g_teardown_allocs[i], g_teardown_bytes[i]);
        first = 0;
    }
    fprintf(f, "},\n  \"devices\": [");
    for (int d = 0; d < g_ndevices; d++)
        fprintf(f, "%s{\"device\": %d, \"allocations\": %llu, \"frees\": %llu, \"live\": %llu, "
                   "\"live_bytes\": %llu, \"peak_bytes\": %llu}",
                d ? ", " : "", d, g_dev_allocs[d], g_dev_frees[d], g_dev_live[d],
                g_dev_live_bytes[d], g_dev_peak[d]);
    fprintf(f, "],\n  \"unknown_frees\": %llu,\n  \"oom_failures\": %llu,\n  \"oom_after\": %lld\n}\n",
            atomic_load(&g_unknown_frees), atomic_load(&g_oom_failures), g_oom_after);
    pthread_mutex_unlock(&g_lock);
    fclose(f);
    errno = saved_errno;
}
