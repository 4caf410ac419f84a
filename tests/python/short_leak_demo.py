"""The shortest leak a user writes: a hundred steps keeping a tensor each,
nothing else. Its growth must be judged (allocation-count checkpoints), and
the default gate must fail it: Python's shutdown frees the list before the
exit. Writes its line to EXPECT_OUT (tests/integration/test_torch.py)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch"))
import torch  # noqa: E402  the fake

kept = []
for step in range(100):
    kept.append(torch.empty(1 << 20))  # LEAK-LINE

with open(__file__) as fh:
    line = next(i for i, text in enumerate(fh, 1) if text.rstrip().endswith("# LEAK-LINE"))
with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"leak": line}, fh)
