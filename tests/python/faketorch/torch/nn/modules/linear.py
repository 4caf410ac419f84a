import torch

from ..parameter import Parameter
from .module import Module


class Linear(Module):
    """A layer of nbytes of weights; its output's graph saves the input
    and reaches the weight."""

    def __init__(self, nbytes):
        super().__init__()
        self.weight = Parameter(nbytes)

    def forward(self, x):
        if not torch.is_grad_enabled():
            return torch.Tensor(x.nbytes())
        before = [x.grad_fn] if x.grad_fn is not None else []
        return torch.Tensor(x.nbytes(), grad_fn=torch.Node(x.untyped_storage(), before, [self.weight]))
