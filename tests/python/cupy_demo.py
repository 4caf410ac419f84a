"""A CuPy loop with CuPy's default memory pool (tests/python/frameworks
fakes it over the fake driver). CUPY_MODE: "keep" keeps each step's
filtered result in a list, "thread" does so on a thread of its own (CuPy
calls memory hooks per thread), "clean" keeps nothing. Runs for
CUPY_SECONDS, and on until the heap has been scanned CUPY_SNAPSHOTS times
(gpuleak's checkpoints find a worker's arrays so, and a loaded machine
spaces them out); writes the lines to EXPECT_OUT."""
import json
import os
import sys
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


scans = [0]


def count_scans(event, args):
    if event == "gc.get_objects":
        scans[0] += 1


sys.addaudithook(count_scans)


def more_steps(start):
    """Until CUPY_SECONDS have passed and the heap was scanned
    CUPY_SNAPSHOTS times (a minute at most)."""
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
