"""One helper for the weights, a cache that fills once and a leak: three
sites of one origin line (the helper's) with different fates. The views
tell them apart by the callers: the leak's line, grown, comes first in what
was held when Python finished. Writes its lines to EXPECT_OUT
(tests/integration/test_torch.py)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch"))
import torch  # noqa: E402  the fake


def new_buffer(nbytes):
    return torch.empty(nbytes)  # HELPER-LINE


weights = [new_buffer(1 << 22) for _ in range(3)]  # WEIGHTS-LINE
kept, cache = [], {}
for step in range(400):
    kept.append(new_buffer(65536))  # KEPT-LINE
    cache[step % 2] = new_buffer(4096)  # CACHE-LINE


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({m.lower(): line_of("# %s-LINE" % m) for m in ("HELPER", "WEIGHTS", "KEPT", "CACHE")}, fh)
