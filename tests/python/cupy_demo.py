"""A CuPy loop with CuPy's default memory pool (tests/python/frameworks
fakes it over the fake driver). CUPY_MODE: "keep" keeps each step's
filtered result in a list, "thread" does so on a thread of its own (CuPy
calls memory hooks per thread), "clean" keeps nothing. Runs for
CUPY_SECONDS, and on until the heap has been scanned CUPY_SNAPSHOTS times
(gpuleak's checkpoints find a worker's arrays so, and a loaded machine
spaces them out); writes the lines to EXPECT_OUT."""
import ctypes
import json
import os
import threading
import time

import cupy

MODE = os.environ.get("CUPY_MODE", "keep")


def line_of(marker):
    with open(__file__) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text and "line_of" not in text)


signal = cupy.ones((4096,))
kept = []
steps = [0]


# gpuleak's public API (include/gpuleak.h), when it is preloaded: the
# program asks the tool, never the other way round (an audit hook counting
# gc.get_objects would be the program's code seeing the tool's work, which
# gpuleak refuses to run under).
live_bytes = getattr(ctypes.CDLL(None), "gpuleak_live_bytes", None)
if live_bytes is not None:
    live_bytes.restype = ctypes.c_uint64
    live_bytes.argtypes = [ctypes.c_char_p, ctypes.c_int]
scans = [0, None]  # heap scans seen, and the tensors' live bytes at the last


def count_scans():
    """A worker's arrays reach gpuleak only through its heap scans (CuPy's
    hooks are per thread): its arrays' live bytes change at each scan."""
    now = live_bytes(b"tensor", -1) if live_bytes is not None else 0
    if scans[1] is not None and now != scans[1]:
        scans[0] += 1
    scans[1] = now


def more_steps(start):
    """Until CUPY_SECONDS have passed and the heap was scanned
    CUPY_SNAPSHOTS times (a minute at most)."""
    count_scans()
    took = time.monotonic() - start
    return took < float(os.environ.get("CUPY_SECONDS", "4")) or (
        scans[0] < int(os.environ.get("CUPY_SNAPSHOTS", "0")) and took < 60)


def loop():
    start = time.monotonic()
    while more_steps(start):
        noisy = signal + cupy.ones((4096,))
        filtered = noisy * 0.5  # FILTER-LINE
        if MODE in ("keep", "thread"):
            kept.append(filtered)
        del noisy, filtered
        steps[0] += 1
        time.sleep(0.005)


if MODE == "thread":
    worker = threading.Thread(target=loop)
    worker.start()
    while worker.is_alive():  # the main thread looks on, as a job's monitor does
        time.sleep(0.01)
else:
    loop()
i = steps[0]

with open(os.environ.get("EXPECT_OUT", os.devnull), "w") as fh:
    json.dump({"filter": line_of("# FILTER-LINE"), "steps": i}, fh)
