"""A fake of the part of CuPy the shim reads (shim/python/pools.py,
holders.py) and the tests' programs use: ndarray, whose
__cuda_array_interface__ is a C-level field (a slot here, a Cython
property there), zeros, ones, arithmetic, and the default memory pool
(cupy/cuda/memory.py)."""
from cupy import cuda  # noqa: F401
from cupy._core import ndarray, zeros, ones, empty  # noqa: F401


def get_default_memory_pool():
    return cuda.memory._pool
