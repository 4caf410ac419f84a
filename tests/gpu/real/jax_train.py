"""A JAX training loop with JAX's defaults (its pool takes 75% of the GPU at
the first operation): MODE=keep keeps each step's activations in a list,
MODE=cache keeps them in a dict keyed by step, MODE=clean keeps nothing.
scripts/gpu-real.sh runs it under `gpuleak run --max-leaked --max-growth`:
the keeping modes must exit 23 with the LEAK-LINE grown and held by history
or cache, the clean one 0."""
import os
import time

import jax
import jax.numpy as jnp

MODE = os.environ.get("MODE", "keep")
key = jax.random.PRNGKey(0)
params = {"w": jax.random.normal(key, (1024, 1024)) * 0.01, "b": jnp.zeros((1024,))}


def loss_fn(p, x):
    y = jnp.tanh(x @ p["w"] + p["b"])
    return jnp.mean(y ** 2), y


@jax.jit
def step(p, x):
    (loss, act), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, x)
    return jax.tree_util.tree_map(lambda a, g: a - 1e-3 * g, p, grads), loss, act


history = []
cache = {}
for i in range(int(os.environ.get("STEPS", "300"))):
    x = jax.random.normal(jax.random.fold_in(key, i), (256, 1024))
    params, loss, act = step(params, x)  # LEAK-LINE
    if MODE == "keep":
        history.append(act)
    elif MODE == "cache":
        cache[i] = act
    loss.block_until_ready()
    time.sleep(0.01)
print("final loss", float(loss))
