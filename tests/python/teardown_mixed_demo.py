"""One line (one site) makes two tensors of the fake PyTorch
(tests/python/faketorch): PyTorch keeps the first past
module teardown, as it keeps a model's parameters, while the second's
pointer is dropped with no free, so its memory is lost. The first is
still reachable; the second is the site's leak, and nothing held it: its
leak entry must name no holder (the search named only the first, which
is listed apart). Writes the line to EXPECT_OUT."""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch"))
import torch  # noqa: E402  the fake, over FAKE_C10


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


made = []
for size in (1 << 20, 1 << 16):
    made.append(torch.empty(size))  # MADE-LINE
kept = made[0]
# A reference Python's teardown never drops, as PyTorch's C++ side keeps one.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))
# The second's memory outlives every name: no object the program names
# refers to it, and none frees it.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(made.pop()._storage))

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"made_line": line_of("# MADE-LINE")}, fh)
