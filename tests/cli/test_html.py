"""`gpuleak html`, end to end in headless Chromium: tests/cli/html_test.py
(its own docstring says what it checks; it also runs alone). What it
printed is kept in BUILD/html-test.txt (the big page's times),
BUILD/html-test-pages.txt and BUILD/html-test-others.txt. The three parts
run side by side."""
import os
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT


@pytest.mark.parametrize("part", ["pages", "others", "large"])
def test_the_page(tmp_path, part):
    # From a folder deeper than any checkout's: Chromium's socket under a
    # long $TMPDIR once failed every page in CI, and never here.
    deep = tmp_path / ("d" * 100) / ("e" * 100)
    deep.mkdir(parents=True)
    proc = subprocess.run([sys.executable, "tests/cli/html_test.py", str(BUILD), part], cwd=ROOT,
                          env={**os.environ, "TMPDIR": str(deep)},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    (BUILD / ("html-test.txt" if part == "large" else f"html-test-{part}.txt")).write_text(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-4000:]
