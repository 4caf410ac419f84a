"""jax.jit, live_arrays, device_put and devices over the fake pool."""
import functools

from jaxlib import _jax
from jax._src import lax


LISTED = [0]  # how many times live_arrays ran: the demos wait on gpuleak's snapshots


def live_arrays(platform=None):
    """The client's live arrays, as JAX lists them."""
    LISTED[0] += 1
    return [a for a in list(_jax.POOL.live.values()) if not a.is_deleted()]


def devices():
    return [_jax.GPU]


def jit(fun):
    compiled = {}

    @functools.wraps(fun)
    def cache_miss(*args, **kwargs):
        if "shapes" not in compiled:
            out = fun(*args, **kwargs)  # tracing: the body runs once
            compiled["shapes"] = ("tuple", [o.shape for o in out]) if isinstance(out, tuple) \
                else ("one", out.shape)
            return out
        how, shapes = compiled["shapes"]
        if how == "tuple":
            return tuple(lax.full(s) for s in shapes)
        return lax.full(shapes)
    return cache_miss


def device_put(x):
    return lax.full(getattr(x, "shape", ()))


def block_until_ready(x):
    return x


def shard(shape, parts):
    """An array sharded in parts along its first axis (as jax.device_put
    with a sharding makes one), each part a one-device array."""
    rows = shape[0] // parts
    pieces = [lax.full((rows,) + tuple(shape[1:])) for _ in range(parts)]
    return _jax.ArrayImpl(shape, pieces=pieces)
