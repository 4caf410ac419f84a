"""What the H100 showed: PyTorch 2.11 does not free every tensor at Python's
shutdown (a model's parameters, tensors an autograd graph saved), so they
are live at exit though the program's names held them as it finished. Here
a tensor of a model-like global (the fake PyTorch of tests/python/faketorch)
is kept alive past module teardown the way PyTorch does it (its C++ side
keeps a reference to the Python object), and a buffer allocated with no
Python object left is a real leak. The report must list the first as still
reachable, not leaked, and the second as the only leak. Writes the lines
to EXPECT_OUT."""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch"))
import torch  # noqa: E402  the fake, over FAKE_C10


class Model:
    def __init__(self):
        self.weight = torch.empty(1 << 20)  # WEIGHT-LINE


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


model = Model()
# A reference Python's teardown never drops, as PyTorch's C++ side keeps one.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(model.weight))
torch._malloc(1 << 16, 0)  # LOST-LINE: no object keeps the pointer
for step in range(20):
    scratch = torch.empty(1 << 18)
    del scratch

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"file": os.path.abspath(__file__), "weight_line": line_of("# WEIGHT-LINE"),
               "lost_line": line_of("# LOST-LINE")}, fh)
