"""A training step that runs out of device memory (the fake driver fails
every allocation after FAKECUDA_OOM_AFTER): its activations are held by
the step's frame, which the exception's traceback keeps while the program
handles it. The report's oom section must name them. Writes the lines to
EXPECT_OUT."""
import ctypes
import json
import os

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]


class DeviceArray:
    def __init__(self, nbytes):
        ptr = ctypes.c_uint64()
        if cuda.cuMemAlloc_v2(ctypes.byref(ptr), nbytes) != 0:
            raise MemoryError("CUDA out of memory")
        self.ptr = ptr.value


def train_step(layers):
    activations = []
    for _ in range(layers):
        activations.append(DeviceArray(1 << 20))  # ACT-LINE
    return activations


def handle(err):
    """Python code that runs while the exception is handled: the shim's
    search answers here."""
    return str(err)


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


assert cuda.cuInit(0) == 0
device, context = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0
try:
    train_step(64)
except MemoryError as err:
    for _ in range(3):
        handle(err)

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"act": line_of("# ACT-LINE")}, fh)
