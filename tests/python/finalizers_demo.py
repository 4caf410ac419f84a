"""finalizers_demo.py: a program that leaves cyclic garbage with finalizers
(__del__) for the collector, for gpuleak's integration test that no
collection runs inside the shim's helpers at exit (a collection runs the
program's finalizers and gc.callbacks: its code).

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/finalizers_demo.py

Each finalizer looks down its stack for a frame of the helpers' (code
compiled from "<string>") and says so on stderr ("a finalizer ran inside
gpuleak's helpers"). A low threshold makes the next few allocations start
a collection: before the fix, those of the helpers (3.12 and 3.13 ran all
20 finalizers there).
"""
import ctypes
import gc
import os
import sys


class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == "<string>":
                os.write(2, b"a finalizer ran inside gpuleak's helpers\n")
                return
            frame = frame.f_back


cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
        or cuda.cuCtxSetCurrent(ctx) != 0:
    sys.exit("finalizers_demo: no driver")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
held = ctypes.c_uint64()
cuda.cuMemAlloc_v2(ctypes.byref(held), 1 << 20)
gc.collect()
gc.set_threshold(50)
for _ in range(20):
    Cycle()
