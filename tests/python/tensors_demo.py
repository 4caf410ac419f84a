"""A training-style loop over the fake libc10_cuda.so (tests/fakecuda/
fake_c10_cuda.cpp), loaded as PyTorch loads it (RTLD_LOCAL, through ctypes,
which releases the GIL as PyTorch's bindings do). It keeps one batch in five
in a list (the leak), frees the rest, some of them completed later on
another thread, uses two devices, empties the cache, and may record an
out-of-memory event. It writes what it did, from its own bookkeeping, to
EXPECT_OUT: the line that keeps memory, the counts and bytes PyTorch's
memory_stats() would give, and the highest live tensor bytes."""
import ctypes
import json
import os
import sys
import threading

lib = ctypes.CDLL(os.environ["FAKE_C10"])
if os.environ.get("FAKE_C10_REPLACE_WITH"):
    # An upgrade while the program runs: the file on disk is no longer the
    # library loaded.
    os.replace(os.environ["FAKE_C10_REPLACE_WITH"], os.environ["FAKE_C10"])
lib.fake_c10_malloc.restype = ctypes.c_void_p
lib.fake_c10_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.fake_c10_free.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.fake_c10_record_oom.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.fake_c10_reserved.restype = lib.fake_c10_allocated.restype = ctypes.c_size_t
lib.fake_c10_reserved.argtypes = lib.fake_c10_allocated.argtypes = [ctypes.c_int]
lib.fake_c10_counted_events.restype = ctypes.c_ulong
driver = ctypes.CDLL("libcuda.so.1")

stats = {"allocations": 0, "frees": 0, "requested_allocated": 0, "requested_freed": 0}
live = {}
high = [0]
kept = []
KEEP_LINE = None


def alloc(size, device=0):
    ptr = lib.fake_c10_malloc(size, device)
    stats["allocations"] += 1
    stats["requested_allocated"] += size
    live[ptr] = size
    high[0] = max(high[0], sum(live.values()))
    return ptr


def free(ptr, deferred=0):
    lib.fake_c10_free(ptr, deferred)
    stats["frees"] += 1
    stats["requested_freed"] += live.pop(ptr)


def keep_for_logging(size):
    global KEEP_LINE
    KEEP_LINE = sys._getframe().f_lineno + 1
    kept.append(alloc(size))


def step(i):
    activations = [alloc(3 * 1024 * 1024 + 100 * j) for j in range(4)]
    grads = alloc(1024 * 1024, device=i % 2)
    if i % 5 == 0:
        keep_for_logging(256 * 1024 + i)
    for a in activations:
        free(a, deferred=i % 3 == 0)
    free(grads)


def main():
    scenario = sys.argv[1] if len(sys.argv) > 1 else "loop"
    if scenario == "preinit":
        # A driver allocation of the program's own, before PyTorch's
        # allocator exists: gpuleak must not attach yet (it would be lost).
        ptr = ctypes.c_uint64()
        context = ctypes.c_void_p()
        driver.cuInit(0)
        driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0)
        driver.cuCtxSetCurrent(context)
        if driver.cuMemAlloc_v2(ctypes.byref(ptr), 4096) != 0:
            sys.exit("the pre-init driver allocation failed")
    if lib.fake_c10_init(2) != 0:
        sys.exit("fake allocator unset")
    own = lib.fake_c10_attach_counter() if scenario == "own-tracker" else None
    for i in range(40):
        step(i)
        if i % 10 == 9:
            t = threading.Thread(target=lib.fake_c10_process_events)
            t.start()
            t.join()
    oom = None
    if scenario == "oom":
        lib.fake_c10_record_oom(64 << 30, 0)
    elif scenario == "oom-fragmented":
        # Its cache on device 0 holds more unused bytes than are asked, in
        # blocks too small: what PyTorch reports as reserved but
        # unallocated.
        reserved, allocated = lib.fake_c10_reserved(0), lib.fake_c10_allocated(0)
        oom = {"reserved": reserved, "allocated": allocated, "asked": (reserved - allocated) // 2}
        record_oom = lib.fake_c10_record_oom  # the "oom" scenario's call is the one by that name
        record_oom(oom["asked"], 0)
    lib.fake_c10_empty_cache()
    with open(os.environ["EXPECT_OUT"], "w") as fh:
        json.dump({"stats": stats, "keep_line": KEEP_LINE, "kept": len(kept),
                   "kept_bytes": sum(live[p] for p in kept), "high": high[0],
                   "file": os.path.abspath(__file__),
                   "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
                   "own_tracker": own,
                   "own_events": lib.fake_c10_counted_events(), "oom": oom}, fh)


main()
