"""Device memory from the driver itself, as CuPy or Numba get it, kept by
array objects that expose __cuda_array_interface__: a list of arrays and
an attribute, never freed. The report's leaks and held sites name them.
Writes the lines to EXPECT_OUT."""
import ctypes
import json
import os

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]


class DeviceArray:
    def __init__(self, nbytes):
        ptr = ctypes.c_uint64()
        assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), nbytes) == 0
        self.ptr, self.nbytes = ptr.value, nbytes

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": (self.nbytes,), "typestr": "|u1", "version": 3}


class Trainer:
    def __init__(self):
        self.outputs = []


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


assert cuda.cuInit(0) == 0
device, context = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0
trainer = Trainer()
batches = []
for step in range(12):
    scratch = DeviceArray(1 << 16)
    cuda.cuMemFree_v2(scratch.ptr)
    del scratch
    batches.append(DeviceArray(4096))  # BATCHES-LINE
    if step % 3 == 0:
        trainer.outputs.append(DeviceArray(2048))  # OUTPUTS-LINE

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"batches": line_of("# BATCHES-LINE"), "outputs": line_of("# OUTPUTS-LINE")}, fh)
