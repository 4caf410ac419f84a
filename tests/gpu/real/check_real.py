"""check_real.py REPORT SCRIPT (--line N [--holder TEXT] | --clean): the
acceptance rule for the real-library scripts (issue 22). Sites are grouped
by their origin line, bytes summed, as the views group them.

--line N: the largest growth line is SCRIPT:N, and among what was held when
Python finished, SCRIPT:N is there with a holder whose name contains TEXT;
with TEXT, the holder search also ended done or all and named at least 95%
of the line's held bytes (issue 31).
--clean: no growth finding at all, no leak at the script's lines, and
PyTorch's cuBLAS workspace listed as kept by cuBLAS (not a leak)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import reports  # noqa: E402


def by_line(sites):
    """[(bytes, (file, line), holders)] largest first."""
    groups = {}
    for site in sites:
        origin = site.get("origin") or {}
        key = (os.path.basename(origin.get("file") or "?"), origin.get("line"))
        bytes_, holders = groups.get(key, (0, []))
        groups[key] = (bytes_ + site["bytes"], holders + (site.get("held_by") or []))
    return sorted(((b, k, h) for k, (b, h) in groups.items()), key=lambda g: -g[0])


def show(title, groups):
    print("%s: %d line(s)" % (title, len(groups)))
    for bytes_, (f, line), holders in groups[:6]:
        names = ", ".join(sorted({("graph of " if h.get("graph") else "") + h["name"] for h in holders}))
        print("  %12d B  %s:%s  held by: %s" % (bytes_, f, line, names or "-"))


def main():
    report = reports.load(sys.argv[1])
    script = os.path.basename(sys.argv[2])
    growth = by_line(report.get("growth") or [])
    held = by_line(((report.get("held_at_finish") or {}).get("sites")) or [])
    show("growth", growth)
    show("held when Python finished", held)
    search = (report.get("held_at_finish") or {}).get("holders_search")
    print("holders search: %s" % search)
    leaks = by_line(report.get("leaks") or [])
    show("leaks", leaks)
    kept = report.get("kept_by_libraries") or []
    print("kept by libraries: %s" % ", ".join("%s %d B" % (k.get("owner"), k["bytes"]) for k in kept))
    if sys.argv[3] == "--clean":
        ok = True
        if growth:
            print("FAIL: a clean loop has a growth finding")
            ok = False
        # Every script multiplies: PyTorch's cuBLAS workspace is live at exit,
        # and must be cuBLAS's, not a leak of the script's.
        # (a tensor's memory, or cuBLAS's own where the program cleared
        # PyTorch's workspaces, as Lightning does at the end of fit)
        if not any(k.get("owner") == "cublas" for k in kept):
            print("FAIL: no cuBLAS workspace among what libraries kept")
            ok = False
        mine = [g for g in leaks if g[1][0] == script]
        if mine:
            print("FAIL: a clean loop leaks at %s" % [g[1] for g in mine])
            ok = False
        if ok:
            print("PASS: no growth finding, no leak of the script's, cuBLAS's workspace kept")
        return 0 if ok else 1
    want = int(sys.argv[4])
    holder = sys.argv[6] if len(sys.argv) > 6 and sys.argv[5] == "--holder" else None
    ok = True
    if not growth or growth[0][1] != (script, want):
        print("FAIL: the largest growth line is %s, want %s:%d" % (growth[0][1] if growth else None, script, want))
        ok = False
    line = [g for g in held if g[1] == (script, want)]
    if not line:
        print("FAIL: %s:%d is not among what was held when Python finished" % (script, want))
        ok = False
    elif holder and not any(holder in h["name"] for h in line[0][2]):
        print("FAIL: %s:%d is held by %s, want a name with %r"
              % (script, want, [h["name"] for h in line[0][2]], holder))
        ok = False
    elif holder:
        named = sum(h["bytes"] for h in line[0][2])
        share = 100.0 * named / max(line[0][0], 1)
        print("named: %.1f%% of %s:%d's %d held bytes" % (share, script, want, line[0][0]))
        if share < 95.0:
            print("FAIL: under 95%% of the line's held bytes named")
            ok = False
        if (search or {}).get("ended") not in ("done", "all"):
            print("FAIL: the holder search ended %s" % (search or {}).get("ended"))
            ok = False
    if ok:
        print("PASS: %s:%d grew the most and is held by %s" % (script, want, holder or "something"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
