/* python.c: the calling thread's Python frames, read without the GIL.
 *
 * PyTorch releases the GIL before it allocates (0 of 35,092 allocations were
 * made with it held), so the frames are read as raw memory from the thread's
 * own frame chain, which cannot change while the thread runs C code. Nothing
 * on the capture path calls into the interpreter except
 * PyGILState_GetThisThreadState, which only reads a thread-specific key.
 *
 * Layouts: 3.10, 3.11 and 3.12 come from tables below, written from CPython's
 * headers (see docs/python-frames.md for which header and tag); 3.13 reads
 * _PyRuntime.debug_offsets (_Py_DebugOffsets), after checking its cookie and
 * version. Any other version: no Python frames, one line on stderr.
 *
 * Interning: a packed frame is (index << 32) | line, where index names an
 * immutable record holding copies of the function and file strings. Records
 * are found by code object address through a lock-free slot table; each
 * record also keeps identity fields (filename, name and line table pointers,
 * first line) that are compared on every hit, so a dead code object whose
 * address was reused by another one is detected and gets a new record.
 * Records are never freed (python_describe hands out their strings), and
 * their number is capped. Line numbers are cached in a direct-mapped,
 * lock-free table keyed by (index, instruction offset). */
#define _GNU_SOURCE
#include "python.h"
#include "real_dl.h"
#include "log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- layouts */

enum chain_kind {
    CHAIN_FRAMEOBJECT, /* 3.10: tstate->frame, PyFrameObject.f_back */
    CHAIN_CFRAME,      /* 3.11, 3.12: tstate->cframe->current_frame, .previous */
    CHAIN_TSTATE,      /* 3.13: tstate->current_frame, .previous */
};

enum linetable_kind {
    LINES_310, /* co_linetable as (byte delta, line delta) pairs */
    LINES_311, /* the location table of 3.11+ (Objects/locations.md) */
};

/* Every offset the capture and intern paths read, in bytes. */
struct layout {
    int major, minor;
    enum chain_kind chain;
    enum linetable_kind lines;
    size_t ts_frame;       /* tstate -> frame (3.10), cframe (3.11/12), frame (3.13) */
    size_t cframe_current; /* _PyCFrame.current_frame (CHAIN_CFRAME only) */
    size_t fr_previous;    /* previous frame (f_back in 3.10) */
    size_t fr_code;        /* f_code / f_executable */
    size_t fr_instr;       /* prev_instr / instr_ptr pointer, or f_lasti int (3.10) */
    long fr_owner;         /* owner byte, -1 when the version has none */
    int owner_cstack;      /* owner value of C-stack shim frames, -1 when none */
    int owner_generator;   /* FRAME_OWNED_BY_GENERATOR */
    size_t co_size;        /* ob_size of the code object: code units (3.11+) */
    size_t co_filename, co_name, co_firstlineno, co_linetable;
    size_t co_consts, co_names; /* beside ob_type: a key's identity of a code object */
    size_t co_code;        /* 3.10: co_code bytes object; 3.11+: co_code_adaptive */
    long co_firsttraceable; /* int _co_firsttraceable, -1 when unknown */
    size_t ob_type;
    size_t bytes_size, bytes_sval;
    size_t uni_length, uni_state, uni_ascii_size, uni_compact_size;
};

/* 3.10: Include/cpython/{pystate,frameobject,code,unicodeobject,bytesobject}.h
 * at v3.10.13; offsets for x86-64 (LP64). */
static const struct layout layout_310 = {
    .major = 3, .minor = 10, .chain = CHAIN_FRAMEOBJECT, .lines = LINES_310,
    .ts_frame = 24, .fr_previous = 24, .fr_code = 32, .fr_instr = 96,
    .fr_owner = -1, .owner_cstack = -1, .owner_generator = -1,
    .co_size = 0, .co_consts = 56, .co_names = 64,
    .co_filename = 104, .co_name = 112, .co_firstlineno = 40,
    .co_linetable = 120, .co_code = 48, .co_firsttraceable = -1,
    .ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
    .uni_length = 16, .uni_state = 32, .uni_ascii_size = 48,
    .uni_compact_size = 72,
};

/* 3.11: Include/cpython/pystate.h (cframe), Include/internal/pycore_frame.h
 * (_PyInterpreterFrame: f_code 32, previous 48, prev_instr 56, owner 69),
 * Include/cpython/code.h (co_qualname 128 is used as the name) at v3.11.7. */
static const struct layout layout_311 = {
    .major = 3, .minor = 11, .chain = CHAIN_CFRAME, .lines = LINES_311,
    .ts_frame = 56, .cframe_current = 8, .fr_previous = 48, .fr_code = 32,
    .fr_instr = 56, .fr_owner = 69, .owner_cstack = -1, .owner_generator = 1,
    .co_size = 16, .co_consts = 24, .co_names = 32,
    .co_filename = 112, .co_name = 128, .co_firstlineno = 72,
    .co_linetable = 136, .co_code = 184, .co_firsttraceable = 168,
    .ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
    .uni_length = 16, .uni_state = 32, .uni_ascii_size = 48,
    .uni_compact_size = 72,
};

/* 3.12: same headers at v3.12.1 (_PyCFrame lost use_tracing, so
 * current_frame is at 0; _PyInterpreterFrame starts with f_code; owner 3 is
 * FRAME_OWNED_BY_CSTACK; PyASCIIObject lost wstr). */
static const struct layout layout_312 = {
    .major = 3, .minor = 12, .chain = CHAIN_CFRAME, .lines = LINES_311,
    .ts_frame = 56, .cframe_current = 0, .fr_previous = 8, .fr_code = 0,
    .fr_instr = 56, .fr_owner = 70, .owner_cstack = 3, .owner_generator = 1,
    .co_size = 16, .co_consts = 24, .co_names = 32,
    .co_filename = 112, .co_name = 128, .co_firstlineno = 68,
    .co_linetable = 136, .co_code = 192, .co_firsttraceable = 176,
    .ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
    .uni_length = 16, .uni_state = 32, .uni_ascii_size = 40,
    .uni_compact_size = 56,
};

/* The _Py_DebugOffsets struct of 3.13 (Include/internal/pycore_runtime.h at
 * v3.13.0), declared field by field so that it can be read from _PyRuntime.
 * Only 3.13's shape is known: 3.14 reshaped it. */
struct debug_offsets_313 {
    char cookie[8];
    uint64_t version;
    uint64_t free_threaded;
    struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
    struct {
        uint64_t size, id, next, threads_head, gc, imports_modules, sysdict,
            builtins, ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
            gil_runtime_state_locked, gil_runtime_state_holder;
    } interpreter_state;
    struct {
        uint64_t size, prev, next, interp, current_frame, thread_id,
            native_thread_id, datastack_chunk, status;
    } thread_state;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner;
    } interpreter_frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno,
            argcount, localsplusnames, localspluskinds, co_code_adaptive;
    } code_object;
    struct { uint64_t size, ob_type; } pyobject;
    struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
    struct { uint64_t size, ob_item, ob_size; } tuple_object;
    struct { uint64_t size, ob_item, ob_size; } list_object;
    struct { uint64_t size, ma_keys, ma_values; } dict_object;
    struct { uint64_t size, ob_fval; } float_object;
    struct { uint64_t size, lv_tag, ob_digit; } long_object;
    struct { uint64_t size, ob_size, ob_sval; } bytes_object;
    struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
    struct { uint64_t size, collecting; } gc;
};

/* PyASCIIObject.state bits, the same in 3.10-3.13 default builds: interned
 * 0-1, kind 2-4, compact 5, ascii 6. */
#define UNI_KIND(s) (((s) >> 2) & 7u)
#define UNI_COMPACT 0x20u
#define UNI_ASCII 0x40u

/* ------------------------------------------------------------------ state */

typedef void *(*get_tstate_fn)(void);

static int py_on;                      /* set once by python_init */
static struct layout L;                /* the layout in use */
static get_tstate_fn get_tstate;       /* PyGILState_GetThisThreadState */
static uintptr_t type_code, type_unicode, type_bytes;
static char version_str[32];
static uintptr_t interpreter_start, interpreter_end;  /* its code's extent */

/* An interned code object: immutable once published in rec_chunks. */
struct code_rec {
    uintptr_t code;          /* identity: the code object's address ... */
    uintptr_t filename, name, linetable; /* ... and fields that must match */
    int firstlineno;
    uint32_t index;
    const char *function, *file;
};

#define MAX_RECORDS (1u << 20)   /* cap on interned code objects */
#define REC_CHUNK_BITS 12
#define REC_CHUNK (1u << REC_CHUNK_BITS)
#define REC_NCHUNKS (MAX_RECORDS / REC_CHUNK)
#define INDEX_UNKNOWN 1u         /* code objects past the cap */

static struct code_rec *_Atomic rec_chunks[REC_NCHUNKS];
static _Atomic uint32_t rec_count;      /* next index to hand out */
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

#define SLOT_BITS 18
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define SLOT_PROBES 8
static struct code_rec *_Atomic slots[1u << SLOT_BITS];

/* Line cache entry: key (index 20 bits, code unit 22 bits) << 22 | line. */
#define LINE_BITS 22
#define UNIT_BITS 22
#define LINE_CACHE_BITS 16
static _Atomic uint64_t line_cache[1u << LINE_CACHE_BITS];

#define MAX_WALK 1024            /* bound on frames walked, skipped included */
#define MAX_STRING 4096          /* bound on code points copied per string */
#define MAX_LINETABLE (1 << 24)  /* bound on a line table's size */

/* ------------------------------------------------------- raw memory reads */

/* A pointer worth following: not NULL, not in the first page, in the
 * user half of the x86-64 address space, and 8-byte aligned (every object
 * and frame is). It does not prove the memory is mapped; the thread's own
 * frame chain is, which is what we read. */
static inline int ptr_ok(uintptr_t p)
{
    return p >= 4096 && p < (1ull << 47) && (p & 7) == 0;
}

/* Unaligned-safe loads of a pointer, int or long at base + off: the
 * compiler turns each memcpy into one load. */
static inline uintptr_t rd_ptr(uintptr_t base, size_t off)
{
    uintptr_t v;
    memcpy(&v, (const void *)(base + off), sizeof v);
    return v;
}

static inline int rd_int(uintptr_t base, size_t off)
{
    int v;
    memcpy(&v, (const void *)(base + off), sizeof v);
    return v;
}

static inline long rd_long(uintptr_t base, size_t off)
{
    long v;
    memcpy(&v, (const void *)(base + off), sizeof v);
    return v;
}

/* True when obj is a plausible object of exactly the given type. */
static inline int is_type(uintptr_t obj, uintptr_t type)
{
    return ptr_ok(obj) && rd_ptr(obj, L.ob_type) == type;
}

/* ----------------------------------------------------------- line tables */

/* Line of byte offset addr in a 3.10 co_linetable: (unsigned byte delta,
 * signed line delta) pairs from co_firstlineno; a line delta of -128 marks a
 * range with no line (its delta is not applied). Empty ranges still move the
 * line. Returns -1 for no line or an offset past the table, as
 * PyCode_Addr2Line does. */
static int lines_310(const uint8_t *t, long n, int first, long addr)
{
    long end = 0;
    int line = first;
    for (long i = 0; i + 1 < n; i += 2) {
        long start = end;
        int ldelta = (int8_t)t[i + 1];
        end += t[i];
        int this_line = -1;
        if (ldelta != -128) {
            line += ldelta;
            this_line = line;
        }
        if (start <= addr && addr < end)
            return this_line;
    }
    return -1;
}

/* Reads a 6-bit-chunk varint of the 3.11+ location table at t[*i]. */
static unsigned read_varint(const uint8_t *t, long n, long *i)
{
    unsigned v = 0, shift = 0;
    while (*i < n) {
        uint8_t b = t[(*i)++];
        v |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64) || shift > 30)
            break;
    }
    return v;
}

/* Line of byte offset addr in a 3.11+ location table. Each entry starts with
 * a byte with bit 7 set: bits 3-6 the form, bits 0-2 the length in code units
 * minus one. Forms: 0-9 short (same line), 10-12 one line (delta form-10),
 * 13 no columns and 14 long (signed varint delta first), 15 no location
 * (line -1, line unchanged). Returns -1 for no line, as PyCode_Addr2Line. */
/* Where this thread's last decode of a 3.11+ line table stopped: the entry
 * holding the address asked, so that the next address in the same table,
 * at or after it (a long function or module body running down its lines),
 * resumes there instead of decoding the table from its start again (which
 * made a 40,000-line module body quadratic: 17 s instead of 0.7). The
 * table's address, length and first line must all match. */
static __thread struct {
    const uint8_t *table;
    long n, i, pos;
    int first, line;
} resume __attribute__((tls_model("initial-exec")));

static int lines_311(const uint8_t *t, long n, int first, long addr)
{
    long pos = 0, i = 0;
    int line = first;
    if (resume.table == t && resume.n == n && resume.first == first && resume.pos <= addr) {
        i = resume.i;
        pos = resume.pos;
        line = resume.line;
    }
    while (i < n) {
        long entry_i = i;
        int entry_line = line;
        uint8_t b = t[i++];
        if (!(b & 128))
            return -1; /* not at an entry: corrupt table */
        int form = (b >> 3) & 15;
        long len = ((b & 7) + 1) * 2;
        int delta = 0;
        if (form == 13 || form == 14) {
            unsigned u = read_varint(t, n, &i);
            delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
        } else if (form >= 10 && form <= 12) {
            delta = form - 10;
        }
        line += delta;
        if (pos <= addr && addr < pos + len) {
            resume.table = t;
            resume.n = n;
            resume.first = first;
            resume.i = entry_i;
            resume.pos = pos;
            resume.line = entry_line;
            return form == 15 ? -1 : line;
        }
        pos += len;
        while (i < n && !(t[i] & 128))
            i++; /* skip the columns */
    }
    return -1;
}

/* Line being executed in code object `code` at byte offset addr (which may
 * be negative: a frame that has not run its first instruction). */
static int code_line(uintptr_t code, long addr)
{
    int first = rd_int(code, L.co_firstlineno);
    if (addr < 0)
        return first;
    uintptr_t lt = rd_ptr(code, L.co_linetable);
    if (!is_type(lt, type_bytes))
        return first;
    long n = rd_long(lt, L.bytes_size);
    if (n < 0 || n > MAX_LINETABLE)
        return first;
    const uint8_t *t = (const uint8_t *)(lt + L.bytes_sval);
    return L.lines == LINES_310 ? lines_310(t, n, first, addr)
                                : lines_311(t, n, first, addr);
}

/* Test hook (hidden, not in python.h): the line for a byte offset of a code
 * object, by the table in use, so the unit test can compare every offset
 * against the interpreter's own co_lines(). */
int python__code_line(const void *code, long addr)
{
    if (!py_on || !is_type((uintptr_t)code, type_code))
        return -2;
    return code_line((uintptr_t)code, addr);
}

/* ------------------------------------------------------ string interning */

/* Appends code point c as UTF-8. */
static size_t put_utf8(char *o, uint32_t c)
{
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) {
        o[0] = (char)(0xc0 | (c >> 6)); o[1] = (char)(0x80 | (c & 63));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | (c >> 12)); o[1] = (char)(0x80 | ((c >> 6) & 63));
        o[2] = (char)(0x80 | (c & 63));
        return 3;
    }
    o[0] = (char)(0xf0 | (c >> 18)); o[1] = (char)(0x80 | ((c >> 12) & 63));
    o[2] = (char)(0x80 | ((c >> 6) & 63)); o[3] = (char)(0x80 | (c & 63));
    return 4;
}

/* Copies a str object into a malloc'd UTF-8 string by layout (no
 * PyUnicode_AsUTF8: that may allocate and needs the GIL). Compact ASCII data
 * follows PyASCIIObject, other compact data follows PyCompactUnicodeObject,
 * legacy strings point to theirs. Returns NULL when obj is not a str. */
static char *copy_str(uintptr_t obj)
{
    if (!is_type(obj, type_unicode))
        return NULL;
    long len = rd_long(obj, L.uni_length);
    uint32_t st = (uint32_t)rd_int(obj, L.uni_state);
    unsigned kind = UNI_KIND(st);
    if (len < 0 || (kind != 1 && kind != 2 && kind != 4))
        return NULL;
    if (len > MAX_STRING)
        len = MAX_STRING;
    uintptr_t data;
    if (st & UNI_COMPACT)
        data = obj + ((st & UNI_ASCII) ? L.uni_ascii_size : L.uni_compact_size);
    else
        data = rd_ptr(obj, L.uni_compact_size);
    if (!data)
        return NULL;
    char *out = malloc((size_t)len * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (long i = 0; i < len; i++) {
        uint32_t c;
        if (kind == 1)
            c = ((const uint8_t *)data)[i];
        else if (kind == 2)
            c = ((const uint16_t *)data)[i];
        else
            c = ((const uint32_t *)data)[i];
        if (c > 0x10ffff)
            c = 0xfffd;
        o += put_utf8(out + o, c);
    }
    out[o] = 0;
    return out;
}

/* The record for an index, or NULL. Lock-free: chunks are published with
 * release after their records are written. */
static const struct code_rec *rec_get(uint32_t index)
{
    if (index == 0 || index >= MAX_RECORDS)
        return NULL;
    struct code_rec *chunk = atomic_load_explicit(
        &rec_chunks[index >> REC_CHUNK_BITS], memory_order_acquire);
    if (!chunk || index >= atomic_load_explicit(&rec_count, memory_order_acquire))
        return NULL;
    return &chunk[index & (REC_CHUNK - 1)];
}

/* Appends a record (rec_lock held). Returns it, or NULL at the cap or when
 * memory runs out. The index is published after the record is complete. */
static struct code_rec *rec_append(const struct code_rec *r)
{
    uint32_t index = atomic_load_explicit(&rec_count, memory_order_relaxed);
    if (index >= MAX_RECORDS)
        return NULL;
    unsigned c = index >> REC_CHUNK_BITS;
    struct code_rec *chunk = atomic_load_explicit(&rec_chunks[c], memory_order_relaxed);
    if (!chunk) {
        chunk = calloc(REC_CHUNK, sizeof *chunk);
        if (!chunk)
            return NULL;
        atomic_store_explicit(&rec_chunks[c], chunk, memory_order_release);
    }
    struct code_rec *dst = &chunk[index & (REC_CHUNK - 1)];
    *dst = *r;
    dst->index = index;
    atomic_store_explicit(&rec_count, index + 1, memory_order_release);
    return dst;
}

/* Home slot of a code address (Fibonacci hashing: spreads aligned
 * addresses over the top bits). */
static inline unsigned slot_hash(uintptr_t code)
{
    uint64_t h = (uint64_t)code * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> (64 - SLOT_BITS));
}

/* Identity fields of a live code object, as a record would hold them. */
static inline void code_identity(uintptr_t code, struct code_rec *id)
{
    id->code = code;
    id->filename = rd_ptr(code, L.co_filename);
    id->name = rd_ptr(code, L.co_name);
    id->linetable = rd_ptr(code, L.co_linetable);
    id->firstlineno = rd_int(code, L.co_firstlineno);
}

/* True when record r describes the live code object whose identity is id. */
static inline int same_code(const struct code_rec *r, const struct code_rec *id)
{
    return r->code == id->code && r->filename == id->filename &&
           r->name == id->name && r->linetable == id->linetable &&
           r->firstlineno == id->firstlineno;
}

static atomic_int warned_full; /* the "table full" line is printed once */

/* Slow path: interns a code object under rec_lock, copying its strings, and
 * points a slot at the new record (replacing a stale record of a dead code
 * object at the same address, or evicting the home slot when the probe
 * window is full: the evicted record stays valid for describe). Returns the
 * index, INDEX_UNKNOWN past the cap. */
static uint32_t intern_slow(const struct code_rec *id)
{
    pthread_mutex_lock(&rec_lock);
    unsigned h = slot_hash(id->code);
    long target = -1;
    for (unsigned i = 0; i < SLOT_PROBES; i++) {
        unsigned s = (h + i) & SLOT_MASK;
        struct code_rec *r = atomic_load_explicit(&slots[s], memory_order_acquire);
        if (!r || r->code == id->code) {
            if (r && same_code(r, id)) { /* another thread got here first */
                uint32_t index = r->index;
                pthread_mutex_unlock(&rec_lock);
                return index;
            }
            target = s;
            break;
        }
    }
    if (target < 0)
        target = h;

    struct code_rec r = *id;
    char *fn = copy_str(id->name), *file = copy_str(id->filename);
    r.function = fn ? fn : "???";
    r.file = file ? file : "???";
    struct code_rec *dst = rec_append(&r);
    if (!dst) {
        pthread_mutex_unlock(&rec_lock);
        free(fn);
        free(file);
        if (!atomic_exchange(&warned_full, 1))
            log_line("more than %u Python code objects; further ones are shown as <unknown>",
                     MAX_RECORDS - 2);
        return INDEX_UNKNOWN;
    }
    atomic_store_explicit(&slots[target], dst, memory_order_release);
    pthread_mutex_unlock(&rec_lock);
    return dst->index;
}

/* Index of a live code object: lock-free probe of the slot table, checking
 * the identity fields; a miss interns it. */
static inline uint32_t intern_code(uintptr_t code)
{
    struct code_rec id;
    code_identity(code, &id);
    unsigned h = slot_hash(code);
    for (unsigned i = 0; i < SLOT_PROBES; i++) {
        struct code_rec *r =
            atomic_load_explicit(&slots[(h + i) & SLOT_MASK], memory_order_acquire);
        if (!r)
            break;
        if (r->code == code) {
            if (same_code(r, &id))
                return r->index;
            break; /* address reused by another code object */
        }
    }
    return intern_slow(&id);
}

/* Line for (index, byte offset), through the lock-free line cache; a miss
 * decodes the live code object's table. Line -1 (no line) is kept as 0. */
static inline uint32_t cached_line(uint32_t index, uintptr_t code, long addr)
{
    long unit = addr / 2;
    if (addr < 0 || unit >= (1l << UNIT_BITS) || index == INDEX_UNKNOWN) {
        int line = code_line(code, addr);
        return line > 0 ? (uint32_t)line : 0;
    }
    uint64_t key = ((uint64_t)index << UNIT_BITS) | (uint64_t)unit;
    uint64_t h = (key * 0x9e3779b97f4a7c15ull) >> (64 - LINE_CACHE_BITS);
    uint64_t e = atomic_load_explicit(&line_cache[h], memory_order_relaxed);
    if (e >> LINE_BITS == key)
        return (uint32_t)(e & ((1u << LINE_BITS) - 1));
    int line = code_line(code, addr);
    if (line < 0)
        line = 0;
    if (line < (1 << LINE_BITS))
        atomic_store_explicit(&line_cache[h], (key << LINE_BITS) | (uint64_t)line,
                              memory_order_relaxed);
    return (uint32_t)line;
}

/* ----------------------------------------------------------------- capture */

/* A thread's last key walk, frame by frame (python_key): where a frame
 * stands (its address, code object, instruction and owner) and what it
 * added to the key, so that the next walk, which finds most frames where
 * they stood (a loop's outer frames do not move while it runs), reads
 * neither their code objects nor a line of their tables. On a real stack
 * each frame's code object is cold: two of its lines a frame (its type and
 * tuples, its first traceable instruction). */
#define WALK_CACHE 64
#define WALK_SKIPPED 0  /* a part meaning the frame has not started */

typedef struct walk_entry {
    uintptr_t frame;  /* the frame's address, its owner byte above bit 56 */
    uintptr_t code;
    uintptr_t instr;
    uint64_t part;    /* the frame's part of the key before its place is mixed in */
} walk_entry_t;

static __thread walk_entry_t walk_cache[WALK_CACHE] __attribute__((tls_model("initial-exec")));

/* A frame's part of a walk (walk), its code object checked: WALK_SKIPPED
 * for a frame that has not started (the same test as CPython's
 * _PyFrame_IsIncomplete); else, with out NULL, its part of a key (the code
 * object, its constants' and names' tuples, and the instruction pointer,
 * undecoded), never WALK_SKIPPED; else the frame interned and written to
 * *out, and 1. */
static inline __attribute__((always_inline)) uint64_t
frame_part(const struct layout *lay, uintptr_t code, uintptr_t instr, int owner,
           python_frame_t *out)
{
    long addr = lay->chain == CHAIN_FRAMEOBJECT ? (long)instr * 2 /* f_lasti is in units */
                                                : (long)(instr - (code + lay->co_code));
    if (lay->co_firsttraceable >= 0 && owner != lay->owner_generator &&
        addr < 2l * rd_int(code, (size_t)lay->co_firsttraceable))
        return WALK_SKIPPED;
    if (out == NULL) {
        uint64_t part = (uint64_t)code ^ (instr << 47 | instr >> 17)
                      ^ (rd_ptr(code, lay->co_consts) << 13) ^ (rd_ptr(code, lay->co_names) << 29);
        return part + (part == WALK_SKIPPED);
    }
    if (lay->chain != CHAIN_FRAMEOBJECT && (addr < -2 || addr >= 2 * rd_long(code, lay->co_size)))
        addr = -1; /* pointer outside the code: use the first line */
    uint32_t index = intern_code(code);
    *out = ((uint64_t)index << 32) | cached_line(index, code, addr);
    return 1;
}

/* The frames python_capture takes and python_key hashes, innermost first,
 * read with layout lay: at most max of them, walking at most MAX_WALK.
 * Each step checks the frame pointer for plausibility and the code
 * object's type, skips C-stack shim frames (3.12+) and frames that have not
 * started (frame_part: 3.13's cleanup frame under a specialized __init__
 * call stays one for the whole call, so a key must skip it too, or the
 * call's first, unspecialized, run and the later ones would be two sites),
 * and stops at the first implausible pointer rather than guess. With key
 * NULL, each frame is interned and written to out. Else each frame's part
 * (frame_part) is taken from the thread's last walk (walk_cache) where the
 * frame stands as it did, and mixed with its place among the frames kept;
 * the mixes are xor'ed, so that no frame waits for the one before, and the
 * sum mixed once more. No string, table or line is read. Inlined into each
 * caller with lay a constant where the version is known when built
 * (by_layout), so that the offsets are folded into the loads. */
static inline __attribute__((always_inline)) int walk(const struct layout *lay,
                                                      python_frame_t *out, int max, uint64_t *key)
{
    uintptr_t ts = (uintptr_t)get_tstate();
    if (!ptr_ok(ts))
        return 0;
    uintptr_t f = rd_ptr(ts, lay->ts_frame);
    if (lay->chain == CHAIN_CFRAME)
        f = ptr_ok(f) ? rd_ptr(f, lay->cframe_current) : 0;
    f = ptr_ok(f) ? f : 0;
    uint64_t hash = 0;  /* locals: a store through key would make every offset be read again */
    uint64_t salt = 0;
    int n = 0;
    for (int walked = 0; f && n < max && walked < MAX_WALK; walked++) {
        uintptr_t code = rd_ptr(f, lay->fr_code);
        uintptr_t instr = lay->chain == CHAIN_FRAMEOBJECT ? (uintptr_t)rd_int(f, lay->fr_instr)
                                                           : rd_ptr(f, lay->fr_instr);
        walk_entry_t *seen = key != NULL && walked < WALK_CACHE ? &walk_cache[walked] : NULL;
        /* Where the version has C-stack frames (3.12+), a frame's owner is
         * part of where it stands; 3.11's is read on a miss only, as it
         * sits past the other fields, often on the frame's next line. */
        int owner = lay->owner_cstack >= 0 ? *(const uint8_t *)(f + lay->fr_owner) : 0;
        uintptr_t where = f | (uintptr_t)owner << 56;
        uint64_t part;
        if (__builtin_expect(seen != NULL && seen->frame == where && seen->code == code
                             && seen->instr == instr, 1)) {
            part = seen->part;
        } else {
            if (lay->owner_cstack < 0 && lay->fr_owner >= 0)
                owner = *(const uint8_t *)(f + lay->fr_owner);
            if (owner == lay->owner_cstack)
                part = WALK_SKIPPED;
            else if (!ptr_ok(code) || rd_ptr(code, lay->ob_type) != type_code)
                break; /* not a code object where one must be: stop */
            else
                part = frame_part(lay, code, instr, owner, key != NULL ? NULL : &out[n]);
            if (seen != NULL)
                *seen = (walk_entry_t){ where, code, instr, part };
        }
        if (part != WALK_SKIPPED && key != NULL) {
            uint64_t v = (part ^ salt) * 0x9e3779b97f4a7c15ull;
            hash ^= v ^ (v >> 29);
            salt += 0x2545f4914f6cdd1dull;
        }
        n += part != WALK_SKIPPED;
        uintptr_t prev = rd_ptr(f, lay->fr_previous);
        f = ptr_ok(prev) ? prev : 0;
    }
    if (key != NULL) {
        /* Every bit of the key from every bit of every frame: the frames'
         * mixes spread a change upward only, and a caller takes a key's low
         * bits for its table's slot (a second line of one caller, a few
         * bytes of instruction apart, shared the first one's slot). */
        hash ^= hash >> 33;
        hash *= 0xff51afd7ed558ccdull;
        *key = hash ^ hash >> 33;
    }
    return n;
}

/* walk with the layout in use: a built-in one as a constant (3.11 and
 * 3.12, the versions PyTorch's users run most), else L as read. */
static inline __attribute__((always_inline)) int by_layout(python_frame_t *out, int max,
                                                           uint64_t *key)
{
    if (L.minor == 11 && L.major == 3)
        return walk(&layout_311, out, max, key);
    if (L.minor == 12 && L.major == 3)
        return walk(&layout_312, out, max, key);
    return walk(&L, out, max, key);
}

/* Contract in python.h. */
int python_capture(python_frame_t *out, int max)
{
    if (!py_on || max <= 0)
        return 0;
    return by_layout(out, max, NULL);
}

/* Contract in python.h. */
int python_key(int max, uint64_t *key)
{
    *key = 0;
    if (!py_on || max <= 0)
        return 0;
    return by_layout(NULL, max, key);
}

/* Contract in python.h. */
int python_native_before_interpreter(const uintptr_t *pcs, int n)
{
    int i = 0;
    while (i < n && !(pcs[i] >= interpreter_start && pcs[i] < interpreter_end))
        i++;
    return i;
}

/* Contract in python.h. */
python_frame_t python_frame_of(const void *code, long addr)
{
    uintptr_t c = (uintptr_t)code;
    if (!py_on || !ptr_ok(c) || !is_type(c, type_code))
        return 0;
    uint32_t index = intern_code(c);
    return ((uint64_t)index << 32) | cached_line(index, c, addr);
}

/* Contract in python.h. Lock-free: records are immutable once published. */
int python_describe(python_frame_t frame, const char **function,
                    const char **file, int *line)
{
    const struct code_rec *r = rec_get((uint32_t)(frame >> 32));
    if (!r)
        return -1;
    if (function)
        *function = r->function;
    if (file)
        *file = r->file;
    if (line)
        *line = (int)(uint32_t)frame;
    return 0;
}

/* Contract in python.h. */
const char *python_version(void)
{
    return version_str[0] ? version_str : NULL;
}

/* -------------------------------------------------------------------- init */

/* A fork while another thread held rec_lock would leave it locked forever
 * in the child: give the child a fresh one. */
static void child_after_fork(void)
{
    pthread_mutex_init(&rec_lock, NULL);
}

/* Builds the 3.13 layout from _PyRuntime.debug_offsets. Returns 0 when the
 * cookie, version or build does not match what this file knows. */
static int layout_from_debug_offsets(int minor)
{
    const struct debug_offsets_313 *d = real_dl_lookup(RTLD_DEFAULT, "_PyRuntime");
    if (!d || memcmp(d->cookie, "xdebugpy", 8) != 0)
        return 0;
    if ((d->version >> 24) != 3 || ((d->version >> 16) & 0xff) != (uint64_t)minor)
        return 0;
    if (d->free_threaded)
        return 0; /* other object header and str state layouts */
    struct layout l = {
        .major = 3, .minor = minor, .chain = CHAIN_TSTATE, .lines = LINES_311,
        .ts_frame = d->thread_state.current_frame,
        .fr_previous = d->interpreter_frame.previous,
        .fr_code = d->interpreter_frame.executable,
        .fr_instr = d->interpreter_frame.instr_ptr,
        .fr_owner = (long)d->interpreter_frame.owner,
        .owner_cstack = 3, .owner_generator = 1, /* pycore_frame.h, v3.13.0 */
        .co_size = d->tuple_object.ob_size, /* the same PyObject_VAR_HEAD */
        /* not among the debug offsets: the head of PyCodeObject, the same
         * from 3.11 (Include/cpython/code.h, v3.13.0) */
        .co_consts = 24, .co_names = 32,
        .co_filename = d->code_object.filename,
        .co_name = d->code_object.qualname,
        .co_firstlineno = d->code_object.firstlineno,
        .co_linetable = d->code_object.linetable,
        .co_code = d->code_object.co_code_adaptive,
        /* int _co_firsttraceable; void *co_extra; then co_code_adaptive
         * (Include/cpython/code.h, v3.13.0) */
        .co_firsttraceable = (long)d->code_object.co_code_adaptive - 16,
        .ob_type = d->pyobject.ob_type,
        .bytes_size = d->bytes_object.ob_size,
        .bytes_sval = d->bytes_object.ob_sval,
        .uni_length = d->unicode_object.length,
        .uni_state = d->unicode_object.state,
        .uni_ascii_size = d->unicode_object.asciiobject_size,
        /* PyCompactUnicodeObject adds utf8_length and utf8 (16 bytes) */
        .uni_compact_size = d->unicode_object.asciiobject_size + 16,
    };
    /* Sanity: every offset must lie inside its struct. */
    if (l.fr_previous >= d->interpreter_frame.size ||
        l.fr_code >= d->interpreter_frame.size ||
        l.fr_instr >= d->interpreter_frame.size ||
        (uint64_t)l.fr_owner >= d->interpreter_frame.size ||
        l.ts_frame >= d->thread_state.size ||
        l.co_code >= d->code_object.size || l.co_code < 16)
        return 0;
    L = l;
    return 1;
}

static int (*py_is_initialized)(void);
static _Atomic int py_was_up, py_finished;

void python_watch_finish(void)
{
    py_is_initialized = (int (*)(void))real_dl_lookup(RTLD_DEFAULT, "Py_IsInitialized");
    if (py_is_initialized != NULL && py_is_initialized())
        atomic_store(&py_was_up, 1);
}

/* CPython clears its "initialized" flag in Py_FinalizeEx after the atexit
 * callbacks and before finalize_modules (3.10 to 3.13 alike). */
int python_finished(void)
{
    if (atomic_load_explicit(&py_finished, memory_order_relaxed))
        return 1;
    if (py_is_initialized == NULL || !atomic_load_explicit(&py_was_up, memory_order_relaxed)
        || py_is_initialized())
        return 0;
    atomic_store(&py_finished, 1);
    return 1;
}

/* The version of the interpreter in this process into *major, *minor and
 * *micro. Returns 0, or -1 when there is none. */
static int running_version(int *major, int *minor, int *micro)
{
    const unsigned long *hex = real_dl_lookup(RTLD_DEFAULT, "Py_Version"); /* 3.11+ */
    if (hex) {
        *major = (int)(*hex >> 24);
        *minor = (int)((*hex >> 16) & 0xff);
        *micro = (int)((*hex >> 8) & 0xff);
        return 0;
    }
    const char *(*getv)(void) = (const char *(*)(void))real_dl_lookup(RTLD_DEFAULT, "Py_GetVersion");
    return getv && sscanf(getv(), "%d.%d.%d", major, minor, micro) >= 2 ? 0 : -1;
}

/* Contract in python.h. */
int python_running_minor(void)
{
    int major = 0, minor = 0, micro = 0;
    return running_version(&major, &minor, &micro) == 0 && major == 3 ? minor : -1;
}

/* Where a program's audit hooks are kept, by minor version: the list that
 * sys.addaudithook fills (PyInterpreterState.audit_hooks, NULL until the
 * first), and the head of the C hooks of PySys_AddAuditHook
 * (_PyRuntimeState's audit_hook_head, audit_hooks.head from 3.12).
 * Include/internal/pycore_interp.h and pycore_runtime.h at v3.10.13,
 * v3.11.7, v3.12.1 and v3.13.0, x86-64; the list's offset checked by
 * hooking 3.10.13, 3.11.2, 3.11.7, 3.12.1 and 3.13.0. */
static const struct audit_offsets {
    int minor;
    size_t interp_hooks, runtime_hooks;
} audit_offsets[] = {
    { 10, 3504, 648 }, { 11, 3552, 656 }, { 12, 267208, 3064 }, { 13, 10808, 10424 },
};

/* Whether the program has audit hooks, read at the offsets at in the
 * interpreter state interp and the runtime state runtime (list_type:
 * PyList_Type's address): 1, 0, or -1 when what is there is not what
 * those offsets should hold. */
static int hooks_of(const struct audit_offsets *at, uintptr_t interp, uintptr_t runtime,
                    uintptr_t list_type)
{
    /* A list, or nothing: any other word means the offset is not this
     * build's, and nothing is known. */
    uintptr_t hooks = rd_ptr(interp, at->interp_hooks);
    if (hooks != 0 && !(ptr_ok(hooks) && rd_ptr(hooks, 8) == list_type))
        return -1;
    if (hooks != 0 && rd_long(hooks, 16) > 0)  /* the list's ob_size */
        return 1;
    /* A C hook's entry is {next, hook function, its data}: the function
     * must lie in a loaded object, or the word is not an entry. */
    uintptr_t head = rd_ptr(runtime, at->runtime_hooks);
    if (head == 0)
        return 0;
    Dl_info info;
    uintptr_t hook = ptr_ok(head) ? rd_ptr(head, 8) : 0;
    return hook != 0 && dladdr((void *)hook, &info) != 0 ? 1 : -1;
}

/* Contract in python.h. The symbols are looked up once; a hook, once
 * there, stays for the process's life (CPython has no way to remove one). */
int python_audit_hooked(void)
{
    static _Atomic int known;  /* 0: not looked up yet; 1: looked up; 2: hooked for good */
    static const struct audit_offsets *at;
    static void *(*main_interp)(void);
    static uintptr_t runtime, list_type;
    if (atomic_load(&known) == 2)
        return 1;
    if (atomic_load(&known) == 0) {
        int minor = python_running_minor();
        for (size_t i = 0; i < sizeof audit_offsets / sizeof audit_offsets[0]; i++)
            if (audit_offsets[i].minor == minor)
                at = &audit_offsets[i];
        main_interp = (void *(*)(void))real_dl_lookup(RTLD_DEFAULT, "PyInterpreterState_Main");
        runtime = (uintptr_t)real_dl_lookup(RTLD_DEFAULT, "_PyRuntime");
        list_type = (uintptr_t)real_dl_lookup(RTLD_DEFAULT, "PyList_Type");
        atomic_store(&known, 1);
    }
    uintptr_t interp = main_interp != NULL ? (uintptr_t)main_interp() : 0;
    if (at == NULL || !ptr_ok(interp) || !ptr_ok(runtime) || list_type == 0)
        return -1;
    int hooked = hooks_of(at, interp, runtime, list_type);
    if (hooked == 1)
        atomic_store(&known, 2);
    return hooked;
}

/* Contract in python.h. Runs once, outside any hook (so plain dlsym is fine:
 * the shim's own dlsym passes non-CUDA names through). No Python symbols: 0,
 * silently. A Python whose version has no layout: 0 and one stderr line. */
int python_init(void)
{
    static int done;
    if (done)
        return py_on;
    done = 1;

    int major = 0, minor = 0, micro = 0;
    if (running_version(&major, &minor, &micro) != 0)
        return 0; /* no interpreter in this process */
    snprintf(version_str, sizeof version_str, "%d.%d.%d", major, minor, micro);

    get_tstate = (get_tstate_fn)real_dl_lookup(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    type_code = (uintptr_t)real_dl_lookup(RTLD_DEFAULT, "PyCode_Type");
    type_unicode = (uintptr_t)real_dl_lookup(RTLD_DEFAULT, "PyUnicode_Type");
    type_bytes = (uintptr_t)real_dl_lookup(RTLD_DEFAULT, "PyBytes_Type");

    int known = 0;
    if (major == 3 && minor == 10) { L = layout_310; known = 1; }
    else if (major == 3 && minor == 11) { L = layout_311; known = 1; }
    else if (major == 3 && minor == 12) { L = layout_312; known = 1; }
    else if (major == 3 && minor == 13) known = layout_from_debug_offsets(minor);

    if (!known || !get_tstate || !type_code || !type_unicode || !type_bytes) {
        log_line("Python %d.%d is not supported; Python frames are off", major, minor);
        return 0;
    }

    /* Index 0 is never a frame; index 1 stands for code objects past the cap. */
    struct code_rec unknown = {.function = "<unknown>", .file = "<unknown>"};
    pthread_mutex_lock(&rec_lock);
    atomic_store(&rec_count, 1);
    struct code_rec *r = rec_append(&unknown);
    pthread_mutex_unlock(&rec_lock);
    if (!r || r->index != INDEX_UNKNOWN)
        return 0;
    pthread_atfork(NULL, NULL, child_after_fork);
    /* libpython, or the executable it is linked into */
    real_dl_object_extent((const void *)(uintptr_t)get_tstate, &interpreter_start, &interpreter_end);
    py_on = 1;
    return 1;
}
