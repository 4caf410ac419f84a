"""A script that keeps device memory in a global list while a daemon
thread allocates and frees in a loop to the very end: the thread's
allocations after Python began to finish are not the program going on
after its finish, so the report still says what the script held then
(issue 32, item 8). Writes the kept line to EXPECT_OUT."""
import ctypes
import json
import os
import threading

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]


def alloc(nbytes):
    ptr = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), nbytes) == 0
    return ptr.value


def churn():
    cuda.cuCtxSetCurrent(context)
    while True:
        cuda.cuMemFree_v2(alloc(512))


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


assert cuda.cuInit(0) == 0
device, context = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0


class Array:
    def __init__(self, nbytes):
        self.ptr = alloc(nbytes)


kept = [Array(65536) for _ in range(4)]  # KEPT-LINE
threading.Thread(target=churn, daemon=True).start()
with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"kept": line_of("# KEPT-LINE")}, fh)
