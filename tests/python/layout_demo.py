"""layout_demo.py: two leaks whose Python stacks pass through folders that
only the interpreter's own layout tells from the user's, for
tests/integration/test_layout.py. Over the fake driver (LD_LIBRARY_PATH=
build/fakecuda), it keeps device memory from cuMemAlloc_v2 called

- by the standard library: sched.scheduler.run calls the allocator itself,
  scheduled from this script's STDLIB-LINE (run with PYTHONHOME and
  PYTHONPLATLIBDIR, that library lies in a folder no built-in glob knows);
- by an installed package: gridlib, from tests/python/deps (a folder laid
  out by `pip install --target`, put first on sys.path), from LIB-LINE.

With SNAPSHOT_FROM and SNAPSHOT_TO set, it then has the shim write a report
now (gpuleak_snapshot: before Python's finish, so without the layout) and
copies it from the first path to the second. EXPECT_OUT receives JSON: the
lines, the files, and the folders the interpreter itself names."""
import ctypes
import json
import os
import sched
import shutil
import site
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEPS = os.path.join(HERE, "deps")
sys.path.insert(0, DEPS)
import gridlib  # noqa: E402

STDLIB_SIZE = (1 << 20) + 4096
LIB_SIZE = 2 << 20

cuda = ctypes.CDLL("libcuda.so.1")
cuMemAlloc = cuda.cuMemAlloc_v2
cuMemAlloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuMemAlloc.restype = ctypes.c_int
kept = []


def line_of(marker, path):
    with open(path) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


def through_stdlib():
    ptr = ctypes.c_uint64()
    plan = sched.scheduler()
    plan.enter(0, 1, cuMemAlloc, (ctypes.byref(ptr), STDLIB_SIZE))
    plan.run()  # STDLIB-LINE
    kept.append(ptr)


def through_library():
    kept.append(gridlib.Grid(cuMemAlloc).make(LIB_SIZE))  # LIB-LINE


def main():
    device, context = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
    assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0
    through_stdlib()
    through_library()
    if os.environ.get("SNAPSHOT_TO"):
        assert ctypes.CDLL(None).gpuleak_snapshot() == 0
        shutil.copy(os.environ["SNAPSHOT_FROM"], os.environ["SNAPSHOT_TO"])
    with open(os.environ["EXPECT_OUT"], "w") as fh:
        json.dump({"file": os.path.abspath(__file__),
                   "stdlib_line": line_of("# STDLIB-LINE", __file__),
                   "lib_line": line_of("# LIB-LINE", __file__),
                   "stdlib_size": STDLIB_SIZE, "lib_size": LIB_SIZE,
                   "sched_file": sched.__file__,
                   "stdlib_dir": os.path.dirname(os.__file__),
                   "via_file": gridlib.__file__,
                   "via_line": line_of("# VIA-LINE", gridlib.__file__),
                   "deps": DEPS,
                   "site_packages": [p for p in site.getsitepackages() if os.path.isdir(p)]}, fh)


main()
