/* origin_rules.c: which frame of a stack is the user's, and who owns the
 * memory, from tables of globs; shared by the shim (at report time) and the
 * gpuleak command (which can judge a report's frames again with other
 * rules).
 *
 * Both questions are answered by matching a frame's module, function and
 * file against globs with fnmatch(3). The same strings recur across sites
 * (a few hundred modules, some thousands of functions and files), so each
 * distinct string is matched against the tables once and the outcome is
 * kept in a hash table: the index of the first skip rule it matches and a
 * bit mask of the owner rules it matches. A site then costs a hash and a
 * probe per string of the frames looked at, not a fnmatch per rule.
 *
 * Single-threaded, malloc allowed. An allocation failure while the rules
 * are built leaves the built-in table alone in force; one later only loses
 * the cache (answers are computed again each time), never an answer. */
#define _GNU_SOURCE
#include "origin_rules.h"
#include "report_format.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tables ------------------------------------------------------- */

#define N ORIGIN_NATIVE
#define P ORIGIN_PYTHON
#define MOD(g) { ORIGIN_MODULE, N, g, ORIGIN_SKIP }
#define FUN(g) { ORIGIN_FUNCTION, N, g, ORIGIN_SKIP }
#define PYFILE(g, a) { ORIGIN_FILE, P, g, a }

/* The built-in skip rules, tried in order, first match decides. Native
 * rules first (module and function of native frames), then the Python file
 * rules, whose order matters: torch under site-packages is skipped before
 * the rest of site-packages is kept, which is kept before the standard
 * library (lib/python3.X) is skipped. A Python program's own layout, when
 * known, gives rules tried before these (origin_rules_init).
 * docs/origin-rules.md explains each group; its test checks every glob
 * here appears there. */
static const origin_rule_t builtin_rules[] = {
    /* the shim itself */
    MOD("*/libgpuleak.so*"),
    /* the CUDA driver and runtime */
    MOD("*/libcuda.so*"),
    MOD("*/libnvidia-*"),
    MOD("*/libcudart.so*"),
    /* nvcc's static cudart, linked into the user's binary or a library */
    FUN("cuda[A-Z]*"),
    FUN("__cuda*"),
    FUN("cudart::*"),
    FUN("libcudart_static_*"),
    FUN("cu[A-Z]*"),
    /* CUDA libraries that allocate on the user's behalf (the owner says which) */
    MOD("*/libnccl*"),
    MOD("*/libcublas*"),
    MOD("*/libcudnn*"),
    MOD("*/libcufft*"),
    MOD("*/libcurand*"),
    MOD("*/libcusparse*"),
    MOD("*/libcusolver*"),
    MOD("*/libnvrtc*"),
    MOD("*/libnvJitLink*"),
    MOD("*/libcupti*"),
    FUN("nccl[A-Z]*"),
    FUN("cublas[A-Z]*"),
    FUN("cudnn[A-Z]*"),
    /* PyTorch's native layers: c10 allocators, ATen, the Python bindings */
    MOD("*/libc10*"),
    MOD("*/libtorch*"),
    MOD("*/torch/_C*"),
    MOD("*/site-packages/torch/*"),
    MOD("*/dist-packages/torch/*"),
    FUN("c10::*"),
    FUN("c10d::*"),
    FUN("at::*"),
    FUN("torch::*"),
    FUN("pybind11::*"),
    /* the Python interpreter */
    MOD("*/libpython3*"),
    MOD("*/bin/python"),
    MOD("*/bin/python3"),
    MOD("*/bin/python3.[0-9]"),
    MOD("*/bin/python3.[0-9][0-9]"),
    MOD("*/lib-dynload/*"),
    MOD("*/libffi.so*"),
    FUN("_Py*"),
    FUN("Py[A-Z]*"),
    /* the C and C++ runtimes, thread start-up */
    MOD("*/libc.so*"),
    MOD("*/libc-*"),
    MOD("*/ld-linux*"),
    MOD("*/libstdc++.so*"),
    MOD("*/libgcc_s.so*"),
    MOD("*/libpthread*"),
    MOD("*/libgomp*"),
    FUN("_start"),
    FUN("__libc_start*"),
    FUN("start_thread"),
    FUN("clone*"),
    /* Python files, where the interpreter's own layout is not known (no
     * atexit ran) or does not decide: torch is plumbing; other installed
     * packages (wherever pip, conda or the distribution put them: a
     * site-packages or dist-packages folder) are libraries, never the
     * origin, the innermost kept as "via"; the standard library (lib, or
     * Fedora's lib64, or zipped) is plumbing */
    PYFILE("*/site-packages/torch/*", ORIGIN_SKIP),
    PYFILE("*/dist-packages/torch/*", ORIGIN_SKIP),
    PYFILE("*/site-packages/*", ORIGIN_LIBRARY),
    PYFILE("*/dist-packages/*", ORIGIN_LIBRARY),
    PYFILE("*/lib/python3.*/*", ORIGIN_SKIP),
    PYFILE("*/lib64/python3.*/*", ORIGIN_SKIP),
    PYFILE("*/python3[0-9]*.zip/*", ORIGIN_SKIP),
    PYFILE("<frozen *>", ORIGIN_SKIP),
    /* code PyTorch writes at run time: torch.compile's (Inductor's output,
     * under the temporary directory) and torch.fx's GraphModule forward */
    PYFILE("*/torchinductor_*/*", ORIGIN_SKIP),
    PYFILE("<eval_with_key>*", ORIGIN_SKIP),
    PYFILE("*/torch/*", ORIGIN_SKIP),
};

#undef N
#undef P
#undef MOD
#undef FUN
#undef PYFILE

/* An owner rule: a glob on a native frame's module or function, the kinds
 * it applies to (a mask of 1 << alloc_kind_t, 0 for every kind), and the
 * owner it names; a NULL owner marks CUDA driver or runtime plumbing, which
 * the search walks past. A rule that "keeps" names memory its library
 * keeps for the life of the process (handles, workspaces, communicators,
 * freed only by a destroy call frameworks never make): not a leak at exit.
 * An "anywhere" rule decides when any frame of the stack matches, before
 * the innermost-first search. */
typedef struct owner_rule {
    origin_what_t what;
    const char *glob;
    unsigned kinds;
    const char *owner;
    int keeps;
    int anywhere;
} owner_rule_t;

#define KINDS(a) (1u << (a))
#define OWNER_TENSOR "pytorch-tensor"
#define FOR_PROGRAM 0, 0
#define KEEPS 1, 0
#define KEEPS_ANYWHERE 1, 1

/* Tried per native frame, innermost first; the first rule that matches and
 * applies to the site's kind names the owner, but an anywhere rule that
 * matches any frame goes first. Order matters: PyTorch's cudaMallocAsync
 * backend lives in a namespace inside CUDACachingAllocator, so it is
 * looked for first; libraries come before the runtime rules, as cuBLAS and
 * others carry a static cudart of their own.
 *
 * PyTorch's cuBLAS handles each get a workspace (32 MiB on Hopper, 1 MiB
 * more for cuBLASLt) the first time a thread multiplies on a device and
 * stream, allocated through its caching allocator as a tensor's memory is
 * and kept in a map that is never freed (ATen/cuda/CublasHandlePool.cpp).
 * Its stack passes through the caching allocator (innermost) like every
 * tensor's, hence anywhere.
 *
 * PyTorch's pinned host memory comes from its own cache
 * (CachingHostAllocator: a CPU tensor's pin_memory(), .item() and
 * non-blocking copies stage through it); a block returns to the cache when
 * its tensor goes and is kept until the process ends, so what is live at
 * exit is PyTorch's cache, not the line that first asked for it.
 *
 * JAX's pool (XLA's allocator, in its CUDA plugin or in jaxlib) and CuPy's
 * (its memory module) take blocks from the driver and place arrays in them:
 * a block is the framework's cache where its arrays are followed
 * (shim/python/pools.h), whatever line first made the pool grow. CuPy
 * reaches the runtime through its own wrappers (cupy_backends), a layer of
 * the runtime's. */
static const owner_rule_t owner_rules[] = {
    { ORIGIN_FUNCTION, "at::*CachingHostAllocator*", KINDS(REPORT_KIND_host), "pytorch-host-cache", KEEPS },
    { ORIGIN_FUNCTION, "at::cuda::getCurrentCUDABlasHandle*", KINDS(REPORT_KIND_tensor), "cublas",
      KEEPS_ANYWHERE },
    { ORIGIN_FUNCTION, "at::cuda::getCUDABlasLtWorkspace*", KINDS(REPORT_KIND_tensor), "cublas",
      KEEPS_ANYWHERE },
    { ORIGIN_FUNCTION, "c10::*CudaMallocAsync*", 0, OWNER_TENSOR, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/libc10_cuda*", KINDS(REPORT_KIND_pool) | KINDS(REPORT_KIND_tensor), OWNER_TENSOR,
      FOR_PROGRAM },
    { ORIGIN_FUNCTION, "c10::*CUDACachingAllocator*", KINDS(REPORT_KIND_device) | KINDS(REPORT_KIND_vmm),
      ORIGIN_OWNER_CACHING, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/libc10_cuda*", KINDS(REPORT_KIND_device) | KINDS(REPORT_KIND_vmm), ORIGIN_OWNER_CACHING,
      FOR_PROGRAM },
    { ORIGIN_MODULE, "*/jax_plugins/*", KINDS(REPORT_KIND_device) | KINDS(REPORT_KIND_vmm),
      ORIGIN_OWNER_XLA_POOL, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/jaxlib/*", KINDS(REPORT_KIND_device) | KINDS(REPORT_KIND_vmm),
      ORIGIN_OWNER_XLA_POOL, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/cupy_backends/*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/cupy/cuda/memory.*", KINDS(REPORT_KIND_device) | KINDS(REPORT_KIND_pool)
      | KINDS(REPORT_KIND_managed), ORIGIN_OWNER_CUPY_POOL, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/libnccl*", 0, "nccl", KEEPS },
    { ORIGIN_FUNCTION, "nccl[A-Z]*", 0, "nccl", KEEPS },
    { ORIGIN_MODULE, "*/libcublas*", 0, "cublas", KEEPS },
    { ORIGIN_FUNCTION, "cublas[A-Z]*", 0, "cublas", KEEPS },
    { ORIGIN_MODULE, "*/libcudnn*", 0, "cudnn", KEEPS },
    { ORIGIN_FUNCTION, "cudnn[A-Z]*", 0, "cudnn", KEEPS },
    { ORIGIN_MODULE, "*/libgpuleak.so*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/libcuda.so*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/libnvidia-*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_MODULE, "*/libcudart.so*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_FUNCTION, "cuda[A-Z]*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_FUNCTION, "__cuda*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_FUNCTION, "cudart::*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_FUNCTION, "libcudart_static_*", 0, NULL, FOR_PROGRAM },
    { ORIGIN_FUNCTION, "cu[A-Z]*", 0, NULL, FOR_PROGRAM },
};

#define OWNER_RULES (int)(sizeof owner_rules / sizeof owner_rules[0])
_Static_assert(sizeof owner_rules / sizeof owner_rules[0] <= 32, "owner masks are 32 bits");

/* ---- state ------------------------------------------------------------ */

#define NO_RULE INT_MAX

/* What one string matched: the first skip rule (NO_RULE for none) and the
 * owner rules (bit i for owner_rules[i]). */
typedef struct match {
    int first_rule;
    uint32_t owner_mask;
} match_t;

/* A cached string. key is the field (module, function, file) plus 3 for
 * Python frames, since rules are scoped to one kind of frame. */
typedef struct entry {
    char *text;      /* NULL: empty slot */
    size_t len;      /* strlen(text) */
    uint32_t hash;
    int key;
    match_t match;
} entry_t;

static struct {
    int ready;
    origin_rule_t *rules;   /* user globs, then the built-in table (or builtin_rules itself) */
    int rule_count;
    char *user_text;        /* copy of GPULEAK_ORIGIN_SKIP the user globs point into */
    char *layout_text;      /* the globs of the layout's rules */
    entry_t *slots;
    size_t capacity, used;  /* capacity a power of two, or 0 when no cache */
} st;

/* ---- matching --------------------------------------------------------- */

/* A hash of the len bytes of s, mixed with key so a module and a function
 * with the same text hash apart: eight bytes at a time (the strings are
 * long paths and demangled names), each word folded in with a multiply. */
static uint32_t hash_text(const char *s, size_t len, int key)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)key << 32) ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, len - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return (uint32_t)h;
}

/* Matches text (one field of a frame, never NULL) against both tables, the
 * slow way: the skip rules that apply to this field and kind of frame, and,
 * for native frames, the owner rules on the same field. */
static match_t match_slow(const char *text, int field, int is_python)
{
    match_t m = { NO_RULE, 0 };
    for (int i = 0; i < st.rule_count; i++) {
        const origin_rule_t *r = &st.rules[i];
        if (r->what != ORIGIN_ANY && (int)r->what != field)
            continue;
        if (r->scope != ORIGIN_BOTH && (r->scope == ORIGIN_PYTHON) != (is_python != 0))
            continue;
        if (fnmatch(r->glob, text, 0) == 0) {
            m.first_rule = i;
            break;
        }
    }
    if (!is_python)
        for (int i = 0; i < OWNER_RULES; i++)
            if ((int)owner_rules[i].what == field && fnmatch(owner_rules[i].glob, text, 0) == 0)
                m.owner_mask |= 1u << i;
    return m;
}

/* Doubles the cache. Returns 0, or -1 when memory is lacking (the old
 * table stays in use). */
static int grow(void)
{
    size_t capacity = st.capacity ? st.capacity * 2 : 1024;
    entry_t *slots = calloc(capacity, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < st.capacity; i++) {
        if (st.slots[i].text == NULL)
            continue;
        size_t j = st.slots[i].hash & (capacity - 1);
        while (slots[j].text != NULL)
            j = (j + 1) & (capacity - 1);
        slots[j] = st.slots[i];
    }
    free(st.slots);
    st.slots = slots;
    st.capacity = capacity;
    return 0;
}

/* What text matched, from the cache, matching it and caching the outcome
 * on a miss. NULL and "" match nothing. Linear probing in a table kept at
 * most half full, so a lookup is a hash and a probe or two. */
static match_t lookup(const char *text, int field, int is_python)
{
    match_t none = { NO_RULE, 0 };
    if (text == NULL || *text == '\0')
        return none;
    int key = field + (is_python ? 3 : 0);
    size_t len = strlen(text);
    uint32_t hash = hash_text(text, len, key);
    if (st.capacity != 0) {
        for (size_t j = hash & (st.capacity - 1); st.slots[j].text != NULL;
             j = (j + 1) & (st.capacity - 1)) {
            const entry_t *e = &st.slots[j];
            if (e->hash == hash && e->len == len && e->key == key &&
                memcmp(e->text, text, len) == 0)
                return e->match;
        }
    }
    match_t m = match_slow(text, field, is_python);
    if ((st.used + 1) * 2 > st.capacity && grow() != 0)
        return m;
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return m;
    memcpy(copy, text, len + 1);
    size_t j = hash & (st.capacity - 1);
    while (st.slots[j].text != NULL)
        j = (j + 1) & (st.capacity - 1);
    st.slots[j] = (entry_t){ copy, len, hash, key, m };
    st.used++;
    return m;
}

/* The three strings of a frame looked up together: the first skip rule of
 * any of them, and the owner rules any of them matched. */
static match_t match_frame(const origin_frame_t *fr)
{
    int py = fr->is_python != 0;
    match_t a = lookup(fr->module, ORIGIN_MODULE, py);
    match_t b = lookup(fr->function, ORIGIN_FUNCTION, py);
    match_t c = lookup(fr->file, ORIGIN_FILE, py);
    match_t m = a;
    if (b.first_rule < m.first_rule)
        m.first_rule = b.first_rule;
    if (c.first_rule < m.first_rule)
        m.first_rule = c.first_rule;
    m.owner_mask = a.owner_mask | b.owner_mask | c.owner_mask;
    return m;
}

/* Whether the skip rules keep a frame (it may be the origin): no rule
 * matched, or the first that did says keep. */
static int kept(const match_t *m)
{
    return m->first_rule == NO_RULE || st.rules[m->first_rule].action == ORIGIN_KEEP;
}

/* ---- set-up ----------------------------------------------------------- */

void origin_rules_end(void)
{
    for (size_t i = 0; i < st.capacity; i++)
        free(st.slots[i].text);
    free(st.slots);
    if (st.rules != builtin_rules)
        free(st.rules);
    free(st.user_text);
    free(st.layout_text);
    memset(&st, 0, sizeof st);
}

/* The rules a Python program's own layout gives, tried before the
 * built-in table (docs/origin-rules.md, "The interpreter's layout"). */
#define LAYOUT_TORCH "/torch/*"
#define LAYOUT_ALL "/*"

/* How many rules layout gives, and the bytes their globs take. */
static size_t layout_rules(const origin_layout_t *layout, size_t *text_size)
{
    *text_size = 0;
    if (layout == NULL)
        return 0;
    /* Two globs a packages folder, one a standard library's, each of
     * whose characters may need its escape. */
    for (size_t i = 0; i < layout->npackages; i++)
        *text_size += 4 * strlen(layout->packages[i]) + sizeof LAYOUT_TORCH + sizeof LAYOUT_ALL;
    for (size_t i = 0; i < layout->nstdlib; i++)
        *text_size += 2 * strlen(layout->stdlib[i]) + sizeof LAYOUT_ALL;
    return 2 * layout->npackages + layout->nstdlib;
}

/* Appends to *text the glob that matches what lies under folder plus tail,
 * folder's own glob characters escaped (fnmatch without FNM_NOESCAPE reads
 * a backslash as "the next character as it is"), and returns the glob. */
static const char *folder_glob(char **text, const char *folder, const char *tail)
{
    char *glob = *text, *out = glob;
    for (const char *c = folder; *c != '\0'; c++) {
        if (strchr("*?[\\", *c) != NULL)
            *out++ = '\\';
        *out++ = *c;
    }
    size_t n = strlen(tail) + 1;
    memcpy(out, tail, n);
    *text = out + n;
    return glob;
}

/* Writes layout's rules at rules, their globs into text (room as
 * layout_rules says). Order matters: torch under a packages folder is
 * plumbing before the rest of that folder is a library's, and the
 * packages folders come before the standard library's, which often hold
 * them (/usr/lib/python3.12/site-packages). Returns how many. */
static int add_layout_rules(const origin_layout_t *layout, origin_rule_t *rules, char *text)
{
    int n = 0;
    for (size_t i = 0; i < layout->npackages; i++)
        rules[n++] = (origin_rule_t){ ORIGIN_FILE, ORIGIN_PYTHON,
                                      folder_glob(&text, layout->packages[i], LAYOUT_TORCH), ORIGIN_SKIP };
    for (size_t i = 0; i < layout->npackages; i++)
        rules[n++] = (origin_rule_t){ ORIGIN_FILE, ORIGIN_PYTHON,
                                      folder_glob(&text, layout->packages[i], LAYOUT_ALL), ORIGIN_LIBRARY };
    for (size_t i = 0; i < layout->nstdlib; i++)
        rules[n++] = (origin_rule_t){ ORIGIN_FILE, ORIGIN_PYTHON,
                                      folder_glob(&text, layout->stdlib[i], LAYOUT_ALL), ORIGIN_SKIP };
    return n;
}

/* Adds skip's globs (st.user_text, a copy) at rules, as origin_rules_init
 * describes them. Returns how many. */
static int add_user_rules(origin_rule_t *rules)
{
    int n = 0;
    for (char *glob = st.user_text, *next; glob != NULL; glob = next) {
        next = strchr(glob, ':');
        if (next != NULL)
            *next++ = '\0';
        origin_action_t action = ORIGIN_SKIP;
        if (*glob == '!') {
            action = ORIGIN_KEEP;
            glob++;
        }
        if (*glob == '\0')
            continue;
        rules[n++] = (origin_rule_t){ ORIGIN_ANY, ORIGIN_BOTH, glob, action };
    }
    return n;
}

void origin_rules_init(const char *skip, int builtin, const origin_layout_t *layout)
{
    origin_rules_end();
    size_t builtin_count = builtin ? sizeof builtin_rules / sizeof builtin_rules[0] : 0;
    size_t user_max = 0, layout_size;
    size_t layout_count = builtin ? layout_rules(layout, &layout_size) : 0;
    if (skip != NULL && *skip != '\0') {
        st.user_text = strdup(skip);
        user_max = 1;
        for (const char *p = skip; *p; p++)
            user_max += *p == ':';
    }
    st.rules = malloc((user_max + layout_count + builtin_count + 1) * sizeof *st.rules);
    if (layout_count > 0)
        st.layout_text = malloc(layout_size);
    if (st.rules == NULL || (user_max > 0 && st.user_text == NULL)
        || (layout_count > 0 && st.layout_text == NULL)) {
        free(st.rules);
        free(st.user_text);
        free(st.layout_text);
        st.user_text = st.layout_text = NULL;
        st.rules = (origin_rule_t *)builtin_rules; /* read only; never freed */
        st.rule_count = (int)builtin_count;
        st.ready = 1;
        return;
    }
    int n = add_user_rules(st.rules);
    if (layout_count > 0)
        n += add_layout_rules(layout, st.rules + n, st.layout_text);
    memcpy(st.rules + n, builtin_rules, builtin_count * sizeof *st.rules);
    st.rule_count = n + (int)builtin_count;
    st.ready = 1;
}

/* Makes sure origin_rules_init has run, so a caller that forgot it gets the
 * built-in table rather than a crash. */
static void ensure_ready(void)
{
    if (!st.ready)
        origin_rules_init(NULL, 1, NULL);
}

/* The first frame the skip rules keep, in the caller's order; the order
 * (Python first) is the caller's business, so this stays a plain scan that
 * stops at the first kept frame. */
int origin_find(const origin_frame_t *frames, int count)
{
    ensure_ready();
    for (int i = 0; i < count; i++) {
        match_t m = match_frame(&frames[i]);
        if (kept(&m))
            return i;
    }
    return -1;
}

int origin_find_via(const origin_frame_t *frames, int before)
{
    ensure_ready();
    for (int i = 0; i < before; i++) {
        match_t m = match_frame(&frames[i]);
        if (m.first_rule != NO_RULE && st.rules[m.first_rule].action == ORIGIN_LIBRARY)
            return i;
    }
    return -1;
}

/* Walks the native frames innermost first: the first frame an owner rule
 * names (for this kind) gives the owner; CUDA driver and runtime frames are
 * walked past; the first other frame the skip rules keep is the user's.
 * Then the Python frames: one the rules keep is the user's. With no user
 * frame anywhere, the memory is the CUDA runtime's own. */
const char *origin_owner(const origin_frame_t *frames, int count, int kind)
{
    ensure_ready();
    if (count <= 0)
        return "unknown";
    unsigned kind_bit = kind >= 0 && kind < 32 ? 1u << kind : 0;
    for (int i = 0; i < count; i++) {
        if (frames[i].is_python)
            continue;
        match_t m = match_frame(&frames[i]);
        for (uint32_t bits = m.owner_mask; bits != 0; bits &= bits - 1) {
            const owner_rule_t *r = &owner_rules[__builtin_ctz(bits)];
            if (r->anywhere && (r->kinds == 0 || (r->kinds & kind_bit) != 0))
                return r->owner;
        }
    }
    for (int i = 0; i < count; i++) {
        if (frames[i].is_python)
            continue;
        match_t m = match_frame(&frames[i]);
        int runtime = 0;
        for (uint32_t bits = m.owner_mask; bits != 0; bits &= bits - 1) {
            const owner_rule_t *r = &owner_rules[__builtin_ctz(bits)];
            if (r->anywhere || (r->kinds != 0 && (r->kinds & kind_bit) == 0))
                continue;
            if (r->owner != NULL)
                return r->owner;
            runtime = 1;
            break;
        }
        if (!runtime && kept(&m))
            return "user";
    }
    for (int i = 0; i < count; i++) {
        if (!frames[i].is_python)
            continue;
        match_t m = match_frame(&frames[i]);
        if (kept(&m))
            return "user";
    }
    return "cuda-runtime";
}

int origin_owner_keeps(const char *owner)
{
    for (int i = 0; owner != NULL && i < OWNER_RULES; i++)
        if (owner_rules[i].keeps && strcmp(owner_rules[i].owner, owner) == 0)
            return 1;
    return 0;
}

int origin_keeps(const origin_frame_t *frame)
{
    ensure_ready();
    match_t m = match_frame(frame);
    return kept(&m);
}

static int same_text(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int origin_same_frame(const origin_frame_t *a, const origin_frame_t *b)
{
    return a->line == b->line && a->is_python == b->is_python && same_text(a->file, b->file)
        && same_text(a->function, b->function) && same_text(a->module, b->module);
}

/* The built-in table itself, read only: the documentation test walks it
 * so that docs/origin-rules.md lists every glob the code uses. */
const origin_rule_t *origin_builtin_rules(size_t *count)
{
    *count = sizeof builtin_rules / sizeof builtin_rules[0];
    return builtin_rules;
}

/* Whether s (may be NULL) matches glob. */
static int matches(const char *glob, const char *s)
{
    return s != NULL && fnmatch(glob, s, 0) == 0;
}

/* A CUDA runtime API entry: cudaMalloc, cudaMallocAsync, and nvcc's
 * templates over them (cudaMalloc<int>(int**, unsigned long)). */
static int cudart_entry(const origin_frame_t *f)
{
    return matches("cuda[A-Z]*", f->function);
}

/* A frame of the runtime's own, or of the driver under it. */
static int inside_cudart(const origin_frame_t *f)
{
    return matches("*/libcudart.so*", f->module) || matches("*/libcuda.so*", f->module)
        || matches("cudart::*", f->function)
        || matches("libcudart_static_*", f->function) || matches("__cuda*", f->function);
}

/* A wrapper cuda_runtime.h puts over an entry for C++ callers
 * (cudaMalloc<float>(float**, unsigned long), an overload of
 * cudaMallocHost): compiled into the caller's binary, so known by its
 * header or, without line information, by being a C++ entry. */
static int header_wrapper(const origin_frame_t *f)
{
    return !f->is_python && cudart_entry(f)
        && (matches("*/cuda_runtime.h", f->file) || strchr(f->function, '(') != NULL);
}

int origin_cudart_folded(const origin_frame_t *frames, int count)
{
    int n = 0;
    while (n < count && !frames[n].is_python && inside_cudart(&frames[n]) && !cudart_entry(&frames[n]))
        n++;
    if (n >= count || frames[n].is_python || !cudart_entry(&frames[n]))
        return 0;
    while (n + 1 < count && header_wrapper(&frames[n + 1]))
        n++;
    return n;
}
