#define _GNU_SOURCE
#include "finish.h"
#include "clock.h"
#include "config.h"
#include "guard.h"
#include "lifecycle.h"
#include "pylayout.h"
#include "refwalk.h"
#include "tracker.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CPython's API as this file uses it, found with dlsym: the shim links no
 * libpython. Only functions of the stable ABI, and PyMethodDef's layout,
 * which has not changed since Python 3.0. */
typedef struct _object py_object_t;
typedef struct py_method_def {
    const char *name;
    py_object_t *(*method)(py_object_t *self, py_object_t *unused);
    int flags;
    const char *doc;
} py_method_def_t;
#define PY_METH_NOARGS 0x0004
#define PY_FILE_INPUT 257

static struct {
    int (*is_initialized)(void);
    int (*is_finalizing)(void);
    py_object_t *(*import)(const char *name);
    py_object_t *(*get_attr)(py_object_t *obj, const char *name);
    py_object_t *(*call)(py_object_t *fn, const char *format, ...);
    py_object_t *(*new_function)(py_method_def_t *def, py_object_t *self, py_object_t *module);
    py_object_t *(*new_dict)(void);
    py_object_t *(*run_string)(const char *source, int start, py_object_t *globals,
                               py_object_t *locals, void *flags);
    py_object_t *(*dict_get)(py_object_t *dict, const char *key);
    const char *(*as_utf8)(py_object_t *text);
    void (*incref)(py_object_t *obj);
    void (*decref)(py_object_t *obj);
    void (*clear_error)(void);
    int (*add_pending_call)(int (*call)(void *arg), void *arg);
    py_object_t *none;
} py;

/* Finds every function; all or nothing. */
static int py_resolve(void)
{
    struct { void **slot; const char *name; } want[] = {
        { (void **)&py.is_initialized, "Py_IsInitialized" },
        { (void **)&py.add_pending_call, "Py_AddPendingCall" },
        { (void **)&py.import, "PyImport_ImportModule" },
        { (void **)&py.get_attr, "PyObject_GetAttrString" },
        { (void **)&py.call, "PyObject_CallFunction" },
        { (void **)&py.new_function, "PyCFunction_NewEx" },
        { (void **)&py.new_dict, "PyDict_New" },
        { (void **)&py.run_string, "PyRun_StringFlags" },
        { (void **)&py.dict_get, "PyDict_GetItemString" },
        { (void **)&py.as_utf8, "PyUnicode_AsUTF8" },
        { (void **)&py.incref, "Py_IncRef" },
        { (void **)&py.decref, "Py_DecRef" },
        { (void **)&py.clear_error, "PyErr_Clear" },
        { (void **)&py.none, "_Py_NoneStruct" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if ((*want[i].slot = dlsym(RTLD_DEFAULT, want[i].name)) == NULL)
            return 0;
    /* 3.13 made it public; before, only the underscored name exists. */
    py.is_finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
    if (py.is_finalizing == NULL)
        py.is_finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
    return py.is_finalizing != NULL;
}

static void py_release(py_object_t *obj)
{
    if (obj != NULL)
        py.decref(obj);
}

/* The search's results, published once by the callback. */
static finish_holder_t *holders;
static size_t holder_count;
/* The allocations it named, by start then site (finish_named). */
typedef struct named_key {
    uint64_t key;
    uint32_t site;
} named_key_t;
static named_key_t *named_keys;
static size_t named_key_count;
static finish_search_t search;
static _Atomic int published;

static int by_site_then_bytes(const void *a, const void *b)
{
    const finish_holder_t *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_named_key(const void *a, const void *b)
{
    const named_key_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

static int by_key(const void *a, const void *b)
{
    const tracker_record_t *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* One allocation the search named: the line's fields stay in the copy of
 * its answer, the holder's part (after the id) compared whole. */
typedef struct named {
    uint32_t site;
    uint64_t size;
    char *holder;
} named_t;

static int by_site_then_holder(const void *a, const void *b)
{
    const named_t *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return strcmp(x->holder, y->holder);
}

/* Splits the next tab-separated field off *text. */
static char *field(char **text)
{
    char *start = *text, *tab = strchr(start, '\t');
    if (tab != NULL) {
        *tab = '\0';
        *text = tab + 1;
    } else {
        *text = start + strlen(start);
    }
    return start;
}

/* Reads holders.py's answer (its contract is at the top of that file) into
 * the holders table, one entry per site and holder. answer is owned here
 * from now on: the entries point into it. */
static void take_answer(char *answer, const tracker_record_t *records, size_t count)
{
    size_t lines = 1;
    for (const char *p = answer; *p != '\0'; p++)
        lines += *p == '\n';
    named_t *found = malloc(lines * sizeof *found);
    named_keys = malloc(lines * sizeof *named_keys);
    if (found == NULL || named_keys == NULL) {
        free(found);
        free(named_keys);
        named_keys = NULL;
        free(answer);
        return;
    }
    size_t n = 0;
    char *save = NULL;
    for (char *line = strtok_r(answer, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') {
            char *rest = line + 1;
            field(&rest);
            search.objects = strtoull(field(&rest), NULL, 10);
            static const char *const endings[] = { "done", "all", "budget" };
            const char *how = field(&rest);
            search.ended = "error";
            for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++)
                if (strcmp(how, endings[i]) == 0)
                    search.ended = endings[i];
            continue;
        }
        char *end;
        unsigned long long id = strtoull(line, &end, 10);
        if (*end != '\t' || id >= count)
            continue;
        named_keys[named_key_count++] = (named_key_t){ records[id].key, records[id].site };
        found[n++] = (named_t){ records[id].site, records[id].size, end + 1 };
        search.named_allocations++;
        search.named_bytes += records[id].size;
    }
    qsort(found, n, sizeof *found, by_site_then_holder);
    holders = calloc(n ? n : 1, sizeof *holders);
    for (size_t i = 0, next; holders != NULL && i < n; i = next) {
        finish_holder_t *h = &holders[holder_count++];
        h->site = found[i].site;
        for (next = i; next < n && by_site_then_holder(&found[next], &found[i]) == 0; next++) {
            h->bytes += found[next].size;
            h->allocations++;
        }
        /* Split only once the run is counted: the comparisons need it whole. */
        char *text = found[i].holder;
        h->graph = strcmp(field(&text), "1") == 0;
        h->name = field(&text);
        h->type = field(&text);
        h->owner = field(&text);
        h->file = field(&text);
        h->path = field(&text);
    }
    free(found);
    if (holders != NULL)
        qsort(holders, holder_count, sizeof *holders, by_site_then_bytes);
    qsort(named_keys, named_key_count, sizeof *named_keys, by_named_key);
}

/* Runs source (one of the embedded files) in a namespace of its own, with
 * the GIL held, and returns its function name (borrowed from *globals,
 * which the caller releases), or NULL with *globals NULL or to release. */
static py_object_t *embedded_function(const char *source, const char *name, py_object_t **globals)
{
    *globals = py.new_dict();
    if (*globals == NULL)
        return NULL;
    py_object_t *module = py.run_string(source, PY_FILE_INPUT, *globals, *globals, NULL);
    py_object_t *function = module != NULL ? py.dict_get(*globals, name) : NULL;
    py_release(module);
    return function;
}

/* A malloc'd copy of the text an embedded function answered (answer is
 * released), or NULL when it failed: its error is cleared, as the program
 * must never see one of the shim's. */
static char *answer_text(py_object_t *answer)
{
    const char *text = answer != NULL ? py.as_utf8(answer) : NULL;
    char *copy = text != NULL ? strdup(text) : NULL;
    if (text == NULL)
        py.clear_error();
    py_release(answer);
    return copy;
}

/* Asks layout.py, with the GIL held, where the interpreter keeps its
 * standard library and installed packages, and keeps its answer for the
 * reports (pylayout.h). Returns the answer, malloc'd, or NULL when it
 * failed. */
static char *read_layout(void)
{
    py_object_t *globals;
    py_object_t *layout = embedded_function(finish_layout_py, "layout", &globals);
    char *answer = answer_text(layout != NULL ? py.call(layout, NULL) : NULL);
    py_release(globals);
    if (answer != NULL)
        pylayout_set(answer);
    return answer;
}

/* At most this many live allocations are looked for: the largest runs
 * have a few hundred thousand. */
#define TARGETS_MAX 1000000

/* Asks holders.py, with the GIL held, who keeps the live allocations;
 * layout is layout.py's answer ("" when none). */
static void name_holders(const char *layout)
{
    uint64_t began = clock_monotonic_ns();
    size_t count;
    tracker_record_t *records = tracker_live_records(&count);
    if (records == NULL)
        return;
    if (count > TARGETS_MAX)
        count = TARGETS_MAX;
    qsort(records, count, sizeof *records, by_key);
    /* "start size id[ t]\n", at most 20 + 20 + 7 + 5 characters a line. */
    char *targets = malloc(count * 52 + 1);
    if (targets == NULL) {
        free(records);
        return;
    }
    size_t used = 0;
    for (size_t i = 0; i < count; i++)
        used += (size_t)sprintf(targets + used, "%llu %llu %zu%s\n",
                                (unsigned long long)records[i].key,
                                (unsigned long long)records[i].size, i,
                                records[i].kind == REPORT_KIND_tensor ? " t" : "");
    targets[used] = '\0';
    search.ran = 1;
    search.ended = "error";
    py_object_t *globals;
    py_object_t *find = embedded_function(finish_holders_py, "find", &globals);
    py_object_t *walker = find != NULL ? refwalk_new() : NULL;
    char *copy = answer_text(walker != NULL ? py.call(find, "sdsO", targets, config.holders_ms / 1000.0,
                                                       layout, walker)
                                            : NULL);
    py_release(walker);
    py_release(globals);
    free(targets);
    if (copy != NULL)
        take_answer(copy, records, count);
    free(records);
    search.elapsed_ns = clock_monotonic_ns() - began;
}

/* The atexit callback: the program's own callbacks registered before
 * tracking started have not run yet, the later ones have; its modules are
 * whole. */
static py_object_t *at_finish(py_object_t *self, py_object_t *unused)
{
    (void)self;
    (void)unused;
    /* A forked child inherits the callback but owes no report. */
    if (lifecycle_report_owed() && !atomic_load(&published)) {
        /* layout.py's stats of folders that do not exist fail by design. */
        int saved_errno = errno;
        guard_depth++;
        tracker_take_held();
        char *layout = read_layout();
        if (config.holders_ms > 0)
            name_holders(layout != NULL ? layout : "");
        free(layout);
        atomic_store_explicit(&published, 1, memory_order_release);
        guard_depth--;
        errno = saved_errno;
    }
    py.incref(py.none);
    return py.none;
}

static py_method_def_t at_finish_def = {
    "gpuleak_at_finish", at_finish, PY_METH_NOARGS,
    "gpuleak: what the program still holds as Python finishes, and who holds it.",
};

/* Registers at_finish. A pending call: CPython's main thread runs it
 * between two bytecodes with the GIL held, and at the latest as it begins
 * to finish, before the atexit callbacks. No thread of the shim's waits for
 * the GIL: a thread inside a wrapper may hold PyTorch's allocator lock
 * while the GIL's holder waits for it. */
static int register_at_finish(void *unused)
{
    (void)unused;
    guard_depth++;
    if (!py.is_finalizing()) {
        py_object_t *atexit = py.import("atexit");
        py_object_t *reg = atexit != NULL ? py.get_attr(atexit, "register") : NULL;
        py_object_t *fn = reg != NULL ? py.new_function(&at_finish_def, NULL, NULL) : NULL;
        py_object_t *done = fn != NULL ? py.call(reg, "O", fn) : NULL;
        if (done == NULL)
            py.clear_error();
        py_release(done);
        py_release(fn);
        py_release(reg);
        py_release(atexit);
    }
    guard_depth--;
    return 0;
}

void finish_watch(void)
{
    /* Needs no GIL and no thread state: any thread may ask. */
    if (py_resolve() && py.is_initialized() && !py.is_finalizing())
        py.add_pending_call(register_at_finish, NULL);
}

size_t finish_holders(uint32_t site, const finish_holder_t **out)
{
    *out = NULL;
    if (!atomic_load_explicit(&published, memory_order_acquire) || holders == NULL)
        return 0;
    size_t lo = 0, hi = holder_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (holders[mid].site < site)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t n = 0;
    while (lo + n < holder_count && holders[lo + n].site == site)
        n++;
    *out = n ? &holders[lo] : NULL;
    return n;
}

int finish_named(uint64_t key, uint32_t site)
{
    if (!atomic_load_explicit(&published, memory_order_acquire) || named_keys == NULL)
        return 0;
    named_key_t want = { key, site };
    return bsearch(&want, named_keys, named_key_count, sizeof *named_keys, by_named_key) != NULL;
}

void finish_search(finish_search_t *out)
{
    if (atomic_load_explicit(&published, memory_order_acquire))
        *out = search;
    else
        memset(out, 0, sizeof *out);
}
