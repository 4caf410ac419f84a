"""py_cold.py: cuMemAlloc_v2 + cuMemFree_v2 pairs from Python, each on cold caches.

    python3 py_cold.py PAIRS

As py_pairs.py, 26 Python frames deep, but the way a real program meets
the shim: every level is a function of its own (its code object apart),
and before each pair the script copies 4 MB, so that what the pair reads
(the frames, their code objects, the shim's tables and code) comes from
the outer caches or memory, as after a layer's worth of other work. Each
pair is timed alone; prints the median as "ns_per_pair=...". The copy is
outside the timed pair; the clock's own cost is in both runs, so the
difference is the shim's. In chunks as py_chunks.py has them (BENCH_CHUNKS,
BENCH_CORE_SPEED), a chunk's value its pairs' median.
"""
import ctypes
import functools
import statistics
import sys
import time

from py_chunks import Chunks
from py_pairs import load

LEVELS = 23  # and <module>, the top call and timed_pairs: 26 frames
EVICT_BYTES = 4 << 20


def timed_pairs(cuda, n):
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2
    p = ctypes.c_uint64()
    ref = ctypes.byref(p)
    source, target = bytearray(EVICT_BYTES), bytearray(EVICT_BYTES)
    clock = time.perf_counter_ns
    took, chunk = [], []
    chunks = Chunks(n, value=lambda took, count: statistics.median(chunk))
    for count in chunks:
        chunk.clear()
        for _ in range(count):
            target[:] = source
            t0 = clock()
            if alloc(ref, 256) != 0 or free(p.value) != 0:
                sys.exit("py_cold: a driver call failed")
            chunk.append(clock() - t0)
        took += chunk
    chunks.ns_per_pair()  # prints the chunks, when chunked
    return statistics.median(took)


def levels(cuda):
    """LEVELS functions, each its own code object, each calling the next
    through functools.partial (as py_pairs.py's nest does)."""
    space = {"functools": functools, "timed_pairs": timed_pairs, "cuda": cuda}
    source = "def level0(n):\n    return timed_pairs(cuda, n)\n"
    for i in range(1, LEVELS):
        source += "def level%d(n):\n    return functools.partial(level%d, n)()\n" % (i, i - 1)
    exec(compile(source, "<py_cold levels>", "exec"), space)
    return space["level%d" % (LEVELS - 1)]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    print("ns_per_pair=%d" % levels(load())(n), flush=True)


if __name__ == "__main__":
    main()
