"""A short script whose leak interpreter shutdown hides: tensors (objects
over the fake PyTorch allocator that free their memory in __del__, as
PyTorch's do) are kept in a module-level list and a dict cache, so nothing
is live at exit: Python's shutdown frees them first. The report must show
them as held when Python finished, at the lines that keep them. Writes the
lines and bytes to EXPECT_OUT."""
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


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


def make_weights():
    return Tensor(65536)  # WEIGHTS-LINE


def build():
    return make_weights()


lib.fake_c10_init(1)
weights = build()
history = []
cache = {}
for step in range(40):
    activations = Tensor(1 << 20)
    if step % 4 == 0:
        history.append(Tensor(8192 + step))  # HISTORY-LINE
    cache[step % 5] = Tensor(4096)  # CACHE-LINE
    del activations

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"file": os.path.abspath(__file__),
               "history_line": line_of("# HISTORY-LINE"), "history_bytes": sum(t.size for t in history),
               "cache_line": line_of("# CACHE-LINE"), "cache_bytes": 5 * 4096,
               "weights_line": line_of("# WEIGHTS-LINE")}, fh)
