#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include "doors.h"
#include "guard.h"
#include "log.h"
#include "wrappers.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef void *(*dlsym_fn)(void *, const char *);
typedef int (*dlclose_fn)(void *);

typedef struct door {
    const char *name;
    const char *base;
    int since;
    int ptsz;
} door_t;

#define DOORS_ROW(name, base, since, ptsz) { #name, base, since, ptsz },
static const door_t doors[DOOR_COUNT] = { DOORS_FUNCTIONS(DOORS_ROW) };
#undef DOORS_ROW

#define HELPER_NAME(name) #name,
static const char *const helper_names[HELPER_COUNT] = { DOORS_HELPERS(HELPER_NAME) };
#undef HELPER_NAME

static _Atomic(void *) real_functions[DOOR_COUNT];
_Atomic(void *) doors_helper_cache[HELPER_COUNT];
static _Atomic(dlsym_fn) real_dlsym_fn;
static _Atomic(dlclose_fn) real_dlclose_fn;

/* One driver function the caches hold, and the base of the object it was
 * in: when that object is gone (the program dlclosed the driver), every
 * cached pointer is, and they are dropped (see dlclose below). */
static _Atomic(void *) driver_probe;
static _Atomic(uintptr_t) driver_base;

/* glibc's own dlsym and dlclose, found by version so that the shim's
 * exported ones are not found instead: GLIBC_2.34 where libdl merged into
 * libc, GLIBC_2.2.5 before. NULL only on a libc with neither, which glibc
 * is not. */
static dlsym_fn real_dlsym(void)
{
    dlsym_fn fn = atomic_load_explicit(&real_dlsym_fn, memory_order_acquire);
    if (fn != NULL)
        return fn;
    fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (fn == NULL)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    atomic_store_explicit(&real_dlsym_fn, fn, memory_order_release);
    return fn;
}

static dlclose_fn real_dlclose(void)
{
    dlclose_fn fn = atomic_load_explicit(&real_dlclose_fn, memory_order_acquire);
    if (fn != NULL)
        return fn;
    fn = (dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", "GLIBC_2.34");
    if (fn == NULL)
        fn = (dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", "GLIBC_2.2.5");
    atomic_store_explicit(&real_dlclose_fn, fn, memory_order_release);
    return fn;
}

/* Both found at load, before the program runs: a lookup that succeeds
 * clears the dlerror state, which a first dlclose must not do behind the
 * program's back. */
__attribute__((constructor)) static void find_real_dl(void)
{
    real_dlsym();
    real_dlclose();
}

/* Keeps fn in slot unless another thread filled it first, and notes which
 * loaded object the cached pointers come from. */
static void cache_function(_Atomic(void *) *slot, void *fn)
{
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(slot, &expected, fn)
        || atomic_load_explicit(&driver_probe, memory_order_acquire) != NULL)
        return;
    Dl_info info;
    if (dladdr(fn, &info) == 0)
        return;
    atomic_store_explicit(&driver_base, (uintptr_t)info.dli_fbase, memory_order_relaxed);
    expected = NULL;
    atomic_compare_exchange_strong(&driver_probe, &expected, fn);
}

/* name in the driver the process has loaded, or NULL. Never loads it: a
 * program that only asks whether CUDA is there must not get it loaded by
 * the shim. The reference RTLD_NOLOAD takes is dropped at once, so the
 * program's own dlclose still unloads the driver. */
static void *driver_function(const char *name)
{
    dlsym_fn lookup = real_dlsym();
    dlclose_fn close = real_dlclose();
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL || lookup == NULL || close == NULL)
        return NULL;
    void *fn = lookup(h, name);
    close(h);
    return fn;
}

void *doors_real(enum door_id door)
{
    void *fn = atomic_load_explicit(&real_functions[door], memory_order_acquire);
    if (fn == NULL) {
        fn = driver_function(doors[door].name);
        if (fn != NULL)
            cache_function(&real_functions[door], fn);
    }
    return fn;
}

void *doors_next(enum door_id door)
{
    dlsym_fn lookup = real_dlsym();
    return lookup != NULL ? lookup(RTLD_NEXT, doors[door].name) : NULL;
}

void *doors_helper_slow(enum helper_id id)
{
    void *fn = driver_function(helper_names[id]);
    if (fn != NULL)
        cache_function(&doors_helper_cache[id], fn);
    return fn;
}

/* After any dlclose: when the driver the cached pointers came from is no
 * longer loaded, drops them all, so the next call looks the functions up
 * in whatever driver is loaded then (dlopened again, perhaps at another
 * base) instead of jumping into unmapped code. dladdr, unlike dlopen,
 * leaves the program's dlerror state alone. */
static void forget_unloaded_driver(void)
{
    void *probe = atomic_load_explicit(&driver_probe, memory_order_acquire);
    if (probe == NULL)
        return;
    Dl_info info;
    if (dladdr(probe, &info) != 0
        && (uintptr_t)info.dli_fbase == atomic_load_explicit(&driver_base, memory_order_relaxed))
        return;
    for (int i = 0; i < DOOR_COUNT; i++)
        atomic_store_explicit(&real_functions[i], NULL, memory_order_release);
    for (int i = 0; i < HELPER_COUNT; i++)
        atomic_store_explicit(&doors_helper_cache[i], NULL, memory_order_release);
    atomic_store_explicit(&driver_probe, NULL, memory_order_release);
}

/* The exported dlclose: glibc's, then the check above. dlclose does not
 * depend on its caller, so a plain C wrapper is faithful. */
EXPORT int dlclose(void *handle)
{
    dlclose_fn close = real_dlclose();
    if (close == NULL)
        return -1;
    int result = close(handle);
    if (result == 0) {
        int saved_errno = errno;
        forget_unloaded_driver();
        errno = saved_errno;
    }
    return result;
}

/* Finds a wrapped function by its exported name. Returns its door id, or -1
 * for every other name (the common case: a quick reject on the prefix). */
static int door_by_name(const char *name)
{
    if (name == NULL || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < DOOR_COUNT; i++)
        if (strcmp(doors[i].name, name) == 0)
            return i;
    return -1;
}

/* What cuGetProcAddress hands the caller for symbol, given what the driver
 * returned (pfn). The driver's pointer identifies the ABI exactly when it
 * equals one of our real functions; otherwise the ABI is chosen the way the
 * driver chooses it (newest version not above cudaVersion, the per-thread
 * variant when asked), but only for versions this shim was built to know:
 * a newer caller might get an ABI we have no wrapper for, so it gets the
 * driver's pointer untouched. */
static void *hand_out(const char *symbol, void *pfn, int cuda_version, cuuint64_t flags)
{
    if (pfn == NULL || symbol == NULL || symbol[0] != 'c' || symbol[1] != 'u')
        return pfn;
    int candidates = 0;
    for (int i = 0; i < DOOR_COUNT; i++) {
        if (strcmp(doors[i].base, symbol) != 0)
            continue;
        candidates++;
        if (doors_real((enum door_id)i) == pfn)
            return wrappers_table[i];
    }
    if (candidates == 0)
        return pfn;
    if (cuda_version > CUDA_VERSION) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            log_line("%s asked for CUDA %d, newer than the %d this shim knows; "
                     "calls through it are not tracked", symbol, cuda_version, CUDA_VERSION);
        return pfn;
    }
    int want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        for (int i = 0; i < DOOR_COUNT; i++) {
            const door_t *d = &doors[i];
            if (strcmp(d->base, symbol) != 0 || d->since > cuda_version)
                continue;
            /* First pass: the stream flavour asked for; second: functions
             * that have no per-thread variant at all. */
            if (pass == 0 && d->ptsz != want_ptsz)
                continue;
            if (best < 0 || d->since > doors[best].since)
                best = i;
        }
    }
    if (best < 0)
        return pfn;
    cache_function(&real_functions[best], pfn);
    return wrappers_table[best];
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult (*real)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        doors_real(DOOR_cuGetProcAddress_v2);
    if (real == NULL)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (result == CUDA_SUCCESS && pfn != NULL && guard_depth == 0)
        *pfn = hand_out(symbol, *pfn, cudaVersion, flags);
    return result;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    CUresult (*real)(const char *, void **, int, cuuint64_t) = doors_real(DOOR_cuGetProcAddress);
    if (real == NULL)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = real(symbol, pfn, cudaVersion, flags);
    if (result == CUDA_SUCCESS && pfn != NULL && guard_depth == 0)
        *pfn = hand_out(symbol, *pfn, cudaVersion, flags);
    return result;
}

/* Called by the dlsym entry below for a wrapped name (every other lookup
 * goes to glibc's dlsym straight from the entry). A wrapped name that resolves in
 * the library asked gets the wrapper; everything else is the real answer.
 * A lookup in the global scope (RTLD_DEFAULT, the program's handle) finds
 * the shim's own export first; without the shim it would find the next
 * definition, the driver's when the driver is loaded globally, else
 * nothing: "is CUDA here?" probes must get that nothing (and its dlerror
 * message), not a wrapper that would have to load the driver. */
__attribute__((used)) void *gpuleak_dlsym_any(void *handle, const char *name)
{
    dlsym_fn lookup = real_dlsym();
    if (lookup == NULL)
        return NULL;
    void *found = lookup(handle, name);
    if (found == NULL || guard_depth != 0)
        return found;
    int door = door_by_name(name);
    if (door < 0)
        return found;
    if (found == wrappers_table[door])
        return lookup(RTLD_NEXT, name) != NULL ? found : NULL;
    /* Another library's function of the same name (a stub, a test double,
     * another interposer) is not the driver's: the wrapper forwards to the
     * driver, so it is handed out as it is, untracked. */
    if (found != driver_function(name))
        return found;
    cache_function(&real_functions[door], found);
    return wrappers_table[door];
}

/* For dlsym(handle, name): returns glibc's dlsym when the lookup must be
 * answered as if the shim were not there (the entry then tail-jumps to it,
 * so glibc sees the real caller: RTLD_NEXT searches after it, and a symbol
 * RTLD_DEFAULT cannot find is named in dlerror as the caller's, not the
 * shim's), or NULL for a wrapped name, which gpuleak_dlsym_any answers. */
__attribute__((used)) void *gpuleak_dlsym_next_target(const char *name)
{
    if (guard_depth != 0 || door_by_name(name) < 0)
        return (void *)real_dlsym();
    return NULL;
}

/* The exported dlsym. glibc resolves a lookup relative to the object that
 * called dlsym, found from the return address (RTLD_NEXT's search, the
 * name in dlerror's message); a C wrapper would make the shim that object.
 * So the entry is a tail jump, leaving the caller's return address in
 * place. */
__asm__(
    "    .text\n"
    "    .globl dlsym\n"
    "    .type dlsym, @function\n"
    "dlsym:\n"
    "    .cfi_startproc\n"
    "    pushq %rdi\n"
    "    .cfi_adjust_cfa_offset 8\n"
    "    pushq %rsi\n"
    "    .cfi_adjust_cfa_offset 8\n"
    "    subq $8, %rsp\n"
    "    .cfi_adjust_cfa_offset 8\n"
    "    movq %rsi, %rdi\n"
    "    call gpuleak_dlsym_next_target\n"
    "    addq $8, %rsp\n"
    "    .cfi_adjust_cfa_offset -8\n"
    "    popq %rsi\n"
    "    .cfi_adjust_cfa_offset -8\n"
    "    popq %rdi\n"
    "    .cfi_adjust_cfa_offset -8\n"
    "    testq %rax, %rax\n"
    "    jz 2f\n"
    "    jmp *%rax\n"
    "2:  jmp gpuleak_dlsym_any\n"
    "    .cfi_endproc\n"
    "    .size dlsym, .-dlsym\n");
