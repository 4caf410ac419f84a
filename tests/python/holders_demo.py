"""A training-like script whose memory is kept by Python objects of every
sort: a module-level list, a dict cache, an attribute of an object, a
closure of a hook, and the autograd graphs of kept losses (PyTorch's
faked, tests/python/faketorch). Python's shutdown frees all of it before
the report at exit, so only the atexit search can name them. Writes the
lines to EXPECT_OUT."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch"))
import torch  # noqa: E402  (the fake)


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


class Net:
    def __init__(self):
        self.weight = torch.empty(65536)  # WEIGHT-LINE
        self.kept = []


def make_hook():
    stash = []

    def hook(output):
        stash.append(output)
    return hook


net = Net()
history = []
cache = {}
losses = []
hook = make_hook()
for step in range(40):
    activations = torch.empty(1 << 20)
    if step % 4 == 0:
        history.append(torch.empty(8192))  # HISTORY-LINE
    cache[step % 5] = torch.empty(4096)  # CACHE-LINE
    if step % 8 == 0:
        net.kept.append(torch.empty(2048))  # KEPT-LINE
    if step % 10 == 0:
        hook(torch.empty(1024))  # HOOK-LINE
        hidden = torch.empty(16384)  # GRAPH-LINE
        losses.append(hidden.sum())  # LOSS-LINE
        del hidden
    del activations

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({name.lower(): line_of("# %s-LINE" % name)
               for name in ("WEIGHT", "HISTORY", "CACHE", "KEPT", "HOOK", "GRAPH", "LOSS")}, fh)
