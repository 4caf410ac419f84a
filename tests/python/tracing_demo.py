"""tracing_demo.py: a program with a trace and a profile function
(sys.settrace, sys.setprofile) and, from 3.12, a sys.monitoring tool, as
under coverage or cProfile, for gpuleak's integration test that the shim's
helpers, run in the interpreter at exit, are never traced or profiled.

    LD_LIBRARY_PATH=build/fakecuda LD_PRELOAD=build/libgpuleak.so \\
        python3 tests/python/tracing_demo.py

Both functions write each (file, event) they see after the script's last
line to stderr, once: the interpreter's own shutdown is seen with and
without gpuleak, and nothing else may be. One allocation stays held by a
global, for the holder search to name.
"""
import ctypes
import os
import sys

finished = False
seen = set()


def say(kind, frame, event):
    key = (kind, frame.f_code.co_filename, event)
    if finished and key not in seen:
        seen.add(key)
        os.write(2, ("after the script: %s %s %s\n" % key).encode())


def profile(frame, event, arg):
    say("profile", frame, event)


def trace(frame, event, arg):
    say("trace", frame, event)
    return trace


def started(code, offset):
    if finished and ("monitor", code.co_filename) not in seen:
        seen.add(("monitor", code.co_filename))
        os.write(2, ("after the script: monitor %s start\n" % code.co_filename).encode())


sys.setprofile(profile)
sys.settrace(trace)
if hasattr(sys, "monitoring"):  # 3.12+: a tool of sys.monitoring too, as coverage uses there
    sys.monitoring.use_tool_id(3, "tracing_demo")
    sys.monitoring.register_callback(3, sys.monitoring.events.PY_START, started)
    sys.monitoring.set_events(3, sys.monitoring.events.PY_START)
cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 \
        or cuda.cuCtxSetCurrent(ctx) != 0:
    sys.exit("tracing_demo: no driver")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
held = ctypes.c_uint64()
cuda.cuMemAlloc_v2(ctypes.byref(held), 1 << 20)
finished = True
