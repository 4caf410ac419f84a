"""A timm ResNet evaluated outside torch.no_grad(), its outputs kept for a
later metric: each output keeps its whole forward's activations through its
graph. The leak is this script's forward line, held by the autograd graph of
`outputs`. LEAK=0: the same loop under no_grad, keeping
each output's predicted classes on the CPU."""
import contextlib
import os
import sys

import timm
import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
LEAK = os.environ.get("LEAK", "1") == "1"

model = timm.create_model("resnet18", pretrained=False, num_classes=100).cuda().eval()
outputs = []
with contextlib.nullcontext() if LEAK else torch.no_grad():
    for step in range(STEPS):
        images = torch.randn(16, 3, 128, 128, device="cuda")
        logits = model(images)  # LEAK-LINE
        outputs.append(logits if LEAK else logits.argmax(1).cpu())
torch.cuda.synchronize()
print("timm_outputs: %d steps, %.1f MiB allocated" % (STEPS, torch.cuda.memory_allocated() / 2**20))
