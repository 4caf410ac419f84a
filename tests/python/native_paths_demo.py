"""native_paths_demo.py: one Python line that reaches cuMemAlloc_v2 through
two native paths, for gpuleak's integration test of the site key.

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/native_paths_demo.py ORDER [COUNT]

The line in alloc() calls either the ctypes function itself or a
functools.partial of it (a C callable: the interpreter's native frames
between the line and the driver differ). ORDER "interleaved" alternates the
two from the first call; "late" calls the first COUNT times, then the second
COUNT times. Every allocation is leaked. Prints the line's number.
"""
import ctypes
import functools
import sys

cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
        or cuda.cuCtxSetCurrent(ctx) != 0:
    sys.exit("native_paths_demo: no driver")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
direct = cuda.cuMemAlloc_v2
wrapped = functools.partial(direct)
LINE = None


def alloc(fn, size):
    global LINE
    p = ctypes.c_uint64()
    LINE = sys._getframe().f_lineno + 1
    if fn(ctypes.byref(p), size) != 0:
        sys.exit("native_paths_demo: cuMemAlloc_v2 failed")


def main():
    order = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    for i in range(2 * count):
        second = i % 2 == 1 if order == "interleaved" else i >= count
        alloc(wrapped if second else direct, 4096 * (i + 1))
    print(LINE)


main()
