"""check_teardown.py REPORT [--expect-freed]: prints the leaks at
teardown_probe.py's lines; with --expect-freed, fails when any is left
(module teardown should have freed the script's globals)."""
import json
import os
import sys


def main():
    report = json.load(open(sys.argv[1]))
    mine = [(l["kind"], l["bytes"], (l.get("origin") or {}).get("line")) for l in report.get("leaks") or []
            if os.path.basename((l.get("origin") or {}).get("file") or "") == "teardown_probe.py"]
    search = (report.get("held_at_finish") or {}).get("holders_search")
    print("leaks at teardown_probe.py: %s; holders search: %s" % (mine or "none", search))
    if "--expect-freed" in sys.argv and mine:
        print("FAIL: module teardown did not free the script's globals")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
