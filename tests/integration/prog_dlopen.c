/* prog_dlopen: a program that never links libcuda and reaches it only by
 * dlopen, like a framework probing for CUDA. Built without -lcuda (see the
 * Makefile), by mode:
 *
 *   probe           asks dlsym(RTLD_DEFAULT, ...) for cuMemAlloc_v2 and
 *                   cuGetProcAddress_v2 with no driver loaded; prints what
 *                   it got and exits 0 when both are NULL with a dlerror
 *                   message (as without the shim), 3 otherwise; then
 *                   prints what dlerror says of a symbol nobody defines
 *   reload SECOND   dlopens libcuda.so.1 and allocates 1000 and 2000 bytes
 *                   and frees both; dlcloses it (it must be gone: nothing
 *                   else may hold it), keeps the address range it left
 *                   reserved so the next load lands elsewhere, dlopens
 *                   SECOND (the driver, or a copy of it at another path)
 *                   and allocates 3000 bytes (freed) and 4000 bytes (kept);
 *                   exits 0, or 3 when the two loads had the same base */
#define _GNU_SOURCE
#include "progs.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_current_fn)(CUcontext);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

/* The driver entry points this program uses, from one dlopen'ed copy. */
struct driver {
    void *handle;
    init_fn init;
    retain_fn retain;
    set_current_fn set_current;
    alloc_fn alloc;
    free_fn free;
};

static void *symbol(void *handle, const char *name)
{
    void *p = dlsym(handle, name);
    if (p == NULL) {
        fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
        exit(PROG_BAD_STATE);
    }
    return p;
}

/* Loads the driver at path and makes device 0's primary context current. */
static void load(struct driver *d, const char *path)
{
    d->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (d->handle == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(PROG_BAD_STATE);
    }
    d->init = (init_fn)symbol(d->handle, "cuInit");
    d->retain = (retain_fn)symbol(d->handle, "cuDevicePrimaryCtxRetain");
    d->set_current = (set_current_fn)symbol(d->handle, "cuCtxSetCurrent");
    d->alloc = (alloc_fn)symbol(d->handle, "cuMemAlloc_v2");
    d->free = (free_fn)symbol(d->handle, "cuMemFree_v2");
    CUcontext ctx;
    OK(d->init(0));
    OK(d->retain(&ctx, 0));
    OK(d->set_current(ctx));
}

/* The load base of the driver behind handle (the functions dlsym hands
 * out are the shim's wrappers, so their addresses would not tell). */
static uintptr_t base_of(void *handle)
{
    struct link_map *map = NULL;
    EXPECT(dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL);
    return (uintptr_t)map->l_addr;
}

struct extent {
    uintptr_t base, end;
};

/* dl_iterate_phdr callback: the end of the object loaded at e->base. */
static int extent_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct extent *e = data;
    (void)size;
    if (info->dlpi_addr != e->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        if (ph->p_type == PT_LOAD && end > e->end)
            e->end = end;
    }
    return 1;
}

static int probe(void)
{
    int nulls = 0;
    const char *names[] = { "cuMemAlloc_v2", "cuGetProcAddress_v2" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        dlerror();
        void *p = dlsym(RTLD_DEFAULT, names[i]);
        const char *err = dlerror();
        printf("%s: %s (%s)\n", names[i], p ? "found" : "NULL", err ? err : "no error");
        nulls += p == NULL && err != NULL;
    }
    /* A name of no library's: dlerror names this program, the caller. */
    dlerror();
    void *none = dlsym(RTLD_DEFAULT, "gpuleak_test_no_such_symbol");
    const char *err = dlerror();
    printf("no such symbol: %s (%s)\n", none ? "found" : "NULL", err ? err : "no error");
    EXPECT(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL);
    return nulls == 2 ? 0 : 3;
}

static int reload(const char *second)
{
    struct driver d;
    CUdeviceptr a, b;
    load(&d, "libcuda.so.1");
    uintptr_t first_base = base_of(d.handle);
    OK(d.alloc(&a, 1000));
    OK(d.alloc(&b, 2000));
    OK(d.free(a));
    OK(d.free(b));
    struct extent e = { first_base, 0 };
    dl_iterate_phdr(extent_cb, &e);
    EXPECT(e.end > e.base);
    EXPECT(dlclose(d.handle) == 0);
    EXPECT(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL);
    /* The loader would reuse the range the driver left: keep it taken. */
    void *hole = (void *)first_base;
    EXPECT(mmap(hole, e.end - e.base, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == hole);
    load(&d, second);
    uintptr_t second_base = base_of(d.handle);
    printf("driver bases %#lx then %#lx\n", (unsigned long)first_base, (unsigned long)second_base);
    OK(d.alloc(&a, 3000));
    OK(d.free(a));
    OK(d.alloc(&b, 4000));
    return first_base != second_base ? 0 : 3;
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "probe");
    if (strcmp(mode, "probe") == 0)
        return probe();
    if (strcmp(mode, "reload") == 0 && argc > 2)
        return reload(argv[2]);
    return prog_bad_mode(mode);
}
