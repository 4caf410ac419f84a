#define _GNU_SOURCE
#include "pools.h"
#include "pyapi.h"
#include "capture.h"
#include "bounded.h"
#include "guard.h"
#include "lifecycle.h"
#include "python.h"
#include "tracker.h"
#include "vmm_maps.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* One array recorded as a tensor. */
typedef struct pool_array {
    uint64_t address;       /* the hash key */
    uint64_t size;
    uint64_t identity;      /* tells it from a later array at the same address */
    uint64_t listed;        /* the last listing that had it */
    int framework;
    UT_hash_handle hh;
} pool_array_t;

/* A site this module made, and whose arrays it holds. */
typedef struct pool_site {
    uint32_t site;          /* the hash key */
    int framework;
    UT_hash_handle hh;
} pool_site_t;

/* The syncs and the hooks run with the GIL held, which orders them; the
 * lock keeps the tables whole for the reports' readers (any thread) and
 * should a framework call a hook without the GIL. */
static pthread_mutex_t arrays_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_array_t *arrays;
static pool_site_t *sites;
static uint64_t listings;             /* pools_sync calls so far */
static pools_counts_t counts[REPORT_FRAMEWORK_COUNT];
static _Atomic int followed, jax_loaded, cupy_hooked;
static _Atomic int cupy_unhooked;     /* the last heap scan found CuPy arrays no hook saw */

/* Notes that site holds framework's arrays. */
static void note_site(uint32_t site, int framework)
{
    pool_site_t *s;
    HASH_FIND(hh, sites, &site, sizeof site, s);
    if (s != NULL || (s = malloc(sizeof *s)) == NULL)
        return;
    *s = (pool_site_t){ .site = site, .framework = framework };
    HASH_ADD(hh, sites, site, sizeof s->site, s);
}

/* Records an array at address as a tensor of site; returns its entry, or
 * NULL when memory is lacking (then tracking goes off). */
static pool_array_t *record(int framework, uint64_t address, uint64_t size, uint64_t identity,
                            int device, uint32_t site)
{
    if (!atomic_load(&followed) && !tracker_peak_is_tensors())
        tracker_peak_at_tensors();  /* the peak that matters is the arrays', not the pools' */
    pool_array_t *a = malloc(sizeof *a);
    if (a == NULL || tracker_alloc(REPORT_KIND_tensor, address, size, device, NULL, site) != 0) {
        free(a);
        lifecycle_disable("no memory left for allocation records");
        return NULL;
    }
    *a = (pool_array_t){ .address = address, .size = size, .identity = identity,
                         .framework = framework };
    HASH_ADD(hh, arrays, address, sizeof a->address, a);
    note_site(site, framework);
    counts[framework].live_arrays++;
    counts[framework].live_bytes += size;
    atomic_store(&followed, 1);
    return a;
}

/* Frees a's record and forgets it. */
static void forget(pool_array_t *a)
{
    if (python_finished())
        tracker_take_held();  /* the frees of Python's shutdown come after its snapshot */
    tracker_pending_t pending;
    tracker_free_begin(SPACE_TENSOR, a->address, &pending);
    tracker_free_end(&pending, 1);
    counts[a->framework].live_arrays--;
    counts[a->framework].live_bytes -= a->size;
    HASH_DEL(arrays, a);
    free(a);
}

/* The site of frames ("code:offset,..." innermost first, or "-"). */
static uint32_t site_of_frames(const char *frames, int device)
{
    python_frame_t python[64];
    int n = 0;
    for (const char *p = frames; *p != '\0' && *p != '-' && n < 64;) {
        char *end;
        unsigned long long code = strtoull(p, &end, 10);
        if (*end != ':')
            break;
        long offset = strtol(end + 1, &end, 10);
        python_frame_t frame = python_frame_of((const void *)(uintptr_t)code, offset);
        if (frame != 0)
            python[n++] = frame;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',')
            break;
    }
    return capture_site_of_frames(REPORT_KIND_tensor, device, python, n);
}

/* A driver block the program sees at start: its address (VMM memory's
 * where its handle is mapped), its record's key and kind. */
typedef struct block {
    uint64_t start, size, key;
    int kind;
} block_t;

static int by_start(const void *a, const void *b)
{
    const block_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The live driver blocks not yet anyone's cache, sorted by start, in
 * memory the caller frees (*n of them); NULL when none or memory is short. */
static block_t *driver_blocks(size_t *n)
{
    size_t count;
    *n = 0;
    tracker_record_t *records = tracker_live_records(&count);
    block_t *blocks = records != NULL ? malloc(count * sizeof *blocks) : NULL;
    for (size_t i = 0; blocks != NULL && i < count; i++) {
        int kind = records[i].kind;
        if (!tracker_is_driver_gpu_kind(kind))
            continue;
        uint64_t start = vmm_maps_seen_at(kind, records[i].key);
        if (start != 0)
            blocks[(*n)++] = (block_t){ start, records[i].size, records[i].key, kind };
    }
    free(records);
    if (blocks != NULL)
        qsort(blocks, *n, sizeof *blocks, by_start);
    return blocks;
}

/* Marks the block address lies in as a framework's cache. */
static void mark_block(const block_t *blocks, size_t n, uint64_t address)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {  /* the first block starting past address */
        size_t mid = lo + (hi - lo) / 2;
        if (blocks[mid].start <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && address - blocks[lo - 1].start < blocks[lo - 1].size)
        tracker_mark_reserve((alloc_kind_t)blocks[lo - 1].kind, blocks[lo - 1].key);
}

/* One listing line: records the array it names when new (then *fresh is
 * 1, and *unhooked counts a CuPy array no hook saw); returns its address
 * (0 for a line that names none). */
static uint64_t sync_line(char *line, uint64_t listing, size_t *unhooked, int *fresh)
{
    char *field[6];
    int n = 0;
    for (char *p = line; n < 6; n++) {
        field[n] = p;
        p = strchr(p, '\t');
        if (p == NULL) {
            n++;
            break;
        }
        *p++ = '\0';
    }
    int framework = n == 6 ? report_framework_of(field[0]) : -1;
    if (framework != REPORT_FRAMEWORK_jax && framework != REPORT_FRAMEWORK_cupy)
        return 0;
    uint64_t address = strtoull(field[1], NULL, 10), size = strtoull(field[2], NULL, 10);
    uint64_t identity = strtoull(field[4], NULL, 10);
    int device = atoi(field[3]);
    if (address == 0)
        return 0;
    pool_array_t *a;
    HASH_FIND(hh, arrays, &address, sizeof address, a);
    if (a != NULL && (a->size != size || a->framework != framework || a->identity != identity)) {
        forget(a);
        a = NULL;
    }
    if (a == NULL) {
        a = record(framework, address, size, identity, device, site_of_frames(field[5], device));
        if (a == NULL)
            return 0;
        counts[framework].from_snapshots++;
        *unhooked += framework == REPORT_FRAMEWORK_cupy;
        *fresh = 1;
    }
    a->listed = listing;
    return address;
}

/* Reads "#\tjax cupy", the frameworks whose every live array was listed,
 * into complete[]. */
static void read_complete(char *line, int complete[REPORT_FRAMEWORK_COUNT])
{
    char *rest;
    for (char *w = strtok_r(line + 1, "\t ", &rest); w != NULL; w = strtok_r(NULL, "\t ", &rest)) {
        int f = report_framework_of(w);
        if (f >= 0)
            complete[f] = 1;
    }
}

/* Marks the blocks the n arrays at addresses lie in as their framework's
 * cache (a block marked before is no longer among the live records). */
static void mark_blocks(const uint64_t *addresses, size_t n)
{
    size_t n_blocks;
    block_t *blocks = n > 0 ? driver_blocks(&n_blocks) : NULL;
    for (size_t i = 0; blocks != NULL && i < n; i++)
        mark_block(blocks, n_blocks, addresses[i]);
    free(blocks);
}

/* Contract in pools.h. */
size_t pools_sync(const char *listing)
{
    if (atomic_load(&lifecycle_state_now) != LIFECYCLE_TRACKING || listing == NULL)
        return 0;
    char *text = strdup(listing);
    if (text == NULL)
        return 0;
    size_t listed = 0, unhooked = 0, n_fresh = 0, room = 0;
    uint64_t *fresh = NULL;  /* the new arrays' addresses, whose blocks are marked */
    int complete[REPORT_FRAMEWORK_COUNT] = { 0 };
    tracker_one_moment(1);
    pthread_mutex_lock(&arrays_lock);
    uint64_t this_listing = ++listings;
    for (char *line = text, *next; line != NULL; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (line[0] == '#') {
            read_complete(line, complete);
            continue;
        }
        int is_new = 0;
        uint64_t address = sync_line(line, this_listing, &unhooked, &is_new);
        listed += address != 0;
        if (is_new && n_fresh == room) {
            uint64_t *grown = realloc(fresh, (room = room ? room * 2 : 64) * sizeof *fresh);
            if (grown == NULL)
                is_new = 0;  /* its block stays unmarked: shown as driver memory */
            else
                fresh = grown;
        }
        if (is_new)
            fresh[n_fresh++] = address;
    }
    pool_array_t *a, *tmp;
    HASH_ITER(hh, arrays, a, tmp)
        if (complete[a->framework] && a->listed != this_listing)
            forget(a);
    for (int f = 0; f < REPORT_FRAMEWORK_COUNT; f++)
        counts[f].snapshots += complete[f];
    pthread_mutex_unlock(&arrays_lock);
    tracker_one_moment(0);
    mark_blocks(fresh, n_fresh);
    if (complete[REPORT_FRAMEWORK_jax])
        atomic_store(&jax_loaded, 1);
    if (complete[REPORT_FRAMEWORK_cupy])
        atomic_store(&cupy_unhooked, unhooked > 0);
    free(fresh);
    free(text);
    return listed;
}

int pools_oom(const char *answer)
{
    if (answer == NULL || answer[0] == '\0'
        || atomic_load(&lifecycle_state_now) != LIFECYCLE_TRACKING)
        return 0;
    char *tab;
    unsigned long long asked = strtoull(answer, &tab, 10);
    if (*tab != '\t')
        return 0;
    uint32_t site = site_of_frames(tab + 1, 0);
    pthread_mutex_lock(&arrays_lock);
    note_site(site, REPORT_FRAMEWORK_jax);
    pthread_mutex_unlock(&arrays_lock);
    tracker_failure(REPORT_KIND_tensor, (size_t)asked, TRACKER_OUT_OF_MEMORY, 0, site);
    return 1;
}

int pools_followed(void)
{
    return atomic_load(&followed);
}

int pools_want_checkpoints(void)
{
    return atomic_load(&jax_loaded) || atomic_load(&cupy_hooked);
}

int pools_cupy_unhooked(void)
{
    return atomic_load(&cupy_unhooked);
}

void pools_counts(int framework, pools_counts_t *out)
{
    memset(out, 0, sizeof *out);
    if (framework < 0 || framework >= REPORT_FRAMEWORK_COUNT || !bounded_mutex_lock(&arrays_lock))
        return;
    *out = counts[framework];
    pthread_mutex_unlock(&arrays_lock);
}

int pools_cupy_hooked(void)
{
    return atomic_load(&cupy_hooked);
}

int pools_site_framework(uint32_t site)
{
    if (!atomic_load(&followed) || !bounded_mutex_lock(&arrays_lock))
        return -1;
    pool_site_t *s;
    HASH_FIND(hh, sites, &site, sizeof site, s);
    int framework = s != NULL ? s->framework : -1;
    pthread_mutex_unlock(&arrays_lock);
    return framework;
}

/* ------------------------------------------------------------ CuPy's hook */

/* A hook's keyword as a number (0 when absent or not one); no error is
 * left set, as CuPy must never see one of the shim's. */
static uint64_t keyword(py_object_t *kwargs, const char *name)
{
    py_object_t *value = kwargs != NULL ? pyapi.dict_get(kwargs, name) : NULL;
    if (value == NULL)
        return 0;
    unsigned long long number = pyapi.as_ull(value);
    if (number == (unsigned long long)-1) {
        pyapi.clear_error();
        return 0;
    }
    return number;
}

/* An array's memory taken from CuPy's pool on this thread (taken), or
 * given back; kwargs CuPy's keywords (device_id, mem_size, pmem_id). */
static void hook_array(py_object_t *kwargs, uint64_t address, int taken)
{
    uint32_t site = 0;
    int device = 0;
    if (taken) {
        device = (int)keyword(kwargs, "device_id");
        site = capture_site(REPORT_KIND_tensor, device);
    }
    pthread_mutex_lock(&arrays_lock);
    pool_array_t *a;
    HASH_FIND(hh, arrays, &address, sizeof address, a);
    if (a != NULL)  /* given back, or its free was made on a thread without the hook */
        forget(a);
    if (taken) {
        a = record(REPORT_FRAMEWORK_cupy, address, keyword(kwargs, "mem_size"),
                   keyword(kwargs, "pmem_id"), device, site);
        if (a != NULL) {
            a->listed = listings;
            counts[REPORT_FRAMEWORK_cupy].events++;
        }
    }
    pthread_mutex_unlock(&arrays_lock);
}

typedef enum hook_action { HOOK_MALLOC, HOOK_FREE, HOOK_CHUNK } hook_action_t;

/* One call of the hook, for the memory at kwargs' mem_ptr: recorded when
 * tracking is on and the call does not come from inside the shim; errno
 * as the program left it. Returns None, as CuPy expects. */
static py_object_t *hook_call(py_object_t *kwargs, hook_action_t action)
{
    int saved_errno = errno;
    uint64_t address = keyword(kwargs, "mem_ptr");
    if (address != 0 && guard_depth == 0
        && atomic_load(&lifecycle_state_now) == LIFECYCLE_TRACKING) {
        guard_depth++;
        if (action == HOOK_CHUNK)  /* a chunk the pool took: its cache from now on */
            tracker_mark_reserve(REPORT_KIND_device, address);
        else
            hook_array(kwargs, address, action == HOOK_MALLOC);
        guard_depth--;
    }
    errno = saved_errno;
    return pyapi_none();
}

/* malloc_postprocess(device_id, size, mem_size, mem_ptr, pmem_id). */
static py_object_t *on_malloc(py_object_t *self, py_object_t *args, py_object_t *kwargs)
{
    (void)self;
    (void)args;
    return hook_call(kwargs, HOOK_MALLOC);
}

/* free_postprocess(device_id, mem_size, mem_ptr, pmem_id). */
static py_object_t *on_free(py_object_t *self, py_object_t *args, py_object_t *kwargs)
{
    (void)self;
    (void)args;
    return hook_call(kwargs, HOOK_FREE);
}

/* alloc_postprocess(device_id, mem_size, mem_ptr). */
static py_object_t *on_chunk(py_object_t *self, py_object_t *args, py_object_t *kwargs)
{
    (void)self;
    (void)args;
    return hook_call(kwargs, HOOK_CHUNK);
}

/* The *_preprocess calls: nothing to do, in C (the base class's are
 * Python functions, slower on every array). */
static py_object_t *on_nothing(py_object_t *self, py_object_t *args, py_object_t *kwargs)
{
    (void)self;
    (void)args;
    (void)kwargs;
    return pyapi_none();
}

void pools_armed(void)
{
    atomic_store(&cupy_hooked, 1);
}

int pools_hook_functions(void *out[POOLS_HOOKS])
{
    static py_method_def_t defs[POOLS_HOOKS] = {
        { "malloc_postprocess", (py_cfunction_t)(void (*)(void))on_malloc,
          PY_METH_VARARGS | PY_METH_KEYWORDS, "gpuleak: an array's memory taken from CuPy's pool" },
        { "free_postprocess", (py_cfunction_t)(void (*)(void))on_free,
          PY_METH_VARARGS | PY_METH_KEYWORDS, "gpuleak: an array's memory given back to CuPy's pool" },
        { "alloc_postprocess", (py_cfunction_t)(void (*)(void))on_chunk,
          PY_METH_VARARGS | PY_METH_KEYWORDS, "gpuleak: a chunk CuPy's pool took from the driver" },
        { "preprocess", (py_cfunction_t)(void (*)(void))on_nothing,
          PY_METH_VARARGS | PY_METH_KEYWORDS, "gpuleak: nothing before CuPy's pool acts" },
    };
    if (!pyapi_resolve())
        return -1;
    for (int i = 0; i < POOLS_HOOKS; i++) {
        out[i] = pyapi.new_function(&defs[i], NULL, NULL);
        if (out[i] == NULL) {
            pyapi.clear_error();
            while (i-- > 0)
                pyapi.decref(out[i]);
            return -1;
        }
    }
    return 0;
}
