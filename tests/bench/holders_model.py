"""The holder search's time when every live tensor is a model's: a network
of 4,000 layers (the fake PyTorch's Linear, tests/python/faketorch) with a
gradient and two Adam moments a weight, so 16,000 tensors to name, each
given its role (parameter, gradient, optimizer state) and its outermost
module, in a heap of about a million other objects (docs/performance.md).
Run under the shim, for its C walk:
  LD_PRELOAD=build/libgpuleak.so python3 tests/bench/holders_model.py
Prints the median and range of 7 searches, and the roles named."""
import collections
import ctypes
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "faketorch"))
import torch  # noqa: E402  the fake: addresses made up, no allocator

LAYERS = 4000


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(LAYERS):
            setattr(self, "layer%d" % i, torch.nn.Linear(4096))


def main():
    scope = {}
    with open(os.path.join(ROOT, "shim", "python", "holders.py")) as fh:
        exec(compile(fh.read(), "holders.py", "exec"), scope)
    walker = ctypes.PyDLL(None).gpuleak_holders_walker
    walker.restype = ctypes.py_object
    model = Net()
    params = list(model.parameters())
    opt = torch.optim.Adam(params)
    for p in params:
        p.grad = torch.Tensor(p.nbytes())
    opt.step()
    tensors = params + [p.grad for p in params] + [t for s in opt.state.values() for t in s.values()]
    other = [[i] for i in range(500000)]  # a data set's records: a million objects
    targets = "".join("%d %d %d t\n" % (t.data_ptr(), t.nbytes(), i)
                      for i, t in enumerate(sorted(tensors, key=lambda t: t.data_ptr())))
    main_module = sys.modules["__main__"]
    main_module.model, main_module.opt, main_module.other = model, opt, other
    times, roles = [], None
    for _ in range(7):
        began = time.monotonic()
        answer = scope["find"](targets, 30.0, "", walker())
        times.append((time.monotonic() - began) * 1000)
        lines = answer.split("\n")
        roles = collections.Counter(line.split("\t")[7] for line in lines[:-1])
        ending = lines[-1].split("\t")
    print("%d tensors of %d layers among %s objects: search %.0f ms [%.0f-%.0f], ended %s; roles %s"
          % (len(tensors), LAYERS, ending[1], statistics.median(times), min(times), max(times),
             ending[2], dict(roles)))


if __name__ == "__main__":
    main()
