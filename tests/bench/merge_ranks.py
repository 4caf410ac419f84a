#!/usr/bin/env python3
"""merge_ranks.py: `gpuleak merge` over the reports of a job of many ranks
(issue 34's benchmark): RANKS synthetic reports of about 400 KB each
(tests/cli/html_report.py's, 500 sites), one rank leaking ten times as much
as the others; prints the merge's time and peak memory (not asserted: a
benchmark, docs/performance.md) and whether the outlier rank was named.

usage: tests/bench/merge_ranks.py [BUILD_DIR] [--ranks N] [--sites N]"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import html_report  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--sites", type=int, default=500)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuleak-merge-") as tmp:
        base = html_report.build(a.sites, a.sites * 10, 0, 1000, 7)
        outlier = a.ranks * 617 // 1000
        sizes = []
        for rank in range(a.ranks):
            report = json.loads(json.dumps(base)) if rank == outlier else base
            report["process"]["rank"], report["process"]["pid"] = rank, 1000 + rank
            if rank == outlier:
                for site in report["leaks"]:
                    site["bytes"] *= 10
                report["totals"]["leaked_bytes"] *= 10
            path = os.path.join(tmp, "rank-%04d.json" % rank)
            with open(path, "w") as f:
                json.dump(report, f, separators=(",", ":"))
            sizes.append(os.path.getsize(path))
        paths = sorted(os.path.join(tmp, n) for n in os.listdir(tmp))
        t = time.monotonic()
        p = subprocess.run([os.path.join(a.build, "gpuleak"), "merge"] + paths,
                           capture_output=True, text=True)
        wall = time.monotonic() - t
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        named = any(line.strip().startswith("rank %d:" % outlier) for line in p.stdout.splitlines())
        print("merge of %d reports of %.0f KB: exit %d, %.2f s, peak %.0f MiB; rank %d named: %s"
              % (a.ranks, sum(sizes) / len(sizes) / 1e3, p.returncode, wall, peak_mib, outlier,
                 "yes" if named else "no"))
        for line in p.stdout.splitlines()[:6]:
            print("  | " + line)
        return 0 if p.returncode == 0 and named else 1


if __name__ == "__main__":
    sys.exit(main())
