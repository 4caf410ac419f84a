/* cupti_count.c: an independent count of the driver's allocation calls, to
 * check gpuleak against on the GPU machine.
 *
 * Built as a shared library and loaded by the driver itself through
 * CUDA_INJECTION64_PATH (the driver calls InitializeInjection from cuInit).
 * It subscribes to CUPTI's driver-API callbacks for the allocation and free
 * entry points, and on each API exit whose CUresult is CUDA_SUCCESS counts the
 * call and keeps the returned pointer or handle with its kind and size, so that
 * a free is attributed to the kind of what it frees (as gpuleak does) and what
 * is still live at exit is known. Failed calls are counted apart.
 *
 * CUPTI sees calls at the driver's public API layer, whichever way the caller
 * reached the entry point (linked symbol, dlsym, cuGetProcAddress): the same
 * layer gpuleak wraps. Calls the driver makes internally do not pass through
 * that layer and are counted by neither.
 *
 * The counts are written as JSON to $CUPTI_COUNT_OUT ("%p" becomes the pid) at
 * exit, from an atexit handler and again from the library destructor, and
 * rewritten after any counted event that comes after the first write (frees
 * made by other libraries' exit handlers), so the file holds everything CUPTI
 * reported until the process ended. "late_events" says how many came after the
 * first write. Format: see write_json below; tests/gpu/compare.py reads it.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cupti.h includes generated_cuda_meta.h (the *_params structs); it has no
 * include guard, so it is not included again here. */

enum kind { K_DEVICE, K_POOL, K_VMM, K_MANAGED, K_HOST, K_ARRAY, K_NKINDS };
static const char *const kind_names[K_NKINDS] = {
    "device", "pool", "vmm", "managed", "host", "array"};

/* What a callback id does. */
enum role { R_ALLOC, R_FREE, R_MAP, R_UNMAP };

/* Key spaces, so a host pointer, a VMM handle and an array handle never meet. */
enum space { S_DEVPTR = 1, S_HOSTPTR = 2, S_VMMHANDLE = 3, S_ARRAY = 4 };

struct fn {
    CUpti_CallbackId cbid;
    const char *name;
    enum role role;
    int kind;      /* for R_ALLOC: the kind it makes; -1 otherwise */
    enum space space;
    int legacy;    /* an old ABI entry point gpuleak's report does not name */
    unsigned long long calls, success, failed, null_frees, unknown_frees;
};

#define F(id, role, kind, space, legacy) \
    {CUPTI_DRIVER_TRACE_CBID_##id, #id, role, kind, space, legacy, 0, 0, 0, 0, 0}
static struct fn fns[] = {
    F(cuMemAlloc_v2, R_ALLOC, K_DEVICE, S_DEVPTR, 0),
    F(cuMemAllocPitch_v2, R_ALLOC, K_DEVICE, S_DEVPTR, 0),
    F(cuMemFree_v2, R_FREE, -1, S_DEVPTR, 0),
    F(cuMemAllocAsync, R_ALLOC, K_POOL, S_DEVPTR, 0),
    F(cuMemAllocAsync_ptsz, R_ALLOC, K_POOL, S_DEVPTR, 0),
    F(cuMemAllocFromPoolAsync, R_ALLOC, K_POOL, S_DEVPTR, 0),
    F(cuMemAllocFromPoolAsync_ptsz, R_ALLOC, K_POOL, S_DEVPTR, 0),
    F(cuMemFreeAsync, R_FREE, -1, S_DEVPTR, 0),
    F(cuMemFreeAsync_ptsz, R_FREE, -1, S_DEVPTR, 0),
    F(cuMemCreate, R_ALLOC, K_VMM, S_VMMHANDLE, 0),
    F(cuMemRelease, R_FREE, -1, S_VMMHANDLE, 0),
    F(cuMemMap, R_MAP, -1, S_VMMHANDLE, 0),
    F(cuMemUnmap, R_UNMAP, -1, S_DEVPTR, 0),
    F(cuMemAllocManaged, R_ALLOC, K_MANAGED, S_DEVPTR, 0),
    F(cuMemAllocHost_v2, R_ALLOC, K_HOST, S_HOSTPTR, 0),
    F(cuMemHostAlloc, R_ALLOC, K_HOST, S_HOSTPTR, 0),
    F(cuMemFreeHost, R_FREE, -1, S_HOSTPTR, 0),
    F(cuArrayCreate_v2, R_ALLOC, K_ARRAY, S_ARRAY, 0),
    F(cuArray3DCreate_v2, R_ALLOC, K_ARRAY, S_ARRAY, 0),
    F(cuArrayDestroy, R_FREE, -1, S_ARRAY, 0),
    /* Old ABI twins: counted so that a program using them is noticed; the
     * comparison flags any non-zero count here. */
    F(cuMemAlloc, R_ALLOC, K_DEVICE, S_DEVPTR, 1),
    F(cuMemAllocPitch, R_ALLOC, K_DEVICE, S_DEVPTR, 1),
    F(cuMemFree, R_FREE, -1, S_DEVPTR, 1),
    F(cuMemAllocHost, R_ALLOC, K_HOST, S_HOSTPTR, 1),
    F(cuMemHostAlloc_v2, R_ALLOC, K_HOST, S_HOSTPTR, 1),
    F(cuArrayCreate, R_ALLOC, K_ARRAY, S_ARRAY, 1),
    F(cuArray3DCreate, R_ALLOC, K_ARRAY, S_ARRAY, 1),
};
#define NFNS (sizeof fns / sizeof fns[0])

struct kstat {
    unsigned long long allocations, frees, failed_allocations;
    unsigned long long bytes_allocated, live_bytes, peak_bytes, live_count;
};
static struct kstat kstats[K_NKINDS];
static unsigned long long live_total, peak_total, maps, unmaps;

/* Live allocations: a chained hash from (space, key) to kind and size. */
struct live {
    uint64_t key;
    unsigned space, kind;
    uint64_t bytes;
    struct live *next;
};
#define NBUCKETS 65536u
static struct live *buckets[NBUCKETS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle subscriber;
static int initialized, subscribe_ok, writes;
static unsigned long long late_events;
static char subscribe_error[256];
static char out_path[4096];

static unsigned bucket_of(uint64_t key, unsigned space) {
    uint64_t h = (key ^ ((uint64_t)space << 56)) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 48) & (NBUCKETS - 1);
}

static void live_add(unsigned space, uint64_t key, unsigned kind, uint64_t bytes) {
    struct live *l = malloc(sizeof *l);
    if (!l) return;
    l->key = key; l->space = space; l->kind = kind; l->bytes = bytes;
    unsigned b = bucket_of(key, space);
    l->next = buckets[b];
    buckets[b] = l;
    struct kstat *k = &kstats[kind];
    k->live_bytes += bytes;
    k->live_count++;
    if (k->live_bytes > k->peak_bytes) k->peak_bytes = k->live_bytes;
    live_total += bytes;
    if (live_total > peak_total) peak_total = live_total;
}

/* Removes (space, key); returns its kind, or -1 when it was not live. */
static int live_remove(unsigned space, uint64_t key) {
    unsigned b = bucket_of(key, space);
    for (struct live **p = &buckets[b]; *p; p = &(*p)->next) {
        struct live *l = *p;
        if (l->key == key && l->space == space) {
            int kind = (int)l->kind;
            kstats[kind].live_bytes -= l->bytes;
            kstats[kind].live_count--;
            live_total -= l->bytes;
            *p = l->next;
            free(l);
            return kind;
        }
    }
    return -1;
}

static void write_json_locked(void);

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *cbdata) {
    (void)userdata;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const CUpti_CallbackData *cb = cbdata;
    if (cb->callbackSite != CUPTI_API_EXIT) return;
    struct fn *f = NULL;
    for (size_t i = 0; i < NFNS; i++)
        if (fns[i].cbid == cbid) { f = &fns[i]; break; }
    if (!f) return;
    CUresult rc = cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue
                                          : CUDA_ERROR_UNKNOWN;
    const void *pp = cb->functionParams;

    pthread_mutex_lock(&lock);
    f->calls++;
    if (rc != CUDA_SUCCESS) {
        f->failed++;
        if (f->role == R_ALLOC) kstats[f->kind].failed_allocations++;
        goto out;
    }
    f->success++;
    switch (f->role) {
    case R_ALLOC: {
        uint64_t key = 0, bytes = 0;
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
            const cuMemAlloc_v2_params *p = pp;
            key = *p->dptr; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
            const cuMemAllocPitch_v2_params *p = pp;
            key = *p->dptr; bytes = (uint64_t)*p->pPitch * p->Height; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync: {
            const cuMemAllocAsync_params *p = pp;
            key = *p->dptr; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
            const cuMemAllocAsync_ptsz_params *p = pp;
            key = *p->dptr; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync: {
            const cuMemAllocFromPoolAsync_params *p = pp;
            key = *p->dptr; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
            const cuMemAllocFromPoolAsync_ptsz_params *p = pp;
            key = *p->dptr; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
            const cuMemCreate_params *p = pp;
            key = *p->handle; bytes = p->size; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
            const cuMemAllocManaged_params *p = pp;
            key = *p->dptr; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
            const cuMemAllocHost_v2_params *p = pp;
            key = (uintptr_t)*p->pp; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
            const cuMemHostAlloc_params *p = pp;
            key = (uintptr_t)*p->pp; bytes = p->bytesize; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2: {
            const cuArrayCreate_v2_params *p = pp;
            key = (uintptr_t)*p->pHandle; bytes = 0; break; }
        case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2: {
            const cuArray3DCreate_v2_params *p = pp;
            key = (uintptr_t)*p->pHandle; bytes = 0; break; }
        default:
            /* legacy entry points: counted, not tracked by pointer */
            kstats[f->kind].allocations++;
            goto out;
        }
        kstats[f->kind].allocations++;
        kstats[f->kind].bytes_allocated += bytes;
        /* An address handed out twice without a free in between would be a
         * driver bug or a missed free; replace the old entry. */
        live_remove(f->space, key);
        live_add(f->space, key, (unsigned)f->kind, bytes);
        break;
    }
    case R_FREE: {
        uint64_t key = 0;
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
            key = ((const cuMemFree_v2_params *)pp)->dptr; break;
        case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
            key = ((const cuMemFreeAsync_params *)pp)->dptr; break;
        case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
            key = ((const cuMemFreeAsync_ptsz_params *)pp)->dptr; break;
        case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
            key = ((const cuMemRelease_params *)pp)->handle; break;
        case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
            key = (uintptr_t)((const cuMemFreeHost_params *)pp)->p; break;
        case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy:
            key = (uintptr_t)((const cuArrayDestroy_params *)pp)->hArray; break;
        default:
            goto out; /* legacy cuMemFree: counted in calls only */
        }
        if (key == 0) { f->null_frees++; break; }
        int kind = live_remove(f->space, key);
        if (kind < 0) { f->unknown_frees++; break; }
        kstats[kind].frees++;
        break;
    }
    case R_MAP: maps++; break;
    case R_UNMAP: unmaps++; break;
    }
out:
    if (writes > 0) {
        late_events++;
        write_json_locked();
    }
    pthread_mutex_unlock(&lock);
}

static void expand_path(const char *tmpl) {
    size_t o = 0;
    for (const char *s = tmpl; *s && o + 24 < sizeof out_path; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            o += (size_t)snprintf(out_path + o, sizeof out_path - o, "%d", (int)getpid());
            s++;
        } else {
            out_path[o++] = *s;
        }
    }
    out_path[o] = 0;
}

static void write_json_locked(void) {
    if (!out_path[0]) return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", out_path, (int)getpid());
    FILE *fp = fopen(tmp, "w");
    if (!fp) {
        fprintf(stderr, "cupti_count: cannot write %s: %s\n", tmp, strerror(errno));
        return;
    }
    unsigned long long ta = 0, tf = 0, tfail = 0, tunk = 0, tnull = 0, tlc = 0, tlb = 0, tba = 0;
    for (int k = 0; k < K_NKINDS; k++) {
        ta += kstats[k].allocations; tf += kstats[k].frees;
        tfail += kstats[k].failed_allocations; tlc += kstats[k].live_count;
        tlb += kstats[k].live_bytes; tba += kstats[k].bytes_allocated;
    }
    unsigned long long legacy = 0;
    for (size_t i = 0; i < NFNS; i++) {
        tunk += fns[i].unknown_frees; tnull += fns[i].null_frees;
        if (fns[i].legacy) legacy += fns[i].calls;
    }
    fprintf(fp, "{\n  \"format\": \"cupti-count\",\n  \"version\": 1,\n");
    fprintf(fp, "  \"pid\": %d,\n  \"subscribed\": %s,\n", (int)getpid(),
            subscribe_ok ? "true" : "false");
    fprintf(fp, "  \"error\": ");
    if (subscribe_ok) fprintf(fp, "null,\n");
    else fprintf(fp, "\"%s\",\n", subscribe_error[0] ? subscribe_error : "not initialized");
    fprintf(fp, "  \"writes\": %d,\n  \"late_events\": %llu,\n", writes + 1, late_events);
    fprintf(fp, "  \"legacy_calls\": %llu,\n", legacy);
    fprintf(fp, "  \"totals\": {\"allocations\": %llu, \"frees\": %llu, "
                "\"failed_allocations\": %llu, \"unknown_frees\": %llu, \"null_frees\": %llu, "
                "\"bytes_allocated\": %llu, \"live_bytes\": %llu, \"peak_bytes\": %llu, "
                "\"leaked_allocations\": %llu, \"leaked_bytes\": %llu, "
                "\"maps\": %llu, \"unmaps\": %llu},\n",
            ta, tf, tfail, tunk, tnull, tba, tlb, peak_total, tlc, tlb, maps, unmaps);
    fprintf(fp, "  \"kinds\": {\n");
    for (int k = 0; k < K_NKINDS; k++) {
        const struct kstat *s = &kstats[k];
        fprintf(fp, "    \"%s\": {\"allocations\": %llu, \"frees\": %llu, "
                    "\"failed_allocations\": %llu, \"bytes_allocated\": %llu, "
                    "\"live_bytes\": %llu, \"peak_bytes\": %llu, "
                    "\"leaked_allocations\": %llu, \"leaked_bytes\": %llu}%s\n",
                kind_names[k], s->allocations, s->frees, s->failed_allocations,
                s->bytes_allocated, s->live_bytes, s->peak_bytes, s->live_count,
                s->live_bytes, k + 1 < K_NKINDS ? "," : "");
    }
    fprintf(fp, "  },\n  \"functions\": {\n");
    for (size_t i = 0; i < NFNS; i++) {
        const struct fn *f = &fns[i];
        fprintf(fp, "    \"%s\": {\"calls\": %llu, \"success\": %llu, \"failed\": %llu, "
                    "\"null_frees\": %llu, \"unknown_frees\": %llu, \"legacy\": %s}%s\n",
                f->name, f->calls, f->success, f->failed, f->null_frees,
                f->unknown_frees, f->legacy ? "true" : "false", i + 1 < NFNS ? "," : "");
    }
    fprintf(fp, "  }\n}\n");
    if (fclose(fp) != 0 || rename(tmp, out_path) != 0) {
        fprintf(stderr, "cupti_count: cannot write %s: %s\n", out_path, strerror(errno));
        unlink(tmp);
        return;
    }
    writes++;
}

static void write_at_exit(void) {
    pthread_mutex_lock(&lock);
    write_json_locked();
    pthread_mutex_unlock(&lock);
}

__attribute__((destructor)) static void write_at_unload(void) {
    if (initialized) write_at_exit();
}

static void set_error(const char *what, CUptiResult r) {
    const char *s = NULL;
    cuptiGetResultString(r, &s);
    snprintf(subscribe_error, sizeof subscribe_error, "%s: %s (%d)", what,
             s ? s : "?", (int)r);
    /* keep the JSON string valid */
    for (char *c = subscribe_error; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = '\'';
    fprintf(stderr, "cupti_count: %s\n", subscribe_error);
}

/* Called by the driver from cuInit when CUDA_INJECTION64_PATH names this
 * library. Returns 1 on success. */
__attribute__((visibility("default"))) int InitializeInjection(void) {
    pthread_mutex_lock(&lock);
    if (initialized) { pthread_mutex_unlock(&lock); return 1; }
    initialized = 1;
    const char *o = getenv("CUPTI_COUNT_OUT");
    expand_path(o && *o ? o : "cupti-count-%p.json");
    pthread_mutex_unlock(&lock);

    CUptiResult r = cuptiSubscribe(&subscriber, on_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        set_error("cuptiSubscribe", r);
    } else {
        subscribe_ok = 1;
        for (size_t i = 0; i < NFNS; i++) {
            r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, fns[i].cbid);
            if (r != CUPTI_SUCCESS) {
                set_error(fns[i].name, r);
                subscribe_ok = 0;
            }
        }
    }
    atexit(write_at_exit);
    if (getenv("CUPTI_COUNT_VERBOSE"))
        fprintf(stderr, "cupti_count: subscribed=%d, writing %s at exit\n", subscribe_ok, out_path);
    return 1;
}
