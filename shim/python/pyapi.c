#define _GNU_SOURCE
#include "pyapi.h"
#include "real_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

pyapi_t pyapi;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int resolved;

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
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if ((*want[i].slot = real_dl_lookup(RTLD_DEFAULT, want[i].name)) == NULL)
            return;
    /* 3.13 made it public; before, only the underscored name exists. */
    pyapi.is_finalizing = (int (*)(void))real_dl_lookup(RTLD_DEFAULT, "Py_IsFinalizing");
    if (pyapi.is_finalizing == NULL)
        pyapi.is_finalizing = (int (*)(void))real_dl_lookup(RTLD_DEFAULT, "_Py_IsFinalizing");
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

py_object_t *pyapi_none(void)
{
    pyapi.incref(pyapi.none);
    return pyapi.none;
}
