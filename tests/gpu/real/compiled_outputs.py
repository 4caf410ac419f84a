"""A model compiled with torch.compile (Inductor), evaluated outside
torch.no_grad() with its outputs kept: each output keeps the compiled
graph's saved buffers, which Inductor's generated code allocates. The leak
is this script's forward line (not the generated call() under
torchinductor_*), held by `outputs`. LEAK=0: the same loop under no_grad."""
import contextlib
import os
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
LEAK = os.environ.get("LEAK", "1") == "1"

model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                            torch.nn.Linear(4096, 1024)).cuda()
compiled = torch.compile(model)
outputs = []
with contextlib.nullcontext() if LEAK else torch.no_grad():
    for step in range(STEPS):
        batch = torch.randn(64, 1024, device="cuda")
        out = compiled(batch)  # LEAK-LINE
        outputs.append(out if LEAK else out.sum().item())
torch.cuda.synchronize()
print("compiled_outputs: %d steps, %.1f MiB allocated" % (STEPS, torch.cuda.memory_allocated() / 2**20))
