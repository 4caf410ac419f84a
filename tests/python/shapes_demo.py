"""Shapes of programs that once read wrongly, over the fake PyTorch
allocator: a recursion whose depth is all that tells a kept tensor from a
freed one (its callers must not list the recursion's frame again and
again), and one line keeping tensors on two devices (two sites, one per
device). Run from a folder named site-packages it also is a program with no
frame of its own. Writes the lines to EXPECT_OUT."""
import ctypes
import json
import os

lib = ctypes.CDLL(os.environ["FAKE_C10"])
lib.fake_c10_malloc.restype = ctypes.c_void_p
lib.fake_c10_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.fake_c10_free.argtypes = [ctypes.c_void_p, ctypes.c_int]
kept = []


def alloc(size, device=0):
    return lib.fake_c10_malloc(size, device)  # ALLOC-LINE


def descend(depth):
    if depth == 0:
        return alloc(4096)
    return descend(depth - 1)  # DESCEND-LINE


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


lib.fake_c10_init(2)
for step in range(12):
    p = descend(step % 4)
    if step % 4 == 3:
        kept.append(p)  # the deepest ones are kept
    else:
        lib.fake_c10_free(p, 0)
    kept.append(alloc(8192, step % 2))  # TWO-DEVICES-LINE

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"file": os.path.abspath(__file__), "alloc_line": line_of("# ALLOC-LINE"),
               "descend_line": line_of("# DESCEND-LINE"),
               "two_devices_line": line_of("# TWO-DEVICES-LINE")}, fh)
