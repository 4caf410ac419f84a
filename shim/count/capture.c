#include "capture.h"
#include "config.h"
#include "python.h"
#include "selftime.h"
#include "stacks.h"

#include <sys/mman.h>

/* A site is named by the innermost native frames and the Python frames
 * first (its key), and by its whole stack only when that key is new (to
 * this thread, and for a key with Python frames, other than its line's
 * first, python_line_t): the full native walk, most of a stack's cost on PyTorch's
 * 40-odd frames, and the interning of the Python frames (a table lookup
 * and a line each) are paid once per key; the key reads the Python frames
 * as they stand (python_key). With Python frames the innermost 8
 * native frames (the allocator's) and the Python lines tell stacks apart;
 * without them (an autograd worker thread) 24 native frames reach the
 * operator that allocates. Two stacks that share a key but differ deeper
 * down are one site, with the deeper frames of the first one seen. */
#define KEY_FRAMES_WITH_PYTHON 8
#define KEY_FRAMES_WITHOUT_PYTHON 24
#define KEY_SLOTS 256  /* per thread, direct-mapped by the key's hash */

typedef struct key_slot {
    uint64_t hash;   /* 0: empty */
    uint32_t site;
} key_slot_t;

static __thread key_slot_t key_slots[KEY_SLOTS] __attribute__((tls_model("initial-exec")));

/* Under one Python line the innermost native frames are nearly always the
 * same (PyTorch's allocator, ctypes' call): they tell sites apart where
 * one line reaches two native paths. So a Python key (its frames, the
 * kind, the device) whose native key was the same TRUST_AFTER times, and
 * never another, is trusted: its site is taken with no native walk (about
 * 100 ns of a 500 ns pair 26 frames deep, more on PyTorch's frames). A
 * second native path seen before then marks the key as one whose native
 * frames matter, walked every time. A path first taken after the key was
 * trusted joins the first path's site, as stacks that differ below the
 * key's 8 frames already do. The keys are every thread's, in one table:
 * in a thread's own table of 256, direct-mapped, a program of 100 lines
 * had a third of them sharing a slot with another, each pushing the other
 * out before it was trusted (60% of its stacks trusted; 28% with 300
 * lines, 2% with 1,000). Open addressing from the key's high bits,
 * LINE_PROBES probes; a key with no room is never trusted. Once trusted,
 * a key's entry is only read.
 *
 * A line's entry also names its first path's site to a thread whose own
 * slot does not hold the key (its first time there, or pushed out by 256
 * others). Interning the whole stack again made a second site of one line
 * where the stack differed only in the interpreter's own frames, which the
 * key leaves out: on 3.13 an instruction specialized after its first runs
 * returns into other places of the eval loop. */
#define TRUST_AFTER 16
#define PYTHON_LINES (1u << 14)
#define LINE_PROBES 8
#define NATIVE_MATTERS -1  /* a python_line's seen: never trusted */
#define LINE_FILLING -2    /* a python_line's seen: its first path being written */

typedef struct python_line {
    _Atomic uint64_t python;  /* the Python key; 0: empty; set once */
    _Atomic uint64_t whole;   /* the whole key (native frames in) it first had */
    _Atomic uint32_t site;    /* and its site */
    _Atomic int seen;         /* times with that whole key and no other; 0: not
                               * yet written; or NATIVE_MATTERS, LINE_FILLING */
} __attribute__((aligned(32))) python_line_t;  /* one cache line's half: read whole */

static python_line_t *python_lines;  /* PYTHON_LINES of them, or NULL (capture_init) */

int capture_init(void)
{
    void *lines = mmap(NULL, sizeof *python_lines * PYTHON_LINES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    python_lines = lines == MAP_FAILED ? NULL : lines;
    return python_lines != NULL ? 0 : -1;
}

/* The entry of the Python key python, or NULL; with claim, an empty one
 * is made its entry (NULL when none of its probes is). */
static python_line_t *python_line(uint64_t python, int claim)
{
    unsigned first = (unsigned)(python >> 50);
    for (unsigned i = 0; python_lines != NULL && i < LINE_PROBES; i++) {
        python_line_t *line = &python_lines[(first + i) & (PYTHON_LINES - 1)];
        uint64_t there = atomic_load_explicit(&line->python, memory_order_acquire);
        if (there == 0) {
            if (!claim)
                return NULL;
            if (atomic_compare_exchange_strong_explicit(&line->python, &there, python,
                                                        memory_order_acq_rel, memory_order_acquire))
                return line;
            /* another thread took it meanwhile: there is its key */
        }
        if (there == python)
            return line;
    }
    return NULL;
}

/* The site of a trusted Python key's line, or 0. */
static inline uint32_t python_line_trusted(const python_line_t *line)
{
    if (line == NULL || atomic_load_explicit(&line->seen, memory_order_acquire) < TRUST_AFTER)
        return 0;
    return atomic_load_explicit(&line->site, memory_order_relaxed);
}

/* The site of the line's first path when whole is its whole key, or 0. */
static uint32_t python_line_first(const python_line_t *line, uint64_t whole)
{
    if (line == NULL)
        return 0;
    int seen = atomic_load_explicit(&line->seen, memory_order_acquire);
    if (seen == 0 || seen == LINE_FILLING
        || atomic_load_explicit(&line->whole, memory_order_relaxed) != whole)
        return 0;
    return atomic_load_explicit(&line->site, memory_order_relaxed);
}

/* Notes that the Python key python (its entry line, or NULL when it had
 * none) led to the whole key whole and site this time. */
static void python_line_note(python_line_t *line, uint64_t python, uint64_t whole, uint32_t site)
{
    if (site == 0 || (line == NULL && (line = python_line(python, 1)) == NULL))
        return;
    int seen = atomic_load_explicit(&line->seen, memory_order_acquire);
    if (seen == 0) {  /* its first path: written by one thread, then counted */
        if (atomic_compare_exchange_strong(&line->seen, &seen, LINE_FILLING)) {
            atomic_store_explicit(&line->whole, whole, memory_order_relaxed);
            atomic_store_explicit(&line->site, site, memory_order_relaxed);
            atomic_store_explicit(&line->seen, 1, memory_order_release);
        }
    } else if (seen > 0 && seen < TRUST_AFTER) {
        /* A count, not an add: another thread's NATIVE_MATTERS must stay. */
        if (atomic_load_explicit(&line->whole, memory_order_relaxed) == whole
            && atomic_load_explicit(&line->site, memory_order_relaxed) == site)
            atomic_compare_exchange_strong_explicit(&line->seen, &seen, seen + 1,
                                                    memory_order_release, memory_order_relaxed);
        else
            atomic_store_explicit(&line->seen, NATIVE_MATTERS, memory_order_relaxed);
    }
}

/* The Python frames are read first (the key depends on whether there are
 * any), the native frames after; selftime.h's capture takes them in the
 * other order, so the two durations are swapped into its fields: the
 * native walk from the start, the Python frames after it, and whatever
 * follows now (a lookup, or an intern) as interning. */
static void order_timing(selftime_capture_t *timing, uint64_t python_done)
{
    uint64_t now = 0;
    selftime_capture_mark(&now);
    timing->python_end = now;
    timing->native_end = now - (python_done - timing->start);
}

/* The depot's tag of a site: its kind, and its device above the kinds'
 * bits (device 0 and unknown devices add nothing, so a one-GPU program's
 * frameless sites keep the depot's fast path). */
_Static_assert(REPORT_KIND_COUNT <= 16, "a kind fits below the device's bits");

static uint32_t site_tag(alloc_kind_t kind, int device)
{
    return (uint32_t)kind | (device > 0 ? (uint32_t)device << 4 : 0);
}

/* A key new to this thread's slot (capture_site): the site of its line's
 * first path when it is that path, else the frames themselves, the Python
 * ones interned and the whole native stack, and the site they make; noted
 * in the slots. Out of line and apart from the hot code: a program's
 * steady state meets its keys again. */
static __attribute__((cold, noinline)) uint32_t
capture_new(uint32_t tag, uintptr_t *native, int native_count, int whole, int hint,
            int python_count, key_slot_t *slot, uint64_t hash, python_line_t *line,
            uint64_t python_only, selftime_capture_t *timing, uint64_t python_done)
{
    uint32_t site = python_line_first(line, hash);
    if (site == 0) {
        python_frame_t python[STACKS_MAX_FRAMES];
        if (python_count > 0)
            python_count = python_capture(python, config.python_depth);
        if (!whole)
            native_count = stacks_capture(native, config.stack_depth, &hint);
        order_timing(timing, python_done);
        site = stacks_intern_hinted(hint, tag, native, native_count, python, python_count);
    } else {
        order_timing(timing, python_done);
    }
    if (site != 0) {
        slot->hash = hash;
        slot->site = site;
    }
    if (python_only != 0)
        python_line_note(line, python_only, hash, site);
    selftime_capture_end(timing, native_count, 0);
    return site;
}

uint32_t capture_site(alloc_kind_t kind, int device)
{
    uint32_t tag = site_tag(kind, device);
    if (config.stack_depth <= 0 && !config.python_frames)  /* stacks off: nothing to capture or time */
        return stacks_intern(tag, NULL, 0, NULL, 0);
    uintptr_t native[STACKS_MAX_FRAMES];
    selftime_capture_t timing = { 0 };  /* read only when timing is on */
    selftime_capture_begin(&timing);
    /* The key: the Python frames as they stand (python_key: no interning,
     * no line) and the innermost native frames. */
    uint64_t python_hash = 0;
    int python_count = config.python_frames ? python_key(config.python_depth, &python_hash) : 0;
    uint64_t python_done = 0;
    selftime_capture_mark(&python_done);
    int key_frames = python_count > 0 ? KEY_FRAMES_WITH_PYTHON : KEY_FRAMES_WITHOUT_PYTHON;
    int key_native = config.stack_depth < key_frames ? config.stack_depth : key_frames;
    int whole = key_native == config.stack_depth;  /* the key's native frames are all of them */
    python_line_t *line = NULL;
    uint64_t python_only = 0;  /* the Python key, when its native key is followed */
    if (python_count > 0 && key_native > 0) {
        python_only = (python_hash ^ tag) * 0x9e3779b97f4a7c15ull ^ (uint64_t)python_count;
        python_only += python_only == 0;  /* 0 marks an empty entry */
        line = python_line(python_only, 0);
        uint32_t site = python_line_trusted(line);
        if (__builtin_expect(site != 0, 1)) {
            order_timing(&timing, python_done);
            selftime_capture_end(&timing, 0, 1);
            return site;
        }
    }
    int hint = -1;
    int native_count = key_native > 0 ? stacks_capture(native, key_native, whole ? &hint : NULL) : 0;
    int telling = python_count > 0 ? python_native_before_interpreter(native, native_count)
                                   : native_count;
    uint64_t hash = stacks_hash(tag, native, telling, NULL, 0);
    hash = (hash ^ python_hash) * 0x9e3779b97f4a7c15ull ^ (uint64_t)python_count;
    hash += hash == 0;  /* 0 marks an empty slot */
    key_slot_t *slot = &key_slots[hash & (KEY_SLOTS - 1)];
    if (slot->hash == hash && slot->site != 0) {
        if (python_only != 0)
            python_line_note(line, python_only, hash, slot->site);
        order_timing(&timing, python_done);
        selftime_capture_end(&timing, native_count, 0);
        return slot->site;
    }
    return capture_new(tag, native, native_count, whole, hint, python_count, slot, hash,
                       line, python_only, &timing, python_done);
}

uint32_t capture_site_of_frames(alloc_kind_t kind, int device, const python_frame_t *python,
                                int count)
{
    return stacks_intern(site_tag(kind, device), NULL, 0, python, count);
}
