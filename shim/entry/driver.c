/* driver.c: the real driver functions (driver.h). */
#define _GNU_SOURCE
#include "driver.h"
#include "real_dl.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#define DRIVER_ROW(name, base, since, ptsz) { #name, base, since, ptsz },
static const driver_row_t rows[DRIVER_FN_COUNT] = { DRIVER_WRAPPED(DRIVER_ROW) };
#undef DRIVER_ROW

#define DRIVER_HELPER_NAME(name) #name,
static const char *const helper_names[DRIVER_HELPER_COUNT] = { DRIVER_HELPERS(DRIVER_HELPER_NAME) };
#undef DRIVER_HELPER_NAME

static _Atomic(void *) real_functions[DRIVER_FN_COUNT];
_Atomic(void *) driver_helper_cache[DRIVER_HELPER_COUNT];

/* One driver function the caches hold, and the base of the object it was
 * in: when that object is gone (the program dlclosed the driver), every
 * cached pointer is, and they are dropped (driver_forget_if_unloaded). */
static _Atomic(void *) driver_probe;
static _Atomic(uintptr_t) driver_base;

const driver_row_t *driver_row(enum driver_fn fn)
{
    return &rows[fn];
}

int driver_by_name(const char *name)
{
    if (name == NULL || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < DRIVER_FN_COUNT; i++)
        if (strcmp(rows[i].name, name) == 0)
            return i;
    return -1;
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

void driver_keep(enum driver_fn fn, void *real)
{
    cache_function(&real_functions[fn], real);
}

/* Never loads the driver: a program that only asks whether CUDA is there
 * must not get it loaded by the shim. The reference RTLD_NOLOAD takes is
 * dropped at once, so the program's own dlclose still unloads the driver. */
void *driver_lookup(const char *name)
{
    void *h = real_dl_open("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return NULL;
    void *fn = real_dl_lookup(h, name);
    real_dl_close(h);
    return fn;
}

void *driver_real(enum driver_fn fn)
{
    void *real = atomic_load_explicit(&real_functions[fn], memory_order_acquire);
    if (__builtin_expect(real == NULL, 0)) {
        real = driver_lookup(rows[fn].name);
        if (real != NULL)
            cache_function(&real_functions[fn], real);
    }
    return real;
}

void *driver_next(enum driver_fn fn)
{
    return real_dl_lookup(RTLD_NEXT, rows[fn].name);
}

void *driver_helper_slow(enum driver_helper id)
{
    void *fn = driver_lookup(helper_names[id]);
    if (fn != NULL)
        cache_function(&driver_helper_cache[id], fn);
    return fn;
}

/* dladdr, unlike dlopen, leaves the program's dlerror state alone. */
void driver_forget_if_unloaded(void)
{
    void *probe = atomic_load_explicit(&driver_probe, memory_order_acquire);
    if (probe == NULL)
        return;
    Dl_info info;
    if (dladdr(probe, &info) != 0
        && (uintptr_t)info.dli_fbase == atomic_load_explicit(&driver_base, memory_order_relaxed))
        return;
    for (int i = 0; i < DRIVER_FN_COUNT; i++)
        atomic_store_explicit(&real_functions[i], NULL, memory_order_release);
    for (int i = 0; i < DRIVER_HELPER_COUNT; i++)
        atomic_store_explicit(&driver_helper_cache[i], NULL, memory_order_release);
    atomic_store_explicit(&driver_probe, NULL, memory_order_release);
}
