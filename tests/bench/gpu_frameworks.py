"""gpu_frameworks.py: a JAX and a CuPy loop as their users run them (the
frameworks' defaults: JAX's pool, CuPy's pool), timed, for
scripts/gpu-bench.sh's step 6: what gpuleak costs where it reads the
frameworks' own records (docs/frameworks.md).

    python3 gpu_frameworks.py jax|cupy ITERS WARMUP

Prints ms_per_iter=<median of the timed iterations>."""
import statistics
import sys
import time


def jax_loop(iters, warmup):
    import jax
    import jax.numpy as jnp
    key = jax.random.PRNGKey(0)
    params = {"w": jax.random.normal(key, (1024, 1024)), "b": jnp.zeros((1024,))}

    def loss_fn(p, x):
        return jnp.mean(jnp.tanh(x @ p["w"] + p["b"]) ** 2)

    @jax.jit
    def step(p, x):
        loss, grads = jax.value_and_grad(loss_fn)(p, x)
        return jax.tree_util.tree_map(lambda a, g: a - 1e-3 * g, p, grads), loss

    times = []
    for i in range(warmup + iters):
        x = jax.random.normal(jax.random.fold_in(key, i), (256, 1024))
        t0 = time.perf_counter()
        params, loss = step(params, x)
        loss.block_until_ready()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return times


def cupy_loop(iters, warmup):
    import cupy as cp
    signal = cp.random.random((1 << 20,), dtype=cp.float32)
    kernel = cp.ones(31, dtype=cp.float32) / 31
    times = []
    for i in range(warmup + iters):
        t0 = time.perf_counter()
        noisy = signal + cp.random.standard_normal(signal.shape, dtype=cp.float32) * 0.1
        filtered = cp.convolve(noisy, kernel, mode="same")
        total = float(filtered.sum())
        if i >= warmup:
            times.append(time.perf_counter() - t0)
        del noisy, filtered, total
    return times


def main():
    which, iters, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    times = (jax_loop if which == "jax" else cupy_loop)(iters, warmup)
    print("ms_per_iter=%.4f" % (statistics.median(times) * 1000))


if __name__ == "__main__":
    main()
