"""many_lines_demo.py: a step of many allocating lines, repeated, for
gpuleak's integration test that every line of a large program is trusted
(its site taken with no native walk) after its first 16 allocations.

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/many_lines_demo.py [LINES [STEPS]]

A generated function of LINES lines (default 200), each allocating 256
bytes and freeing them, runs STEPS times (default 100), as a training
step's operators do. Prints "lines=LINES steps=STEPS".
"""
import ctypes
import sys

cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
        or cuda.cuCtxSetCurrent(ctx) != 0:
    sys.exit("many_lines_demo: no driver")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
lines = int(sys.argv[1]) if len(sys.argv) > 1 else 200
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
source = "def step(p):\n" + "    alloc(ref(p), 256); free(p.value)\n" * lines
space = {"alloc": cuda.cuMemAlloc_v2, "free": cuda.cuMemFree_v2, "ref": ctypes.byref}
exec(compile(source, "<many lines>", "exec"), space)
p = ctypes.c_uint64()
for _ in range(steps):
    space["step"](p)
print("lines=%d steps=%d" % (lines, steps))
