/* real_dl.c: the shim's one door to glibc's loader (real_dl.h). */
#define _GNU_SOURCE
#include "real_dl.h"
#include "clock.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

static _Atomic(real_dlsym_fn) real_dlsym_found;
static _Atomic(real_dlclose_fn) real_dlclose_found;

real_dlsym_fn real_dlsym(void)
{
    real_dlsym_fn fn = atomic_load_explicit(&real_dlsym_found, memory_order_acquire);
    if (fn != NULL)
        return fn;
    fn = (real_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (fn == NULL)
        fn = (real_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    atomic_store_explicit(&real_dlsym_found, fn, memory_order_release);
    return fn;
}

real_dlclose_fn real_dlclose(void)
{
    real_dlclose_fn fn = atomic_load_explicit(&real_dlclose_found, memory_order_acquire);
    if (fn != NULL)
        return fn;
    fn = (real_dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", "GLIBC_2.34");
    if (fn == NULL)
        fn = (real_dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", "GLIBC_2.2.5");
    atomic_store_explicit(&real_dlclose_found, fn, memory_order_release);
    return fn;
}

void *real_dl_lookup(void *handle, const char *name)
{
    real_dlsym_fn lookup = real_dlsym();
    return lookup != NULL ? lookup(handle, name) : NULL;
}

/* Read-held by the shim's calls that take the loader's lock (and while
 * libunwind, which walks the loader itself, runs: real_dl_enter), and
 * write-held by a forking thread from its prepare handler to the end of
 * fork, so that no fork happens inside one. A read lock, so that threads
 * inside such calls do not wait for each other; glibc's default rwlock
 * prefers readers, so a thread may take it again inside (a loader call
 * from a signal's handler). A thread that forks while it holds it itself
 * (from a constructor real_dl_open runs) waits the bound and goes on. */
static pthread_rwlock_t fork_guard = PTHREAD_RWLOCK_INITIALIZER;

/* Whether this thread's fork holds fork_guard: its wait is bounded, and a
 * fork that stopped waiting must not unlock it after. */
static __thread int fork_holds_guard;

static void fork_prepare(void)
{
    uint64_t end = clock_monotonic_ns() + REAL_DL_FORK_WAIT_MS * 1000000ull;
    struct timespec until = { (time_t)(end / 1000000000ull), (long)(end % 1000000000ull) };
    fork_holds_guard = pthread_rwlock_clockwrlock(&fork_guard, CLOCK_MONOTONIC, &until) == 0;
}

static void fork_done_parent(void)
{
    if (fork_holds_guard) {
        fork_holds_guard = 0;
        pthread_rwlock_unlock(&fork_guard);
    }
}

/* The child starts with a fresh guard: its holders were threads of the
 * parent's (the forking one, or others when the fork stopped waiting). */
static void fork_done_child(void)
{
    pthread_rwlock_init(&fork_guard, NULL);
    fork_holds_guard = 0;
}

void real_dl_enter(void)
{
    pthread_rwlock_rdlock(&fork_guard);
}

void real_dl_leave(void)
{
    pthread_rwlock_unlock(&fork_guard);
}

int real_dl_iterate(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data)
{
    real_dl_enter();
    int r = dl_iterate_phdr(cb, data);
    real_dl_leave();
    return r;
}

typedef struct extent {
    uintptr_t probe, start, end;
} extent_t;

static int find_extent(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    extent_t *e = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    if (e->probe < lo || e->probe >= hi)
        return 0;
    e->start = lo;
    e->end = hi;
    return 1;
}

int real_dl_object_extent(const void *addr, uintptr_t *start, uintptr_t *end)
{
    extent_t e = { (uintptr_t)addr, 0, 0 };
    if (real_dl_iterate(find_extent, &e) != 1)
        return -1;
    *start = e.start;
    *end = e.end;
    return 0;
}

void *real_dl_open(const char *name, int flags)
{
    real_dl_enter();
    void *handle = dlopen(name, flags);
    real_dl_leave();
    return handle;
}

int real_dl_close(void *handle)
{
    real_dlclose_fn close = real_dlclose();
    if (close == NULL)
        return -1;
    real_dl_enter();
    int r = close(handle);
    real_dl_leave();
    return r;
}

/* Both found at load, before the program runs: a lookup that succeeds
 * clears the dlerror state, which a first dlclose must not do behind the
 * program's back. The fork handlers too, before any thread can be inside
 * a guarded call. */
__attribute__((constructor)) static void find_real_dl(void)
{
    real_dlsym();
    real_dlclose();
    pthread_atfork(fork_prepare, fork_done_parent, fork_done_child);
}
