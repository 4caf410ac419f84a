"""check_tensor_stats.py EXPECT: gpuleak's tensor counts against PyTorch's.

EXPECT is what tensor_stats.py wrote; EXPECT.report.json the report gpuleak
wrote on request right after. Passes when the tensor kind's allocations,
frees, bytes allocated, live bytes and peak equal memory_stats()'s
allocation and requested_bytes counters, tensors were attached, and the
program saw PYTORCH_CUDA_ALLOC_CONF as it was given (WANT_ALLOC_CONF, or
unset)."""
import json
import os
import sys


def main():
    expect = json.load(open(sys.argv[1]))
    report = json.load(open(sys.argv[1] + ".report.json"))
    s = expect["stats"]
    t = report["kinds"]["tensor"]
    torch_alloc = report["torch_allocator"]
    want_conf = os.environ.get("WANT_ALLOC_CONF") or None
    pairs = [
        ("allocations", t["allocations"], s["allocation.all.allocated"]),
        ("frees", t["frees"], s["allocation.all.freed"]),
        ("bytes_allocated", t["bytes_allocated"], s["requested_bytes.all.allocated"]),
        ("live_bytes", t["live_bytes"], s["requested_bytes.all.current"]),
        ("peak_bytes", t["peak_bytes"], s["requested_bytes.all.peak"]),
        ("live_allocations", t["allocations"] - t["frees"], s["allocation.all.current"]),
    ]
    ok = torch_alloc.get("tensors") == "attached"
    print("torch_allocator: %s" % json.dumps(torch_alloc))
    for name, got, want in pairs:
        mark = "ok" if got == want else "DIFFERS"
        ok &= got == want
        print("  %-16s gpuleak %-12s torch %-12s %s" % (name, got, want, mark))
    if expect["alloc_conf"] != want_conf:
        print("  PYTORCH_CUDA_ALLOC_CONF seen by the program: %r, given %r" % (expect["alloc_conf"], want_conf))
        ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


sys.exit(main())
