"""torch.optim as the holder search and the peak's call rules see
PyTorch's: Optimizer (state, a dict per parameter of the tensors it keeps
for it; param_groups) and Adam, in their files."""
from .optimizer import Optimizer  # noqa: F401
from .adam import Adam  # noqa: F401
