"""random_walks_demo.py: allocations from stacks that change at every depth,
in a random order, for gpuleak's integration test that a site's key (which
reuses each thread's last walk frame by frame) never gives one stack
another's site.

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/random_walks_demo.py [SEED]

Four functions call each other to a random depth, each from one of two
lines chosen at random, and the innermost one allocates from one of two
lines; a recursion repeats frames of one function at several depths. Each
allocation's size is 4 KiB times a number that names its stack, so a site
whose allocations came from two stacks would hold two sizes. All are
leaked. Prints "stacks=N" and, as JSON on the last line, each size with its
stack, innermost first, as the interpreter's own frames give it.
"""
import ctypes
import json
import random
import sys

cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
        or cuda.cuCtxSetCurrent(ctx) != 0:
    sys.exit("random_walks_demo: no driver")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
kept = []
names = {}  # stack -> its number


def allocate():
    frame = sys._getframe(1)  # the caller's line is the allocation's
    stack = []
    while frame is not None:
        stack.append((frame.f_code.co_name, frame.f_lineno))
        frame = frame.f_back
    number = names.setdefault(tuple(stack), len(names) + 1)
    p = ctypes.c_uint64()
    cuda.cuMemAlloc_v2(ctypes.byref(p), 4096 * number)
    kept.append(p)


def leaf(plan):
    if plan[0]:
        allocate()
    else:
        allocate()


def step(plan):
    if len(plan) == 1:
        return leaf(plan)
    if plan[0]:
        return [a, b, c][plan[1] % 3](plan[2:])
    else:
        return [a, b, c][plan[1] % 3](plan[2:])


def a(plan):
    return step(plan)


def b(plan):
    return step(plan) if plan else None


def c(plan):
    return step(plan) if len(plan) >= 1 else None


for _ in range(3000):
    depth = rng.randrange(0, 5)
    plan = [rng.randrange(2) if i % 2 == 0 else rng.randrange(3) for i in range(2 * depth)]
    plan.append(rng.randrange(2))
    step(plan)
print("stacks=%d" % len(names))
print(json.dumps({str(4096 * n): [list(f) for f in s] for s, n in names.items()}))
