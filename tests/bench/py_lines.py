"""py_lines.py: cuMemAlloc_v2 + cuMemFree_v2 pairs from many Python lines.

    python3 py_lines.py PAIRS [LINES]

A step of LINES lines (default 300), each an allocation and its free, is
run until PAIRS pairs are made, as a training step's operators allocate
from hundreds of lines. A line is trusted (its site taken with no native
walk) after its first 16 allocations, so the first 20 steps are a warm-up.
Timed in chunks of whole steps as py_chunks.py has them (BENCH_CHUNKS,
BENCH_CORE_SPEED); prints "ns_per_pair=...".
"""
import ctypes
import sys

from py_chunks import Chunks
from py_pairs import load

WARMUP_STEPS = 20


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    cuda = load()
    source = "def step(p):\n" + "    alloc(ref(p), 256); free(p.value)\n" * lines
    space = {"alloc": cuda.cuMemAlloc_v2, "free": cuda.cuMemFree_v2, "ref": ctypes.byref}
    exec(compile(source, "<py_lines step>", "exec"), space)
    step = space["step"]
    p = ctypes.c_uint64()
    for _ in range(WARMUP_STEPS):
        step(p)
    steps = max(pairs // lines, 1)
    chunks = Chunks(steps, value=lambda took, count: took / (count * lines))
    for count in chunks:
        for _ in range(count):
            step(p)
    print("ns_per_pair=%.2f" % (chunks.ns_per_pair() / lines), flush=True)


if __name__ == "__main__":
    main()
