"""A JAX training loop as users write one, run with JAX's defaults (its
pool takes one block at the first operation; tests/python/frameworks
fakes it over the fake driver). JAX_MODE: "keep" keeps each step's
activations in a list, "cache" keeps them in a dict keyed by step, "clean"
keeps nothing but the loss of the last step, "oom" keeps batches until
JAX's pool is full and dies of it. Runs for JAX_SECONDS, and on until
gpuleak's checkpoints have listed the arrays JAX_SNAPSHOTS times (the
growth rule needs samples, and a loaded machine spaces the checkpoints
out: 8 in 6 s once); writes the lines to EXPECT_OUT."""
import json
import os
import time

import jax
import jax.numpy as jnp

MODE = os.environ.get("JAX_MODE", "keep")
params = {"w": jnp.ones((256, 256)), "b": jnp.zeros((256,))}
table = jax.shard((64, 256), 4)  # SHARD-LINE: an embedding table over four devices


@jax.jit
def step(params, x):
    y = jnp.tanh(jnp.dot(x, params["w"]) + params["b"])
    return jnp.mean(y), y


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


history = []
cache = {}
if MODE == "oom":  # keeps 16 MiB batches until JAX's pool is full: an uncaught RESOURCE_EXHAUSTED
    with open(os.environ.get("EXPECT_OUT", os.devnull), "w") as fh:
        json.dump({"oom": line_of("# OOM-LINE"), "batch": 16 << 20}, fh)
    batches = []
    while True:
        batches.append(jnp.ones((4 << 20,)))  # OOM-LINE


def more_steps(start, listed=jax._src.api.LISTED):
    """Until JAX_SECONDS have passed and the fake JAX was listed
    JAX_SNAPSHOTS times (a minute at most)."""
    took = time.monotonic() - start
    return took < float(os.environ.get("JAX_SECONDS", "4")) or (
        listed[0] < int(os.environ.get("JAX_SNAPSHOTS", "0")) and took < 60)


start = time.monotonic()
i = 0
while more_steps(start):
    x = jnp.ones((64, 256))
    loss, act = step(params, x)  # STEP-LINE
    if MODE == "keep":
        history.append(act)
    elif MODE == "cache":
        cache[i] = step(params, x)[1]  # CACHE-LINE
    i += 1
    time.sleep(0.005)

with open(os.environ.get("EXPECT_OUT", os.devnull), "w") as fh:
    json.dump({"step": line_of("# STEP-LINE"), "cache": line_of("# CACHE-LINE"),
               "shard": line_of("# SHARD-LINE"),
               "steps": i, "act_bytes": 64 * 256 * 4}, fh)
