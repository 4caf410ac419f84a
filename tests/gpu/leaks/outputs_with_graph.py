"""Leak 1: an evaluation output kept with its autograd graph every 10 steps."""
from common import ITERATIONS, batch, build_model, finish, train_step
import torch

model = build_model()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
history = []
for step in range(ITERATIONS):
    x, y = batch()
    train_step(model, optimizer, x, y)
    if step % 10 == 0:
        xv, _ = batch()
        val = model(xv)  # LEAK-LINE
        history.append(val)
finish("outputs_with_graph")
