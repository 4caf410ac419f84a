"""Leak 4: a dict used as a cache of features that keeps growing."""
from common import ITERATIONS, batch, build_model, finish, train_step
import torch

model = build_model()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
feature_cache = {}
for step in range(ITERATIONS):
    x, y = batch()
    train_step(model, optimizer, x, y)
    key = step // 3
    if key not in feature_cache:
        with torch.no_grad():
            feature_cache[key] = torch.relu(x @ x.T)  # LEAK-LINE
finish("dict_cache")
