"""check_teardown.py REPORT [--expect-no-leak]: prints what was live at exit
at teardown_probe.py's lines: leaks, and what is still reachable (the
program's names held it as Python finished; its shutdown did not free it).
With --expect-no-leak, fails when any of it is a leak: with the holder
search on, the probe's globals must be reachable, named, never leaks."""
import json
import os
import sys


def at_probe(sites):
    return [(s["kind"], s["bytes"], (s.get("origin") or {}).get("line"),
             [h["name"] for h in s.get("held_by") or []]) for s in sites or []
            if os.path.basename((s.get("origin") or {}).get("file") or "") == "teardown_probe.py"]


def main():
    report = json.load(open(sys.argv[1]))
    leaks = at_probe(report.get("leaks"))
    reachable = at_probe(report.get("reachable_at_exit"))
    search = (report.get("held_at_finish") or {}).get("holders_search")
    print("live at exit at teardown_probe.py: leaks %s; still reachable %s; holders search: %s"
          % (leaks or "none", reachable or "none", search))
    if "--expect-no-leak" in sys.argv and leaks:
        print("FAIL: a global the program held to its end is listed as a leak")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
