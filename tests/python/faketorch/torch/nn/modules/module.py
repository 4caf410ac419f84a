"""A module keeps its parameters, buffers and submodules in the dicts
_parameters, _buffers and _modules of its instance dict, reached through
__getattr__, as PyTorch's does."""
from ..parameter import Parameter


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

    def _call_impl(self, *args):
        return self.forward(*args)

    def _wrapped_call_impl(self, *args):
        return self._call_impl(*args)

    __call__ = _wrapped_call_impl
