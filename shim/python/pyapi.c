#define _GNU_SOURCE
#include "pyapi.h"
#include "python.h"
#include "real_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

pyapi_t pyapi;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int resolved;

/* 3.10 has no PyThreadState_EnterTracing: what it does is done by hand,
 * at the offsets of Include/cpython/pystate.h at v3.10.13 (x86-64):
 * PyThreadState.tracing, .cframe, and CFrame.use_tracing first. */
static int tracing_310;
#define TSTATE_TRACING_310 44
#define TSTATE_CFRAME_310 48

static void resolve(void)
{
    struct { void **slot; const char *name; } want[] = {
        { (void **)&pyapi.is_initialized, "Py_IsInitialized" },
        { (void **)&pyapi.add_pending_call, "Py_AddPendingCall" },
        { (void **)&pyapi.run_string, "PyRun_StringFlags" },
        { (void **)&pyapi.import, "PyImport_ImportModule" },
        { (void **)&pyapi.module_dict, "PyImport_GetModuleDict" },
        { (void **)&pyapi.incref, "Py_IncRef" },
        { (void **)&pyapi.decref, "Py_DecRef" },
        { (void **)&pyapi.get_attr, "PyObject_GetAttrString" },
        { (void **)&pyapi.call_function, "PyObject_CallFunction" },
        { (void **)&pyapi.call_objects, "PyObject_CallFunctionObjArgs" },
        { (void **)&pyapi.new_function, "PyCFunction_NewEx" },
        { (void **)&pyapi.build, "Py_BuildValue" },
        { (void **)&pyapi.parse, "PyArg_ParseTuple" },
        { (void **)&pyapi.capsule_new, "PyCapsule_New" },
        { (void **)&pyapi.capsule_get, "PyCapsule_GetPointer" },
        { (void **)&pyapi.get_slot, "PyType_GetSlot" },
        { (void **)&pyapi.get_flags, "PyType_GetFlags" },
        { (void **)&pyapi.is_subtype, "PyType_IsSubtype" },
        { (void **)&pyapi.as_ull, "PyLong_AsUnsignedLongLong" },
        { (void **)&pyapi.as_long, "PyLong_AsLong" },
        { (void **)&pyapi.from_long, "PyLong_FromLong" },
        { (void **)&pyapi.as_utf8, "PyUnicode_AsUTF8" },
        { (void **)&pyapi.new_dict, "PyDict_New" },
        { (void **)&pyapi.dict_get, "PyDict_GetItemString" },
        { (void **)&pyapi.new_list, "PyList_New" },
        { (void **)&pyapi.list_append, "PyList_Append" },
        { (void **)&pyapi.list_size, "PyList_Size" },
        { (void **)&pyapi.list_get, "PyList_GetItem" },
        { (void **)&pyapi.err_occurred, "PyErr_Occurred" },
        { (void **)&pyapi.clear_error, "PyErr_Clear" },
        { (void **)&pyapi.none, "_Py_NoneStruct" },
        { (void **)&pyapi.long_type, "PyLong_Type" },
        { (void **)&pyapi.module_type, "PyModule_Type" },
        { (void **)&pyapi.thread_state, "PyThreadState_Get" },
        { (void **)&pyapi.gc_disable, "PyGC_Disable" },
        { (void **)&pyapi.gc_enable, "PyGC_Enable" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if ((*want[i].slot = real_dl_lookup(RTLD_DEFAULT, want[i].name)) == NULL)
            return;
    /* 3.13 made it public; before, only the underscored name exists. */
    pyapi.is_finalizing = (int (*)(void))real_dl_lookup(RTLD_DEFAULT, "Py_IsFinalizing");
    if (pyapi.is_finalizing == NULL)
        pyapi.is_finalizing = (int (*)(void))real_dl_lookup(RTLD_DEFAULT, "_Py_IsFinalizing");
    pyapi.enter_tracing = (void (*)(void *))real_dl_lookup(RTLD_DEFAULT, "PyThreadState_EnterTracing");
    pyapi.leave_tracing = (void (*)(void *))real_dl_lookup(RTLD_DEFAULT, "PyThreadState_LeaveTracing");
    if (pyapi.enter_tracing == NULL || pyapi.leave_tracing == NULL) {
        pyapi.enter_tracing = NULL;
        tracing_310 = python_running_minor() == 10;
    }
    resolved = pyapi.is_finalizing != NULL;
}

int pyapi_resolve(void)
{
    pthread_once(&once, resolve);
    return resolved;
}

void pyapi_release(py_object_t *obj)
{
    if (obj != NULL)
        pyapi.decref(obj);
}

pyapi_quiet_t pyapi_quiet_begin(void)
{
    pyapi_quiet_t quiet = { pyapi.thread_state(), 0, pyapi.gc_disable() };
    if (quiet.tstate == NULL)
        return quiet;
    if (pyapi.enter_tracing != NULL) {
        pyapi.enter_tracing(quiet.tstate);
    } else if (tracing_310) {
        int *tracing = (int *)((char *)quiet.tstate + TSTATE_TRACING_310);
        int *use_tracing = *(int **)((char *)quiet.tstate + TSTATE_CFRAME_310);
        ++*tracing;
        quiet.use_tracing = *use_tracing;
        *use_tracing = 0;
    }
    return quiet;
}

void pyapi_quiet_end(pyapi_quiet_t quiet)
{
    if (quiet.collecting)
        pyapi.gc_enable();
    if (quiet.tstate == NULL)
        return;
    if (pyapi.enter_tracing != NULL) {
        pyapi.leave_tracing(quiet.tstate);
    } else if (tracing_310) {
        --*(int *)((char *)quiet.tstate + TSTATE_TRACING_310);
        **(int **)((char *)quiet.tstate + TSTATE_CFRAME_310) = quiet.use_tracing;
    }
}

py_object_t *pyapi_none(void)
{
    pyapi.incref(pyapi.none);
    return pyapi.none;
}
