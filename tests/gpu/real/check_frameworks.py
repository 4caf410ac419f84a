"""check_frameworks.py REPORT SCRIPT FRAMEWORK (--line N --holder NAME | --clean)

Checks a report of tests/gpu/real/jax_train.py or cupy_filter.py, run with
the framework's defaults: the leak's line is the largest growth line, its
memory the framework's arrays, held by NAME; the pool's blocks are neither
a leak nor at the peak; a clean run has no growth and no leak. Prints one
line, exits 1 when a check failed."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("script")
    ap.add_argument("framework")
    ap.add_argument("--line", type=int)
    ap.add_argument("--holder")
    ap.add_argument("--clean", action="store_true")
    a = ap.parse_args()
    with open(a.report) as fh:
        r = json.load(fh)
    problems = []
    seen = (r.get("frameworks") or {}).get(a.framework)
    if not seen:
        problems.append("no %s arrays followed (frameworks: %s)" % (a.framework, r.get("frameworks")))
    leaks = [s for s in r.get("leaks") or [] if s["kind"] != "host"]
    if leaks:
        problems.append("leaks at exit: %s" % [(s["kind"], s["bytes"], (s.get("origin") or {}).get("line"))
                                              for s in leaks[:3]])
    growth = r.get("growth") or []
    if a.clean:
        if growth:
            problems.append("growth in a clean run: %s" % [(s["kind"], (s.get("origin") or {}).get("line"))
                                                           for s in growth[:3]])
    else:
        top = growth[0] if growth else None
        if top is None:
            problems.append("no growth found")
        else:
            origin = top.get("origin") or {}
            if top.get("framework") != a.framework:
                problems.append("the top growth is %s/%s" % (top["kind"], top.get("framework")))
            if not str(origin.get("file", "")).endswith(a.script) or origin.get("line") != a.line:
                problems.append("the top growth is at %s:%s, not %s:%d"
                                % (origin.get("file"), origin.get("line"), a.script, a.line))
            held = [h["name"] for h in top.get("held_by") or []]
            if not held or not held[0].startswith(a.holder):
                problems.append("held by %s, not %s" % (held[:2], a.holder))
    peak_kinds = {s["kind"] for s in (r.get("peak") or {}).get("sites") or []}
    if peak_kinds - {"tensor", "host"}:
        problems.append("the pool at the peak: %s" % sorted(peak_kinds))
    print("; ".join(problems) if problems else "ok (%s: %s)" % (a.framework, seen))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
