/* symbolize.c: return addresses to module+offset, function, file:line.
 *
 * Runs at exit, for the stacks the report keeps, never on the allocation
 * path: everything here may take locks, read files and allocate.
 *
 * Layers, each optional but the first:
 *   dl_iterate_phdr  module path and offset (offset = address - load bias,
 *                    i.e. the ELF virtual address, so `addr2line -e module
 *                    offset` works on another machine)
 *   libdw            names, file:line from DWARF and the inlined frames;
 *                    loaded with dlopen so the shim runs where elfutils is
 *                    absent
 *   elfsyms          names from the module file's own .symtab, else
 *                    .dynsym, and MiniDebugInfo's (static functions, main,
 *                    nvcc's static cudart) where libdw is absent or finds
 *                    none
 *   dladdr           exported (.dynsym) names, for a module whose file
 *                    cannot be read (replaced on disk, say)
 *   __cxa_demangle   C++ names, only when the process already has it
 *
 * GPULEAK_NO_LIBDW=1 (config.no_libdw) makes every batch behave as if
 * libdw.so.1 were absent, as does an address-space limit with little room; the tests use it, and a user can too if libdw
 * misbehaves on some binary. The symbol tables are read per batch, up to
 * SYMBOL_BUDGET functions in all, and dropped at symbolize_end.
 *
 * Strings handed out come from an arena and are interned, so a report of many
 * stacks holds each path and name once; all of it goes at symbolize_end.
 * Any allocation failure degrades the answer (down to module+offset, or
 * "?"), never crashes. */
#define _GNU_SOURCE
#include "symbolize.h"
#include "real_dl.h"
#include "config.h"
#include "elfsyms.h"
#include "log.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Functions whose symbols one batch may hold, over every module read (16
 * bytes each: 64 MiB); a module's table that would go beyond is not read,
 * and its frames are named by dladdr alone. */
#define SYMBOL_BUDGET ((size_t)4 << 20)

/* Deepest inline chain kept per address (inlined frames + the real one). */
#define MAX_FRAMES 32
#define ARENA_CHUNK (64 * 1024)

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* The libdw entry points used, filled by dlsym on the libdw handle. Member
 * names are separate from the extern declarations, so typeof(&name) names the
 * real prototype and a signature change breaks the build, not the run. */
struct dw_api {
    typeof(&dwfl_begin) dwfl_begin;
    typeof(&dwfl_end) dwfl_end;
    typeof(&dwfl_report_begin) dwfl_report_begin;
    typeof(&dwfl_report_end) dwfl_report_end;
    typeof(&dwfl_linux_proc_report) dwfl_linux_proc_report;
    typeof(&dwfl_linux_proc_find_elf) dwfl_linux_proc_find_elf;
    typeof(&dwfl_build_id_find_debuginfo) dwfl_build_id_find_debuginfo;
    typeof(&dwfl_module_build_id) dwfl_module_build_id;
    typeof(&dwfl_addrmodule) dwfl_addrmodule;
    typeof(&dwfl_module_addrinfo) dwfl_module_addrinfo;
    typeof(&dwfl_module_addrdie) dwfl_module_addrdie;
    typeof(&dwfl_module_getsrc) dwfl_module_getsrc;
    typeof(&dwfl_lineinfo) dwfl_lineinfo;
    typeof(&dwarf_getscopes) dwarf_getscopes;
    typeof(&dwarf_tag) dwarf_tag;
    typeof(&dwarf_attr) dwarf_attr;
    typeof(&dwarf_attr_integrate) dwarf_attr_integrate;
    typeof(&dwarf_formstring) dwarf_formstring;
    typeof(&dwarf_formudata) dwarf_formudata;
    typeof(&dwarf_diename) dwarf_diename;
    typeof(&dwarf_diecu) dwarf_diecu;
    typeof(&dwarf_getsrcfiles) dwarf_getsrcfiles;
    typeof(&dwarf_filesrc) dwarf_filesrc;
    typeof(&dwarf_entrypc) dwarf_entrypc;
    typeof(&dwfl_module_getdwarf) dwfl_module_getdwarf;
    typeof(&dwarf_get_units) dwarf_get_units;
    typeof(&dwarf_ranges) dwarf_ranges;
    typeof(&dwarf_getsrc_die) dwarf_getsrc_die;
    typeof(&dwarf_lineno) dwarf_lineno;
    typeof(&dwarf_linesrc) dwarf_linesrc;
};

struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    char data[];
};

struct intern_slot {
    const char *s; /* NULL: empty */
    size_t len;
    uint64_t hash;
};

/* A module's CUs by address range, built from the CUs themselves for DWARF
 * that lacks .debug_aranges (clang's default), where libdw 0.188's
 * dwfl_module_addrdie finds nothing. */
struct cu_range {
    Dwarf_Addr lo, hi;
    size_t cu; /* index into cus */
};

struct cu_index {
    struct cu_index *next;
    Dwfl_Module *mod;
    Dwarf_Addr bias;
    Dwarf_Die *cus;
    size_t ncus, cus_cap;
    struct cu_range *ranges;
    size_t nranges, ranges_cap;
};

/* A module's symbol table, read on its first frame without a name. */
struct module_syms {
    struct module_syms *next;
    uintptr_t bias;
    elfsyms_t *syms; /* NULL: no readable file, not the loaded one, no functions */
};

struct cache_slot {
    uintptr_t address;
    uint32_t first; /* index into frames pool */
    uint32_t count; /* 0: empty (a resolved address always has >= 1) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* dwfl_begin keeps a pointer to its callbacks, so they must outlive the
 * session; the members are libdw's own functions, known only after dlopen,
 * and find_debuginfo_locally. */
static Dwfl_Callbacks dwfl_callbacks;
static char *debuginfo_path; /* NULL: libdw's default search path */

/* Loaded at most once per process and never unloaded: dlclose of libdw
 * and its chain ran their exit handlers on the reporter thread under
 * glibc's exit-handler lock, which fork does not reset, so a child forked
 * meanwhile hung in exit(). Only symbolize_begin writes these, under lock. */
static int dw_tried;      /* the dlopen was tried (a failed search costs each report) */
static void *dw_handle;   /* NULL: libdw is absent or incomplete */
static struct dw_api libdw;  /* all set when dw_handle is */

/* The C++ demangler once found, with the RTLD_NOLOAD reference that keeps
 * its runtime loaded while the shim may call it (never dropped, for the
 * reason above). */
static cxa_demangle_fn demangler;

static struct {
    int open; /* between symbolize_begin and symbolize_end */
    Dwfl *dwfl; /* non-NULL only when libdw is fully usable */
    struct cu_index *cu_indexes;
    struct module_syms *module_syms;
    size_t symbol_budget; /* functions the batch may still read */

    int demangler_looked;

    int exe_looked;
    char exe_path[PATH_MAX];

    struct arena_chunk *arena;
    struct intern_slot *strs;
    size_t strs_cap, strs_count;

    struct cache_slot *cache;
    size_t cache_cap, cache_count;
    symbolized_frame_t *pool;
    size_t pool_len, pool_cap;
} st;

/* ---- strings ---------------------------------------------------------- */

/* Copies n bytes plus a NUL into the arena; NULL when out of memory. One
 * free list for the whole batch is cheaper and simpler than a malloc per
 * string, and symbolize_end frees it in one walk. */
static char *arena_copy(const char *s, size_t n)
{
    struct arena_chunk *c = st.arena;
    if (!c || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > ARENA_CHUNK ? n + 1 : ARENA_CHUNK;
        c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->cap = cap;
        c->used = 0;
        /* A big one-off string gets its own chunk behind the current one,
         * so the current chunk's free space is not wasted. */
        if (st.arena && cap > ARENA_CHUNK) {
            c->next = st.arena->next;
            st.arena->next = c;
        } else {
            c->next = st.arena;
            st.arena = c;
        }
    }
    char *d = c->data + c->used;
    memcpy(d, s, n);
    d[n] = '\0';
    c->used += n + 1;
    return d;
}

/* FNV-1a: strings here are short paths and names; anything decent works. */
static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Doubles the intern table; returns -1 (table unchanged) without memory. */
static int intern_grow(void)
{
    size_t cap = st.strs_cap ? st.strs_cap * 2 : 256;
    struct intern_slot *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < st.strs_cap; i++) {
        if (!st.strs[i].s)
            continue;
        size_t j = st.strs[i].hash & (cap - 1);
        while (t[j].s)
            j = (j + 1) & (cap - 1);
        t[j] = st.strs[i];
    }
    free(st.strs);
    st.strs = t;
    st.strs_cap = cap;
    return 0;
}

/* Returns a NUL-terminated copy of s[0..n) owned by this module until
 * symbolize_end, the same pointer for equal strings (module paths repeat on
 * every frame), or NULL when out of memory. The caller's s may be freed
 * right after. */
static const char *intern_n(const char *s, size_t n)
{
    uint64_t h = hash_str(s, n);
    /* A failed grow is fine while free slots remain; probing needs one. */
    if ((st.strs_count + 1) * 2 > st.strs_cap && intern_grow() != 0 &&
        st.strs_count + 1 >= st.strs_cap)
        return arena_copy(s, n);
    size_t i = h & (st.strs_cap - 1);
    while (st.strs[i].s) {
        if (st.strs[i].hash == h && st.strs[i].len == n &&
            memcmp(st.strs[i].s, s, n) == 0)
            return st.strs[i].s;
        i = (i + 1) & (st.strs_cap - 1);
    }
    char *d = arena_copy(s, n);
    if (!d)
        return NULL;
    st.strs[i].s = d;
    st.strs[i].len = n;
    st.strs[i].hash = h;
    st.strs_count++;
    return d;
}

/* intern_n for a C string; NULL stays NULL so DWARF lookups chain. */
static const char *intern(const char *s)
{
    return s ? intern_n(s, strlen(s)) : NULL;
}

/* ---- demangling ------------------------------------------------------- */

/* Finds __cxa_demangle once per batch, only where the process already has a
 * C++ runtime: linking libstdc++ into the shim would drag it into every
 * watched C program. RTLD_DEFAULT misses a runtime loaded RTLD_LOCAL (a
 * Python extension, say), hence the RTLD_NOLOAD probes, which never load
 * anything new. */
static void find_demangler(void)
{
    static const char *const runtimes[] = {"libstdc++.so.6", "libc++abi.so.1",
                                           "libc++.so.1"};
    if (demangler || st.demangler_looked)
        return;
    st.demangler_looked = 1;
    for (size_t i = 0; !demangler && i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
        void *h = real_dl_open(runtimes[i], RTLD_NOW | RTLD_NOLOAD);
        if (!h)
            continue;
        demangler = (cxa_demangle_fn)real_dl_lookup(h, "__cxa_demangle");
        if (!demangler)
            real_dl_close(h); /* one reference of several: nothing is unloaded */
    }
    if (!demangler) {
        /* A runtime under another name, loaded globally; no reference is
         * taken, as none can be without knowing the name. */
        demangler = (cxa_demangle_fn)real_dl_lookup(RTLD_DEFAULT, "__cxa_demangle");
    }
}

/* Returns the interned demangled form of an Itanium-mangled name when a
 * demangler is present, else the interned name itself; NULL for NULL, "" or
 * no memory. A symbol version suffix ("@@GLIBC_2.34", which .symtab keeps
 * for versioned definitions) is dropped: it differs between machines and is
 * not part of the function's name. __cxa_demangle's result is malloc'd by
 * the C++ runtime with the process's malloc, so free() releases it. */
static const char *demangle(const char *name)
{
    if (!name || !*name)
        return NULL;
    size_t n = strcspn(name, "@");
    if (n == 0)
        n = strlen(name);
    char buf[1024];
    if (n < sizeof(buf) && name[n]) {
        memcpy(buf, name, n);
        buf[n] = '\0';
        name = buf;
    }
    if (name[0] == '_' && name[1] == 'Z') {
        find_demangler();
        if (demangler) {
            int status = -1;
            char *d = demangler(name, NULL, NULL, &status);
            const char *r = d && status == 0 ? intern(d) : NULL;
            free(d);
            if (r)
                return r;
        }
    }
    return intern_n(name, n);
}

/* ---- modules ---------------------------------------------------------- */

struct module_query {
    uintptr_t pc;
    int found;
    uintptr_t bias;
    const char *name; /* the loader's string, valid while the object is */
};

/* dl_iterate_phdr callback: stops at the object whose PT_LOAD segment holds
 * pc. Segments, not [first, last] mapping bounds, so a gap between objects
 * is "no module" rather than a wrong one. */
static int module_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct module_query *q = data;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (q->pc - lo < ph->p_memsz) {
            q->found = 1;
            q->bias = info->dlpi_addr;
            q->name = info->dlpi_name;
            return 1;
        }
    }
    return 0;
}

/* The program's own path: the loader names it "", and argv[0] may be
 * relative or a bare name found on PATH, so /proc/thread-self/exe is
 * preferred (not /proc/self's: once main has left through pthread_exit it
 * answers nothing). */
static const char *exe_path(void)
{
    if (!st.exe_looked) {
        st.exe_looked = 1;
        ssize_t n = readlink("/proc/thread-self/exe", st.exe_path,
                             sizeof(st.exe_path) - 1);
        if (n > 0)
            st.exe_path[n] = '\0';
        else
            st.exe_path[0] = '\0';
    }
    return st.exe_path[0] ? st.exe_path : program_invocation_name;
}

/* Fills in module and offset for pc (the adjusted lookup address); leaves
 * them as "?" and the raw address when no loaded object holds it. The path is
 * absolute where the loader's is relative (dlopen("./x.so")), so the report
 * does not depend on the directory the process happened to be in. Returns
 * 1 with the object's load bias in *bias, or 0 when none holds pc; *is_exe
 * says it is the program. */
static int find_module(uintptr_t pc, symbolized_frame_t *fr, uintptr_t *bias, int *is_exe)
{
    struct module_query q = {.pc = pc};
    if (!real_dl_iterate(module_cb, &q) || !q.found)
        return 0;
    fr->offset = fr->address - q.bias;
    *bias = q.bias;
    const char *name = q.name;
    *is_exe = !name || !*name;
    if (*is_exe) {
        /* Only the program is nameless; other anonymous entries are rare
         * enough that "?" would be more misleading than the exe path. */
        name = exe_path();
        const char *s = intern(name);
        fr->module = s ? s : st.exe_path[0] ? st.exe_path : "?";
        return 1;
    }
    char buf[PATH_MAX];
    if (name[0] != '/' && strchr(name, '/') && realpath(name, buf))
        name = buf;
    const char *s = intern(name);
    /* Out of memory: the loader's string stays valid while the object is
     * loaded, which at exit it is; a local buffer would not be. */
    fr->module = s ? s : name == buf ? "?" : name;
    return 1;
}

/* ---- ELF symbol tables ------------------------------------------------ */

struct loaded_query {
    uintptr_t bias;
    const elfsyms_t *file;
    int matches;
};

/* dl_iterate_phdr callback: whether the object loaded at q->bias is the
 * file q->file (elfsyms_is_loaded_as allocates nothing, as the guard
 * requires). */
static int loaded_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct loaded_query *q = data;
    (void)size;
    if (info->dlpi_addr != q->bias || !elfsyms_is_loaded_as(q->file, info))
        return 0;
    q->matches = 1;
    return 1;
}

/* The symbol table of the module loaded at bias, from its file (path, or
 * the program's own through /proc/self/exe, which names it even when the
 * path was replaced), read the first time one of its frames needs a name.
 * NULL when there is none to use; the miss is kept too, so it is paid once
 * a batch. */
static const elfsyms_t *module_symbols(uintptr_t bias, const char *path, int is_exe)
{
    struct module_syms *m;
    for (m = st.module_syms; m; m = m->next)
        if (m->bias == bias)
            return m->syms;
    m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->bias = bias;
    m->next = st.module_syms;
    st.module_syms = m;
    elfsyms_t *t = is_exe ? elfsyms_open("/proc/self/exe") : NULL;
    /* Only an absolute path: a relative one would be looked up in the
     * current directory, where any file may lie. */
    if (!t && path[0] == '/')
        t = elfsyms_open(path);
    if (!t)
        return NULL;
    struct loaded_query q = {.bias = bias, .file = t};
    real_dl_iterate(loaded_cb, &q);
    if (!q.matches || elfsyms_load(t, &st.symbol_budget) == 0) {
        elfsyms_close(t);
        return NULL;
    }
    m->syms = t;
    return t;
}

/* Frees the batch's symbol tables. */
static void free_module_syms(void)
{
    while (st.module_syms) {
        struct module_syms *next = st.module_syms->next;
        elfsyms_close(st.module_syms->syms);
        free(st.module_syms);
        st.module_syms = next;
    }
}

/* ---- libdw ------------------------------------------------------------ */

/* The address space libdw is given room for: it maps the debug files it
 * reads (a framework's run to gigabytes), and where a mapping or its
 * malloc fails it ends the process (elfutils' out-of-memory handler calls
 * exit). Under an address-space limit (ulimit -v) with less room than this
 * left, a batch names frames from the symbol tables instead. */
#define LIBDW_ROOM_BYTES (1ull << 30)

/* Whether an address-space limit leaves less than LIBDW_ROOM_BYTES above
 * what the process maps now (/proc/self/statm's first field, in pages).
 * Unlimited, or unreadable: no. */
static int address_space_tight(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return 0;
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long long pages = 0;
    int read = f != NULL && fscanf(f, "%llu", &pages) == 1;
    if (f != NULL)
        fclose(f);
    if (!read)
        return 0;
    unsigned long long mapped = pages * (unsigned long long)sysconf(_SC_PAGESIZE);
    return (unsigned long long)limit.rlim_cur < mapped + LIBDW_ROOM_BYTES;
}

/* dlopens libdw, the first time only, and resolves every entry point; all
 * or nothing, so the lookup code never checks individual pointers. Returns
 * 0 when libdw is usable for this batch, else -1. */
static int load_libdw(void)
{
    if (config.no_libdw || address_space_tight())
        return -1;
    if (dw_tried)
        return dw_handle ? 0 : -1;
    dw_tried = 1;
    void *h = real_dl_open("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    struct dw_api *d = &libdw;
    int missing = 0;
#define DW_LOAD(sym) \
    missing |= (d->sym = (typeof(d->sym))real_dl_lookup(h, #sym)) == NULL
    DW_LOAD(dwfl_begin);
    DW_LOAD(dwfl_end);
    DW_LOAD(dwfl_report_begin);
    DW_LOAD(dwfl_report_end);
    DW_LOAD(dwfl_linux_proc_report);
    DW_LOAD(dwfl_linux_proc_find_elf);
    DW_LOAD(dwfl_build_id_find_debuginfo);
    DW_LOAD(dwfl_module_build_id);
    DW_LOAD(dwfl_addrmodule);
    DW_LOAD(dwfl_module_addrinfo);
    DW_LOAD(dwfl_module_addrdie);
    DW_LOAD(dwfl_module_getsrc);
    DW_LOAD(dwfl_lineinfo);
    DW_LOAD(dwarf_getscopes);
    DW_LOAD(dwarf_tag);
    DW_LOAD(dwarf_attr);
    DW_LOAD(dwarf_attr_integrate);
    DW_LOAD(dwarf_formstring);
    DW_LOAD(dwarf_formudata);
    DW_LOAD(dwarf_diename);
    DW_LOAD(dwarf_diecu);
    DW_LOAD(dwarf_getsrcfiles);
    DW_LOAD(dwarf_filesrc);
    DW_LOAD(dwarf_entrypc);
    DW_LOAD(dwfl_module_getdwarf);
    DW_LOAD(dwarf_get_units);
    DW_LOAD(dwarf_ranges);
    DW_LOAD(dwarf_getsrc_die);
    DW_LOAD(dwarf_lineno);
    DW_LOAD(dwarf_linesrc);
#undef DW_LOAD
    if (missing) {
        /* An older libdw: it stays loaded, unused, as unloading it would
         * run its exit handlers here (see dw_tried). */
        memset(d, 0, sizeof(*d));
        return -1;
    }
    dw_handle = h;
    return 0;
}

/* The CRC-32 of fd's whole contents (the .gnu_debuglink checksum: the
 * zlib polynomial, reflected), or 0 when it cannot be read; its table is
 * built on first use. */
static uint32_t file_crc32(int fd)
{
    static uint32_t table[256];
    if (table[1] == 0) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    }
    unsigned char buf[16384];
    uint32_t crc = 0xFFFFFFFFu;
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n; i++)
            crc = table[(crc ^ buf[i]) & 0xFF] ^ (crc >> 8);
    if (n < 0 || lseek(fd, 0, SEEK_SET) != 0)
        return 0;
    return crc ^ 0xFFFFFFFFu;
}

/* Whether the debug file at path belongs to mod: the same build id, or,
 * for a module without one, the checksum its .gnu_debuglink names. */
static int debug_file_matches(Dwfl_Module *mod, const char *path, int fd, GElf_Word crc)
{
    const unsigned char *id;
    GElf_Addr id_vaddr;
    int id_len = libdw.dwfl_module_build_id(mod, &id, &id_vaddr);
    if (id_len > 0) {
        unsigned char other[64];
        return elfsyms_build_id(path, other, sizeof(other)) == id_len &&
               memcmp(other, id, (size_t)id_len) == 0;
    }
    return crc != 0 && file_crc32(fd) == crc;
}

/* Dwfl_Callbacks.find_debuginfo: where libdw's standard callback looks,
 * but on this machine only. dwfl_standard_find_debuginfo, having found
 * nothing here, asks the debuginfod servers of DEBUGINFOD_URLS (libdw loads
 * libdebuginfod and libcurl for it): a report made network requests, and
 * the exit took seconds. The program's DEBUGINFOD_URLS stays as it is, for
 * the program's own use. Looks in the build-id tree (libdw's
 * dwfl_build_id_find_debuginfo, local by itself: it also finds dwz's
 * shared files), then for the .gnu_debuglink name beside the file, in its
 * .debug directory and under /usr/lib/debug, the standard's default path;
 * a candidate must match the module. */
static int find_debuginfo_locally(Dwfl_Module *mod, void **userdata, const char *modname,
                                  GElf_Addr base, const char *file_name,
                                  const char *debuglink_file, GElf_Word debuglink_crc,
                                  char **debuginfo_file_name)
{
    int fd = libdw.dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
                                                debuglink_file, debuglink_crc,
                                                debuginfo_file_name);
    if (fd >= 0 || !debuglink_file || strchr(debuglink_file, '/') || !file_name ||
        file_name[0] != '/')
        return fd;
    const char *slash = strrchr(file_name, '/');
    int dir_len = (int)(slash - file_name);
    struct stat main_st;
    if (stat(file_name, &main_st) != 0)
        return -1;
    static const char *const forms[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), forms[i], dir_len, file_name, debuglink_file) >=
            (int)sizeof(path))
            continue;
        struct stat st;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* The main file by another name is no debug file. */
        if (fstat(fd, &st) == 0 && (st.st_dev != main_st.st_dev || st.st_ino != main_st.st_ino) &&
            debug_file_matches(mod, path, fd, debuglink_crc) &&
            (*debuginfo_file_name = strdup(path)) != NULL)
            return fd;
        close(fd);
    }
    return -1;
}

/* Opens a Dwfl session over this process's own mappings, read from this
 * thread's /proc entry (the process's, the main thread's, is empty once
 * main has left through pthread_exit). The module list is read once per
 * batch: at exit no more libraries come and go. Returns 0, or -1 with no
 * session (e.g. /proc not mounted). */
static int open_dwfl(void)
{
    struct dw_api *d = &libdw;
    debuginfo_path = NULL;
    dwfl_callbacks.find_elf = d->dwfl_linux_proc_find_elf;
    dwfl_callbacks.find_debuginfo = find_debuginfo_locally;
    dwfl_callbacks.section_address = NULL;
    dwfl_callbacks.debuginfo_path = &debuginfo_path;
    Dwfl *dwfl = d->dwfl_begin(&dwfl_callbacks);
    if (!dwfl)
        return -1;
    d->dwfl_report_begin(dwfl);
    if (d->dwfl_linux_proc_report(dwfl, gettid()) != 0 ||
        d->dwfl_report_end(dwfl, NULL, NULL) != 0) {
        d->dwfl_end(dwfl);
        return -1;
    }
    st.dwfl = dwfl;
    return 0;
}

/* A DIE's function name for the report: the linkage name demangled (the
 * qualified C++ name) when there is one, else DW_AT_name. The _integrate
 * lookups follow DW_AT_abstract_origin/specification, which is where an
 * inlined instance's name lives. */
static const char *die_name(Dwarf_Die *die)
{
    struct dw_api *d = &libdw;
    Dwarf_Attribute a;
    const char *s = d->dwarf_formstring(
        d->dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!s)
        s = d->dwarf_formstring(
            d->dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    if (s)
        return demangle(s);
    return intern(d->dwarf_diename(die));
}

/* address minus a scope's entry pc, for function_offset; 0 when the entry is
 * unknown or lies above the address (scopes with split ranges). */
static uintptr_t die_offset(Dwarf_Die *die, Dwarf_Addr bias, uintptr_t address)
{
    Dwarf_Addr entry;
    if (libdw.dwarf_entrypc(die, &entry) != 0)
        return 0;
    entry += bias;
    return address >= entry ? address - entry : 0;
}

/* Where an inlined instance was called from, in its caller: the caller
 * frame's file:line. DW_AT_call_file indexes the file table of the CU that
 * holds the concrete inlined DIE, so that CU is the one asked. */
static void call_site(Dwarf_Die *die, const char **file, int *line)
{
    struct dw_api *d = &libdw;
    Dwarf_Attribute a;
    Dwarf_Word w;
    *file = NULL;
    *line = 0;
    if (d->dwarf_formudata(d->dwarf_attr(die, DW_AT_call_line, &a), &w) == 0)
        *line = w > INT_MAX ? 0 : (int)w;
    if (d->dwarf_formudata(d->dwarf_attr(die, DW_AT_call_file, &a), &w) != 0)
        return;
    Dwarf_Die cu;
    Dwarf_Files *files;
    size_t nfiles;
    if (d->dwarf_diecu(die, &cu, NULL, NULL) &&
        d->dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 && w < nfiles)
        *file = intern(d->dwarf_filesrc(files, w, NULL, NULL));
}

/* Orders CU ranges by start address for the binary search. */
static int range_cmp(const void *a, const void *b)
{
    const struct cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Adds die's address ranges to x under CU number x->ncus; returns how many
 * were added, -1 without memory. */
static int index_cu(struct cu_index *x, Dwarf_Die *die)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    int added = 0;
    while ((off = libdw.dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (lo >= hi)
            continue;
        if (x->nranges == x->ranges_cap) {
            size_t cap = x->ranges_cap ? x->ranges_cap * 2 : 64;
            struct cu_range *r = realloc(x->ranges, cap * sizeof(*r));
            if (!r)
                return -1;
            x->ranges = r;
            x->ranges_cap = cap;
        }
        x->ranges[x->nranges++] = (struct cu_range){lo, hi, x->ncus};
        added++;
    }
    return added;
}

/* The CU index of mod, built on first use and kept for the batch (also when
 * the module has no DWARF, so the miss is not paid again). NULL only without
 * memory. A partial index (memory ran out midway) is still used: it can only
 * miss, never misattribute. */
static struct cu_index *cu_index_for(Dwfl_Module *mod)
{
    struct cu_index *x;
    for (x = st.cu_indexes; x; x = x->next)
        if (x->mod == mod)
            return x;
    x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->mod = mod;
    x->next = st.cu_indexes;
    st.cu_indexes = x;
    Dwarf *dw = libdw.dwfl_module_getdwarf(mod, &x->bias);
    Dwarf_CU *cu = NULL;
    Dwarf_Die die;
    while (dw && libdw.dwarf_get_units(dw, cu, &cu, NULL, NULL, &die,
                                       NULL) == 0) {
        if (libdw.dwarf_tag(&die) != DW_TAG_compile_unit)
            continue; /* type and partial units hold no code */
        if (x->ncus == x->cus_cap) {
            size_t cap = x->cus_cap ? x->cus_cap * 2 : 16;
            Dwarf_Die *c = realloc(x->cus, cap * sizeof(*c));
            if (!c)
                break;
            x->cus = c;
            x->cus_cap = cap;
        }
        int added = index_cu(x, &die);
        if (added > 0)
            x->cus[x->ncus++] = die;
        if (added < 0) {
            /* Drop this CU's ranges: their cu index is not stored. */
            while (x->nranges && x->ranges[x->nranges - 1].cu == x->ncus)
                x->nranges--;
            break;
        }
    }
    if (x->nranges)
        qsort(x->ranges, x->nranges, sizeof(*x->ranges), range_cmp);
    return x;
}

/* The CU DIE whose ranges hold the DWARF address a, or NULL. */
static Dwarf_Die *cu_index_find(struct cu_index *x, Dwarf_Addr a)
{
    size_t lo = 0, hi = x->nranges;
    while (lo < hi) { /* first range starting above a */
        size_t mid = lo + (hi - lo) / 2;
        if (x->ranges[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || a >= x->ranges[lo - 1].hi)
        return NULL;
    return &x->cus[x->ranges[lo - 1].cu];
}

/* Frees every CU index of the batch. */
static void free_cu_indexes(void)
{
    while (st.cu_indexes) {
        struct cu_index *next = st.cu_indexes->next;
        free(st.cu_indexes->cus);
        free(st.cu_indexes->ranges);
        free(st.cu_indexes);
        st.cu_indexes = next;
    }
}

/* ---- resolution ------------------------------------------------------- */

/* What the lookups found of one address: the function and its offset, the
 * source line, and the DWARF scopes around it (inlined calls innermost
 * first, then the subprogram), which the caller frees. */
typedef struct lookup {
    const char *func, *file;
    uintptr_t func_off;
    int line;
    Dwarf_Die *scopes;
    int nscopes;
    Dwarf_Addr bias;
} lookup_t;

/* The line of pc from the CU found by our own index, where the module has
 * no .debug_aranges entry for it; sets lk->bias. */
static Dwarf_Die *cu_without_aranges(Dwfl_Module *mod, uintptr_t pc, lookup_t *lk)
{
    struct dw_api *d = &libdw;
    struct cu_index *x = cu_index_for(mod);
    Dwarf_Die *cu = x ? cu_index_find(x, pc - x->bias) : NULL;
    if (cu)
        lk->bias = x->bias;
    Dwarf_Line *dl = cu && !lk->file ? d->dwarf_getsrc_die(cu, pc - lk->bias) : NULL;
    Dwarf_Word mtime, len;
    if (dl && d->dwarf_lineno(dl, &lk->line) == 0)
        lk->file = intern(d->dwarf_linesrc(dl, &mtime, &len));
    if (!lk->file)
        lk->line = 0;
    return cu;
}

/* What libdw knows of pc (return address address): the symbol (.symtab
 * too, also from separate debuginfo, which names static functions), the
 * line, the scopes. */
static void dwarf_lookup(uintptr_t pc, uintptr_t address, lookup_t *lk)
{
    struct dw_api *d = &libdw;
    Dwfl_Module *mod = st.dwfl ? d->dwfl_addrmodule(st.dwfl, pc) : NULL;
    if (!mod)
        return;
    GElf_Off off = 0;
    GElf_Sym sym;
    GElf_Word shndx;
    Elf *elf;
    Dwarf_Addr sbias;
    const char *name = d->dwfl_module_addrinfo(mod, pc, &off, &sym, &shndx, &elf, &sbias);
    if (name && *name && (lk->func = demangle(name)) != NULL)
        lk->func_off = off + (address - pc);
    Dwfl_Line *l = d->dwfl_module_getsrc(mod, pc);
    if (l) {
        Dwarf_Addr laddr;
        int col;
        Dwarf_Word mtime, len;
        lk->file = intern(d->dwfl_lineinfo(l, &laddr, &lk->line, &col, &mtime, &len));
        if (!lk->file)
            lk->line = 0;
    }
    Dwarf_Die *cu = d->dwfl_module_addrdie(mod, pc, &lk->bias);
    if (!cu)
        cu = cu_without_aranges(mod, pc, lk);
    if (cu)
        lk->nscopes = d->dwarf_getscopes(cu, pc - lk->bias, &lk->scopes);
    if (lk->nscopes < 0)
        lk->nscopes = 0;
}

/* Without a name from libdw: the module's own symbol tables, then the
 * dynamic loader's. */
static void symbol_lookup(uintptr_t pc, uintptr_t address, const symbolized_frame_t *base,
                          uintptr_t load_bias, int is_exe, int in_module, lookup_t *lk)
{
    if (!lk->func && in_module) {
        const elfsyms_t *t = module_symbols(load_bias, base->module, is_exe);
        uint64_t off;
        const char *name = t ? elfsyms_lookup(t, pc - load_bias, &off) : NULL;
        if (name && (lk->func = demangle(name)) != NULL)
            lk->func_off = off + (address - pc);
    }
    if (!lk->func) {
        Dl_info info;
        if (dladdr((void *)pc, &info) && info.dli_sname && info.dli_saddr &&
            (lk->func = demangle(info.dli_sname)) != NULL)
            lk->func_off = address - (uintptr_t)info.dli_saddr;
    }
}

/* The inlined frames of lk's scopes into out (at most cap - 1, the last
 * slot kept for the real function), moving lk's file and line out to each
 * call site. Returns how many were written; *sub is the subprogram's
 * scope, or NULL. */
static int inlined_frames(lookup_t *lk, const symbolized_frame_t *base, uintptr_t address,
                          symbolized_frame_t *out, int cap, Dwarf_Die **sub)
{
    int n = 0;
    *sub = NULL;
    for (int i = 0; i < lk->nscopes; i++) {
        int tag = libdw.dwarf_tag(&lk->scopes[i]);
        if (tag == DW_TAG_subprogram) {
            *sub = &lk->scopes[i];
            break;
        }
        if (tag != DW_TAG_inlined_subroutine)
            continue; /* lexical blocks */
        /* Past the cap the outermost inlined frames are dropped, but the
         * call-site chain still runs through them, so the real function's
         * line stays right. */
        if (n < cap - 1) {
            symbolized_frame_t *fr = &out[n++];
            *fr = *base;
            fr->function = die_name(&lk->scopes[i]);
            fr->function_offset = die_offset(&lk->scopes[i], lk->bias, address);
            fr->file = lk->file;
            fr->line = lk->line;
            fr->inlined = 1;
        }
        call_site(&lk->scopes[i], &lk->file, &lk->line);
    }
    return n;
}

/* Resolves address into up to cap frames (inlined innermost first, then the
 * real function, which is always last and always present). Frame k's
 * file:line is the place executing in that function: the line table's for
 * the innermost, the call site of frame k-1 for the others. */
static int resolve(uintptr_t address, symbolized_frame_t *out, int cap)
{
    /* The return address is the instruction after the call, which may be
     * another line or even another function (noreturn calls at the end). */
    uintptr_t pc = address ? address - 1 : 0;
    symbolized_frame_t base = {.address = address, .offset = address,
                               .module = "?"};
    uintptr_t load_bias = 0;
    int is_exe = 0;
    int in_module = find_module(pc, &base, &load_bias, &is_exe);
    lookup_t lk = { 0 };
    dwarf_lookup(pc, address, &lk);
    symbol_lookup(pc, address, &base, load_bias, is_exe, in_module, &lk);

    Dwarf_Die *sub;
    int n = inlined_frames(&lk, &base, address, out, cap, &sub);
    symbolized_frame_t *fr = &out[n++];
    *fr = base;
    if (!lk.func && sub && (lk.func = die_name(sub)) != NULL)
        lk.func_off = die_offset(sub, lk.bias, address);
    fr->function = lk.func;
    fr->function_offset = lk.func ? lk.func_off : 0;
    fr->file = lk.file;
    fr->line = lk.file ? lk.line : 0;
    fr->inlined = 0;
    free(lk.scopes); /* malloc'd by dwarf_getscopes */
    return n;
}

/* ---- cache ------------------------------------------------------------ */

/* Fibonacci hashing: return addresses differ in low bits and share high ones,
 * so the multiply spreads them before the mask. */
static size_t hash_addr(uintptr_t a, size_t cap)
{
    return (size_t)(((uint64_t)a * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* The cached frames of address, or NULL. */
static const struct cache_slot *cache_find(uintptr_t address)
{
    if (!st.cache_cap)
        return NULL;
    size_t i = hash_addr(address, st.cache_cap);
    while (st.cache[i].count) {
        if (st.cache[i].address == address)
            return &st.cache[i];
        i = (i + 1) & (st.cache_cap - 1);
    }
    return NULL;
}

/* Remembers n frames for address. Best effort: without memory the address is
 * simply resolved again next time. */
static void cache_put(uintptr_t address, const symbolized_frame_t *fr, int n)
{
    if ((st.cache_count + 1) * 2 > st.cache_cap) {
        size_t cap = st.cache_cap ? st.cache_cap * 2 : 512;
        struct cache_slot *t = calloc(cap, sizeof(*t));
        if (!t)
            return;
        for (size_t i = 0; i < st.cache_cap; i++) {
            if (!st.cache[i].count)
                continue;
            size_t j = hash_addr(st.cache[i].address, cap);
            while (t[j].count)
                j = (j + 1) & (cap - 1);
            t[j] = st.cache[i];
        }
        free(st.cache);
        st.cache = t;
        st.cache_cap = cap;
    }
    if (st.pool_len + (size_t)n > st.pool_cap) {
        size_t cap = st.pool_cap ? st.pool_cap * 2 : 1024;
        while (cap < st.pool_len + (size_t)n)
            cap *= 2;
        if (cap > UINT32_MAX)
            return;
        symbolized_frame_t *p = realloc(st.pool, cap * sizeof(*p));
        if (!p)
            return;
        st.pool = p;
        st.pool_cap = cap;
    }
    memcpy(st.pool + st.pool_len, fr, (size_t)n * sizeof(*fr));
    size_t i = hash_addr(address, st.cache_cap);
    while (st.cache[i].count)
        i = (i + 1) & (st.cache_cap - 1);
    st.cache[i].address = address;
    st.cache[i].first = (uint32_t)st.pool_len;
    st.cache[i].count = (uint32_t)n;
    st.pool_len += (size_t)n;
    st.cache_count++;
}

/* ---- public ----------------------------------------------------------- */

/* See symbolize.h. A begin inside an open batch keeps that batch (the
 * report may be written by nested helpers); its result still says whether
 * libdw is in use. */
int symbolize_begin(void)
{
    pthread_mutex_lock(&lock);
    if (!st.open) {
        st.open = 1;
        st.symbol_budget = SYMBOL_BUDGET;
        if (load_libdw() == 0)
            open_dwfl(); /* without a session (no /proc, say) lookups skip libdw */
    }
    int r = st.dwfl ? 0 : -1;
    pthread_mutex_unlock(&lock);
    return r;
}

/* See symbolize.h. Outside a batch it still answers, at dladdr level, and
 * its strings live until the next symbolize_end. Locked because Dwfl is not
 * thread-safe and a report might be built while other threads still run. */
int symbolize_address(uintptr_t address, symbolized_frame_t *out, int max)
{
    if (!out || max <= 0)
        return 0;
    pthread_mutex_lock(&lock);
    int n;
    const struct cache_slot *c = cache_find(address);
    if (c) {
        n = (int)c->count < max ? (int)c->count : max;
        memcpy(out, st.pool + c->first, (size_t)n * sizeof(*out));
    } else {
        symbolized_frame_t frames[MAX_FRAMES];
        int all = resolve(address, frames, MAX_FRAMES);
        cache_put(address, frames, all);
        n = all < max ? all : max;
        memcpy(out, frames, (size_t)n * sizeof(*out));
    }
    pthread_mutex_unlock(&lock);
    return n;
}

/* See symbolize.h. libdw and the demangler stay loaded (see dw_tried); a
 * later batch still weighs libdw's room and reads the module map afresh. */
void symbolize_end(void)
{
    pthread_mutex_lock(&lock);
    free_cu_indexes();
    free_module_syms();
    if (st.dwfl)
        libdw.dwfl_end(st.dwfl);
    while (st.arena) {
        struct arena_chunk *next = st.arena->next;
        free(st.arena);
        st.arena = next;
    }
    free(st.strs);
    free(st.cache);
    free(st.pool);
    memset(&st, 0, sizeof(st));
    memset(&dwfl_callbacks, 0, sizeof(dwfl_callbacks));
    pthread_mutex_unlock(&lock);
}
