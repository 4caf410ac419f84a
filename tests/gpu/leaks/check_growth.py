"""check_growth.py REPORT SCRIPT (--line N | --no-leak): the acceptance rule
for the leak scripts. With --line, the top growth site's origin must be
SCRIPT:N; with --no-leak, there must be no growth finding at all. The origin
is the report's own "origin" field when present, else the innermost Python
frame outside torch and the standard library. Prints the growth table."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import reports  # noqa: E402


def origin_of(site):
    origin = site.get("origin")
    if origin:
        return origin.get("file"), origin.get("line"), origin.get("function")
    for frame in site.get("python_stack", []):
        path = frame.get("file") or ""
        if "/torch/" in path or "/lib/python3" in path:
            continue
        return path, frame.get("line"), frame.get("function")
    return None, None, None


def main():
    report_path, script = sys.argv[1], sys.argv[2]
    report = reports.load(report_path)
    growth = report.get("growth", [])
    print("growth sites: %d (torch_allocator %s)" % (len(growth), report.get("torch_allocator")))
    for site in growth[:5]:
        f, line, fn = origin_of(site)
        print("  +%d bytes  %.0f B/s  trend %s  owner %s  origin %s:%s in %s"
              % (site["bytes"], site.get("bytes_per_second", 0), site.get("trend"),
                 site.get("owner"), f and os.path.basename(f), line, fn))
    if sys.argv[3] == "--no-leak":
        if growth:
            print("FAIL: a steady loop produced a growth finding")
            return 1
        print("PASS: no growth finding")
        return 0
    want = int(sys.argv[4])
    if not growth:
        print("FAIL: no growth finding")
        return 1
    f, line, _ = origin_of(growth[0])
    if f and os.path.basename(f) == os.path.basename(script) and line == want:
        print("PASS: top growth site's origin is %s:%d" % (os.path.basename(script), want))
        return 0
    print("FAIL: top growth site's origin is %s:%s, want %s:%d"
          % (f, line, os.path.basename(script), want))
    return 1


if __name__ == "__main__":
    sys.exit(main())
