"""Leak 3: GPU batches appended to a list "for later"."""
from common import ITERATIONS, build_model, finish, train_step
import torch

model = build_model()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
seen = []
for step in range(ITERATIONS):
    x = torch.randn(64, 512, device="cuda")  # LEAK-LINE
    y = torch.randn(64, 512, device="cuda")
    train_step(model, optimizer, x, y)
    if step % 5 == 0:
        seen.append(x)
finish("batches_list")
