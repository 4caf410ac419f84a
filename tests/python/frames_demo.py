"""frames_demo.py: Python allocation sites with known frames, for gpuleak's integration test.

Run with the fake driver first on the library path and the shim preloaded:

    EXPECT_OUT=/tmp/expect.json LD_LIBRARY_PATH=build/fakecuda \
        LD_PRELOAD=build/libgpuleak.so python3 tests/python/frames_demo.py

It loads libcuda.so.1 with ctypes (which releases the GIL around each call,
as PyTorch's bindings do), makes a context current, and calls cuMemAlloc_v2
from several kinds of Python code: nested functions, a method, a static
method, a generator, a lambda, a closure, two threads, and a line in the
middle of a long function. Every allocation has its own size and is leaked
(never freed), so each leak in the report maps to one site.

The expectations are computed here, on the same line as each allocation,
from the interpreter's own frames (f_lineno), so no line number is written
down anywhere. EXPECT_OUT receives JSON:

    {"python": "3.11.7",
     "sites": {"<size>": {"function": qualified name (co_name before 3.11),
                          "file": co_filename, "line": int,
                          "thread": "MainThread" | "worker-0" | ...,
                          "stack": [[function, file, line], ...]  innermost first}}}

Without EXPECT_OUT the JSON goes to stdout.
"""
import ctypes
import json
import os
import sys
import threading

CUDA_SUCCESS = 0
BASE = 1 << 20  # sizes are BASE + k * 4096, one k per allocation

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuInit.argtypes = [ctypes.c_uint]
cuda.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
cuda.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
cuda.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
cuMemAlloc = cuda.cuMemAlloc_v2
cuMemAlloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuMemAlloc.restype = ctypes.c_int

_lock = threading.Lock()
_sites = {}
_leaked = []  # keeps every device pointer: nothing is freed
_next_k = [0]


def _name(code):
    return getattr(code, "co_qualname", code.co_name)


def size_for():
    """A size no other allocation uses."""
    with _lock:
        _next_k[0] += 1
        return BASE + _next_k[0] * 4096


def expect(size, rc, ptr):
    """Records the caller's frames as the expected site of the allocation of
    `size` just made on the caller's current line; call it on that line."""
    if rc != CUDA_SUCCESS:
        raise SystemExit("frames_demo: cuMemAlloc_v2(%d) returned %d" % (size, rc))
    stack = []
    f = sys._getframe(1)
    while f is not None:
        stack.append([_name(f.f_code), f.f_code.co_filename, f.f_lineno])
        f = f.f_back
    with _lock:
        _leaked.append(ptr)
        _sites[str(size)] = {
            "function": stack[0][0], "file": stack[0][1], "line": stack[0][2],
            "thread": threading.current_thread().name, "stack": stack,
        }


def new_ptr():
    return ctypes.c_uint64(0)


# --- nested functions -------------------------------------------------------

def nested_inner():
    p, n = new_ptr(), size_for()
    rc = cuMemAlloc(ctypes.byref(p), n); expect(n, rc, p)


def nested_middle():
    nested_inner()


def nested_outer():
    nested_middle()


# --- a class ------------------------------------------------------------------

class Model:
    def forward(self):
        p, n = new_ptr(), size_for()
        rc = cuMemAlloc(ctypes.byref(p), n); expect(n, rc, p)

    @staticmethod
    def make_buffer():
        p, n = new_ptr(), size_for()
        rc = cuMemAlloc(ctypes.byref(p), n); expect(n, rc, p)


# --- a generator: two allocations from one line --------------------------------

def batches(count):
    for _ in range(count):
        p, n = new_ptr(), size_for()
        rc = cuMemAlloc(ctypes.byref(p), n); expect(n, rc, p)
        yield n


# --- a lambda and a closure -------------------------------------------------------

grab = lambda p, n: expect(n, cuMemAlloc(ctypes.byref(p), n), p)


def make_closure():
    scale = 2

    def closure():
        p, n = new_ptr(), size_for()
        rc = cuMemAlloc(ctypes.byref(p), n + 0 * scale); expect(n, rc, p)
    return closure


# --- a line in the middle of a long function ----------------------------------

def long_function(steps):
    total = 0
    for i in range(steps):
        total += i
    if total > 1000:
        total = 1000
    names = ["a", "b", "c"]
    joined = "-".join(names)
    try:
        int(joined)
    except ValueError:
        total += 1
    table = {k: len(k) for k in names}
    total += sum(table.values())
    # The allocation: far below the def line, so co_firstlineno would be wrong.
    p, n = new_ptr(), size_for()
    rc = cuMemAlloc(ctypes.byref(p), n); expect(n, rc, p)
    total += 2
    words = [w.upper() for w in names]
    total += len(words)
    while total % 7:
        total += 1
    return total


# --- two threads ----------------------------------------------------------------

def thread_worker(ctx):
    # The current context is per thread: make the primary one current here too.
    r = cuda.cuCtxSetCurrent(ctx)
    if r != CUDA_SUCCESS:
        raise SystemExit("frames_demo: cuCtxSetCurrent returned %d" % r)
    p, n = new_ptr(), size_for()
    rc = cuMemAlloc(ctypes.byref(p), n); expect(n, rc, p)
    Model().forward()


def init_cuda():
    dev = ctypes.c_int(0)
    ctx = ctypes.c_void_p(0)
    for what, rc in (("cuInit", lambda: cuda.cuInit(0)),
                     ("cuDeviceGet", lambda: cuda.cuDeviceGet(ctypes.byref(dev), 0)),
                     ("cuDevicePrimaryCtxRetain",
                      lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value)),
                     ("cuCtxSetCurrent", lambda: cuda.cuCtxSetCurrent(ctx))):
        r = rc()
        if r != CUDA_SUCCESS:
            raise SystemExit("frames_demo: %s returned %d" % (what, r))
    return ctx


def main():
    ctx = init_cuda()
    nested_outer()
    Model().forward()
    Model.make_buffer()
    for _ in batches(2):
        pass
    p, n = new_ptr(), size_for()
    grab(p, n)
    make_closure()()
    long_function(10)
    workers = [threading.Thread(target=thread_worker, args=(ctx,), name="worker-%d" % k) for k in range(2)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    doc = {"python": "%d.%d.%d" % sys.version_info[:3], "sites": _sites}
    out = os.environ.get("EXPECT_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(doc, fh, indent=1)
    else:
        json.dump(doc, sys.stdout, indent=1)
        print()
    print("frames_demo: %d allocations leaked on purpose" % len(_leaked), file=sys.stderr)
    del ctx


if __name__ == "__main__":
    main()
