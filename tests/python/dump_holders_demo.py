"""A long-running job asked for a report while it runs (GPULEAK_DUMP_SIGNAL,
SIGUSR2): the report names who holds the live memory then, a list a
function's frame keeps and a global cache, read by the program's main
thread between two of its bytecodes. The script waits for that report and
copies it to DUMP_COPY. Writes the lines to EXPECT_OUT."""
import ctypes
import json
import os
import shutil
import signal
import time

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]


class DeviceArray:
    def __init__(self, nbytes):
        ptr = ctypes.c_uint64()
        assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), nbytes) == 0
        self.ptr = ptr.value


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


def moment_of(path):
    try:
        with open(path) as fh:
            return json.load(fh).get("status", {}).get("moment")
    except (OSError, ValueError):
        return None


cache = {}


def serve(report):
    pending = [DeviceArray(8192) for _ in range(4)]  # PENDING-LINE
    cache["warm"] = DeviceArray(4096)  # CACHE-LINE
    os.kill(os.getpid(), signal.SIGUSR2)
    deadline = time.monotonic() + 20
    while moment_of(report) != "request" and time.monotonic() < deadline:
        sum(range(1000))  # Python bytecode: the pending search runs here
    shutil.copy(report, os.environ["DUMP_COPY"])
    for array in pending:
        cuda.cuMemFree_v2(array.ptr)


assert cuda.cuInit(0) == 0
device, context = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0
# The report on request keeps a name of its own beside the report's path.
serve(os.environ["GPULEAK_OUTPUT"].replace("%p", str(os.getpid())).replace(".json", ".request-1.json"))

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"pending": line_of("# PENDING-LINE"), "cache": line_of("# CACHE-LINE")}, fh)
