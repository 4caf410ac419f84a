"""Where every array is made: a new buffer of the result's shape."""
from jaxlib import _jax


def full(shape):
    return _jax.ArrayImpl(shape)


def binary(a, b):
    shape = a.shape if isinstance(a, _jax.ArrayImpl) else b.shape
    return full(shape)


def _add(a, b):
    return binary(a, b)


def _mul(a, b):
    return binary(a, b)


def _sum(a):
    return full(())


_jax.ArrayImpl.__add__ = _add
_jax.ArrayImpl.__radd__ = _add
_jax.ArrayImpl.__sub__ = _add
_jax.ArrayImpl.__mul__ = _mul
_jax.ArrayImpl.__rmul__ = _mul
_jax.ArrayImpl.sum = _sum
