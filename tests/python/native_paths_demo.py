"""native_paths_demo.py: one Python line that reaches cuMemAlloc_v2 through
two native paths, for gpuleak's integration test of the site key.

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/native_paths_demo.py ORDER [COUNT [SECOND]]

The line in alloc() calls either the driver's ctypes function itself or a
second one. SECOND "runtime" (the default) is the runtime's cudaMalloc,
which calls the driver: native frames outside the interpreter differ, as
when one line reaches two allocators. SECOND "partial" is a
functools.partial of the driver's function: only the interpreter's own
frames between the line and the driver differ, as when an instruction is
specialized after its first runs. ORDER "interleaved" alternates the two
from the first call; "late" calls the first COUNT times, then the second
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
cudart = ctypes.CDLL("libcudart.so.13")
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
SECONDS = {"runtime": cudart.cudaMalloc, "partial": functools.partial(direct)}
LINE = None


def alloc(fn, size):
    global LINE
    p = ctypes.c_uint64()
    LINE = sys._getframe().f_lineno + 1
    if fn(ctypes.byref(p), size) != 0:
        sys.exit("native_paths_demo: the allocation failed")


def main():
    order = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    other = SECONDS[sys.argv[3] if len(sys.argv) > 3 else "runtime"]
    for i in range(2 * count):
        second = i % 2 == 1 if order == "interleaved" else i >= count
        alloc(other if second else direct, 4096 * (i + 1))
    print(LINE)


main()
