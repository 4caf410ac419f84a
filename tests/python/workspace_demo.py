"""A clean loop of products with the fake PyTorch: its first product makes
PyTorch's cuBLAS handle take a workspace, kept for the process and never
freed, as PyTorch's is (tests/integration/test_torch.py)."""
import torch  # the fake, on PYTHONPATH

weights = torch.empty(1 << 20)
for step in range(20):
    batch = torch.empty(1 << 16)
    product = batch @ weights  # FIRST-PRODUCT
    del batch, product
