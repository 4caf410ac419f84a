/* test_symbolize.c: Check suite for shim/names/symbolize.c.
 *
 * The addresses looked up are real return addresses taken inside this
 * binary (built -O2 -g), so names, lines and inlining are what the compiler
 * really emitted; expected lines come from __LINE__ on the line of the call.
 *
 * The binary also interposes malloc/calloc/realloc to inject allocation
 * failures (see fail_after); when not failing they forward to glibc. */
#define _GNU_SOURCE
#include "suite.h"
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "symbolize.h"

/* ---- allocation failure injection ------------------------------------ */

/* AddressSanitizer owns malloc; replacing it under ASan breaks ASan's own
 * start-up, so the injection (and the "oom" case) exist only without it. */
#ifndef __SANITIZE_ADDRESS__
#define INJECT_FAILURES 1

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

/* < 0: never fail. Otherwise that many allocations succeed and every one
 * after fails (fail_once: only the next one fails, then back to -1). A
 * persistent failure is the harsh case: no later call can recover. */
static volatile long fail_after = -1;
static volatile int fail_once;
/* Set: only allocations called from this executable (symbolize.o is linked
 * into it) may fail. libdw 0.188 itself can abort on a failed malloc (an
 * assert in dwfl_error.c's canonicalize, reached from
 * dwfl_module_getsymtab), which no caller can prevent, so with libdw loaded
 * only symbolize.c's own handling is exercised. */
static volatile int fail_own_only;
static uintptr_t exe_lo, exe_hi;

/* Decides whether the allocation called from caller fails; shared by the
 * three wrappers. */
static int should_fail(uintptr_t caller)
{
    if (fail_after < 0)
        return 0;
    if (fail_own_only && (caller < exe_lo || caller >= exe_hi))
        return 0;
    if (fail_after > 0) {
        fail_after--;
        return 0;
    }
    if (fail_once)
        fail_after = -1;
    errno = ENOMEM;
    return 1;
}

#define CALLER ((uintptr_t)__builtin_return_address(0))

/* The process's malloc (glibc supports replacing it from the program, and
 * libc, ld.so and libdw then call this one): fails on demand, else glibc's. */
void *malloc(size_t n)
{
    return should_fail(CALLER) ? NULL : __libc_malloc(n);
}

/* As malloc: calloc and realloc fail on the same schedule. */
void *calloc(size_t n, size_t m)
{
    return should_fail(CALLER) ? NULL : __libc_calloc(n, m);
}

/* As malloc. A failed realloc leaves p allocated, as the contract says. */
void *realloc(void *p, size_t n)
{
    return should_fail(CALLER) ? NULL : __libc_realloc(p, n);
}
#endif

/* ---- functions whose return addresses are looked up ------------------ */

/* gcc's noclone keeps -O2 from specialising these into name.constprop.0
 * clones; clang has no such attribute (and no such clones). */
#ifdef __clang__
#define NOCLONE
#else
#define NOCLONE __attribute__((noclone))
#endif

static volatile int sink;

/* Returns its caller's return address: the address just after the call
 * instruction inside that caller, as the shim's unwinder would capture it. */
__attribute__((noinline)) static uintptr_t capture_ra(void)
{
    sink++;
    return (uintptr_t)__builtin_return_address(0);
}

/* A static function: only .symtab names it, so finding it needs libdw. The
 * store after the call keeps it from becoming a tail call. */
__attribute__((noinline)) NOCLONE static uintptr_t static_caller(int *line)
{
    uintptr_t r;
    *line = __LINE__; r = capture_ra();
    sink++;
    return r;
}

/* Inlined into inline_outer; the call to capture_ra happens inside it. */
static inline __attribute__((always_inline)) uintptr_t
inlined_helper(int *line)
{
    uintptr_t r;
    *line = __LINE__; r = capture_ra();
    sink++;
    return r;
}

/* The real function around inlined_helper; outer_line is the line of the
 * inlined call, which DWARF records as DW_AT_call_line. */
__attribute__((noinline)) NOCLONE static uintptr_t
inline_outer(int *inner_line, int *outer_line)
{
    uintptr_t r;
    *outer_line = __LINE__; r = inlined_helper(inner_line);
    sink++;
    return r;
}

/* A C function under a C++ mangled symbol name, so demangling can be tested
 * in a C test: its ELF symbol is _ZN3foo3barEv, i.e. foo::bar(). */
__attribute__((noinline)) NOCLONE uintptr_t mangled_caller(void)
    __asm__("_ZN3foo3barEv");
uintptr_t mangled_caller(void)
{
    uintptr_t r = capture_ra();
    sink++;
    return r;
}

/* ---- helpers ---------------------------------------------------------- */

/* The last path component: DWARF file names may be absolute or relative to
 * the build directory, depending on how the test was compiled. */
static const char *base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path;
}

/* The program's load bias, found independently of symbolize.c's lookup by
 * taking the first dl_iterate_phdr entry (always the program). */
static int first_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uintptr_t *)data = info->dlpi_addr;
    return 1;
}

/* See first_cb; offsets of the program's addresses must be address - this. */
static uintptr_t exe_bias(void)
{
    uintptr_t b = 0;
    dl_iterate_phdr(first_cb, &b);
    return b;
}

/* libc's qsort, from libc itself rather than through this binary's symbol
 * table (which could hand back a PLT stub in a non-PIE build). */
static uintptr_t libc_qsort(void)
{
    void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    void *p = dlsym(h, "qsort");
    ck_assert_ptr_nonnull(p);
    dlclose(h);
    return (uintptr_t)p;
}

static uintptr_t qsort_ra;

/* A qsort comparator: its return address lies inside libc's sorting code. */
static int cmp_capture(const void *a, const void *b)
{
    qsort_ra = (uintptr_t)__builtin_return_address(0);
    return *(const int *)a - *(const int *)b;
}

/* Each test sets the libdw switch itself (GPULEAK_NO_LIBDW, as the shim
 * read it): under CK_FORK=no the tests share one configuration. */
static void use_libdw(void)
{
    config.no_libdw = 0;
}

/* Makes the next symbolize_begin behave as if libdw.so.1 were absent. */
static void no_libdw(void)
{
    config.no_libdw = 1;
}

/* ---- tests ------------------------------------------------------------ */

/* A static function is named by .symtab alone; its line must be the
 * call's, since the lookup uses address - 1. */
START_TEST(test_static_function)
{
    int line = 0;
    uintptr_t ra = static_caller(&line);
    use_libdw();
    ck_assert_int_eq(symbolize_begin(), 0);
    symbolized_frame_t f[8];
    int n = symbolize_address(ra, f, 8);
    ck_assert_int_eq(n, 1);
    ck_assert_uint_eq(f[0].address, ra);
    ck_assert_uint_eq(f[0].offset, ra - exe_bias());
    ck_assert_ptr_nonnull(strstr(f[0].module, "test_symbolize"));
    ck_assert_int_eq(f[0].module[0], '/');
    ck_assert_str_eq(f[0].function, "static_caller");
    ck_assert_uint_eq(f[0].function_offset,
                      ra - (uintptr_t)(void *)static_caller);
    ck_assert_str_eq(base_name(f[0].file), "test_symbolize.c");
    /* The line table's row for the call instruction; a compiler may start
     * the next line's row inside it, hence one line of slack. */
    ck_assert_int_ge(f[0].line, line);
    ck_assert_int_le(f[0].line, line + 1);
    ck_assert_int_eq(f[0].inlined, 0);
    symbolize_end();
}
END_TEST

/* GPULEAK_NO_LIBDW other than 0 or 1: one line naming it, and the default
 * (libdw used), as for every variable; it once turned libdw off silently. */
START_TEST(test_no_libdw_invalid_value)
{
    int line = 0;
    uintptr_t ra = static_caller(&line);
    setenv("GPULEAK_NO_LIBDW", "false", 1);
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    int saved = dup(STDERR_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    config_load();
    unsetenv("GPULEAK_NO_LIBDW");
    ck_assert_int_eq(symbolize_begin(), 0);
    symbolized_frame_t f[8];
    int n = symbolize_address(ra, f, 8);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(pipefd[1]);
    char err[512];
    ssize_t got = read(pipefd[0], err, sizeof err - 1);
    err[got > 0 ? got : 0] = '\0';
    close(pipefd[0]);
    use_libdw();
    ck_assert_ptr_nonnull(strstr(err, "GPULEAK_NO_LIBDW=false"));
    ck_assert_ptr_nonnull(strstr(err, "default 0"));
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(base_name(f[0].file), "test_symbolize.c");  /* libdw's line table */
    symbolize_end();  /* after the asserts: the names live in its arena */
}
END_TEST

/* The inlined helper comes first with the line inside it, then the real
 * function with the line of the inlined call. */
START_TEST(test_inlined_frames)
{
    int inner = 0, outer = 0;
    uintptr_t ra = inline_outer(&inner, &outer);
    use_libdw();
    ck_assert_int_eq(symbolize_begin(), 0);
    symbolized_frame_t f[8];
    int n = symbolize_address(ra, f, 8);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(f[0].function, "inlined_helper");
    ck_assert_int_eq(f[0].inlined, 1);
    ck_assert_str_eq(base_name(f[0].file), "test_symbolize.c");
    ck_assert_int_ge(f[0].line, inner);
    ck_assert_int_le(f[0].line, inner + 1);
    ck_assert_str_eq(f[1].function, "inline_outer");
    ck_assert_int_eq(f[1].inlined, 0);
    ck_assert_str_eq(base_name(f[1].file), "test_symbolize.c");
    ck_assert_int_eq(f[1].line, outer); /* DW_AT_call_line: exact */
    ck_assert_uint_eq(f[1].function_offset,
                      ra - (uintptr_t)(void *)inline_outer);
    for (int i = 0; i < n; i++) {
        ck_assert_uint_eq(f[i].address, ra);
        ck_assert_uint_eq(f[i].offset, ra - exe_bias());
        ck_assert_ptr_eq(f[i].module, f[0].module);
    }
    /* Truncation keeps the innermost frames, as documented. */
    ck_assert_int_eq(symbolize_address(ra, f, 1), 1);
    ck_assert_str_eq(f[0].function, "inlined_helper");
    ck_assert_int_eq(f[0].inlined, 1);
    symbolize_end();
}
END_TEST

/* A shared library: module path, offset from its load base, exported name. */
START_TEST(test_libc)
{
    int v[] = {3, 1, 2};
    qsort(v, 3, sizeof(v[0]), cmp_capture);
    uintptr_t q = libc_qsort();
    Dl_info info;
    ck_assert(dladdr((void *)q, &info));
    uintptr_t libc_base = (uintptr_t)info.dli_fbase;

    use_libdw();
    ck_assert_int_eq(symbolize_begin(), 0);
    symbolized_frame_t f[8];
    int n = symbolize_address(qsort_ra, f, 8);
    ck_assert_int_ge(n, 1);
    ck_assert_ptr_nonnull(strstr(f[n - 1].module, "libc"));
    ck_assert_uint_eq(f[n - 1].offset, qsort_ra - libc_base);

    /* An address one past qsort's entry looks up qsort itself. */
    n = symbolize_address(q + 1, f, 8);
    ck_assert_int_ge(n, 1);
    ck_assert_ptr_nonnull(strstr(f[n - 1].module, "libc"));
    ck_assert_ptr_nonnull(f[n - 1].function);
    ck_assert_ptr_nonnull(strstr(f[n - 1].function, "qsort"));
    ck_assert_uint_eq(f[n - 1].function_offset, 1);
    ck_assert_uint_eq(f[n - 1].offset, q + 1 - libc_base);
    symbolize_end();
}
END_TEST

/* Anonymous memory (a JIT, say) has no module: "?", offset = address. */
START_TEST(test_no_module)
{
    long page = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    uintptr_t a = (uintptr_t)m + 16;
    use_libdw();
    symbolize_begin();
    symbolized_frame_t f[4];
    ck_assert_int_eq(symbolize_address(a, f, 4), 1);
    ck_assert_str_eq(f[0].module, "?");
    ck_assert_uint_eq(f[0].address, a);
    ck_assert_uint_eq(f[0].offset, a);
    ck_assert_ptr_null(f[0].function);
    ck_assert_ptr_null(f[0].file);
    ck_assert_int_eq(f[0].line, 0);
    ck_assert_int_eq(f[0].inlined, 0);
    /* Address 0 (a truncated stack's end) must not wrap into anything. */
    ck_assert_int_eq(symbolize_address(0, f, 4), 1);
    ck_assert_str_eq(f[0].module, "?");
    symbolize_end();
    munmap(m, (size_t)page);
}
END_TEST

/* Demangling happens only once the process has a C++ runtime. */
START_TEST(test_demangle)
{
    uintptr_t ra = mangled_caller();
    use_libdw();
    symbolized_frame_t f[4];
    void *have = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!have) {
        /* No C++ runtime: the raw symbol, never a failed guess. */
        ck_assert_int_eq(symbolize_begin(), 0);
        ck_assert_int_eq(symbolize_address(ra, f, 4), 1);
        ck_assert_str_eq(f[0].function, "_ZN3foo3barEv");
        symbolize_end();
        void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
        ck_assert_msg(h != NULL, "libstdc++.so.6: %s", dlerror());
    }
    ck_assert_int_eq(symbolize_begin(), 0);
    ck_assert_int_eq(symbolize_address(ra, f, 4), 1);
    ck_assert_str_eq(f[0].function, "foo::bar()");
    ck_assert_str_eq(base_name(f[0].file), "test_symbolize.c");
    symbolize_end();
}
END_TEST

/* A runtime loaded RTLD_LOCAL (as by a Python extension) is still used. */
START_TEST(test_demangle_local_runtime)
{
    if (dlsym(RTLD_DEFAULT, "__cxa_demangle"))
        return; /* already global in this process: nothing to show */
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_null(dlsym(RTLD_DEFAULT, "__cxa_demangle"));
    uintptr_t ra = mangled_caller();
    use_libdw();
    symbolize_begin();
    symbolized_frame_t f[4];
    ck_assert_int_eq(symbolize_address(ra, f, 4), 1);
    ck_assert_str_eq(f[0].function, "foo::bar()");
    symbolize_end();
}
END_TEST

/* Without libdw the module and offset are exactly as with it, names come
 * from the file's own .symtab (static functions included), and exported
 * names of a stripped library (libc) from its .dynsym. */
START_TEST(test_without_libdw)
{
    int line = 0;
    uintptr_t ra = static_caller(&line);
    uintptr_t q = libc_qsort();

    use_libdw();
    ck_assert_int_eq(symbolize_begin(), 0);
    symbolized_frame_t with;
    ck_assert_int_eq(symbolize_address(ra, &with, 1), 1);
    uintptr_t with_offset = with.offset;
    char with_module[4096];
    strncpy(with_module, with.module, sizeof(with_module) - 1);
    with_module[sizeof(with_module) - 1] = '\0';
    symbolize_end();

    no_libdw();
    ck_assert_int_eq(symbolize_begin(), -1);
    symbolized_frame_t f[4];
    ck_assert_int_eq(symbolize_address(ra, f, 4), 1);
    ck_assert_str_eq(f[0].module, with_module);
    ck_assert_uint_eq(f[0].offset, with_offset);
    ck_assert_uint_eq(f[0].offset, ra - exe_bias());
    ck_assert_str_eq(f[0].function, "static_caller"); /* static: .symtab only */
    ck_assert_uint_eq(f[0].function_offset, ra - (uintptr_t)(void *)static_caller);
    ck_assert_ptr_null(f[0].file);
    ck_assert_int_eq(f[0].line, 0);

    /* Inlining is invisible without DWARF: one frame, not inlined. */
    int inner, outer;
    uintptr_t ira = inline_outer(&inner, &outer);
    ck_assert_int_eq(symbolize_address(ira, f, 4), 1);
    ck_assert_int_eq(f[0].inlined, 0);
    ck_assert_str_eq(f[0].function, "inline_outer");

    ck_assert_int_eq(symbolize_address(q + 1, f, 4), 1);
    ck_assert_ptr_nonnull(strstr(f[0].module, "libc"));
    ck_assert_ptr_nonnull(strstr(f[0].function, "qsort"));
    ck_assert_uint_eq(f[0].function_offset, 1);
    symbolize_end();
    use_libdw();
}
END_TEST

/* Repeated lookups come from the cache and are identical, across table
 * growth; max <= 0 or no output buffer writes nothing. */
START_TEST(test_cache)
{
    int line;
    uintptr_t ra = static_caller(&line);
    uintptr_t q = libc_qsort();
    use_libdw();
    symbolize_begin();
    symbolized_frame_t a, b;
    ck_assert_int_eq(symbolize_address(ra, &a, 1), 1);
    ck_assert_int_eq(symbolize_address(ra, &b, 1), 1);
    ck_assert_mem_eq(&a, &b, sizeof(a));

    /* Enough distinct addresses to grow the tables several times; a second
     * pass must hand back the very same answers. */
    enum { N = 3000 };
    static symbolized_frame_t first[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(symbolize_address(q + 1 + (uintptr_t)i, &first[i], 1),
                         1);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(symbolize_address(q + 1 + (uintptr_t)i, &a, 1), 1);
        ck_assert_mem_eq(&a, &first[i], sizeof(a));
    }
    ck_assert_ptr_eq(first[0].module, first[N - 1].module); /* interned */

    ck_assert_int_eq(symbolize_address(ra, &b, 0), 0);
    ck_assert_int_eq(symbolize_address(ra, NULL, 4), 0);
    symbolize_end();
}
END_TEST

/* Outside a batch lookups still answer (at dladdr level). */
START_TEST(test_outside_batch)
{
    uintptr_t q = libc_qsort();
    symbolized_frame_t f;
    ck_assert_int_eq(symbolize_address(q + 1, &f, 1), 1);
    ck_assert_ptr_nonnull(strstr(f.module, "libc"));
    ck_assert_ptr_nonnull(strstr(f.function, "qsort"));
    symbolize_end();
}
END_TEST

static atomic_int lookups_stop;

/* Symbolizes a few thousand distinct addresses, batch after batch: each is
 * a walk of the loaded objects. */
static void *keep_looking_up(void *unused)
{
    (void)unused;
    uintptr_t q = libc_qsort();
    symbolized_frame_t f;
    while (!atomic_load(&lookups_stop)) {
        symbolize_begin();
        for (uintptr_t i = 1; i < 2000 && !atomic_load(&lookups_stop); i++)
            symbolize_address(q + i, &f, 1);
        symbolize_end();
    }
    return NULL;
}

static int no_op_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    (void)data;
    return 0;
}

/* A child forked while a lookup walks the loaded objects inherited the
 * loader's write lock held (fork does not reset it) and hung at its own
 * walk, as an unwinder or a C++ throw makes. */
START_TEST(test_fork_during_lookups)
{
    no_libdw(); /* the walks are the point, and they come faster without it */
    atomic_store(&lookups_stop, 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, keep_looking_up, NULL), 0);
    int hung = 0, forks = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        pid_t child = fork();
        if (child == 0) {
            /* Check's own SIGALRM handler would kill the process group. */
            signal(SIGALRM, SIG_DFL);
            alarm(5);
            dl_iterate_phdr(no_op_cb, NULL);
            _exit(0);
        }
        ck_assert_int_gt(child, 0);
        int status;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        hung += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        forks++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec < 2 && hung == 0);
    atomic_store(&lookups_stop, 1);
    pthread_join(t, NULL);
    use_libdw();
    ck_assert_msg(hung == 0, "%d of %d children hung", hung, forks);
}
END_TEST

#ifdef INJECT_FAILURES
/* Runs one begin/lookups/end cycle with allocation failures injected after
 * k successful allocations; every answer must still be well formed. */
static void failing_cycle(long k, int once)
{
    int line, inner, outer;
    uintptr_t addrs[4];
    addrs[0] = static_caller(&line);
    addrs[1] = inline_outer(&inner, &outer);
    addrs[2] = libc_qsort() + 1;
    addrs[3] = mangled_caller();
    uintptr_t bias = exe_bias();
    symbolized_frame_t f[4][8];
    int n[4];

    fail_once = once;
    fail_after = k;
    symbolize_begin();
    for (int i = 0; i < 4; i++)
        n[i] = symbolize_address(addrs[i], f[i], 8);
    fail_after = -1;

    for (int i = 0; i < 4; i++) {
        ck_assert_int_ge(n[i], 1);
        for (int j = 0; j < n[i]; j++) {
            ck_assert_ptr_nonnull(f[i][j].module);
            ck_assert_uint_eq(f[i][j].address, addrs[i]);
            if (f[i][j].file == NULL)
                ck_assert_int_eq(f[i][j].line, 0);
        }
        if (i != 2 && strcmp(f[i][0].module, "?") != 0)
            ck_assert_uint_eq(f[i][0].offset, addrs[i] - bias);
    }
    symbolize_end();
}

/* Every allocation, libc's included, may fail in the dladdr-only mode. */
START_TEST(test_alloc_failure_no_libdw)
{
    no_libdw();
    for (long k = 0; k < 40; k++) {
        failing_cycle(k, 0);
        failing_cycle(k, 1);
    }
    use_libdw();
}
END_TEST

/* Finds the program's text bounds for fail_own_only, from its PT_LOAD
 * segments (the first dl_iterate_phdr entry is the program). */
static int exe_range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        exe_lo = info->dlpi_addr + ph->p_vaddr;
        exe_hi = exe_lo + ph->p_memsz;
    }
    return 1;
}

/* With libdw loaded, symbolize.c's own allocations fail (see
 * fail_own_only for why not libdw's). */
START_TEST(test_alloc_failure_libdw)
{
    use_libdw();
    dl_iterate_phdr(exe_range_cb, NULL);
    ck_assert_uint_lt(exe_lo, exe_hi);
    fail_own_only = 1;
    /* symbolize.c makes about two dozen allocations per cycle. */
    for (long k = 0; k < 32; k++) {
        failing_cycle(k, 1);
        failing_cycle(k, 0);
    }
    fail_own_only = 0;
}
END_TEST
#endif


/* core: behaviour; oom: allocation failures (slower, a dwfl per cycle). */
static Suite *symbolize_suite(void)
{
    Suite *s = suite_create("symbolize");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_static_function);
    tcase_add_test(tc, test_no_libdw_invalid_value);
    tcase_add_test(tc, test_inlined_frames);
    tcase_add_test(tc, test_libc);
    tcase_add_test(tc, test_no_module);
    tcase_add_test(tc, test_demangle);
    tcase_add_test(tc, test_demangle_local_runtime);
    tcase_add_test(tc, test_without_libdw);
    tcase_add_test(tc, test_cache);
    tcase_add_test(tc, test_outside_batch);
    tcase_add_test(tc, test_fork_during_lookups);
    suite_add_tcase(s, tc);
#ifdef INJECT_FAILURES
    /* Its own case so CK_RUN_CASE=oom can run it alone under a debugger. */
    TCase *oom = tcase_create("oom");
    tcase_set_timeout(oom, 120);
    tcase_add_test(oom, test_alloc_failure_no_libdw);
    tcase_add_test(oom, test_alloc_failure_libdw);
    suite_add_tcase(s, oom);
#endif
    return s;
}

/* Exit status 0 when every test passed, as `make unit` expects. */
int main(void)
{
    return suite_run(symbolize_suite(), 1);
}
