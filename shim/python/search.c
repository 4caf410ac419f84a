#define _GNU_SOURCE
#include "search.h"
#include "real_dl.h"
#include "clock.h"
#include "config.h"
#include "guard.h"
#include "lifecycle.h"
#include "pylayout.h"
#include "holder_set.h"
#include "bounded.h"
#include "refwalk.h"
#include "tracker.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
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
        if ((*want[i].slot = real_dl_lookup(RTLD_DEFAULT, want[i].name)) == NULL)
            return 0;
    /* 3.13 made it public; before, only the underscored name exists. */
    py.is_finalizing = (int (*)(void))real_dl_lookup(RTLD_DEFAULT, "Py_IsFinalizing");
    if (py.is_finalizing == NULL)
        py.is_finalizing = (int (*)(void))real_dl_lookup(RTLD_DEFAULT, "_Py_IsFinalizing");
    return py.is_finalizing != NULL;
}

static void py_release(py_object_t *obj)
{
    if (obj != NULL)
        py.decref(obj);
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
 * standard library and installed packages, and (keep: at Python's finish)
 * keeps its answer for the reports (pylayout.h). Returns the answer,
 * malloc'd, or NULL when it failed. */
static char *read_layout(int keep)
{
    py_object_t *globals;
    py_object_t *layout = embedded_function(search_layout_py, "layout", &globals);
    char *answer = answer_text(layout != NULL ? py.call(layout, NULL) : NULL);
    py_release(globals);
    if (answer != NULL && keep)
        pylayout_set(answer);
    return answer;
}

/* At most this many live allocations are looked for: the largest runs
 * have a few hundred thousand. */
#define TARGETS_MAX 1000000

static int by_key(const void *a, const void *b)
{
    const tracker_record_t *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Asks holders.py, with the GIL held, who keeps the live allocations now;
 * layout is layout.py's answer ("" when none), moment holders.py's
 * ("exit", "oom", "request"). Returns the answer as a set, or NULL. */
static holder_set_t *run_search(const char *layout, const char *moment)
{
    uint64_t began = clock_monotonic_ns();
    size_t count;
    tracker_record_t *records = tracker_live_records(&count);
    if (records == NULL)
        return NULL;
    if (count > TARGETS_MAX)
        count = TARGETS_MAX;
    qsort(records, count, sizeof *records, by_key);
    /* "start size id[ t]\n", at most 20 + 20 + 7 + 5 characters a line. */
    char *targets = malloc(count * 52 + 1);
    if (targets == NULL) {
        free(records);
        return NULL;
    }
    size_t used = 0;
    for (size_t i = 0; i < count; i++)
        used += (size_t)sprintf(targets + used, "%llu %llu %zu%s\n",
                                (unsigned long long)records[i].key,
                                (unsigned long long)records[i].size, i,
                                records[i].kind == REPORT_KIND_tensor ? " t" : "");
    targets[used] = '\0';
    py_object_t *globals;
    py_object_t *find = embedded_function(search_holders_py, "find", &globals);
    py_object_t *walker = find != NULL ? refwalk_new() : NULL;
    char *answer = answer_text(walker != NULL ? py.call(find, "sdsOs", targets,
                                                         config.holders_ms / 1000.0, layout,
                                                         walker, moment)
                                              : NULL);
    py_release(walker);
    py_release(globals);
    free(targets);
    totals_t gpu;
    tracker_totals(&gpu);
    holder_set_t *set = holder_set_make(answer, records, count, clock_monotonic_ns() - began,
                                        gpu.live_bytes);
    free(records);
    return set;
}

/* The sets, each a counted reference (search_acquire): at Python's finish
 * and at the first out-of-memory failure, made once; on request, the
 * latest, replacing the one before once no report reads it. */
typedef struct counted {
    holder_set_t *set;
    int refs;       /* the reports reading it, +1 while it is the moment's */
} counted_t;
static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static counted_t *sets[SEARCH_MOMENTS];

static void drop(counted_t *c)
{
    if (c != NULL && --c->refs == 0) {
        holder_set_free(c->set);
        free(c);
    }
}

/* Makes set the moment's. Takes the lock as every thread but a report's
 * does: the GIL's holder publishes, and no report waits for it. */
static void publish(search_moment_t moment, holder_set_t *set)
{
    counted_t *c = set != NULL ? malloc(sizeof *c) : NULL;
    if (c == NULL) {
        holder_set_free(set);
        return;
    }
    *c = (counted_t){ set, 1 };
    pthread_mutex_lock(&sets_lock);
    counted_t *old = sets[moment];
    sets[moment] = c;
    drop(old);
    pthread_mutex_unlock(&sets_lock);
}

const holder_set_t *search_acquire(search_moment_t moment, void **ticket)
{
    *ticket = NULL;
    if (!bounded_mutex_lock(&sets_lock))
        return NULL;
    counted_t *c = sets[moment];
    if (c != NULL)
        c->refs++;
    pthread_mutex_unlock(&sets_lock);
    *ticket = c;
    return c != NULL ? c->set : NULL;
}

void search_release(void *ticket)
{
    if (ticket == NULL)
        return;
    pthread_mutex_lock(&sets_lock);
    drop(ticket);
    pthread_mutex_unlock(&sets_lock);
}

/* Reads the layout (kept for the reports at Python's finish only: the
 * origin rules judge by it from then on) and publishes the moment's
 * search, when searches are on. With the GIL held. */
static void search_at(search_moment_t moment)
{
    static const char *const names[SEARCH_MOMENTS] = { "exit", "oom", "request" };
    char *layout = read_layout(moment == SEARCH_AT_EXIT);
    if (config.holders_ms > 0)
        publish(moment, run_search(layout != NULL ? layout : "", names[moment]));
    free(layout);
}

/* The atexit callback: the program's own callbacks registered before
 * tracking started have not run yet, the later ones have; its modules are
 * whole. */
static _Atomic int finished;
/* 1 once search_watch found an interpreter up (the py table is whole). */
static _Atomic int python_up;

static py_object_t *at_finish(py_object_t *self, py_object_t *unused)
{
    (void)self;
    (void)unused;
    /* A forked child inherits the callback but owes no report. */
    if (lifecycle_report_owed() && !atomic_exchange(&finished, 1)) {
        /* layout.py's stats of folders that do not exist fail by design. */
        int saved_errno = errno;
        guard_depth++;
        tracker_take_held();
        search_at(SEARCH_AT_EXIT);
        guard_depth--;
        errno = saved_errno;
    }
    py.incref(py.none);
    return py.none;
}

/* A search while the program runs, from a pending call (the main thread,
 * the GIL held, between two bytecodes): at an out-of-memory failure, whose
 * memory the frames of the exception in flight still hold, or for a report
 * on request. Never once Python has begun to finish: at_finish's search
 * answers then. */
static void search_now(search_moment_t moment)
{
    if (py.is_finalizing() || !lifecycle_report_owed())
        return;
    int saved_errno = errno;
    guard_depth++;
    search_at(moment);
    guard_depth--;
    errno = saved_errno;
}

static int oom_call(void *unused)
{
    (void)unused;
    search_now(SEARCH_AT_OOM);
    return 0;
}

void search_at_oom(void)
{
    static _Atomic int asked;
    if (config.holders_ms > 0 && atomic_load(&python_up) && !py.is_finalizing()
        && !atomic_exchange(&asked, 1))
        py.add_pending_call(oom_call, NULL);
}

/* A request's state: the reporter asks (wanted = its generation) and waits
 * for the main thread to answer (answered = the generation it served). */
static pthread_mutex_t request_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t request_done;
static uint64_t request_wanted, request_answered;

static void request_init(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&request_done, &attr);
    pthread_condattr_destroy(&attr);
}

static int request_call(void *arg)
{
    uint64_t generation = (uint64_t)(uintptr_t)arg;
    pthread_mutex_lock(&request_lock);
    int wanted = request_wanted == generation;
    pthread_mutex_unlock(&request_lock);
    if (wanted)
        search_now(SEARCH_ON_REQUEST);
    pthread_mutex_lock(&request_lock);
    request_answered = generation;
    pthread_cond_broadcast(&request_done);
    pthread_mutex_unlock(&request_lock);
    return 0;
}

int search_on_request(uint64_t wait_ns)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    static uint64_t generation;
    if (config.holders_ms <= 0 || !atomic_load(&python_up) || py.is_finalizing()
        || atomic_load(&finished))
        return 0;
    pthread_once(&once, request_init);
    pthread_mutex_lock(&request_lock);
    request_wanted = ++generation;
    pthread_mutex_unlock(&request_lock);
    if (py.add_pending_call(request_call, (void *)(uintptr_t)generation) != 0)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t end = (uint64_t)until.tv_sec * 1000000000ull + (uint64_t)until.tv_nsec + wait_ns;
    until = (struct timespec){ (time_t)(end / 1000000000ull), (long)(end % 1000000000ull) };
    pthread_mutex_lock(&request_lock);
    while (request_answered != generation
           && pthread_cond_timedwait(&request_done, &request_lock, &until) == 0) {
    }
    int answered = request_answered == generation;
    request_wanted = 0;  /* a late answer is not searched for */
    pthread_mutex_unlock(&request_lock);
    return answered;
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

void search_watch(void)
{
    /* Needs no GIL and no thread state: any thread may ask. */
    if (py_resolve() && py.is_initialized() && !py.is_finalizing()) {
        atomic_store(&python_up, 1);
        py.add_pending_call(register_at_finish, NULL);
    }
}

