"""torch.nn as the holder search and the peak's call rules see PyTorch's:
Parameter, Module (torch/nn/modules/module.py, whose __call__ is
_wrapped_call_impl) and Linear, each in the file PyTorch keeps it in."""
from .parameter import Parameter  # noqa: F401
from .modules.module import Module  # noqa: F401
from .modules.linear import Linear  # noqa: F401
