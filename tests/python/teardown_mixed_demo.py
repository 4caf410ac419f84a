"""One line (one site) makes two tensors: PyTorch keeps the first past
module teardown, as it keeps a model's parameters, while the second's
pointer is dropped with no free, so its memory is lost. The first is
still reachable; the second is the site's leak, and nothing held it: its
leak entry must name no holder (the search named only the first, which
is listed apart). Writes the line to EXPECT_OUT."""
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
        if self.ptr:
            free(self.ptr, 0)

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": (self.size,), "typestr": "|u1", "version": 3}


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


lib.fake_c10_init(1)
made = []
for size in (1 << 20, 1 << 16):
    made.append(Tensor(size))  # MADE-LINE
kept = made[0]
# A reference Python's teardown never drops, as PyTorch's C++ side keeps one.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))
made[1].ptr = None  # lost: no object refers to its memory, none frees it

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"made_line": line_of("# MADE-LINE")}, fh)
