"""Shared pieces of the leak scripts: a small model, its data, and the
training step every script runs, so each script differs only in its leak."""
import sys

import torch
import torch.nn as nn

ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
DEVICE = "cuda"


def build_model():
    layers = []
    for _ in range(4):
        layers += [nn.Linear(512, 512), nn.ReLU()]
    return nn.Sequential(*layers).to(DEVICE)


def batch(size=64):
    return torch.randn(size, 512, device=DEVICE), torch.randn(size, 512, device=DEVICE)


def train_step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def finish(name):
    torch.cuda.synchronize()
    print("%s: %d iterations, %.1f MiB allocated at the end"
          % (name, ITERATIONS, torch.cuda.memory_allocated() / 2**20))
