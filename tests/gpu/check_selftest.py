#!/usr/bin/env python3
"""check_selftest.py: checks the JSON cupti_count_selftest writes (stdlib only).
Usage: check_selftest.py FILE; exit 0 when every number is what the made-up
calls in cupti_count_selftest.c imply."""
import json
import sys

want = {
    ("kinds", "device", "allocations"): 3,
    ("kinds", "device", "frees"): 3,          # d1, d3, and the late free of d2
    ("kinds", "device", "failed_allocations"): 1,
    ("kinds", "device", "bytes_allocated"): 1000 + 2000 + 512 * 10,
    ("kinds", "device", "leaked_allocations"): 0,
    ("kinds", "pool", "allocations"): 2,
    ("kinds", "pool", "frees"): 2,
    ("kinds", "vmm", "allocations"): 2,
    ("kinds", "vmm", "frees"): 1,
    ("kinds", "vmm", "leaked_bytes"): 4 << 20,
    ("kinds", "managed", "leaked_allocations"): 1,
    ("kinds", "host", "allocations"): 2,
    ("kinds", "host", "frees"): 1,
    ("kinds", "host", "leaked_bytes"): 65536,
    ("kinds", "array", "allocations"): 2,
    ("kinds", "array", "frees"): 1,
    ("totals", "allocations"): 12,
    ("totals", "frees"): 8,
    ("totals", "failed_allocations"): 1,
    ("totals", "null_frees"): 1,
    ("totals", "unknown_frees"): 1,
    ("totals", "maps"): 2,
    ("totals", "unmaps"): 1,
    ("totals", "leaked_allocations"): 4,
    ("functions", "cuMemFree_v2", "calls"): 7,
    ("functions", "cuMemFree_v2", "failed"): 1,
    ("late_events",): 1,
    ("subscribed",): True,
}


def main():
    with open(sys.argv[1]) as f:
        d = json.load(f)
    bad = 0
    for path, v in want.items():
        x = d
        for k in path:
            x = x.get(k) if isinstance(x, dict) else None
        if x != v:
            print(f"cupti_count selftest: {'.'.join(path)} = {x!r}, want {v!r}")
            bad += 1
    print(f"cupti_count selftest: {len(want) - bad}/{len(want)} numbers as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
