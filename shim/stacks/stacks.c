#define _GNU_SOURCE
#include "stacks.h"
#include "real_dl.h"

#include "unwind.h"
#include "unwind_fds.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* Sized for long runs with many call sites: 1M distinct stacks. The tables
 * are reserved with MAP_NORESERVE, so untouched pages cost nothing. */
#define DEPOT_CAPACITY STACKS_CAPACITY
#define DEPOT_SLOTS (DEPOT_CAPACITY * 2u)
#define ARENA_CHUNK (4u << 20)

static uintptr_t shim_text_start, shim_text_end;
static int use_fast_unwind;

static _Atomic(stack_record_t *) *depot_slots;  /* open addressing by hash */
static _Atomic(stack_record_t *) *depot_by_id;  /* id -> record */
static _Atomic uint32_t depot_last_id;
static _Atomic uint64_t depot_overflow;
static pthread_mutex_t depot_insert_lock = PTHREAD_MUTEX_INITIALIZER;
static char *arena_next, *arena_end;
/* Grown under depot_insert_lock, read without it: a report must not wait
 * for an interning thread a signal interrupted (bounded.h). */
static _Atomic size_t arena_used;

/* Per tag below FRAMELESS_TAGS (the tracker's kinds), the id of its stack
 * with no frames, 0 until interned: with stacks off every allocation
 * interns one, and hashing and probing the depot for it was 6% of a pair. */
#define FRAMELESS_TAGS 16
static _Atomic uint32_t frameless_ids[FRAMELESS_TAGS];

static void *reserve(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void stacks_init(int fast_unwind)
{
    use_fast_unwind = fast_unwind;
    /* The shim itself (or the test program linking it): its frames are skipped. */
    real_dl_object_extent((const void *)(uintptr_t)&stacks_init, &shim_text_start, &shim_text_end);
    unwind_fds_init();  /* before libunwind's first call makes its pipe */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    depot_slots = reserve(sizeof *depot_slots * DEPOT_SLOTS);
    depot_by_id = reserve(sizeof *depot_by_id * (DEPOT_CAPACITY + 1));
    for (int t = 0; t < FRAMELESS_TAGS; t++)  /* their ids were the old depot's */
        atomic_store(&frameless_ids[t], 0);
    uintptr_t warm[8];
    (void)stacks_capture(warm, 8, NULL);
}

int stacks_capture(uintptr_t *out, int max, int *hint)
{
    if (hint != NULL)
        *hint = -1;
    if (max <= 0)
        return 0;
    uintptr_t buffer[STACKS_MAX_FRAMES + 16];
    int want = max + 16 > STACKS_MAX_FRAMES + 16 ? STACKS_MAX_FRAMES + 16 : max + 16;
    int got = use_fast_unwind ? unwind_capture(buffer, want) : -1;
    if (got >= 0 && hint != NULL)
        *hint = unwind_last_slot();
    if (got < 0) {
        real_dl_enter();
        got = unw_backtrace((void **)buffer, want);
        real_dl_leave();
    }
    int skip = 0;
    while (skip < got && buffer[skip] >= shim_text_start && buffer[skip] < shim_text_end)
        skip++;
    int n = got - skip;
    if (n > max)
        n = max;
    memcpy(out, buffer + skip, sizeof *out * (size_t)n);
    return n;
}

/* A 64-bit mix of the frame words; frames are well spread already, so one
 * multiply-xorshift per word suffices. */
uint64_t stacks_hash(uint32_t tag, const uintptr_t *native, int native_count,
                     const python_frame_t *python, int python_count)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)tag << 32)
               ^ ((uint64_t)native_count << 16) ^ (uint64_t)python_count;
    for (int i = 0; i < native_count; i++) {
        h = (h ^ native[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (int i = 0; i < python_count; i++) {
        h = (h ^ python[i]) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 29;
    }
    return h;
}

static int same_stack(const stack_record_t *r, uint32_t tag, const uintptr_t *native,
                      int native_count, const python_frame_t *python, int python_count)
{
    return r->tag == tag && r->native_count == native_count
        && r->python_count == python_count
        && (native_count == 0
            || memcmp(r->frames, native, sizeof(uint64_t) * (size_t)native_count) == 0)
        && (python_count == 0
            || memcmp(r->frames + native_count, python,
                      sizeof(uint64_t) * (size_t)python_count) == 0);
}

static int record_matches(const stack_record_t *r, uint64_t hash, uint32_t tag,
                          const uintptr_t *native, int native_count,
                          const python_frame_t *python, int python_count)
{
    return r->hash == hash && same_stack(r, tag, native, native_count, python, python_count);
}

/* Bump-allocates from the depot's arena; caller holds depot_insert_lock.
 * Records are never freed before exit, so no per-record header is needed. */
static void *arena_take(size_t bytes)
{
    bytes = (bytes + 15u) & ~(size_t)15u;
    if (arena_next == NULL || (size_t)(arena_end - arena_next) < bytes) {
        size_t chunk = bytes > ARENA_CHUNK ? bytes : ARENA_CHUNK;
        char *fresh = reserve(chunk);
        if (fresh == NULL)
            return NULL;
        arena_next = fresh;
        arena_end = fresh + chunk;
    }
    void *p = arena_next;
    arena_next += bytes;
    atomic_store_explicit(&arena_used, atomic_load_explicit(&arena_used, memory_order_relaxed) + bytes,
                          memory_order_relaxed);
    return p;
}

/* Per thread, the id last interned under each hint from stacks_capture. */
static __thread uint32_t hinted_ids[UNWIND_SLOTS] __attribute__((tls_model("initial-exec")));

uint32_t stacks_intern_hinted(int hint, uint32_t tag, const uintptr_t *native, int native_count,
                              const python_frame_t *python, int python_count)
{
    if (hint < 0 || hint >= UNWIND_SLOTS)
        return stacks_intern(tag, native, native_count, python, python_count);
    const stack_record_t *r = stacks_get(hinted_ids[hint]);
    if (r != NULL && same_stack(r, tag, native, native_count, python, python_count))
        return r->id;
    uint32_t id = stacks_intern(tag, native, native_count, python, python_count);
    hinted_ids[hint] = id;
    return id;
}

static uint32_t intern_frames(uint32_t tag, const uintptr_t *native, int native_count,
                              const python_frame_t *python, int python_count);

uint32_t stacks_intern(uint32_t tag, const uintptr_t *native, int native_count,
                       const python_frame_t *python, int python_count)
{
    if (native_count != 0 || python_count != 0 || tag >= FRAMELESS_TAGS)
        return intern_frames(tag, native, native_count, python, python_count);
    uint32_t id = atomic_load_explicit(&frameless_ids[tag], memory_order_relaxed);
    if (id == 0) {
        id = intern_frames(tag, NULL, 0, NULL, 0);
        atomic_store_explicit(&frameless_ids[tag], id, memory_order_relaxed);
    }
    return id;
}

/* Looks the stack up in the depot, adding it on first sight (stacks_intern's
 * contract). */
static uint32_t intern_frames(uint32_t tag, const uintptr_t *native, int native_count,
                              const python_frame_t *python, int python_count)
{
    if (depot_slots == NULL || depot_by_id == NULL)
        return 0;
    uint64_t hash = stacks_hash(tag, native, native_count, python, python_count);
    uint32_t mask = DEPOT_SLOTS - 1;
    uint32_t slot = (uint32_t)hash & mask;
    for (;;) {
        stack_record_t *r = atomic_load_explicit(&depot_slots[slot], memory_order_acquire);
        if (r == NULL)
            break;
        if (record_matches(r, hash, tag, native, native_count, python, python_count))
            return r->id;
        slot = (slot + 1) & mask;
    }

    uint32_t id = 0;
    pthread_mutex_lock(&depot_insert_lock);
    /* Another thread may have inserted it since the lock-free probe: probe
     * again from where the first probe stopped; slots only fill, never empty. */
    for (;;) {
        stack_record_t *r = atomic_load_explicit(&depot_slots[slot], memory_order_acquire);
        if (r == NULL)
            break;
        if (record_matches(r, hash, tag, native, native_count, python, python_count)) {
            id = r->id;
            goto out;
        }
        slot = (slot + 1) & mask;
    }
    if (atomic_load(&depot_last_id) >= DEPOT_CAPACITY) {
        atomic_fetch_add(&depot_overflow, 1);
        goto out;
    }
    size_t frames = (size_t)native_count + (size_t)python_count;
    stack_record_t *fresh = arena_take(sizeof *fresh + sizeof(uint64_t) * frames);
    if (fresh == NULL) {
        atomic_fetch_add(&depot_overflow, 1);
        goto out;
    }
    fresh->hash = hash;
    fresh->tag = tag;
    fresh->native_count = (uint16_t)native_count;
    fresh->python_count = (uint16_t)python_count;
    fresh->thread = python_count > 0 ? (uint64_t)pthread_self() : 0;
    for (int i = 0; i < native_count; i++)
        fresh->frames[i] = native[i];
    for (int i = 0; i < python_count; i++)
        fresh->frames[native_count + i] = python[i];
    id = atomic_load(&depot_last_id) + 1;
    fresh->id = id;
    atomic_store_explicit(&depot_by_id[id], fresh, memory_order_release);
    atomic_store(&depot_last_id, id);
    atomic_store_explicit(&depot_slots[slot], fresh, memory_order_release);
out:
    pthread_mutex_unlock(&depot_insert_lock);
    return id;
}

const stack_record_t *stacks_get(uint32_t id)
{
    if (id == 0 || depot_by_id == NULL || id > atomic_load(&depot_last_id))
        return NULL;
    return atomic_load_explicit(&depot_by_id[id], memory_order_acquire);
}

uint32_t stacks_count(void)
{
    return atomic_load(&depot_last_id);
}

uint64_t stacks_overflowed(void)
{
    return atomic_load(&depot_overflow);
}

size_t stacks_memory_bytes(void)
{
    return atomic_load_explicit(&arena_used, memory_order_relaxed);
}
