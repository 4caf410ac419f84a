"""What does Python's shutdown leave live under PyTorch? A script holds three
tensors in globals to the end (x; w, a leaf that needs its gradient; loss,
whose graph saved both), and an atexit callback of its own touches them as
MODE says, after the shim's (registered first, run last): none; storage
(untyped_storage().data_ptr(), which makes a storage's Python object);
dataptr (data_ptr()); saved (unpacks the graph's saved tensors, as the
holder search does). On the H100 (torch 2.11, 2026-12-05) loss was freed
and x and w were live at exit in every mode, the holder search on or off:
with it on, the report must list them as still reachable, not as leaks."""
import atexit
import sys

import torch

MODE = sys.argv[1] if len(sys.argv) > 1 else "none"

x = torch.randn(1024, 1024, device="cuda")  # PROBE-X
w = torch.randn(1024, 1024, device="cuda", requires_grad=True)  # PROBE-W
loss = (x @ w).sum()  # PROBE-LOSS


def touch():
    if MODE == "storage":
        x.untyped_storage().data_ptr()
        w.untyped_storage().data_ptr()
    elif MODE == "dataptr":
        x.data_ptr()
        w.data_ptr()
    elif MODE == "saved":
        node = loss.grad_fn.next_functions[0][0]
        for name in dir(node):
            if name.startswith("_saved_"):
                getattr(node, name)


atexit.register(touch)
torch.cuda.synchronize()
print("teardown_probe: mode %s" % MODE)
