"""What the gpuleak command's tests share (pytest, `make cli-test`).

Each test_*.py here runs the built command end to end, from the
repository root, over the fixtures in tests/cli/fixtures and reports
derived from them. GPULEAK_TEST_BUILD names the build folder (build by
default; `make sanitize` passes the one built with ASan and UBSan)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GPULEAK_TEST_BUILD", "build"))
if not BUILD.is_absolute():
    BUILD = ROOT / BUILD
GPULEAK = str(BUILD / "gpuleak")
# Relative, as users type them: the command's messages name files so.
FIX = "tests/cli/fixtures"
DEMO = f"{FIX}/demo.json"


class Result:
    """One finished command: its exit code, stdout and stderr."""

    def __init__(self, argv, proc):
        self.argv = argv
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return f"gpuleak {' '.join(self.argv)}: exit {self.code}\n{self.err[-2000:]}"


def gpuleak(*args, code, env=None, timeout=120, exe=GPULEAK):
    """Runs `gpuleak ARGS` from the repository root; asserts its exit code
    is CODE and gives the Result."""
    argv = [str(a) for a in args]
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([exe, *argv], cwd=ROOT, env=full_env, capture_output=True,
                          text=True, timeout=timeout)
    done = Result(argv, proc)
    assert done.code == code, f"wanted exit {code}: {done!r}"
    return done


def one_line(text):
    """Bad input is said in one line."""
    return len(text.splitlines()) == 1


def derive(path, dest, change):
    """Writes to dest the report at path, read as JSON and passed through
    change (which edits it in place); gives dest."""
    with open(ROOT / path) as fh:
        report = json.load(fh)
    change(report)
    with open(dest, "w") as fh:
        json.dump(report, fh)
    return str(dest)


def with_status(status):
    """A change for derive: the report's status replaced by status."""
    return lambda report: report.__setitem__("status", status)


def too_short(report):
    """A run too short for the growth rule: no growth listed, and the
    status says it was not judged."""
    report["growth"] = []
    report["status"] = {"moment": "exit", "complete": True, "growth_samples": 3,
                        "growth_judged": False}


@pytest.fixture(scope="session", autouse=True)
def temporary_files_stay_in_the_session(tmp_path_factory):
    """What the commands leave in $TMPDIR (the folder a failed gate of
    `gpuleak run` keeps, the shim's fallback reports) goes under pytest's
    own folder for the session, not /tmp: run by hand as under make."""
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp_path_factory.getbasetemp())
    yield
    if saved is None:
        del os.environ["TMPDIR"]
    else:
        os.environ["TMPDIR"] = saved


@pytest.fixture(scope="module")
def t(tmp_path_factory):
    """A folder for one test file's derived reports and outputs."""
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def short(t):
    """demo.json, from a run too short to judge growth."""
    return derive(DEMO, t / "short.json", too_short)


@pytest.fixture(scope="module")
def text_file(t):
    """A file that is not JSON."""
    path = t / "text.json"
    path.write_text("not json")
    return str(path)
