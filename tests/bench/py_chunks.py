"""py_chunks.py: the timed loop of the Python benchmarks, whole or in chunks.

    chunks = Chunks(n)
    for count in chunks:        # the pairs' loop stays in the caller's frame
        for _ in range(count):
            ...one pair...
    result = chunks.ns_per_pair()

With BENCH_CHUNKS=N and BENCH_CORE_SPEED=path of libcore_speed.so
(tests/bench/core_speed.c), the n pairs run in N chunks, the core's speed
measured between them as bench_pairs measures it; ns_per_pair() then prints
"chunks=<add ns>:<pair ns>,..." (a chunk's add ns the slower of the measures
before and after it) for run.py to keep the chunks run at the core's full
speed. Without them, one chunk. The chunks' iterator is a generator: its
frame is off the thread's frame chain while a chunk runs, so the pairs are
made as deep as without it.
"""
import ctypes
import os
import time


class Chunks:
    def __init__(self, n, value=None):
        """value(took_ns, count): what a chunk measured, called after it
        (default: took_ns / count, its time over its pairs)."""
        count = int(os.environ.get("BENCH_CHUNKS") or 0)
        lib = os.environ.get("BENCH_CORE_SPEED")
        self.speed = None
        if count > 0 and lib:
            self.speed = ctypes.CDLL(lib).core_speed_ns_per_add
            self.speed.restype = ctypes.c_double
        count = min(count, n) if self.speed else 1
        self.sizes = [n // count + (i < n % count) for i in range(count)]
        self.n = n
        self.value = value
        self.busy_ns = 0
        self.chunks = []

    def __iter__(self):
        before = self.speed() if self.speed else 0.0
        for size in self.sizes:
            t0 = time.perf_counter_ns()
            yield size
            took = time.perf_counter_ns() - t0
            self.busy_ns += took
            if self.speed:
                after = self.speed()
                self.chunks.append((max(before, after),
                                    self.value(took, size) if self.value else took / size))
                before = after

    def ns_per_pair(self):
        """ns a pair over every chunk (their pairs alone); prints the chunks
        first when chunked."""
        if self.chunks:
            print("chunks=" + ",".join("%.4f:%.2f" % c for c in self.chunks), flush=True)
        return self.busy_ns / self.n
