"""pools_listing.py: what a checkpoint of JAX's arrays costs the program's
main thread on the Python side (shim/python/pools.py's arrays(), over the
fake JAX of tests/python/frameworks): the first listing of N live arrays
(each one's pointer, size, devices and traceback read) and the next ones
(each array seen before is listed from pools.py's own record). The shim's
C side then parses the listing (a hash lookup a line). Medians of 7.

    python3 tests/bench/pools_listing.py [N ...]     (default 1000 10000 100000)"""
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "frameworks"))


def main():
    import jax.numpy as jnp
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000, 100000]
    print("| live arrays | first listing, ms | next listings, ms (median of 7) | a known array, us |")
    print("| --- | --- | --- | --- |")
    for n in sizes:
        ns = {}
        with open(os.path.join(ROOT, "shim", "python", "pools.py")) as fh:
            exec(compile(fh.read(), "pools.py", "exec"), ns)
        arrays = [jnp.ones((16,)) for _ in range(n)]
        t = time.perf_counter()
        ns["arrays"](0)
        first = time.perf_counter() - t
        again = []
        for _ in range(7):
            t = time.perf_counter()
            ns["arrays"](0)
            again.append(time.perf_counter() - t)
        m = statistics.median(again)
        print("| %d | %.1f | %.2f [%.2f-%.2f] | %.2f |" % (n, first * 1e3, m * 1e3, min(again) * 1e3,
                                                        max(again) * 1e3, m * 1e6 / n))
        del arrays


if __name__ == "__main__":
    main()
