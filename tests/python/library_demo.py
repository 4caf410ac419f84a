"""A script whose leak goes through an installed library (tests/python/
site-packages/fancylib) into the fake PyTorch allocator: the leak's origin
must be this script's line that keeps the output, not the library's line
that allocates, with the library's frame as "via". Writes the lines to
EXPECT_OUT."""
import ctypes
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "site-packages"))
import fancylib  # noqa: E402

lib = ctypes.CDLL(os.environ["FAKE_C10"])
lib.fake_c10_malloc.restype = ctypes.c_void_p
lib.fake_c10_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.fake_c10_free.argtypes = [ctypes.c_void_p, ctypes.c_int]


def line_of(marker, path):
    with open(path) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text)


def main():
    lib.fake_c10_init(1)
    layer = fancylib.Layer(lib)
    history = []
    for step in range(30):
        out = layer.forward(1 << 20)
        if step % 3 == 0:
            history.append(layer.forward(4096 + step))  # KEEP-LINE
        lib.fake_c10_free(out, 0)
    with open(os.environ["EXPECT_OUT"], "w") as fh:
        json.dump({"file": os.path.abspath(__file__), "keep_line": line_of("# KEEP-LINE", __file__),
                   "via_file": os.path.abspath(fancylib.__file__),
                   "via_line": line_of("# VIA-LINE", fancylib.__file__),
                   "kept": len(history), "kept_bytes": sum(4096 + s for s in range(0, 30, 3))}, fh)


main()
