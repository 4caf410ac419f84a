"""The shortest leak a user writes: a hundred steps, each keeping a random
matrix and its product in a global list; the whole script takes well under
a second. Its growth must be judged and its line named, held by `kept`.
LEAK=0: the same steps, nothing kept."""
import os
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
LEAK = os.environ.get("LEAK", "1") == "1"

kept = []
for step in range(STEPS):
    x = torch.randn(512, 512, device="cuda")
    if LEAK:
        kept.append(x @ x)  # LEAK-LINE
    else:
        y = x @ x
torch.cuda.synchronize()
print("short_toy: %d steps, %.1f MiB allocated" % (STEPS, torch.cuda.memory_allocated() / 2**20))
