"""A torchmetrics metric that keeps every prediction (BinaryAUROC without
thresholds keeps its inputs in list states) updated each step and never
reset between epochs: its lists grow for the whole run. The leak is the
line that makes the predictions, held by the metric's state `auroc.preds`.
LEAK=0: the metric is reset after each epoch's compute."""
import os
import sys

import torch
import torch.nn as nn
from torchmetrics.classification import BinaryAUROC

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
LEAK = os.environ.get("LEAK", "1") == "1"

model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 1)).cuda()
auroc = BinaryAUROC().cuda()
for epoch in range(EPOCHS):
    for _ in range(25):
        x = torch.randn(4096, 512, device="cuda")
        target = torch.randint(0, 2, (4096,), device="cuda")
        with torch.no_grad():
            preds = model(x).squeeze(-1).sigmoid()  # LEAK-LINE
        auroc.update(preds, target)
    score = auroc.compute()
    if not LEAK:
        auroc.reset()
torch.cuda.synchronize()
print("metric_never_reset: %d epochs, %.1f MiB allocated" % (EPOCHS, torch.cuda.memory_allocated() / 2**20))
