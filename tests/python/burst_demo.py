"""A short burst after a long, quiet start-up, as a real script runs: a
second of start-up (imports, data), then 200 steps in a fraction of a
second, each making its temporaries and appending one batch to a list
"for later" (the leak). The growth checkpoints must judge the burst:
growth at the append line. Writes the line to EXPECT_OUT."""
import ctypes
import json
import os
import time

lib = ctypes.CDLL(os.environ["FAKE_C10"])
lib.fake_c10_malloc.restype = ctypes.c_void_p
lib.fake_c10_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.fake_c10_free.argtypes = [ctypes.c_void_p, ctypes.c_int]

lib.fake_c10_init(1)
weights = [lib.fake_c10_malloc(1 << 20, 0) for _ in range(4)]
time.sleep(float(os.environ.get("BURST_STARTUP_S", "1.5")))  # the quiet start-up

leak = os.environ.get("BURST_LEAK", "1") == "1"
seen = []
for step in range(200):
    temps = [lib.fake_c10_malloc(65536 + 512 * k, 0) for k in range(20)]
    seen.append(lib.fake_c10_malloc(1 << 16, 0))  # LEAK-LINE
    for t in temps:
        lib.fake_c10_free(t, 0)
    if not leak:  # the steady variant keeps only the last batch
        while len(seen) > 1:
            lib.fake_c10_free(seen.pop(0), 0)

with open(__file__) as fh:
    line = next(i for i, text in enumerate(fh, 1) if "# LEAK-LINE" in text and "next(" not in text)
with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump({"file": os.path.abspath(__file__), "leak_line": line}, fh)
