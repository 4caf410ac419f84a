"""A CuPy loop with CuPy's default memory pool: MODE=keep keeps each step's
filtered signal in a list, MODE=clean keeps nothing. scripts/gpu-real.sh
runs it under `gpuleak run --max-leaked --max-growth`: keep must exit 23
with the LEAK-LINE grown and held by kept, clean 0."""
import os
import time

import cupy as cp

MODE = os.environ.get("MODE", "keep")
signal = cp.random.random((1 << 20,), dtype=cp.float32)
kernel = cp.ones(31, dtype=cp.float32) / 31
kept = []
for i in range(int(os.environ.get("STEPS", "300"))):
    noisy = signal + cp.random.standard_normal(signal.shape, dtype=cp.float32) * 0.1
    filtered = cp.convolve(noisy, kernel, mode="same")  # LEAK-LINE
    if MODE == "keep":
        kept.append(filtered)
    cp.cuda.Stream.null.synchronize()
    time.sleep(0.01)
print("kept", len(kept))
