"""audit_hooks_demo.py: a program with an audit hook (sys.addaudithook),
for gpuleak's integration test that the shim runs none of its helpers in
an interpreter whose hooks would see them.

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/audit_hooks_demo.py

The hook writes every event raised after the script's last line to stderr
("audit after the script: EVENT"): with the shim, there must be none (the
holder search compiled and ran its helpers, imported, and called
gc.get_objects and sys._getframe, each an event the hook saw). Three
buffers stay held to the end, freed by the interpreter's teardown; one
allocation is leaked.
"""
import ctypes
import os
import sys

finished = False


def hook(event, args):
    if finished:
        os.write(2, ("audit after the script: %s\n" % event).encode())


sys.addaudithook(hook)
cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
        or cuda.cuCtxSetCurrent(ctx) != 0:
    sys.exit("audit_hooks_demo: no driver")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]


class Buffer:
    def __init__(self, size):
        self.ptr = ctypes.c_uint64()
        cuda.cuMemAlloc_v2(ctypes.byref(self.ptr), size)

    def __del__(self):
        cuda.cuMemFree_v2(self.ptr.value)


kept = [Buffer(1 << 20) for _ in range(3)]
leaked = ctypes.c_uint64()
cuda.cuMemAlloc_v2(ctypes.byref(leaked), 1 << 16)
finished = True
