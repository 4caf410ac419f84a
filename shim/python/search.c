#define _GNU_SOURCE
#include "search.h"
#include "pyapi.h"
#include "clock.h"
#include "config.h"
#include "guard.h"
#include "lifecycle.h"
#include "pylayout.h"
#include "holder_set.h"
#include "pools.h"
#include "python.h"
#include "report_format.h"
#include "bounded.h"
#include "refwalk.h"
#include "tracker.h"
#include "vmm_maps.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs source (one of the embedded files) in a namespace of its own, with
 * the GIL held, and returns its function name (borrowed from *globals,
 * which the caller releases), or NULL with *globals NULL or to release. */
static py_object_t *embedded_function(const char *source, const char *name, py_object_t **globals)
{
    *globals = pyapi.new_dict();
    if (*globals == NULL)
        return NULL;
    py_object_t *module = pyapi.run_string(source, PY_FILE_INPUT, *globals, *globals, NULL);
    py_object_t *function = module != NULL ? pyapi.dict_get(*globals, name) : NULL;
    pyapi_release(module);
    return function;
}

/* A malloc'd copy of the text an embedded function answered (answer is
 * released), or NULL when it failed: its error is cleared, as the program
 * must never see one of the shim's. */
static char *answer_text(py_object_t *answer)
{
    const char *text = answer != NULL ? pyapi.as_utf8(answer) : NULL;
    char *copy = text != NULL ? strdup(text) : NULL;
    if (text == NULL)
        pyapi.clear_error();
    pyapi_release(answer);
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
    char *answer = answer_text(layout != NULL ? pyapi.call_function(layout, NULL) : NULL);
    pyapi_release(globals);
    if (answer != NULL && keep)
        pylayout_set(answer);
    return answer;
}

/* At most this many live allocations are looked for: the largest runs
 * have a few hundred thousand. */
#define TARGETS_MAX 1000000

/* A target of the search: where a live allocation is seen by the program
 * (its address; VMM memory's, where its handle is mapped), and its record. */
typedef struct target {
    uint64_t start;
    size_t record;
} target_t;

static int by_start(const void *a, const void *b)
{
    const target_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The targets holders.py reads, one "start size id[ t]" line each, sorted
 * by start, as malloc'd text (NULL when memory is short): each where the
 * program's objects see it (vmm_maps_seen_at), none that they cannot. */
static char *targets_text(const tracker_record_t *records, size_t count)
{
    target_t *targets = malloc((count ? count : 1) * sizeof *targets);
    /* At most 20 + 20 + 7 + 5 characters a line. */
    char *text = malloc(count * 52 + 1);
    if (targets == NULL || text == NULL) {
        free(targets);
        free(text);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t start = vmm_maps_seen_at(records[i].kind, records[i].key);
        if (start != 0)
            targets[n++] = (target_t){ start, i };
    }
    qsort(targets, n, sizeof *targets, by_start);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        const tracker_record_t *r = &records[targets[i].record];
        used += (size_t)sprintf(text + used, "%llu %llu %zu%s\n",
                                (unsigned long long)targets[i].start,
                                (unsigned long long)r->size, targets[i].record,
                                r->kind == REPORT_KIND_tensor ? " t" : "");
    }
    text[used] = '\0';
    free(targets);
    return text;
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
    char *targets = targets_text(records, count);
    if (targets == NULL) {
        free(records);
        return NULL;
    }
    py_object_t *globals;
    py_object_t *find = embedded_function(search_holders_py, "find", &globals);
    py_object_t *walker = find != NULL ? refwalk_new() : NULL;
    char *answer = answer_text(walker != NULL ? pyapi.call_function(find, "sdsOs", targets,
                                                         config.holders_ms / 1000.0, layout,
                                                         walker, moment)
                                              : NULL);
    pyapi_release(walker);
    pyapi_release(globals);
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

/* The shim's turn in the interpreter (the main thread, the GIL held): its
 * own driver calls are not recorded (guard.h), the program's errno is
 * kept, and the thread's tracing and the collector's automatic runs are
 * paused (pyapi_quiet_begin), so that none of the program's code sees or
 * runs inside what the shim runs there. */
typedef struct turn {
    int saved_errno;
    pyapi_quiet_t quiet;
} turn_t;

static turn_t turn_begin(void)
{
    turn_t turn = { errno, { 0 } };
    guard_depth++;
    turn.quiet = pyapi_quiet_begin();
    return turn;
}

static void turn_end(turn_t turn)
{
    pyapi_quiet_end(turn.quiet);
    guard_depth--;
    errno = turn.saved_errno;
}

/* Whether the program has audit hooks, which would see the events of what
 * the shim runs in its interpreter (python.h): then it runs nothing there.
 * A version whose place for them is not known counts as having none. */
static int hooked(void)
{
    return python_audit_hooked() == 1;
}

/* Publishes, for the search at moment (when searches are on), that the
 * program's audit hooks kept it from running. */
static void publish_hooked(search_moment_t moment)
{
    if (config.holders_ms > 0)
        publish(moment, holder_set_make(strdup("#\t0\t" REPORT_SEARCH_AUDIT_HOOKS), NULL, 0, 0, 0));
}

/* 1 once the atexit callback ran. */
static _Atomic int finished;
/* 1 once search_watch found an interpreter up (the pyapi table is whole). */
static _Atomic int python_up;

/* ------------------------------------------------------------ the pools */

static _Atomic uint64_t pools_cost_ns;  /* the last checkpoint's */

/* pools.py's function name, from its namespace, run once and kept for
 * the process's life (the checkpoints come often: compiling the file each
 * time would cost them more than their work). With the GIL held. */
static py_object_t *pools_function(const char *name)
{
    static py_object_t *globals;
    if (globals == NULL) {
        py_object_t *first = embedded_function(search_pools_py, "arrays", &globals);
        if (first == NULL) {
            pyapi.clear_error();
            pyapi_release(globals);
            globals = NULL;
            return NULL;
        }
    }
    return pyapi.dict_get(globals, name);
}

/* Registers CuPy's hook when CuPy is loaded and it is not yet. */
static void arm_cupy(void)
{
    static void *hooks[POOLS_HOOKS];  /* made once, kept: the hook holds them */
    py_object_t *arm = pools_function("arm");
    if (pools_cupy_hooked() || arm == NULL
        || (hooks[0] == NULL && pools_hook_functions(hooks) != 0))
        return;
    char *answer = answer_text(pyapi.call_function(arm, "OOOO", hooks[0], hooks[1], hooks[2],
                                                   hooks[3]));
    if (answer != NULL && strcmp(answer, "cupy") == 0)
        pools_armed();
    free(answer);
}

/* Whether the program loaded JAX or CuPy, asked of sys.modules in C: a
 * program without them never runs pools.py's code (a profiler or a
 * tracer of its own would see it). With the GIL held. */
static int frameworks_loaded(void)
{
    py_object_t *modules = pyapi.module_dict();
    return modules != NULL
        && (pyapi.dict_get(modules, "jax") != NULL || pyapi.dict_get(modules, "cupy") != NULL);
}

/* Reads the arrays inside JAX's and CuPy's pools into the records
 * (pools_sync), with the GIL held, when the program loaded either; heap:
 * CuPy's too (found among every object the collector tracks). */
static void sync_pools(int heap)
{
    if (!frameworks_loaded())
        return;
    uint64_t began = clock_monotonic_ns();
    arm_cupy();
    py_object_t *arrays = pools_function("arrays");
    char *listing = answer_text(arrays != NULL ? pyapi.call_function(arrays, "i", heap) : NULL);
    pools_sync(listing);
    free(listing);
    atomic_store(&pools_cost_ns, clock_monotonic_ns() - began);
}

/* Whether the program ended with JAX's out-of-memory error, recorded as
 * its OOM (pools_oom). With the GIL held, at Python's finish. */
static int jax_out_of_memory(void)
{
    if (!frameworks_loaded())
        return 0;
    py_object_t *oom = pools_function("oom");
    char *answer = answer_text(oom != NULL ? pyapi.call_function(oom, NULL) : NULL);
    int recorded = pools_oom(answer);
    free(answer);
    return recorded;
}

static _Atomic int pools_asked;  /* a checkpoint's pending call not yet run */

static int pools_call(void *unused)
{
    (void)unused;
    static uint64_t last_heap_ns, last_heap_cost_ns;  /* the main thread's alone */
    if (!pyapi.is_finalizing() && !atomic_load(&finished) && lifecycle_report_owed() && !hooked()) {
        turn_t turn = turn_begin();
        uint64_t now = clock_monotonic_ns();
        uint64_t spaced = last_heap_cost_ns * SEARCH_POOLS_COST_FACTOR;
        int heap = pools_cupy_unhooked()
                || now - last_heap_ns >= (spaced > SEARCH_POOLS_HEAP_NS ? spaced : SEARCH_POOLS_HEAP_NS);
        sync_pools(heap);
        if (heap) {
            last_heap_ns = now;
            last_heap_cost_ns = atomic_load(&pools_cost_ns);
        }
        turn_end(turn);
    }
    atomic_store(&pools_asked, 0);
    return 0;
}

/* Asks the main thread for a checkpoint of the pools, unless one is asked
 * for already. Any thread, no GIL. */
static void ask_pools(void)
{
    if (atomic_load(&python_up) && !pyapi.is_finalizing() && !atomic_load(&finished)
        && !atomic_exchange(&pools_asked, 1) && pyapi.add_pending_call(pools_call, NULL) != 0)
        atomic_store(&pools_asked, 0);
}

void search_pools_soon(uint64_t now_ns)
{
    static _Atomic uint64_t last_ns;
    if (pools_cupy_hooked() || !atomic_load(&python_up))
        return;
    uint64_t last = atomic_load(&last_ns);
    if (now_ns - last >= SEARCH_POOLS_SOON_NS
        && atomic_compare_exchange_strong(&last_ns, &last, now_ns))
        ask_pools();
}

uint64_t search_pools_tick(uint64_t now_ns)
{
    if (!atomic_load(&python_up))
        return UINT64_MAX;
    ask_pools();
    if (!pools_want_checkpoints())
        return now_ns + SEARCH_POOLS_IDLE_NS;
    uint64_t spaced = atomic_load(&pools_cost_ns) * SEARCH_POOLS_COST_FACTOR;
    return now_ns + (spaced > SEARCH_POOLS_INTERVAL_NS ? spaced : SEARCH_POOLS_INTERVAL_NS);
}

/* The atexit callback: the program's own callbacks registered before
 * tracking started have not run yet, the later ones have; its modules are
 * whole. */

static py_object_t *at_finish(py_object_t *self, py_object_t *unused)
{
    (void)self;
    (void)unused;
    /* A forked child inherits the callback but owes no report. */
    if (lifecycle_report_owed() && !atomic_exchange(&finished, 1)) {
        /* layout.py's stats of folders that do not exist fail by design. */
        turn_t turn = turn_begin();
        if (hooked()) {
            tracker_take_held();
            publish_hooked(SEARCH_AT_EXIT);
        } else {
            sync_pools(1);  /* JAX's and CuPy's arrays as they stand, before the snapshot */
            int jax_oom = jax_out_of_memory();
            tracker_take_held();
            if (jax_oom)  /* the frames of the error still hold what filled the GPU */
                search_at(SEARCH_AT_OOM);
            search_at(SEARCH_AT_EXIT);
        }
        turn_end(turn);
    }
    return pyapi_none();
}

/* A search while the program runs, from a pending call (the main thread,
 * the GIL held, between two bytecodes): at an out-of-memory failure, whose
 * memory the frames of the exception in flight still hold, or for a report
 * on request. Never once Python has begun to finish: at_finish's search
 * answers then. */
static void search_now(search_moment_t moment)
{
    if (pyapi.is_finalizing() || !lifecycle_report_owed())
        return;
    if (hooked()) {
        publish_hooked(moment);
        return;
    }
    turn_t turn = turn_begin();
    sync_pools(1);
    search_at(moment);
    turn_end(turn);
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
    if (config.holders_ms > 0 && atomic_load(&python_up) && !pyapi.is_finalizing()
        && !atomic_exchange(&asked, 1))
        pyapi.add_pending_call(oom_call, NULL);
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
    if (config.holders_ms <= 0 || !atomic_load(&python_up) || pyapi.is_finalizing()
        || atomic_load(&finished))
        return 0;
    pthread_once(&once, request_init);
    pthread_mutex_lock(&request_lock);
    request_wanted = ++generation;
    pthread_mutex_unlock(&request_lock);
    if (pyapi.add_pending_call(request_call, (void *)(uintptr_t)generation) != 0)
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
    turn_t turn = turn_begin();
    if (hooked()) {
        /* Hooks stay for the process's life: no search will run. */
        publish_hooked(SEARCH_AT_EXIT);
    } else if (!pyapi.is_finalizing()) {
        py_object_t *atexit = pyapi.import("atexit");
        py_object_t *reg = atexit != NULL ? pyapi.get_attr(atexit, "register") : NULL;
        py_object_t *fn = reg != NULL ? pyapi.new_function(&at_finish_def, NULL, NULL) : NULL;
        py_object_t *done = fn != NULL ? pyapi.call_function(reg, "O", fn) : NULL;
        if (done == NULL)
            pyapi.clear_error();
        pyapi_release(done);
        pyapi_release(fn);
        pyapi_release(reg);
        pyapi_release(atexit);
    }
    turn_end(turn);
    return 0;
}

void search_watch(void)
{
    /* Needs no GIL and no thread state: any thread may ask. */
    if (pyapi_resolve() && pyapi.is_initialized() && !pyapi.is_finalizing()) {
        atomic_store(&python_up, 1);
        pyapi.add_pending_call(register_at_finish, NULL);
    }
}

