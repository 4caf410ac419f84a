"""check_causes.py REPORT EXPECT LOG: the composition at Python's finish of
causes.py's run gives the model's parameters and Adam's state as PyTorch
counts them (within 1%) and sums to the driver memory; the exit summary
(LOG) names the run's cause (docs/diagnosis.md) and no other; a clean run
gets no advice."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import reports  # noqa: E402

SAYS = {"graph": "keeps the autograd graph", "kept": "keeps tensors from step after step",
        "copy": "two copies of the same weights", "frozen": "that no optimizer steps"}


def near(a, b):
    return abs(a - b) <= 0.01 * max(a, b, 1)


def composition_ok(report, facts):
    held = report.get("held_at_finish") or {}
    c = held.get("composition") or {}
    parts = {p["role"]: p["bytes"] for p in c.get("parts", [])}
    print("composition:", parts, "gpu_bytes", c.get("gpu_bytes"), "facts", facts)
    ok = bool(c) and sum(parts.values()) == c.get("gpu_bytes")
    want_params = facts["parameters"] * (2 if facts["cause"] == "copy" else 1)
    ok = ok and near(parts.get("parameters", 0), want_params)
    return ok and near(parts.get("optimizer_state", 0), facts["optimizer_state"])


def main():
    report, facts = reports.load(sys.argv[1]), json.load(open(sys.argv[2]))
    log = open(sys.argv[3]).read()
    ok = composition_ok(report, facts)
    said = [cause for cause, words in SAYS.items() if words in log]
    print("causes said:", said)
    want = [] if facts["cause"] == "clean" else [facts["cause"]]
    if said != want:
        print("FAIL: the summary said %s, wanted %s" % (said, want))
        ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
