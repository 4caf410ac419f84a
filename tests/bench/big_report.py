#!/usr/bin/env python3
"""big_report.py: reading one big report (issue 33's benchmark). Writes a
synthetic report of SITES sites holding ALLOCATIONS allocations
(tests/cli/html_report.py's; 100,000 and 1,000,000 make the 66 MB report of
the issue), then times, interleaved over ROUNDS rounds, `gpuleak report`,
`gpuleak check` and `gpuleak html` on it, and Python's own json.load of it
as the plain parse they are judged against. Prints each one's median and
range of wall time and its peak memory (not asserted: a benchmark,
docs/performance.md).

usage: tests/bench/big_report.py [BUILD_DIR] [--sites N] [--allocations N] [--rounds N]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Python's json.load in a child of its own, so that its time and memory are
# its own, as each command's are.
PLAIN = "import json, sys; json.load(open(sys.argv[1]))"


def timed(cmd):
    """Wall seconds and peak resident KiB of cmd, run to its end."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sites", type=int, default=100_000)
    ap.add_argument("--allocations", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    g = os.path.join(a.build, "gpuleak")
    with tempfile.TemporaryDirectory(prefix="gpuleak-big-") as tmp:
        report = os.path.join(tmp, "big.json")
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "cli", "html_report.py"), report,
                        "--sites", str(a.sites), "--allocations", str(a.allocations)], check=True)
        size = os.path.getsize(report)
        runs = {
            "json.load (Python, plain parse)": [sys.executable, "-c", PLAIN, report],
            "gpuleak report": [g, "report", report],
            "gpuleak check": [g, "check", report],
            "gpuleak html": [g, "html", report, "-o", os.path.join(tmp, "page.html")],
        }
        times = {name: [] for name in runs}
        memory = {name: 0 for name in runs}
        for _ in range(a.rounds):
            for name, cmd in runs.items():
                seconds, kib, status = timed(cmd)
                if status not in (0, 1):  # check exits 1 on the leaks it finds
                    sys.exit("big_report: %s exited %d" % (name, status))
                times[name].append(seconds)
                memory[name] = max(memory[name], kib)
        print("report: %d sites, %d allocations, %.1f MB; %d rounds" %
              (a.sites, a.allocations, size / 1e6, a.rounds))
        for name in runs:
            t = times[name]
            print("%-34s %6.2f s [%.2f-%.2f]  peak %5.0f MiB (%.1fx the file)" %
                  (name, statistics.median(t), min(t), max(t), memory[name] / 1024,
                   memory[name] * 1024 / size))


if __name__ == "__main__":
    main()
