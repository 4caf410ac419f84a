"""callers_demo.py: one helper allocating, called in turn from two lines of
one caller, for gpuleak's integration test that the two lines stay two
sites however often the helper runs.

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/callers_demo.py

Every frame but the caller's stands where it stood at the helper's last
allocation, and the caller's two lines are a few bytes of bytecode apart:
a key that reused the frames it had seen, or spread that difference over
too few bits, would give both lines one site. 100 allocations of 4 KiB
come from the first line, 200 of 8 KiB from the second; all are leaked.
Prints the two lines' numbers as "lines=A,B".
"""
import ctypes
import sys

cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
        or cuda.cuCtxSetCurrent(ctx) != 0:
    sys.exit("callers_demo: no driver")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
kept = []
lines = {}


def helper(size):
    p = ctypes.c_uint64()
    cuda.cuMemAlloc_v2(ctypes.byref(p), size)
    kept.append(p)


def caller(i):
    if i % 3 == 0:
        lines[4096] = sys._getframe().f_lineno + 1
        helper(4096)
    else:
        lines[8192] = sys._getframe().f_lineno + 1
        helper(8192)


for i in range(300):
    caller(i)
print("lines=%d,%d" % (lines[4096], lines[8192]))
