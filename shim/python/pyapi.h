/* pyapi.h: the CPython functions the shim's Python side calls, found at
 * run time with dlsym: the shim links no libpython. One table, resolved
 * once, for every file of this floor (refwalk, search, pools). Only
 * functions of the stable ABI, and PyMethodDef's layout, which has not
 * changed since Python 3.0. */
#ifndef GPULEAK_PYAPI_H
#define GPULEAK_PYAPI_H

#include <sys/types.h>

typedef struct _object py_object_t;

/* A PyCFunction: (self, args), or (self, args, kwargs) with
 * PY_METH_KEYWORDS, cast to this type as CPython's own tables do. */
typedef py_object_t *(*py_cfunction_t)(py_object_t *self, py_object_t *args);
typedef struct py_method_def {
    const char *name;
    py_cfunction_t method;
    int flags;
    const char *doc;
} py_method_def_t;

#define PY_METH_VARARGS 0x0001
#define PY_METH_KEYWORDS 0x0002
#define PY_METH_NOARGS 0x0004
#define PY_METH_O 0x0008
#define PY_FILE_INPUT 257
#define PY_TP_TRAVERSE 71 /* Py_tp_traverse, typeslots.h */
#define PY_TPFLAGS_HEAPTYPE (1ul << 9)
#define PY_TPFLAGS_HAVE_GC (1ul << 14)
#define PY_TPFLAGS_TYPE_SUBCLASS (1ul << 31)

typedef struct pyapi {
    /* the interpreter */
    int (*is_initialized)(void);
    int (*is_finalizing)(void);  /* Py_IsFinalizing (3.13), _Py_IsFinalizing before */
    int (*add_pending_call)(int (*call)(void *arg), void *arg);
    py_object_t *(*run_string)(const char *source, int start, py_object_t *globals,
                               py_object_t *locals, void *flags);
    py_object_t *(*import)(const char *name);
    py_object_t *(*module_dict)(void);  /* sys.modules, borrowed */
    /* objects */
    void (*incref)(py_object_t *obj);
    void (*decref)(py_object_t *obj);
    py_object_t *(*get_attr)(py_object_t *obj, const char *name);
    py_object_t *(*call_function)(py_object_t *fn, const char *format, ...);
    py_object_t *(*call_objects)(py_object_t *fn, ...);
    py_object_t *(*new_function)(py_method_def_t *def, py_object_t *self, py_object_t *module);
    py_object_t *(*build)(const char *format, ...);
    int (*parse)(py_object_t *args, const char *format, ...);
    py_object_t *(*capsule_new)(void *pointer, const char *name, void (*destructor)(py_object_t *));
    void *(*capsule_get)(py_object_t *capsule, const char *name);
    /* types */
    void *(*get_slot)(void *type, int slot);
    unsigned long (*get_flags)(void *type);
    int (*is_subtype)(void *a, void *b);
    /* numbers, strings, containers */
    unsigned long long (*as_ull)(py_object_t *number);
    long (*as_long)(py_object_t *number);
    py_object_t *(*from_long)(long value);
    const char *(*as_utf8)(py_object_t *text);
    py_object_t *(*new_dict)(void);
    py_object_t *(*dict_get)(py_object_t *dict, const char *key);
    py_object_t *(*new_list)(ssize_t size);
    int (*list_append)(py_object_t *list, py_object_t *item);
    ssize_t (*list_size)(py_object_t *list);
    py_object_t *(*list_get)(py_object_t *list, ssize_t i);
    /* errors */
    py_object_t *(*err_occurred)(void);
    void (*clear_error)(void);
    /* the interpreter's objects */
    py_object_t *none;
    void *long_type, *module_type;
    /* the calling thread's state, and its tracing paused and resumed
     * (PyThreadState_EnterTracing and LeaveTracing, 3.11+; NULL before) */
    void *(*thread_state)(void);
    void (*enter_tracing)(void *tstate);
    void (*leave_tracing)(void *tstate);
    /* the collector's automatic runs, off and on; each gives the state before */
    int (*gc_disable)(void);
    int (*gc_enable)(void);
} pyapi_t;

/* The table; whole once pyapi_resolve returned 1. */
extern pyapi_t pyapi __attribute__((visibility("hidden")));

/* Finds every function, once (later calls give the first answer); any
 * thread, no GIL needed. Returns 1 when all were found, else 0 (no
 * CPython in the process, or one without them): then nothing of the
 * table may be called. */
int pyapi_resolve(void);

/* Releases obj unless it is NULL. With the GIL held. */
void pyapi_release(py_object_t *obj);

/* A new reference to None. With the GIL held. */
py_object_t *pyapi_none(void);

/* The calling thread's tracing while the shim's helpers run: paused (its
 * state and how tracing stood before). */
typedef struct pyapi_quiet {
    void *tstate;
    int use_tracing;  /* 3.10: the C frame's flag before */
    int collecting;   /* the collector's automatic runs were on */
} pyapi_quiet_t;

/* Pauses, on the calling thread (GIL held), the program's trace and
 * profile functions and sys.monitoring's tools, as CPython does while one
 * of them runs: they are the program's code, and would see every line of
 * the shim's helpers (a coverage run would count them, a profile list
 * them). And the collector's automatic runs: the helpers' objects would
 * start collections, and a collection runs the program's gc.callbacks
 * and finalizers. Returns what pyapi_quiet_end needs to resume them. */
pyapi_quiet_t pyapi_quiet_begin(void);

/* Resumes what pyapi_quiet_begin paused. */
void pyapi_quiet_end(pyapi_quiet_t quiet);

#endif
