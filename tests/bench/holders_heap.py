"""The holder search's time over heaps of 0.5M, 1M and 2M objects
(docs/performance.md), run under the shim so that its C walk is there:
  LD_PRELOAD=build/libgpuleak.so python3 tests/bench/holders_heap.py
Each heap holds one device address (kept as an instance's number, deep in
it) and a second target nothing holds, so every search walks the whole
heap and ends done. Prints the median and range of 7 searches a size."""
import ctypes
import gc
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = 0x7f0000000000


class Record:
    def __init__(self, i):
        self.i, self.name, self.tags = i, "r%d" % i, [i]


class Buffer:
    def __init__(self, ptr):
        self.ptr = ptr


def search(find, walker_of, targets, budget):
    began = time.monotonic()
    answer = find(targets, budget, "", walker_of())
    took = time.monotonic() - began
    return took, answer.rsplit("\n", 1)[-1].split("\t")


def main():
    scope = {}
    with open(os.path.join(ROOT, "shim", "python", "holders.py")) as fh:
        exec(compile(fh.read(), "holders.py", "exec"), scope)
    walker = ctypes.PyDLL(None).gpuleak_holders_walker
    walker.restype = ctypes.py_object
    targets = "%d 4096 0\n%d 4096 1\n" % (BASE, BASE + 0x100000)
    heap = []
    base = len(gc.get_objects())
    for size in (500000, 1000000, 2000000):
        # Two objects the collector tracks a record: the instance (its
        # attributes inline, 3.11+) and its list.
        while len(heap) < (size - base) // 2:
            heap.append(Record(len(heap)))
        heap[-1].tags.append(Buffer(BASE))
        scope["__builtins__"]["gpuleak_bench_heap"] = heap  # reached from builtins
        objects = len(gc.get_objects())
        times = []
        for _ in range(7):
            took, (_, looked, ended) = search(scope["find"], walker, targets, 30.0)
            times.append(took * 1000)
        heap[-1].tags.pop()
        print("%9d objects (gc): search %.0f ms [%.0f-%.0f], %s objects looked at, ended %s"
              % (objects, statistics.median(times), min(times), max(times), looked, ended))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
