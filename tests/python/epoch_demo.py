"""A training loop that keeps its validation outputs once an epoch (as a
LightningModule that appends validation_step's outputs to a list and never
clears it): eight epochs of steps whose activations are freed, each ended
by a validation pass whose outputs are kept. The kept line must be the
growth finding, held by the list; the steps' lines must not be findings.
Writes the lines to EXPECT_OUT."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faketorch"))
import torch  # noqa: E402  (the fake)


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


LEAK = os.environ.get("EPOCH_LEAK", "1") == "1"


class Module:
    def __init__(self):
        self.weight = torch.empty(1 << 18)
        self.validation_outputs = []

    def training_step(self):
        hidden = torch.empty(1 << 20)
        grad = torch.empty(1 << 18)
        del hidden, grad

    def validation_step(self):
        out = torch.empty(1 << 16)
        if LEAK:
            self.validation_outputs.append(out)  # the leak: never cleared
        return out


module = Module()
for epoch in range(8):
    for step in range(60):
        module.training_step()
        time.sleep(0.0005)
    for batch in range(4):
        module.validation_step()

with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"keep_line": line_of("out = torch.empty(1 << 16)")}, fh)
