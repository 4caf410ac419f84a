#!/usr/bin/env python3
"""Writes a synthetic gpuleak report (format version 2) with every section a
`gpuleak html` page shows, for the page's tests and its load-time
measurement: SITES leaking sites (100,000 for the large one) whose
allocations sum to ALLOCATIONS, each with its own stack (Python frames over
native ones, from pools of shared frames, as a training loop's stacks
share their outer frames), the same sites live at the peak, growth, what
Python held at its finish with its holders, teardown leaks, failures, an
OOM snapshot, a 1024-point timeline whose highest max_bytes is the exact
peak, and names with markup in them (a page must show them as text).

usage: html_report.py OUT.json [--sites N] [--allocations N] [--rank R]
                      [--pid P] [--seed S]
The numbers a page must show are the report's own: totals.peak_bytes,
totals.leaked_bytes (the leaks' sum) and the sections' sums."""
import argparse
import json
import random

MIB = 1 << 20
# Strings that would break a page that pasted report text as HTML or let
# it end the <script> element that holds the report.
NASTY_FUNCTION = "evil</script><script>document.title='pwned'</script>"
NASTY_FILE = "/src/<!--odd-->/<b>model</b>.py"


def build(sites, allocations, rank, pid, seed):
    rnd = random.Random(seed)
    start = 1_796_000_000_000_000_000 + rank * 1_000_000
    duration = 600 * 10**9

    py_pool = [{"function": f"step_{i}", "file": f"/work/train/mod_{i % 40}.py", "line": 10 + i}
               for i in range(300)]
    py_pool[7] = {"function": "forward", "file": NASTY_FILE, "line": 17}
    native_pool = [{"function": f"lib::fn_{i}(int)" if i % 9 else None,
                    "file": f"/src/lib/f{i % 50}.cc" if i % 3 else None,
                    "line": (i % 700) + 1 if i % 3 else None,
                    "module": f"/usr/lib/libm{i % 12}.so", "offset": hex(0x1000 + i * 16),
                    "address": hex(0x7f0000001000 + i * 16), "inlined": i % 11 == 0}
                   for i in range(3000)]
    native_pool[5]["function"] = NASTY_FUNCTION
    frames, pyframes, index, pyindex = [], [], {}, {}

    def fid(i):
        if i not in index:
            index[i] = len(frames)
            frames.append(native_pool[i])
        return index[i]

    def pid_(i):
        if i not in pyindex:
            pyindex[i] = len(pyframes)
            pyframes.append(py_pool[i])
        return pyindex[i]

    # Allocations shared out over the sites, each at least 1.
    weights = [rnd.random() for _ in range(sites)]
    scale = (allocations - sites) / sum(weights)
    counts = [1 + int(w * scale) for w in weights]
    counts[0] += allocations - sum(counts)

    stacks, leaks = {}, []
    outer_py = [pid_(i) for i in (0, 1, 2)]
    outer_native = [fid(i) for i in range(8)]
    for s in range(1, sites + 1):
        kind = "tensor" if s % 4 == 0 else "device"
        # Innermost first: the allocating frames, then shared outer ones.
        native = [fid(rnd.randrange(8, 3000)) for _ in range(rnd.randrange(4, 14))] + outer_native[::-1]
        py = [pid_(rnd.randrange(3, 300)) for _ in range(rnd.randrange(1, 5))] + outer_py[::-1]
        if s == 1:
            py[0] = pid_(7)
            native[0] = fid(5)
        stacks[str(s)] = {"stack": native, "python_stack": py}
        n = counts[s - 1]
        size = rnd.choice([512, 4096, 65536, MIB]) * n
        top = pyframes[py[0]]
        leaks.append({"site": s, "kind": kind, "device": s % 2, "bytes": size, "allocations": n,
                      "total_allocations": n, "frees": 0, "live_bytes": size, "peak_live_bytes": size,
                      "origin": dict(top, module=None, python=True),
                      "owner": "pytorch-tensor" if kind == "tensor" else "user"})
    leaks.sort(key=lambda e: -e["bytes"])
    leaked = sum(e["bytes"] for e in leaks)

    def held_by(e, i):
        holders = [{"name": "history[...]", "type": "list", "owner": None, "file": "train.py",
                    "graph": False, "bytes": e["bytes"] // 2, "allocations": max(1, e["allocations"] // 2)},
                   {"name": f"model.layer{i}.cache", "type": "Tensor", "owner": "Layer", "file": "model.py",
                    "graph": False, "bytes": e["bytes"] // 4, "allocations": 1},
                   {"name": "losses[...]", "type": "list", "owner": None, "file": "<script>x.py",
                    "graph": True, "bytes": e["bytes"] - e["bytes"] // 2 - e["bytes"] // 4, "allocations": 1}]
        return holders

    growth = []
    for i, e in enumerate(leaks[:min(500, len(leaks))]):
        g = dict(e, bytes=e["bytes"] // 2, bytes_per_second=e["bytes"] / 600.0,
                 bytes_per_1k_allocations=e["bytes"] * 1000.0 / e["allocations"], steadiness=0.9,
                 trend=1.0, baseline_bytes=e["bytes"] // 2, high_bytes=e["bytes"])
        growth.append(g)
    growth.sort(key=lambda e: -e["bytes"])
    held = []
    for i, e in enumerate(leaks[:min(1000, len(leaks))]):
        h = dict(e, grew=i < 500, held_by=held_by(e, i))
        if i % 7 == 0:
            h["held_by_more"] = 2
        held.append(h)

    # The timeline: live bytes climbing to the leaked total, with a higher
    # high inside one sample that is the exact peak.
    npoints = 1024
    peak = leaked + leaked // 8 + 64 * MIB  # above every other sample's high
    peak_at = 700
    points = []
    for i in range(npoints):
        t = (i + 1) * duration // npoints
        live = leaked * (i + 1) // npoints
        high = live + (live // 16 if i % 5 == 0 else 0)
        if i == peak_at:
            high = peak
        tensor = live * 3 // 4
        points.append({"t_ns": t, "bytes": live, "max_bytes": high,
                       "kinds": {"device": live, "pool": 0, "vmm": 0, "managed": 0, "host": 4 * MIB,
                                 "array": 0, "tensor": tensor},
                       "devices": {"0": live // 2, "1": live - live // 2}})
    peak_ns = start + (peak_at + 1) * duration // npoints - 1000

    def counters(live, peak_b, allocs, lk):
        return {"allocations": allocs, "frees": 0, "failed_allocations": 3 if allocs else 0, "bytes_allocated": live,
                "live_bytes": live, "peak_bytes": peak_b, "leaked_bytes": lk, "leaked_allocations": allocations}

    failures = [{"site": sites + 1, "kind": "device", "device": 0, "bytes": 80 << 30, "count": 3, "result": 2,
                 "total_allocations": 3, "frees": 0, "live_bytes": 0, "peak_live_bytes": 0, "origin": None,
                 "owner": "user"}]
    stacks[str(sites + 1)] = {"stack": outer_native[::-1], "python_stack": outer_py[::-1]}
    teardown = [dict(leaks[-1], teardown="cuCtxDestroy")]

    return {
        "format": "gpuleak-report", "version": 2, "tool": {"name": "gpuleak", "version": "0.1.0"},
        "process": {"pid": pid, "host": "node-3", "rank": rank, "argv": ["python", "train.py", "--epochs=3"],
                    "start_time_ns": start, "end_time_ns": start + duration, "python": "3.12.3"},
        "status": {"tracking": "on", "reason": None, "moment": "exit", "complete": True,
                   "stacks_dropped": 0, "growth_sites_unfollowed": 0},
        "totals": {"allocations": allocations + 3, "frees": 0, "failed_allocations": 3, "unknown_frees": 0,
                   "bytes_allocated": leaked, "live_bytes": leaked, "peak_bytes": peak, "peak_time_ns": peak_ns,
                   "leaked_bytes": leaked, "leaked_allocations": allocations,
                   "teardown_leaked_bytes": teardown[0]["bytes"], "teardown_leaked_allocations": teardown[0]["allocations"],
                   "maps": 0, "unmaps": 0, "sites": sites + 1, "stacks": sites + 1, "shim_bytes": 1 << 30},
        "kinds": {k: counters(leaked if k == "device" else 0, peak if k == "device" else 0,
                              allocations if k == "device" else 0, leaked if k == "device" else 0)
                  for k in ("device", "pool", "vmm", "managed", "host", "array", "tensor")},
        "devices": [dict(counters(leaked, peak, allocations, leaked), device=0)],
        "leaks": leaks,
        # A cuBLAS workspace PyTorch keeps for the process: not a leak.
        "kept_by_libraries": [dict(leaks[0], kind="tensor", owner="cublas")],
        "teardown_leaks": teardown,
        "failures": failures,
        "sites": [dict(e, bytes=e["bytes"]) for e in leaks[:1000]],
        "timeline": {"start_ns": start, "interval_ns": duration // npoints, "points": points,
                     # The program's marks, one with markup in its name.
                     "marks": [{"t_ns": duration * k // 4, "name": "epoch %d <b>" % k} for k in range(1, 4)],
                     "marks_dropped": 0},
        "peak": {"bytes": peak, "time_ns": peak_ns, "sites_at": "gpu", "sites_at_bytes": peak,
                 "sites_at_time_ns": peak_ns, "sites": leaks},
        "growth": growth,
        "held_at_finish": {"time_ns": start + duration - 10**9, "gpu_bytes": leaked, "tensor_bytes": leaked // 4,
                           "sites": held,
                           "holders_search": {"objects": 123456, "seconds": 0.8, "ended": "done",
                                              "named_allocations": allocations, "named_bytes": leaked}},
        "oom": {"count": 3, "time_ns": start + 500 * 10**9, "bytes": 80 << 30, "kind": "device", "device": 0,
                "live_bytes": leaked, "site": sites + 1,
                "sites": [{"site": e["site"], "kind": e["kind"], "bytes": e["bytes"]} for e in leaks[:20]]},
        "stacks": stacks,
        "frames": frames,
        "python_frames": pyframes,
        "torch_allocator": {"mode": "native", "PYTORCH_CUDA_ALLOC_CONF": None, "tensors": "attached",
                            "events": {"alloc": allocations, "free_requested": 0, "free_completed": 0,
                                       "segment_alloc": 0, "segment_free": 0, "segment_map": 0,
                                       "segment_unmap": 0, "snapshot": 0, "oom": 0},
                            "reserve_bytes": 0},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--sites", type=int, default=100_000)
    ap.add_argument("--allocations", type=int, default=1_000_000)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--pid", type=int, default=4242)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    report = build(a.sites, max(a.allocations, a.sites), a.rank, a.pid, a.seed)
    with open(a.out, "w") as f:
        json.dump(report, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
