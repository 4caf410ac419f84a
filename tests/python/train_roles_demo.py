"""A training loop whose memory has every role the composition names
(common/composition.h), over the fake PyTorch (tests/python/faketorch): a
model's parameters and buffer, their gradients, Adam's state, and a
validation loss summed each step outside torch.no_grad(), whose running
total keeps every validation step's graph and the activations it saved
(`total_val = total_val + val_loss`, the cause docs/diagnosis.md names).
ROLES_CLEAN=1 validates under torch.no_grad() instead: no graph kept.
ROLES_FROZEN=1 gives the optimizer the head's parameters only: the
encoder's gradients are computed and kept for nothing. ROLES_COPY=1 also keeps a second model of the same size (a model loaded
twice) and a dict of tensors as large as its weights and buffer (a
checkpoint loaded onto the GPU and kept). ROLES_DUMP=1 then asks for a report while it runs (GPULEAK_DUMP_SIGNAL,
SIGUSR2), waits for it and copies it to DUMP_COPY. ROLES_SNAPSHOT=1 then waits for a periodic snapshot
(GPULEAK_FLUSH_INTERVAL) and copies it to DUMP_COPY. ROLES_OOM=1 then runs a step that runs out of memory after its forward,
whose own graph (a local of the step) is in use, not kept. Writes the
sizes to EXPECT_OUT."""
import json
import os
import shutil
import signal
import time

import torch

STEPS = 8
ACTIVATION = 1 << 16
CLEAN = bool(os.environ.get("ROLES_CLEAN"))
FROZEN = bool(os.environ.get("ROLES_FROZEN"))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(1 << 20)
        self.head = torch.nn.Linear(1 << 18)
        self.register_buffer("running_mean", torch.empty(1 << 12))

    def forward(self, x):
        return self.head(self.encoder(x))


def validate(model, total_val):
    if CLEAN:
        with torch.no_grad():
            model(torch.empty(ACTIVATION))
        return total_val
    return total_val + model(torch.empty(ACTIVATION))  # TOTAL-LINE


def train():
    model = Net()
    opt = torch.optim.Adam(model.head.parameters() if FROZEN else model.parameters())
    total_val = torch.empty(8)
    for _ in range(STEPS):
        loss = model(torch.empty(ACTIVATION))
        loss.backward()
        opt.step()
        total_val = validate(model, total_val)
    return model, opt, total_val


def failing_step(model):
    out = model(torch.empty(ACTIVATION))
    torch.empty(1 << 41)  # asks more than the device has
    return out


model, opt, total_val = train()
if os.environ.get("ROLES_COPY"):
    backup = Net()
    checkpoint = {"encoder.weight": torch.empty(1 << 20), "head.weight": torch.empty(1 << 18),
                  "running_mean": torch.empty(1 << 12)}
if os.environ.get("ROLES_DUMP"):
    asked = os.environ["GPULEAK_OUTPUT"].replace(".json", ".request-1.json")
    os.kill(os.getpid(), signal.SIGUSR2)
    deadline = time.monotonic() + 20
    while not os.path.exists(asked) and time.monotonic() < deadline:
        sum(range(1000))  # Python bytecode: the pending search runs here
    time.sleep(0.2)
    shutil.copy(asked, os.environ["DUMP_COPY"])
if os.environ.get("ROLES_SNAPSHOT"):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with open(os.environ["GPULEAK_OUTPUT"]) as fh:
                if json.load(fh)["status"]["moment"] == "snapshot":
                    break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    shutil.copy(os.environ["GPULEAK_OUTPUT"], os.environ["DUMP_COPY"])
if os.environ.get("ROLES_OOM"):
    try:
        failing_step(model)
    except torch.OutOfMemoryError as err:
        print("handled:", str(err)[:20])  # the search answers while it is handled
with open(os.environ["EXPECT_OUT"], "w") as fh:
    trained = (1 << 18) if FROZEN else (1 << 20) + (1 << 18)
    json.dump({"parameters": (1 << 20) + (1 << 18), "buffers": 1 << 12,
               "gradients": trained, "untrained_gradients": (1 << 20) if FROZEN else 0,
               "optimizer_state": 2 * trained,
               "saved_for_backward": 0 if CLEAN else STEPS * (2 * ACTIVATION + 8)}, fh)
