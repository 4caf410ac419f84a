/* real_dl.c: glibc's own dlsym and dlclose (real_dl.h). */
#define _GNU_SOURCE
#include "real_dl.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

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

/* Both found at load, before the program runs: a lookup that succeeds
 * clears the dlerror state, which a first dlclose must not do behind the
 * program's back. */
__attribute__((constructor)) static void find_real_dl(void)
{
    real_dlsym();
    real_dlclose();
}
