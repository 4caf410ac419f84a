"""py_exit.py: a training-like Python program whose exit gpuleak times
(issue 33: the time from a program's last line to its exit).

    FAKE_C10=build/fakec10/libc10_cuda.so PYTHONPATH=tests/python/faketorch \\
        python3 py_exit.py [OBJECTS] [SITES]

Over the fake PyTorch (tests/python/faketorch): a model of 48 layers and
Adam's state, trained for 20 steps with a validation loss kept outside
no_grad (a leak that grows), a cache of activations kept, and SITES
(default 300) more allocation sites, each its own line of generated code
reached 20 Python frames deep, a tensor of each kept. OBJECTS (default
200,000) records on the heap beside them, as the modules a transformers
script imports (some 170,000 objects): what the holder search walks.
Prints main_end_ns=<CLOCK_MONOTONIC> as its last line, so that
tests/bench/run.py can time what follows: the interpreter's own exit, and
under the shim its report (holder search, symbols, the file, the summary).
"""
import sys
import time

import torch

LAYERS = 48
STEPS = 20


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(LAYERS):
            setattr(self, "layer%d" % i, torch.nn.Linear(1 << 16))

    def forward(self, x):
        for i in range(LAYERS):
            x = getattr(self, "layer%d" % i)(x)
        return x


def make_sites(count):
    """count functions, each allocating on its own line of one file."""
    lines = ["import torch"]
    for i in range(count):
        lines.append("def site%d(): return torch.empty(%d)" % (i, 4096 * (i + 1)))
    code = compile("\n".join(lines), "/work/train/generated_sites.py", "exec")
    scope = {}
    exec(code, scope)
    return [scope["site%d" % i] for i in range(count)]


def deep(fn, depth):
    return fn() if depth <= 1 else deep(fn, depth - 1)


def main():
    objects = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    sites = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    heap = [{"id": i, "name": "record%d" % i, "tags": [i]} for i in range(objects // 2)]
    model = Net()
    opt = torch.optim.Adam(model.parameters())
    total_val, cache = None, []
    for _ in range(STEPS):
        loss = model(torch.empty(1 << 12)).sum()
        loss.backward()
        opt.step()
        val = model(torch.empty(1 << 12)).sum()
        total_val = val if total_val is None else total_val + val
        cache.append(torch.empty(1 << 14))
    kept = [deep(fn, 20) for fn in make_sites(sites)]
    print("main_end_ns=%d" % time.monotonic_ns(), flush=True)
    return heap, model, opt, total_val, cache, kept


HELD = main()
