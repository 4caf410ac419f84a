"""No leak: a steady training loop with a held loss value (a float)."""
from common import ITERATIONS, batch, build_model, finish, train_step
import torch

model = build_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for step in range(ITERATIONS):
    x, y = batch()
    loss = train_step(model, optimizer, x, y)
    losses.append(loss.item())
finish("no_leak")
