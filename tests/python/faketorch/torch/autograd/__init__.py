"""torch.autograd.backward, reaching the engine through
_engine_run_backward (torch/autograd/graph.py), as PyTorch's does."""
from .graph import _engine_run_backward


def backward(tensor):
    _engine_run_backward(tensor)
