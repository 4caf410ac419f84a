"""Device memory from the driver (as CuPy or Numba get it) kept alive in
the ways the old holder search could not see: through a caught exception's
traceback, by a suspended generator, by a model that only a library's
trainer keeps (tests/python/site-packages/trainerlib.py), and by an object
whose __cuda_array_interface__ is an instance attribute. Writes the lines
to EXPECT_OUT."""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import trainerlib  # noqa: E402

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]


def device_alloc(nbytes):
    ptr = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), nbytes) == 0
    return ptr.value


class Buffer:
    def __init__(self, nbytes):
        self.ptr = device_alloc(nbytes)

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": (1,), "typestr": "|u1", "version": 3}


class Net:
    def __init__(self):
        self.kept = []

    def training_step(self, step):
        self.kept.append(Buffer(4096))  # KEPT-LINE


def step(n):
    act = Buffer(8192)  # ACT-LINE
    if n % 2:
        raise ValueError("bad batch %d" % n)
    return act


def batches():
    staging = Buffer(2048)  # STAGING-LINE
    while True:
        yield staging.ptr


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


assert cuda.cuInit(0) == 0
device, context = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0

skipped = []
for n in range(4):
    try:
        step(n)
    except ValueError as err:
        skipped.append(err)
stream = batches()
next(stream)
trainer = trainerlib.Trainer()
trainer.fit(Net(), 3)


class Raw:
    pass


raw = Raw()
raw.__cuda_array_interface__ = {"data": (device_alloc(1024), False), "shape": (1024,),  # RAW-LINE
                                "typestr": "|u1", "version": 3}

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({name.lower(): line_of("# %s-LINE" % name)
               for name in ("KEPT", "ACT", "STAGING", "RAW")}, fh)
