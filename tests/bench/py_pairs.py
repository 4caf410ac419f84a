"""py_pairs.py: cuMemAlloc_v2 + cuMemFree_v2 pairs from Python through ctypes.

    python3 py_pairs.py PAIRS [PYFRAMES]

Loads libcuda.so.1 (the fake driver, found through LD_LIBRARY_PATH) with
ctypes, makes the primary context current and times PAIRS pairs of 256 bytes
from a Python stack PYFRAMES (default 10, at least 3) frames deep: <module>,
main, PYFRAMES-3 levels of nest, timed_pairs. Each nest level is entered
through functools.partial, a C callable, so every Python frame also adds
native frames (the interpreter re-enters its eval loop), as in PyTorch code;
a plain Python-to-Python call would add none on 3.11+. Prints
"ns_per_pair=...". Run with and without LD_PRELOAD=libgpuleak.so: the ctypes
overhead is in both, the difference is the shim's.
"""
import ctypes
import functools
import sys

from py_chunks import Chunks

WARMUP = 2000


def load():
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
            or cuda.cuCtxSetCurrent(ctx) != 0:
        sys.exit("py_pairs: no driver")
    cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    return cuda


def timed_pairs(cuda, n):
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2
    p = ctypes.c_uint64()
    ref = ctypes.byref(p)
    for _ in range(WARMUP):
        alloc(ref, 256)
        free(p.value)
    chunks = Chunks(n)
    for count in chunks:
        for _ in range(count):
            if alloc(ref, 256) != 0 or free(p.value) != 0:
                sys.exit("py_pairs: a driver call failed")
    return chunks.ns_per_pair()


def nest(cuda, n, levels):
    if levels <= 1:
        return timed_pairs(cuda, n)
    return functools.partial(nest, cuda, n)(levels - 1) + 0.0


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    cuda = load()
    if frames < 3:
        sys.exit("py_pairs: PYFRAMES must be at least 3")
    if frames == 3:
        result = timed_pairs(cuda, n)
    else:
        result = functools.partial(nest, cuda, n)(frames - 3)
    print("ns_per_pair=%.2f" % result, flush=True)


if __name__ == "__main__":
    main()
