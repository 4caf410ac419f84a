"""ndarray: its memory taken from the pool, given back when it goes."""
from cupy.cuda import memory


class ndarray:
    __slots__ = ("shape", "data", "__cuda_array_interface__", "__weakref__")

    def __init__(self, shape):
        self.shape = tuple(shape) if isinstance(shape, tuple) else (shape,)
        count = 1
        for n in self.shape:
            count *= n
        self.data = memory.alloc(count * 4)
        self.__cuda_array_interface__ = {"data": (self.data.ptr, False), "shape": self.shape,
                                         "typestr": "<f4", "version": 3}

    def _new(self):
        return ndarray(self.shape)

    def __add__(self, other):
        return self._new()

    __mul__ = __sub__ = __radd__ = __rmul__ = __add__

    def sum(self):
        return ndarray(())


def empty(shape):
    return ndarray(shape)


zeros = ones = empty
