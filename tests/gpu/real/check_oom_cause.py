"""check_oom_cause.py REPORT EXPECT LOG: at PyTorch's OOM of
oom_fragmented.py, the report's oom gives the device's reserved and
allocated bytes as torch.cuda said them (within 1%), and the exit summary
(LOG) names fragmentation and its cure (issue 38, docs/diagnosis.md)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import reports  # noqa: E402


def near(a, b):
    return abs(a - b) <= 0.01 * max(a, b, 1)


def main():
    report, facts = reports.load(sys.argv[1]), json.load(open(sys.argv[2]))
    log = open(sys.argv[3]).read()
    oom = report.get("oom") or {}
    print("torch.cuda: %s; report: reserved %s, allocated %s, kind %s" % (
        facts, oom.get("torch_reserved_bytes"), oom.get("torch_allocated_bytes"), oom.get("kind")))
    ok = facts is not None and oom.get("kind") == "tensor"
    ok = ok and near(oom.get("torch_reserved_bytes", 0), facts["reserved"])
    ok = ok and near(oom.get("torch_allocated_bytes", 0), facts["allocated"])
    if "Cause: fragmentation." not in log or "expandable_segments:True" not in log:
        print("FAIL: the exit summary does not name fragmentation and its cure")
        ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
