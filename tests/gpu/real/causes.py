"""Leaks of issue 38's causes, written as users write them, on real PyTorch
(scripts/gpu-real.sh runs each under the shim): CAUSE names which.
  graph   a validation loss summed outside no_grad (total_val += loss)
  kept    outputs kept in a list, detached, step after step
  copy    a copy.deepcopy of the model kept, and a checkpoint loaded to GPU
  frozen  an optimizer over the head only, the backbone still computing grads
  clean   a training loop with validation under no_grad: no cause
Writes the facts to EXPECT_OUT: torch.cuda's reserved and allocated bytes at
the end, the parameters' and optimizer state's bytes."""
import copy
import io
import json
import os

import torch

CAUSE = os.environ.get("CAUSE", "clean")
DEV = "cuda"


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                               torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                               torch.nn.Linear(2048, 10)).to(DEV)


def validate(model, x, total_val):
    if CAUSE == "graph":
        return total_val + model(x).square().mean()  # the graph kept
    with torch.no_grad():
        return total_val + model(x).square().mean().item()


def train(model, opt, steps=60):
    outputs, total_val = [], 0.0
    for _ in range(steps):
        x = torch.randn(256, 2048, device=DEV)
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        total_val = validate(model, x, total_val)
        if CAUSE == "kept":
            outputs.append(model[0](x).detach())  # kept, step after step (2 MiB)
    return outputs, total_val


def main():
    model = make_model()
    trained = model[4].parameters() if CAUSE == "frozen" else model.parameters()
    opt = torch.optim.Adam(trained)
    extra = {}
    if CAUSE == "copy":
        extra["ema"] = copy.deepcopy(model)
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf)
        buf.seek(0)
        extra["checkpoint"] = torch.load(buf, map_location=DEV)
    outputs, total_val = train(model, opt)
    torch.cuda.synchronize()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    state = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values()
                if torch.is_tensor(t) and t.is_cuda)
    with open(os.environ["EXPECT_OUT"], "w") as fh:
        json.dump({"cause": CAUSE, "reserved": torch.cuda.memory_reserved(),
                   "allocated": torch.cuda.memory_allocated(), "parameters": params,
                   "optimizer_state": state}, fh)
    return model, opt, outputs, total_val, extra


model, opt, outputs, total_val, extra = main()
