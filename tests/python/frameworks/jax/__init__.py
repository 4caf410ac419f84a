"""A fake of the part of JAX the shim reads (shim/python/pools.py) and that
the tests' programs use: live_arrays(), jit, jax.numpy's ones, zeros and
arithmetic, device_put, devices(). Arrays live in jaxlib's pool
(jaxlib/_jax.py), made in jax/_src as JAX's are, so each one's traceback
starts in JAX's own files."""
from jaxlib._jax import ArrayImpl as Array, XlaRuntimeError  # noqa: F401
from jax import numpy  # noqa: F401
from jax._src.api import jit, live_arrays, device_put, devices, block_until_ready, shard  # noqa: F401
