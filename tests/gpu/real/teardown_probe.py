"""Does Python's finish still free a script's globals under the shim? A
script holds three tensors in globals to the end (x; w, a leaf that needs
its gradient; loss, whose graph saved both), and an atexit callback of its
own touches them as MODE says, after the shim's (registered first, run
last): none; storage (untyped_storage().data_ptr(), which makes a storage's
Python object); dataptr (data_ptr()); saved (unpacks the graph's saved
tensors, as the holder search does). Module teardown frees all three
unless something keeps them: the report's leaks at this file's lines say."""
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
