"""What the H100 showed: PyTorch 2.11 does not free every tensor at Python's
shutdown (a model's parameters, tensors an autograd graph saved), so they
are live at exit though the program's names held them as it finished. Here
a tensor of a model-like global is kept alive past module teardown the way
PyTorch does it (its C++ side keeps a reference to the Python object), and
a buffer allocated through ctypes with no Python object left is a real
leak. The report must list the first as still reachable, not leaked, and
the second as the only leak. Writes the lines and bytes to EXPECT_OUT."""
import ctypes
import json
import os

lib = ctypes.CDLL(os.environ["FAKE_C10"])
lib.fake_c10_malloc.restype = ctypes.c_void_p
lib.fake_c10_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.fake_c10_free.argtypes = [ctypes.c_void_p, ctypes.c_int]
free = lib.fake_c10_free  # kept here: module teardown may clear `lib` first


class Tensor:
    def __init__(self, size):
        self.size = size
        self.ptr = lib.fake_c10_malloc(size, 0)

    def __del__(self):
        free(self.ptr, 0)

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": (self.size,), "typestr": "|u1", "version": 3}


class Model:
    def __init__(self):
        self.weight = Tensor(1 << 20)  # WEIGHT-LINE


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


lib.fake_c10_init(1)
model = Model()
# A reference Python's teardown never drops, as PyTorch's C++ side keeps one.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(model.weight))
lib.fake_c10_malloc(1 << 16, 0)  # LOST-LINE: no object keeps the pointer
for step in range(20):
    scratch = Tensor(1 << 18)
    del scratch

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"file": os.path.abspath(__file__), "weight_line": line_of("# WEIGHT-LINE"),
               "lost_line": line_of("# LOST-LINE")}, fh)
