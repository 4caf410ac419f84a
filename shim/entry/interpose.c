/* interpose.c: how driver calls reach the shim.
 *
 * Three ways in lead to one set of wrappers (wrappers.c): the shim's exported
 * cu* definitions (programs linked with -lcuda), an interposed dlsym (with
 * the dlclose that notices the driver unloaded), and a wrapped
 * cuGetProcAddress that hands out a wrapper for the ABI the caller asked
 * for (driver.h lists them). Everything here is an export the program
 * calls; nothing else in the shim calls in, so it has no header. */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include "driver.h"
#include "guard.h"
#include "log.h"
#include "real_dl.h"
#include "wrappers.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* The exported dlclose: glibc's, then a check that the driver the shim
 * found its functions in is still loaded. dlclose does not
 * depend on its caller, so a plain C wrapper is faithful. */
EXPORT int dlclose(void *handle)
{
    real_dlclose_fn close = real_dlclose();
    if (close == NULL)
        return -1;
    int result = close(handle);
    if (result == 0) {
        int saved_errno = errno;
        driver_forget_if_unloaded();
        errno = saved_errno;
    }
    return result;
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
    for (int i = 0; i < DRIVER_FN_COUNT; i++) {
        if (strcmp(driver_row((enum driver_fn)i)->base, symbol) != 0)
            continue;
        candidates++;
        if (driver_real((enum driver_fn)i) == pfn)
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
        for (int i = 0; i < DRIVER_FN_COUNT; i++) {
            const driver_row_t *d = driver_row((enum driver_fn)i);
            if (strcmp(d->base, symbol) != 0 || d->since > cuda_version)
                continue;
            /* First pass: the stream flavour asked for; second: functions
             * that have no per-thread variant at all. */
            if (pass == 0 && d->ptsz != want_ptsz)
                continue;
            if (best < 0 || d->since > driver_row((enum driver_fn)best)->since)
                best = i;
        }
    }
    if (best < 0)
        return pfn;
    driver_keep((enum driver_fn)best, pfn);
    return wrappers_table[best];
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult (*real)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        driver_real(DRIVER_cuGetProcAddress_v2);
    if (real == NULL)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (result == CUDA_SUCCESS && pfn != NULL && guard_depth == 0)
        *pfn = hand_out(symbol, *pfn, cudaVersion, flags);
    return result;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    CUresult (*real)(const char *, void **, int, cuuint64_t) = driver_real(DRIVER_cuGetProcAddress);
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
    real_dlsym_fn lookup = real_dlsym();
    if (lookup == NULL)
        return NULL;
    void *found = lookup(handle, name);
    if (found == NULL || guard_depth != 0)
        return found;
    int fn = driver_by_name(name);
    if (fn < 0)
        return found;
    if (found == wrappers_table[fn])
        return lookup(RTLD_NEXT, name) != NULL ? found : NULL;
    /* Another library's function of the same name (a stub, a test double,
     * another interposer) is not the driver's: the wrapper forwards to the
     * driver, so it is handed out as it is, untracked. */
    if (found != driver_lookup(name))
        return found;
    driver_keep((enum driver_fn)fn, found);
    return wrappers_table[fn];
}

/* For dlsym(handle, name): returns glibc's dlsym when the lookup must be
 * answered as if the shim were not there (the entry then tail-jumps to it,
 * so glibc sees the real caller: RTLD_NEXT searches after it, and a symbol
 * RTLD_DEFAULT cannot find is named in dlerror as the caller's, not the
 * shim's), or NULL for a wrapped name, which gpuleak_dlsym_any answers. */
__attribute__((used)) void *gpuleak_dlsym_next_target(const char *name)
{
    if (guard_depth != 0 || driver_by_name(name) < 0)
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
