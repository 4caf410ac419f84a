"""A forward hook that stashes a layer's output for debugging and was left
in: a closure's list fills every step. The leak is the training step's
forward line (the hook runs under it), held by the hook's closure variable.
LEAK=0: the hook keeps only the output's shape."""
import os
import sys

import torch
import torch.nn as nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
LEAK = os.environ.get("LEAK", "1") == "1"


def make_stash_hook():
    stash = []

    def hook(module, inputs, output):
        stash.append(output.detach() if LEAK else tuple(output.shape))
    return hook


model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).cuda()
model[1].register_forward_hook(make_stash_hook())
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(STEPS):
    x = torch.randn(64, 512, device="cuda")
    loss = model(x).square().mean()  # LEAK-LINE
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("hook_stash: %d steps, %.1f MiB allocated" % (STEPS, torch.cuda.memory_allocated() / 2**20))
