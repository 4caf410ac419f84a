"""check_oom.py REPORT NAME: the report's oom section names, for its
largest site, a holder whose name contains NAME, with at least 95% of the
site's bytes named, from a search that ended done or all (issue 31)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import reports  # noqa: E402


def main():
    report = reports.load(sys.argv[1])
    want = sys.argv[2]
    oom = report.get("oom")
    if not oom or not oom.get("sites"):
        print("FAIL: no oom section with sites")
        return 1
    search = oom.get("holders_search") or {}
    print("oom: %s B asked, %s B live; holders search: %s" % (oom["bytes"], oom["live_bytes"], search))
    site = max(oom["sites"], key=lambda s: s["bytes"])
    held = site.get("held_by") or []
    named = sum(h["bytes"] for h in held)
    print("largest site: %d B, held by %s" % (site["bytes"], [(h["name"], h["bytes"]) for h in held]))
    ok = True
    if search.get("ended") not in ("done", "all"):
        print("FAIL: the search ended %s" % search.get("ended"))
        ok = False
    if not any(want in h["name"] for h in held):
        print("FAIL: no holder named with %r" % want)
        ok = False
    if named < 0.95 * site["bytes"]:
        print("FAIL: %.1f%% of the largest site named" % (100.0 * named / max(site["bytes"], 1)))
        ok = False
    if ok:
        print("PASS: the largest block is held by %s (%.1f%% named)" % (want, 100.0 * named / site["bytes"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
