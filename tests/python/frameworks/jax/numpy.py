"""jax.numpy's few functions the tests' programs use."""
from jax._src import lax


def ones(shape):
    return lax.full(shape if isinstance(shape, tuple) else (shape,))


def zeros(shape):
    return lax.full(shape if isinstance(shape, tuple) else (shape,))


def dot(a, b):
    return lax.binary(a, b)


def tanh(a):
    return lax.full(a.shape)


def mean(a):
    return lax.full(())
