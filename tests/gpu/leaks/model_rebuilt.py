"""Leak 2: the model is built again each epoch; the old one stays referenced."""
from common import ITERATIONS, batch, finish, train_step
import torch
import torch.nn as nn

old_models = []


def new_model():
    layers = []
    for _ in range(4):
        layers += [nn.Linear(512, 512), nn.ReLU()]
    return nn.Sequential(*layers).to("cuda")  # LEAK-LINE


model = new_model()
for step in range(ITERATIONS):
    if step % 15 == 0:
        # The gradients are dropped, the parameters kept: the leak is the
        # models (gradients come from autograd's worker thread, which has
        # no Python frames to point at a line).
        for p in model.parameters():
            p.grad = None
        old_models.append(model)
        model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = batch()
    train_step(model, optimizer, x, y)
finish("model_rebuilt")
