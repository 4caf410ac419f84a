"""A program without JAX or CuPy, profiled by itself (sys.setprofile), that
allocates through the driver for PROFILED_SECONDS: its profiler is its own
code, and must see none of the shim's Python (the checkpoints of the
frameworks' pools, the holder search at the finish, both run with the
thread's tracing paused). Writes the names of the embedded functions (code
compiled from "<string>") its profiler saw to EXPECT_OUT, from an atexit
callback registered before tracking starts (so it runs after the shim's
own)."""
import atexit
import ctypes
import json
import os
import sys
import time

seen = set()


def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == "<string>":
        seen.add(frame.f_code.co_name)


@atexit.register
def write_seen():
    sys.setprofile(None)
    with open(os.environ["EXPECT_OUT"], "w") as fh:
        json.dump(sorted(seen), fh)


sys.setprofile(profile)
cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
assert cuda.cuInit(0) == 0
device, context = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0
end = time.monotonic() + float(os.environ.get("PROFILED_SECONDS", "2.5"))
while time.monotonic() < end:
    ptr = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), 4096) == 0
    cuda.cuMemFree_v2(ptr.value)
    time.sleep(0.01)
