#define _GNU_SOURCE
#include "torch_trace.h"
#include "capture.h"
#include "search.h"
#include "guard.h"
#include "lifecycle.h"
#include "log.h"
#include "real_dl.h"
#include "python.h"
#include "selftime.h"
#include "stacks.h"
#include "tracker.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names this module relies on, as libc10_cuda.so's symbol table spells
 * them. The allocator pointer is exported; the native allocator's vtable and
 * its attach method are local symbols, kept in .symtab by PyTorch's wheels.
 * The method's name is matched up to its parameter list, whose namespace
 * moved between versions. */
#define SYM_ALLOCATOR "_ZN3c104cuda20CUDACachingAllocator9allocatorE"
#define SYM_NATIVE_VTABLE "_ZTVN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocatorE"
#define SYM_NATIVE_ATTACH \
    "_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator27attachAllocatorTraceTrackerE"
#define LIBRARY_NAME "libc10_cuda.so"

/* TraceEntry's first fields, stable since PyTorch 2.1 (later versions
 * append fields): action at 0 (int), device at 4 (int8), address at 8, size
 * at 40. For OOM the address field holds the device's free bytes. */
#define ENTRY_ACTION 0
#define ENTRY_DEVICE 4
#define ENTRY_ADDR 8
#define ENTRY_SIZE 40

enum state { WAITING, ATTACHING, ATTACHED, REFUSED, BROKEN };

static _Atomic int state = WAITING;
/* This thread's latest driver allocation (kind and key; key 0: none, or
 * used): a segment event follows the allocation of its segment on the same
 * thread. */
static __thread uint64_t last_driver_key __attribute__((tls_model("initial-exec")));
static __thread int last_driver_kind __attribute__((tls_model("initial-exec")));
static __thread int in_event __attribute__((tls_model("initial-exec")));

/* Where libc10_cuda.so is loaded: its file, its load bias and the range of
 * its executable segments (return addresses inside it). */
typedef struct library {
    char path[4096];
    uintptr_t base, text_lo, text_hi;
    unsigned char build_id[64];  /* the loaded image's GNU build id */
    size_t build_id_len;         /* 0: none */
    int found;
} library_t;

/* Finds the GNU build id in a run of ELF notes; copies it into out (room
 * bytes) and returns its length, or 0 when there is none. */
static size_t note_build_id(const unsigned char *notes, size_t size, unsigned char *out, size_t room)
{
    size_t at = 0;
    while (size - at >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr nh;
        memcpy(&nh, notes + at, sizeof nh);
        size_t name = (nh.n_namesz + 3u) & ~3u, desc = (nh.n_descsz + 3u) & ~3u;
        at += sizeof nh;
        if (name > size - at || desc > size - at - name)
            return 0;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4
            && memcmp(notes + at, "GNU", 4) == 0 && nh.n_descsz <= room) {
            memcpy(out, notes + at + name, nh.n_descsz);
            return nh.n_descsz;
        }
        at += name + desc;
    }
    return 0;
}

static library_t c10;
static _Atomic int c10_found;             /* c10.found, for readers outside the search */
static _Atomic uint64_t searched_at_ns;  /* the coarse tick of the last search */

/* One search over the loaded objects; a search with nothing loaded since
 * the last one stops at the first object. */
typedef struct search {
    library_t *lib;
    int first;
} search_t;
static unsigned long long loads_seen;  /* dlpi_adds at the last full search */

static int is_c10_cuda(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    return strncmp(name, LIBRARY_NAME, sizeof LIBRARY_NAME - 1) == 0;
}

static int find_c10(struct dl_phdr_info *info, size_t size, void *data)
{
    search_t *search = data;
    library_t *lib = search->lib;
    if (search->first && size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds) {
        if (info->dlpi_adds == loads_seen)
            return 1;  /* nothing was loaded since the last search */
        loads_seen = info->dlpi_adds;
    }
    search->first = 0;
    if (info->dlpi_name == NULL || !is_c10_cuda(info->dlpi_name)
        || strlen(info->dlpi_name) >= sizeof lib->path)
        return 0;
    lib->text_lo = UINTPTR_MAX;
    lib->text_hi = 0;
    lib->build_id_len = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE && lib->build_id_len == 0)
            lib->build_id_len = note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr),
                                              ph->p_filesz, lib->build_id, sizeof lib->build_id);
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (lo < lib->text_lo)
            lib->text_lo = lo;
        if (lo + ph->p_memsz > lib->text_hi)
            lib->text_hi = lo + ph->p_memsz;
    }
    strcpy(lib->path, info->dlpi_name);
    lib->base = info->dlpi_addr;
    lib->found = lib->text_hi > lib->text_lo;
    return lib->found;
}

/* Whether the calling thread is inside libc10_cuda.so: its allocator is
 * asking the driver for a segment, so its device allocators exist. */
static int called_from_c10(void)
{
    uintptr_t frames[64];
    int n = stacks_capture(frames, 64, NULL);
    for (int i = 0; i < n; i++)
        if (frames[i] >= c10.text_lo && frames[i] < c10.text_hi)
            return 1;
    return 0;
}

typedef struct symbol {
    const char *name;
    int prefix;        /* 1: name is a prefix of the symbol's */
    uint64_t value, size;
    int found;
} symbol_t;

enum { WANT_ALLOCATOR, WANT_VTABLE, WANT_ATTACH, WANTED };

/* Reads the symbols named in want from the ELF file's .symtab, checking
 * first that the file is the loaded image (lib's build id, when both have
 * one). Returns NULL, or why they could not be read. */
static const char *read_symbols(const library_t *lib, symbol_t want[WANTED])
{
    const char *path = lib->path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return "libc10_cuda.so could not be opened to read its symbols";
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return "libc10_cuda.so is not an ELF file gpuleak can read";
    }
    size_t size = (size_t)st.st_size;
    const unsigned char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return "libc10_cuda.so could not be mapped to read its symbols";
    const char *why = "libc10_cuda.so is not a 64-bit ELF file with valid sections";
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64
        || eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size
        || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && lib->build_id_len > 0; i++) {
        unsigned char id[64];
        if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
            continue;
        size_t len = note_build_id(map + sh[i].sh_offset, sh[i].sh_size, id, sizeof id);
        if (len > 0 && (len != lib->build_id_len || memcmp(id, lib->build_id, len) != 0)) {
            why = "libc10_cuda.so on disk is not the library loaded (replaced since?)";
            goto out;
        }
    }
    why = "libc10_cuda.so has no symbol table (stripped)";
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset > size
            || sh[i].sh_size > size - sh[i].sh_offset || sh[i].sh_entsize != sizeof(Elf64_Sym))
            goto out;
        const Elf64_Shdr *strs = &sh[sh[i].sh_link];
        if (strs->sh_offset > size || strs->sh_size > size - strs->sh_offset || strs->sh_size == 0)
            goto out;
        const char *names = (const char *)map + strs->sh_offset;
        const Elf64_Sym *sym = (const Elf64_Sym *)(map + sh[i].sh_offset);
        size_t count = sh[i].sh_size / sizeof *sym;
        for (size_t s = 0; s < count; s++) {
            if (sym[s].st_name >= strs->sh_size || sym[s].st_value == 0)
                continue;
            const char *name = names + sym[s].st_name;
            size_t room = strs->sh_size - sym[s].st_name;  /* the name must end inside */
            if (memchr(name, '\0', room) == NULL)
                continue;
            for (int w = 0; w < WANTED; w++) {
                size_t len = strlen(want[w].name);
                /* A compiler's clone of a function (".cold", ".isra.0")
                 * shares its name's start and is never in a vtable. */
                if (want[w].found || strncmp(name, want[w].name, len) != 0
                    || (!want[w].prefix && name[len] != '\0') || strchr(name + len, '.') != NULL)
                    continue;
                want[w].value = sym[s].st_value;
                want[w].size = sym[s].st_size;
                want[w].found = 1;
            }
        }
        why = NULL;
        break;
    }
out:
    munmap((void *)map, size);
    return why;
}

/* libstdc++'s std::function, as PyTorch's AllocatorTraceTracker
 * (std::function<void(const TraceEntry&)>) is laid out: two words of
 * storage for a small functor, the manager that copies and destroys it, and
 * the invoker that calls it. The functor here keeps nothing. */
typedef struct cxx_function {
    void *storage[2];
    _Bool (*manager)(void *dest, const void *source, int op);
    void (*invoker)(const void *storage, const void *entry);
} cxx_function_t;

/* libstdc++'s manager operations. */
enum { GET_TYPE_INFO, GET_FUNCTOR_PTR, CLONE_FUNCTOR, DESTROY_FUNCTOR };

static _Bool manage(void *dest, const void *source, int op)
{
    void **d = dest;
    if (op == GET_TYPE_INFO)
        d[0] = NULL;  /* no RTTI for a C functor; target_type() is never asked */
    else if (op == GET_FUNCTOR_PTR)
        d[0] = (void *)source;
    else if (op == CLONE_FUNCTOR)
        memcpy(dest, source, 2 * sizeof(void *));
    return 0;
}

static void stop_events(const char *why)
{
    int attached = ATTACHED;
    if (atomic_compare_exchange_strong(&state, &attached, BROKEN)) {
        torch_events_say(why, 0);
        log_line("PyTorch's allocator: %s; its tensors are no longer tracked (the program runs on)",
                 why);
    }
}

/* One allocator event, on the allocating or freeing thread, with that
 * device's allocator mutex held: nothing here blocks on the program, calls
 * CUDA or touches Python (the Python frames are read as memory). */
static void on_event(const void *storage, const void *entry)
{
    (void)storage;
    if (guard_depth != 0 || atomic_load_explicit(&state, memory_order_relaxed) != ATTACHED
        || atomic_load_explicit(&lifecycle_state_now, memory_order_acquire) != LIFECYCLE_TRACKING)
        return;
    guard_depth++;
    in_event = 1;
    int entry_errno = errno;
    selftime_resume();
    int32_t action;
    int8_t device;
    uint64_t addr, size;
    memcpy(&action, (const char *)entry + ENTRY_ACTION, sizeof action);
    memcpy(&device, (const char *)entry + ENTRY_DEVICE, sizeof device);
    memcpy(&addr, (const char *)entry + ENTRY_ADDR, sizeof addr);
    memcpy(&size, (const char *)entry + ENTRY_SIZE, sizeof size);
    if (action < 0 || action >= TORCH_ACTIONS || device < 0 || device >= TRACKER_MAX_DEVICES) {
        stop_events("an event does not have the layout gpuleak knows");
    } else {
        torch_events_count(action);
        if (action == TORCH_ALLOC && addr != 0) {
            uint32_t site = capture_site(REPORT_KIND_tensor, device);
            if (tracker_alloc(REPORT_KIND_tensor, addr, (size_t)size, device, NULL, site) != 0)
                lifecycle_disable("no memory left for allocation records");
        } else if (action == TORCH_FREE_REQUESTED && addr != 0) {
            /* The tensor is the program's no more: PyTorch's allocated bytes
             * drop here; FREE_COMPLETED only says its block is reusable. */
            if (python_finished())  /* what the script kept, before teardown frees it */
                tracker_take_held();
            tracker_pending_t pending;
            tracker_free_begin(SPACE_TENSOR, addr, &pending);
            tracker_free_end(&pending, 1);
        } else if ((action == TORCH_SEGMENT_ALLOC || action == TORCH_SEGMENT_MAP)
                   && last_driver_key != 0) {
            /* Known without a stack to name its owner (stacks off). */
            tracker_mark_reserve((alloc_kind_t)last_driver_kind, last_driver_key);
            last_driver_key = 0;
        } else if (action == TORCH_OOM) {
            tracker_failure(REPORT_KIND_tensor, (size_t)size, TRACKER_OUT_OF_MEMORY, device,
                            capture_site(REPORT_KIND_tensor, device));
            search_at_oom();
        }
    }
    selftime_pause(1);
    errno = entry_errno;
    in_event = 0;
    guard_leave();
}

int torch_trace_in_event(void)
{
    return in_event;
}

/* Finds the native caching allocator and attaches on_event. Returns NULL,
 * or why it did not (nothing was changed then). */
static const char *attach(const library_t *lib)
{
    symbol_t want[WANTED] = {
        [WANT_ALLOCATOR] = { SYM_ALLOCATOR, 0, 0, 0, 0 },
        [WANT_VTABLE] = { SYM_NATIVE_VTABLE, 0, 0, 0, 0 },
        [WANT_ATTACH] = { SYM_NATIVE_ATTACH, 1, 0, 0, 0 },
    };
    const char *why = read_symbols(lib, want);
    if (why != NULL)
        return why;
    if (!want[WANT_ALLOCATOR].found)
        return "libc10_cuda.so has no c10::cuda::CUDACachingAllocator::allocator";
    /* The loader's own table must name the exported pointer where the file
     * puts it: a file replaced since it was loaded (an upgrade, a relative
     * path after chdir) would send every other offset astray. */
    Dl_info loaded;
    void *expected = (void *)(lib->base + want[WANT_ALLOCATOR].value);
    if (dladdr(expected, &loaded) == 0 || loaded.dli_saddr != expected || loaded.dli_sname == NULL
        || strcmp(loaded.dli_sname, SYM_ALLOCATOR) != 0)
        return "libc10_cuda.so on disk is not the library loaded (replaced since?)";
    if (!want[WANT_ATTACH].found)
        return "libc10_cuda.so has no trace-tracker interface (PyTorch before 2.2?)";
    if (!want[WANT_VTABLE].found || want[WANT_VTABLE].size < 3 * sizeof(void *))
        return "libc10_cuda.so's native allocator has a layout gpuleak does not know";
    void *allocator = __atomic_load_n((void *const *)expected, __ATOMIC_ACQUIRE);
    if (allocator == NULL)
        return "PyTorch's CUDA allocator is not set";
    /* The object's vtable pointer points past the vtable's offset-to-top and
     * type info: equal to the native allocator's, the backend is native. */
    void *const *vptr = *(void *const *const *)allocator;
    void *const *native = (void *const *)(lib->base + want[WANT_VTABLE].value) + 2;
    if (vptr != native)
        return "PyTorch's allocator backend is not its native caching allocator "
               "(cudaMallocAsync or a pluggable allocator)";
    uintptr_t method = lib->base + want[WANT_ATTACH].value;
    size_t slots = want[WANT_VTABLE].size / sizeof(void *) - 2;
    size_t slot = slots;
    for (size_t i = 0; i < slots; i++)
        if ((uintptr_t)vptr[i] == method) {
            slot = i;
            break;
        }
    if (slot == slots)
        return "libc10_cuda.so's native allocator has no attach method in its vtable";
    /* What was live at the peak is asked at the tensors' peak from now on,
     * set before any tensor event can move their row. */
    tracker_peak_at_tensors();
    atomic_store(&state, ATTACHED);
    torch_events_say("attached", 1);
    /* The Itanium C++ ABI passes the std::function by value as the address
     * of a caller-made copy, which the caller owns: this functor needs no
     * destroying after the call. */
    cxx_function_t tracker = { { NULL, NULL }, manage, on_event };
    void (*attach_method)(void *self, cxx_function_t *function) =
        (void (*)(void *, cxx_function_t *))vptr[slot];
    attach_method(allocator, &tracker);
    return NULL;
}

/* Looks for PyTorch's allocator and attaches to it when this segment came
 * from it (torch_trace_notice_segment). Out of line and apart from the hot
 * code: it runs at most once a tick of the coarse clock. */
static __attribute__((cold, noinline)) void try_attach(uint64_t now)
{
    /* One thread searches; another thread's allocation meanwhile goes on. */
    int expected = WAITING;
    if (!atomic_compare_exchange_strong(&state, &expected, ATTACHING))
        return;
    if (!c10.found) {
        atomic_store_explicit(&searched_at_ns, now, memory_order_relaxed);
        search_t search = { &c10, 1 };
        real_dl_iterate(find_c10, &search);
        atomic_store_explicit(&c10_found, c10.found, memory_order_release);
    }
    if (!c10.found || !called_from_c10()) {
        atomic_store(&state, WAITING);
        return;
    }
    const char *why = attach(&c10);
    if (why == NULL)
        return;
    torch_events_say(why, 0);
    atomic_store(&state, REFUSED);
    log_line("PyTorch's allocator: %s; tracking its segments only, not its tensors", why);
}

void torch_trace_notice_segment(alloc_kind_t kind, uint64_t key, uint64_t now)
{
    last_driver_kind = kind;
    last_driver_key = key;
    if (atomic_load_explicit(&state, memory_order_relaxed) != WAITING)
        return;
    /* dl_iterate_phdr first finds its caller's namespace, a walk over every
     * loaded object: in a program without PyTorch, searching at every
     * driver allocation cost 100 ns an allocation in a Python process. At
     * most one search a tick of the coarse clock (PyTorch's library is
     * loaded at `import torch`, long before its first segment), decided
     * before any read-modify-write. */
    if (!atomic_load_explicit(&c10_found, memory_order_acquire)
        && now == atomic_load_explicit(&searched_at_ns, memory_order_relaxed))
        return;
    try_attach(now);
}
