"""A training loop that skips bad batches and keeps the exceptions for a
report at the end (`skipped.append(err)`): each exception's traceback keeps
the frame of the step that failed, and with it the step's activations.
The leak is the step's forward line, held through the traceback of the
list `skipped`. LEAK=0: the loop keeps the message only."""
import os
import sys

import torch
import torch.nn as nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 120
LEAK = os.environ.get("LEAK", "1") == "1"

model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)


def step(x, bad):
    hidden = model(x)  # LEAK-LINE
    if bad:
        raise ValueError("batch rejected: non-finite loss")
    loss = hidden.square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


skipped = []
for i in range(STEPS):
    x = torch.randn(256, 1024, device="cuda")
    try:
        step(x, bad=i % 3 == 0)
    except ValueError as err:
        skipped.append(err if LEAK else str(err))
torch.cuda.synchronize()
print("kept_exception: %d steps, %d skipped, %.1f MiB allocated"
      % (STEPS, len(skipped), torch.cuda.memory_allocated() / 2**20))
