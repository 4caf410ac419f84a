/* refwalk.c: a breadth-first walk over the Python heap through each type's
 * own traversal (refwalk.h). The shim links no libpython: the few functions
 * it calls are found with dlsym, all of the stable ABI, and an object's
 * type is read from its header (ob_type, after ob_refcnt, in every
 * non-free-threaded CPython 3.x). */
#define _GNU_SOURCE
#include "refwalk.h"
#include "pyapi.h"
#include "clock.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

typedef int (*py_visit_t)(py_object_t *child, void *arg);
typedef int (*py_traverse_t)(py_object_t *self, py_visit_t visit, void *arg);

static inline void *type_of(py_object_t *obj)
{
    return ((void **)obj)[1];
}

/* A zeroed table of bytes, in huge pages where the kernel gives them on
 * request: a table of millions of entries probed at random otherwise
 * misses the TLB at nearly every probe. */
static void *table_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static void table_free(void *p, size_t bytes)
{
    if (p != NULL)
        munmap(p, bytes);
}

/* Pointers, each with a small int when the table is valued: open
 * addressing, linear probing, a power of two of slots at most half full.
 * One probe is one cache line, which is what a walk of millions of objects
 * pays for. */
typedef struct ptr_table {
    const void **keys;
    int32_t *values;     /* NULL unless valued */
    size_t capacity, used;
    int valued;
} ptr_table_t;

/* Where key's probe starts: the address itself, in units of the 16 bytes
 * objects are aligned to, so that objects allocated side by side (and met
 * side by side: a list's items) probe side by side, a cache line for
 * several, where a mixing hash made every probe a miss. */
static inline size_t table_hash(const ptr_table_t *t, const void *key)
{
    uintptr_t p = (uintptr_t)key;
    return (size_t)((p >> 4) ^ (p >> 28)) & (t->capacity - 1);
}

static size_t table_slot(const ptr_table_t *t, const void *key)
{
    size_t i = table_hash(t, key);
    while (t->keys[i] != NULL && t->keys[i] != key)
        i = (i + 1) & (t->capacity - 1);
    return i;
}

/* key's value (0 in a set), or -1 when absent. */
static int32_t table_get(const ptr_table_t *t, const void *key)
{
    if (t->capacity == 0)
        return -1;
    size_t i = table_slot(t, key);
    return t->keys[i] != key ? -1 : t->valued ? t->values[i] : 0;
}

static void table_release(ptr_table_t *t)
{
    table_free(t->keys, t->capacity * sizeof *t->keys);
    table_free(t->values, t->capacity * sizeof *t->values);
    t->keys = NULL;
    t->values = NULL;
    t->capacity = t->used = 0;
}

/* Makes room for at least want keys; -1 when memory ran out. */
static int table_reserve(ptr_table_t *t, size_t want)
{
    if (want * 2 <= t->capacity)
        return 0;
    ptr_table_t bigger = { NULL, NULL, t->capacity ? t->capacity : 1024, t->used, t->valued };
    while (want * 2 > bigger.capacity)
        bigger.capacity *= 2;
    bigger.keys = table_alloc(bigger.capacity * sizeof *bigger.keys);
    if (bigger.valued)
        bigger.values = table_alloc(bigger.capacity * sizeof *bigger.values);
    if (bigger.keys == NULL || (bigger.valued && bigger.values == NULL)) {
        table_release(&bigger);
        return -1;
    }
    for (size_t i = 0; i < t->capacity; i++)
        if (t->keys[i] != NULL) {
            size_t j = table_slot(&bigger, t->keys[i]);
            bigger.keys[j] = t->keys[i];
            if (bigger.valued)
                bigger.values[j] = t->values[i];
        }
    table_release(t);
    *t = bigger;
    return 0;
}

/* Sets key's value (a set ignores it); -1 when memory ran out. */
static int table_put(ptr_table_t *t, const void *key, int32_t value)
{
    if (table_reserve(t, t->used + 1) != 0)
        return -1;
    size_t i = table_slot(t, key);
    if (t->keys[i] == NULL)
        t->used++;
    t->keys[i] = key;
    if (t->valued)
        t->values[i] = value;
    return 0;
}

/* One walk's state, kept in a capsule that the walker's functions share. */
typedef struct walk {
    py_object_t **objects;  /* node -> object, a reference held */
    int32_t *parents;       /* node -> the node it was met from, -1 for a root */
    size_t count, capacity, next; /* next: the first node not walked yet */
    ptr_table_t seen;       /* objects met, and those to ignore */
    ptr_table_t kinds;      /* type -> classify's answer (valued) */
    /* For the visit callback, during one walk call: */
    int32_t current;
    unsigned long long lo, hi;
    py_object_t *found;
    int failed;
    py_object_t **batch;    /* the current node's referents (walk_visit), BATCH at most */
    size_t batch_count;
    uint64_t deadline_ns;   /* the walk call's */
    int late;               /* a traversal was stopped at the deadline */
    int closed;             /* close() was called: the nodes are gone */
    size_t met;             /* how many there were */
} walk_t;

static const char capsule_name[] = "gpuleak.refwalk";

/* Lets go of every object met. The walker's own functions and the
 * search's closures are objects of the heap too: a walk that met them
 * holds itself in a cycle the collector cannot see, so the search closes
 * the walk (close()) rather than waiting for its release. */
static void walk_close(walk_t *w)
{
    for (size_t i = 0; i < w->count; i++)
        pyapi.decref(w->objects[i]);
    free(w->objects);
    free(w->parents);
    free(w->batch);
    w->batch = NULL;
    w->batch_count = 0;
    table_release(&w->seen);
    table_release(&w->kinds);
    w->objects = NULL;
    w->parents = NULL;
    w->met += w->count;
    w->capacity = w->next = w->count = 0;
    w->closed = 1;
}

static void walk_release(py_object_t *capsule)
{
    walk_t *w = pyapi.capsule_get(capsule, capsule_name);
    if (w == NULL) {
        pyapi.clear_error();
        return;
    }
    walk_close(w);
    free(w);
}

/* Makes room for at least want nodes; 0, or -1 when memory ran out. */
static int walk_reserve(walk_t *w, size_t want)
{
    if (want <= w->capacity)
        return 0;
    size_t capacity = w->capacity ? w->capacity : 4096;
    while (capacity < want)
        capacity *= 2;
    if (capacity > INT32_MAX)
        return -1;
    py_object_t **objects = realloc(w->objects, capacity * sizeof *objects);
    if (objects != NULL)
        w->objects = objects;
    int32_t *parents = realloc(w->parents, capacity * sizeof *parents);
    if (parents != NULL)
        w->parents = parents;
    if (objects == NULL || parents == NULL)
        return -1;
    w->capacity = capacity;
    return 0;
}

/* Makes obj a node met from parent; 0, or -1 when memory ran out. */
static int walk_add(walk_t *w, py_object_t *obj, int32_t parent)
{
    if (w->count == w->capacity && walk_reserve(w, w->count + 1) != 0)
        return -1;
    if (table_put(&w->seen, obj, 0) != 0)
        return -1;
    pyapi.incref(obj);
    w->objects[w->count] = obj;
    w->parents[w->count] = parent;
    w->count++;
    return 0;
}

/* Whether the walk goes into obj: only objects the collector tracks by
 * type can refer to others; a module's namespace is a root of its own, and
 * a static type's traversal is not meant to be called. */
static py_traverse_t walk_traversal(py_object_t *obj)
{
    void *type = type_of(obj);
    unsigned long flags = pyapi.get_flags(type);
    if (!(flags & PY_TPFLAGS_HAVE_GC) || pyapi.is_subtype(type, pyapi.module_type))
        return NULL;
    if ((flags & PY_TPFLAGS_TYPE_SUBCLASS) && !(pyapi.get_flags(obj) & PY_TPFLAGS_HEAPTYPE))
        return NULL;
    return (py_traverse_t)pyapi.get_slot(type, PY_TP_TRAVERSE);
}

static void walk_referents(walk_t *w);

/* Collects an object's referents, looked at BATCH at a time (walk_referents)
 * so that the next ones' memory can be fetched ahead. One object may have
 * millions (a list of a data set's numbers): the batch stays small, and
 * the deadline is kept within one, by stopping its traversal (a nonzero
 * answer ends tp_traverse). */
#define BATCH 4096

static int walk_visit(py_object_t *child, void *arg)
{
    walk_t *w = arg;
    if (child == NULL || w->failed)
        return w->failed;
    if (w->batch == NULL) {
        w->batch = malloc(BATCH * sizeof *w->batch);
        if (w->batch == NULL) {
            w->failed = 1;
            return 1;
        }
    }
    w->batch[w->batch_count++] = child;
    if (w->batch_count == BATCH) {
        walk_referents(w);
        if (clock_monotonic_ns() > w->deadline_ns) {
            w->late = 1;
            return 1;
        }
    }
    return w->failed;
}

/* One referent of the current node: a number kept whose value lies in
 * [lo, hi), reported with the node; or an object the collector tracks,
 * queued once. */
static void walk_referent(walk_t *w, py_object_t *child)
{
    if (type_of(child) == pyapi.long_type) {
        unsigned long long value = pyapi.as_ull(child);
        if (pyapi.err_occurred() != NULL) {
            pyapi.clear_error();
            return;
        }
        if (value >= w->lo && value < w->hi) {
            py_object_t *entry = pyapi.build("(iiO)", -1, (int)w->current, child);
            if (entry == NULL || pyapi.list_append(w->found, entry) != 0)
                w->failed = 1;
            if (entry != NULL)
                pyapi.decref(entry);
        }
        return;
    }
    if (!(pyapi.get_flags(type_of(child)) & PY_TPFLAGS_HAVE_GC) || table_get(&w->seen, child) >= 0)
        return;
    if (walk_add(w, child, w->current) != 0)
        w->failed = 1;
}

/* How far ahead the referents' headers and set slots are fetched: a walk
 * of millions of objects waits on memory, not on work. */
#define AHEAD_HEADER 8
#define AHEAD_SLOT 4

/* The current node's referents, collected by walk_visit. */
static void walk_referents(walk_t *w)
{
    size_t n = w->batch_count;
    for (size_t i = 0; i < n && !w->failed; i++) {
        if (i + AHEAD_HEADER < n)
            __builtin_prefetch(w->batch[i + AHEAD_HEADER]);
        if (i + AHEAD_SLOT < n && w->seen.capacity != 0)
            __builtin_prefetch(&w->seen.keys[table_hash(&w->seen, w->batch[i + AHEAD_SLOT])]);
        walk_referent(w, w->batch[i]);
    }
    w->batch_count = 0;
}

/* classify's answer for obj's type, asked once per type; -1 on failure. */
static long walk_kind(walk_t *w, py_object_t *classify, py_object_t *obj)
{
    void *type = type_of(obj);
    int32_t known = table_get(&w->kinds, type);
    if (known >= 0)
        return known;
    py_object_t *answer = pyapi.call_objects(classify, (py_object_t *)type, NULL);
    long kind = answer != NULL ? pyapi.as_long(answer) : 0;
    if (answer != NULL)
        pyapi.decref(answer);
    if (pyapi.err_occurred() != NULL) {
        pyapi.clear_error();
        kind = 0;
    }
    if (kind < 0 || kind > 1000)
        kind = 0;
    return table_put(&w->kinds, type, (int32_t)kind) == 0 ? kind : -1;
}

/* Walks from the next unwalked node until none is left or the deadline. */
static const char *walk_run(walk_t *w, py_object_t *classify, double deadline)
{
    w->deadline_ns = deadline > 0 ? (uint64_t)(deadline * 1e9) : UINT64_MAX;
    w->late = 0;
    for (; w->next < w->count && !w->failed; w->next++) {
        if (w->late || ((w->next & 1023) == 0 && clock_monotonic_ns() > w->deadline_ns))
            return "budget";
        py_object_t *obj = w->objects[w->next];
        long kind = walk_kind(w, classify, obj);
        if (kind < 0)
            return NULL;
        if (kind > 0) {
            py_object_t *entry = pyapi.build("(ilO)", (int)kind, (long)w->next, obj);
            if (entry == NULL || pyapi.list_append(w->found, entry) != 0)
                w->failed = 1;
            if (entry != NULL)
                pyapi.decref(entry);
        }
        py_traverse_t traverse = walk_traversal(obj);
        if (traverse != NULL) {
            w->current = (int32_t)w->next;
            traverse(obj, walk_visit, w);
            walk_referents(w);
        }
    }
    return w->failed ? NULL : "done";
}

static py_object_t *walk_call(py_object_t *capsule, py_object_t *args)
{
    walk_t *w = pyapi.capsule_get(capsule, capsule_name);
    py_object_t *roots, *ignore, *classify;
    unsigned long long lo, hi;
    double deadline;
    ssize_t expect = 0;
    int named = 1;
    if (w == NULL || !pyapi.parse(args, "OOOKKd|ni", &roots, &ignore, &classify, &lo, &hi, &deadline,
                               &expect, &named) || w->closed)
        return NULL;
    ssize_t n_roots = pyapi.list_size(roots), n_ignore = pyapi.list_size(ignore);
    if (n_roots < 0 || n_ignore < 0)
        return NULL;
    if (expect > 0 && (table_reserve(&w->seen, (size_t)expect) != 0
                       || walk_reserve(w, (size_t)expect) != 0))
        return NULL;
    for (ssize_t i = 0; i < n_ignore; i++) {
        py_object_t *obj = pyapi.list_get(ignore, i);
        if (table_get(&w->seen, obj) < 0 && table_put(&w->seen, obj, 0) != 0)
            return NULL;
    }
    py_object_t *indices = pyapi.new_list(0), *found = pyapi.new_list(0);
    const char *ended = NULL;
    if (indices == NULL || found == NULL)
        goto out;
    w->found = found;
    w->lo = lo;
    w->hi = hi;
    w->failed = 0;
    for (ssize_t i = 0; i < n_roots; i++) {
        py_object_t *obj = pyapi.list_get(roots, i);
        long node = -1;
        if (table_get(&w->seen, obj) < 0) {
            if (walk_add(w, obj, -1) != 0)
                goto out;
            node = (long)w->count - 1;
        }
        if (!named)
            continue;
        py_object_t *number = pyapi.from_long(node);
        int bad = number == NULL || pyapi.list_append(indices, number) != 0;
        if (number != NULL)
            pyapi.decref(number);
        if (bad)
            goto out;
    }
    ended = walk_run(w, classify, deadline);
out:;
    py_object_t *result = ended != NULL ? pyapi.build("(OOs)", indices, found, ended) : NULL;
    if (indices != NULL)
        pyapi.decref(indices);
    if (found != NULL)
        pyapi.decref(found);
    w->found = NULL;
    return result;
}

static py_object_t *up_call(py_object_t *capsule, py_object_t *arg)
{
    walk_t *w = pyapi.capsule_get(capsule, capsule_name);
    long node = pyapi.as_long(arg);
    if (w == NULL || pyapi.err_occurred() != NULL)
        return NULL;
    if (node < 0 || (size_t)node >= w->count || w->closed)
        return pyapi.build("()"); /* holders.py asks only for nodes it was given */
    return pyapi.build("(Ol)", w->objects[node], (long)w->parents[node]);
}

static py_object_t *count_call(py_object_t *capsule, py_object_t *unused)
{
    (void)unused;
    walk_t *w = pyapi.capsule_get(capsule, capsule_name);
    return w != NULL ? pyapi.from_long((long)(w->count + w->met)) : NULL;
}

static py_object_t *close_call(py_object_t *capsule, py_object_t *unused)
{
    (void)unused;
    walk_t *w = pyapi.capsule_get(capsule, capsule_name);
    if (w == NULL)
        return NULL;
    walk_close(w);
    return pyapi.build("");
}

/* A frame's first n fast locals, read where CPython keeps them. 3.11 to
 * 3.13: PyFrameObject's f_frame (after the object's head and f_back)
 * points to the _PyInterpreterFrame, whose localsplus array starts 72
 * bytes in (Include/internal/pycore_frame.h at v3.11.7, v3.12.1, v3.13.0).
 * 3.10: f_localsplus ends PyFrameObject, 352 bytes in (after its 20-entry
 * block stack; Include/cpython/frameobject.h at v3.10.13). Reading
 * frame.f_locals instead would copy them into a dict the frame keeps: the
 * program's objects would outlive the names it deleted. holders.py asks
 * only on those versions (layout 0: 3.11+, 1: 3.10), with
 * n = len(code.co_varnames). */
#define FRAME_F_FRAME 24
#define IFRAME_LOCALSPLUS 72
#define FRAME310_LOCALSPLUS 352

static py_object_t *locals_call(py_object_t *capsule, py_object_t *args)
{
    (void)capsule;
    py_object_t *frame;
    ssize_t n;
    int layout;
    if (!pyapi.parse(args, "Oni", &frame, &n, &layout) || n < 0)
        return NULL;
    py_object_t **values;
    if (layout == 1) {
        values = (py_object_t **)((char *)frame + FRAME310_LOCALSPLUS);
    } else {
        char *iframe = *(char **)((char *)frame + FRAME_F_FRAME);
        values = iframe != NULL ? (py_object_t **)(iframe + IFRAME_LOCALSPLUS) : NULL;
    }
    py_object_t *out = pyapi.new_list(0);
    for (ssize_t i = 0; out != NULL && values != NULL && i < n; i++) {
        if (values[i] == NULL)
            continue;
        py_object_t *pair = pyapi.build("(nO)", i, values[i]);
        int bad = pair == NULL || pyapi.list_append(out, pair) != 0;
        if (pair != NULL)
            pyapi.decref(pair);
        if (bad) {
            pyapi.decref(out);
            out = NULL;
        }
    }
    return out;
}

static py_method_def_t walk_def = { "walk", walk_call, PY_METH_VARARGS, "gpuleak: walk the heap" };
static py_method_def_t up_def = { "up", up_call, PY_METH_O, "gpuleak: a node and its parent" };
static py_method_def_t count_def = { "count", count_call, PY_METH_NOARGS, "gpuleak: objects met" };
static py_method_def_t close_def = { "close", close_call, PY_METH_NOARGS, "gpuleak: let go" };
static py_method_def_t locals_def = { "locals", locals_call, PY_METH_VARARGS, "gpuleak: a frame's locals" };

void *refwalk_new(void)
{
    if (!pyapi_resolve())
        return NULL;
    walk_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->kinds.valued = 1;
    py_object_t *capsule = pyapi.capsule_new(w, capsule_name, walk_release);
    if (capsule == NULL) {
        free(w);
        pyapi.clear_error();
        return NULL;
    }
    py_object_t *walk = pyapi.new_function(&walk_def, capsule, NULL);
    py_object_t *up = pyapi.new_function(&up_def, capsule, NULL);
    py_object_t *count = pyapi.new_function(&count_def, capsule, NULL);
    py_object_t *close = pyapi.new_function(&close_def, capsule, NULL);
    py_object_t *locals = pyapi.new_function(&locals_def, capsule, NULL);
    py_object_t *walker = walk != NULL && up != NULL && count != NULL && close != NULL
                              && locals != NULL
                              ? pyapi.build("(OOOOO)", walk, up, count, close, locals) : NULL;
    py_object_t *made[] = { walk, up, count, close, locals, capsule };
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++)
        if (made[i] != NULL)
            pyapi.decref(made[i]);
    if (walker == NULL)
        pyapi.clear_error();
    return walker;
}
