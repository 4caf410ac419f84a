"""`gpuleak html`, end to end in headless Chromium: tests/cli/html_test.py
(its own docstring says what it checks; it also runs alone). What it
printed is kept in BUILD/html-test.txt (the big page's times),
BUILD/html-test-pages.txt and BUILD/html-test-others.txt."""
import os
import subprocess
import sys

from conftest import BUILD, ROOT


PARTS = ("pages", "others", "large")


def test_the_pages(tmp_path):
    """The three parts at once, in one test: they wait on Chromium more than
    they compute, and apart they would all go to one worker, which takes
    pending tests in runs of neighbours."""
    # From a folder deeper than any checkout's: Chromium's socket under a
    # long $TMPDIR once failed every page in CI, and never here.
    deep = tmp_path / ("d" * 100) / ("e" * 100)
    deep.mkdir(parents=True)
    procs = {part: subprocess.Popen([sys.executable, "tests/cli/html_test.py", str(BUILD), part], cwd=ROOT,
                                    env={**os.environ, "TMPDIR": str(deep)}, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
             for part in PARTS}
    failed = []
    for part, proc in procs.items():
        out, _ = proc.communicate(timeout=900)
        (BUILD / ("html-test.txt" if part == "large" else f"html-test-{part}.txt")).write_text(out)
        if proc.returncode != 0:
            failed.append(f"{part}: exit {proc.returncode}\n{out[-3000:]}")
    assert not failed, "\n".join(failed)
