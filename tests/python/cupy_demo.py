"""A CuPy loop with CuPy's default memory pool (tests/python/frameworks
fakes it over the fake driver). CUPY_MODE: "keep" keeps each step's
filtered result in a list, "thread" does so on a thread of its own (CuPy
calls memory hooks per thread), "clean" keeps nothing. Runs for
CUPY_SECONDS; writes the lines to EXPECT_OUT."""
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


def loop():
    end = time.monotonic() + float(os.environ.get("CUPY_SECONDS", "4"))
    while time.monotonic() < end:
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
