/* prog_embed: a C program that embeds Python, runs a script that keeps
 * device memory in a global, finalizes the interpreter, then goes on: it
 * allocates and frees on the same thread (mode "goes-on"), or exits at
 * once (mode "ends"). Going on, Python's finish was not the program's end:
 * the report must not say what was held then as if it were. Exit 0. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "progs.h"

static const char script[] =
    "import ctypes\n"
    "cuda = ctypes.CDLL('libcuda.so.1')\n"
    "cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]\n"
    "kept = []\n"
    "for _ in range(4):\n"
    "    p = ctypes.c_uint64()\n"
    "    assert cuda.cuMemAlloc_v2(ctypes.byref(p), 65536) == 0\n"
    "    kept.append(p.value)\n";

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "goes-on");
    use_primary(0);
    Py_Initialize();
    if (PyRun_SimpleString(script) != 0)
        return PROG_BAD_STATE;
    if (Py_FinalizeEx() != 0)
        return PROG_BAD_STATE;
    if (strcmp(mode, "goes-on") == 0) {
        for (int i = 0; i < 200; i++) {
            CUdeviceptr p;
            OK(cuMemAlloc(&p, 4096));
            OK(cuMemFree(p));
        }
    } else if (strcmp(mode, "ends") != 0) {
        return prog_bad_mode(mode);
    }
    return 0;
}
