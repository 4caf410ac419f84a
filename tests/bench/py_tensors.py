"""py_tensors.py: tensor allocations and frees from Python, through the fake
of PyTorch's caching allocator (tests/fakecuda/fake_c10_cuda.cpp).

    FAKE_C10=build/fakec10/libc10_cuda.so python3 py_tensors.py PAIRS [PYFRAMES]

Loads the fake libc10_cuda.so with ctypes as PyTorch loads it and times
PAIRS malloc + free pairs of 512-byte blocks from the allocator's cache (no
driver call once its first segment is made), from a Python stack PYFRAMES
(default 26, at least 3) frames deep, each level entered through
functools.partial as in py_pairs.py. Under the shim each malloc and free is
a trace event of the allocator (shim/count/torch_events.c): issue 33's
small-tensor case. Prints "ns_per_pair=...". Run with and without
LD_PRELOAD=libgpuleak.so: the difference is the shim's.
"""
import ctypes
import functools
import os
import sys

from py_chunks import Chunks

WARMUP = 2000


def load():
    lib = ctypes.CDLL(os.environ["FAKE_C10"])
    lib.fake_c10_malloc.restype = ctypes.c_void_p
    lib.fake_c10_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
    lib.fake_c10_free.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.fake_c10_init(1)
    return lib


def timed_pairs(lib, n):
    malloc, free = lib.fake_c10_malloc, lib.fake_c10_free
    for _ in range(WARMUP):
        free(malloc(512, 0), 0)
    chunks = Chunks(n)
    for count in chunks:
        for _ in range(count):
            free(malloc(512, 0), 0)
    return chunks.ns_per_pair()


def nest(lib, n, levels):
    if levels <= 1:
        return timed_pairs(lib, n)
    return functools.partial(nest, lib, n)(levels - 1) + 0.0


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 26
    if frames < 3:
        sys.exit("py_tensors: PYFRAMES must be at least 3")
    lib = load()
    if frames == 3:
        result = timed_pairs(lib, n)
    else:
        result = functools.partial(nest, lib, n)(frames - 3)
    print("ns_per_pair=%.2f" % result, flush=True)


if __name__ == "__main__":
    main()
