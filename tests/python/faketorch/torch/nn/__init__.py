"""torch.nn's Parameter and Module as the holder search sees PyTorch's: a
module keeps its parameters, buffers and submodules in the dicts
_parameters, _buffers and _modules of its instance dict, reached through
__getattr__."""
import torch


class Parameter(torch.Tensor):
    def __init__(self, nbytes):
        super().__init__(nbytes)


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_modules", {})

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for part in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__[part]
            if name in d:
                return d[name]
        raise AttributeError(name)

    def register_buffer(self, name, tensor):
        self._buffers[name] = tensor

    def parameters(self):
        yield from self._parameters.values()
        for m in self._modules.values():
            yield from m.parameters()

    def __call__(self, *args):
        return self.forward(*args)


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
