"""`gpuleak check`: the budgets, suppressions, JUnit, the groups by
origin line, and what a report taken while the program ran (a snapshot,
a dump on request, a signal's report) lets it judge."""
import subprocess

import pytest

from conftest import DEMO, FIX, derive, gpuleak, one_line, with_status


def well_formed(xml):
    return subprocess.run(["xmllint", "--noout", str(xml)]).returncode == 0


@pytest.fixture(scope="module")
def supp(t):
    path = t / "supp.txt"
    path.write_text("# ours\nleak:keep_for_logging\nleak:*model.py\n\nleak:stage_batch*\n")
    return str(path)


@pytest.fixture(scope="module")
def nogrowth(t):
    return derive(DEMO, t / "nogrowth.json", lambda d: d.pop("growth"))


def test_default_budget():
    r = gpuleak("check", DEMO, code=1)
    assert (f"FAIL {DEMO}: --max-leaked 0 B: leak of 10485760 byte(s) in 5 allocation(s) of "
            "device memory at tests/demo/demo.c:23 in keep_for_logging") in r.out
    assert "at /src/model.py:17 in forward" in r.out
    assert "libcublas* (default)" in r.out
    assert "leak of 4194304" not in r.out
    assert "PASS" in gpuleak("check", DEMO, "--max-leaked", "20MiB", code=0).out
    r = gpuleak("check", DEMO, "--max-leaked", "13.5MiB", "--no-default-suppressions", code=1)
    assert ("leak of 4194304 byte(s) in 1 allocation(s) of device memory at "
            "tests/demo/demo.c:63 in main") in r.out


def test_suppressions(t, supp, nogrowth):
    r = gpuleak("check", DEMO, "--max-leaked", "0", "--suppressions", supp, code=0)
    assert "keep_for_logging" in r.out
    assert "10485760 keep_for_logging" in r.out
    # With no budget, growth is judged at 0 too where the report judged it
    # (a Python program's kept tensors are freed by its shutdown, not
    # leaked), and left be where it did not.
    r = gpuleak("check", DEMO, "--suppressions", supp, code=1)
    assert (f"FAIL {DEMO}: --max-growth 0 B: growth of 6291456 byte(s) of device memory at "
            "tests/demo/demo.c:23 in keep_for_logging") in r.out
    assert f"PASS {DEMO}: --max-leaked 0 B" in r.out
    r = gpuleak("check", nogrowth, "--suppressions", supp, code=0)
    assert "max-growth" not in r.out
    badsupp = t / "badsupp.txt"
    badsupp.write_text("leak:ok\nfrob:x\n")
    r = gpuleak("check", DEMO, "--suppressions", badsupp, code=2)
    assert "badsupp.txt:2: unknown suppression type" in r.err
    gpuleak("check", DEMO, "--suppressions", t / "nope.txt", code=2)


def test_tracking_stopped(t):
    def off(d):
        d["status"].update(tracking="off", reason="out of records")
    r = gpuleak("check", derive(DEMO, t / "off.json", off), "--max-leaked", "100MiB", code=0)
    assert ("tracking stopped early (out of records); the verdict covers only what was "
            "recorded before") in r.out
    r = gpuleak("check", DEMO, "--max-leaked", "100MiB", code=0)
    assert "tracking stopped early" not in r.out


def test_peak_and_growth_budgets(nogrowth):
    r = gpuleak("check", DEMO, "--max-leaked", "1GiB", "--max-peak", "10MiB", code=1)
    assert "--max-peak 10.0 MiB: peak GPU memory 15728640 byte(s)" in r.out
    gpuleak("check", DEMO, "--max-peak", "16MiB", code=0)
    r = gpuleak("check", DEMO, "--max-growth", "1MiB", code=1)
    assert "--max-growth 1.0 MiB: growth of 6291456 byte(s)" in r.out
    gpuleak("check", DEMO, "--max-growth=6MiB", code=0)
    gpuleak("check", nogrowth, "--max-growth", "1MiB", code=2)


def test_growth_not_judged(t, short):
    """A run too short for the growth rule (status.growth_judged false) has
    an empty growth list that says nothing: the growth budget is skipped on
    it, one SKIP line, never "PASS ... growth 0 B". Not judged is not
    passed (issue 40): its own exit code, 0 only when allowed."""
    r = gpuleak("check", short, "--max-growth", "0", code=3)
    assert (f"SKIP {short}: --max-growth 0 B: growth not judged: the run was too short "
            "(3 sample(s) of live memory, too few for the growth rule; docs/growth.md)") in r.out
    assert "PASS" not in r.out
    assert one_line(r.out)
    r = gpuleak("check", short, code=1)
    assert f"SKIP {short}: --max-growth 0 B: growth not judged" in r.out
    assert f"FAIL {short}: --max-leaked 0 B" in r.out
    r = gpuleak("check", short, "--max-growth", "0", "--allow-unjudged", code=0)
    assert f"SKIP {short}: --max-growth 0 B" in r.out
    junit = t / "junit-short.xml"
    gpuleak("check", short, "--max-growth", "0", "--max-peak", "1GiB", "--junit", junit, code=3)
    assert well_formed(junit)
    xml = junit.read_text()
    assert 'tests="2" failures="0" errors="0" skipped="1"' in xml
    assert '<testcase classname="gpuleak" name="max-growth">' in xml
    assert ('<skipped message="growth not judged: the run was too short '
            '(3 sample(s) of live memory') in xml


def test_growth_judged_or_not_said_right(t):
    def judged(d):
        d["growth"] = []
        d["status"] = {"moment": "exit", "complete": True, "growth_samples": 3,
                       "growth_judged": True}
    path = derive(DEMO, t / "judged.json", judged)
    r = gpuleak("check", path, "--max-growth", "0", code=0)
    assert f"PASS {path}: --max-growth 0 B: growth 0 B" in r.out

    def badly(d):
        judged(d)
        d["status"]["growth_judged"] = "no"
    r = gpuleak("check", derive(DEMO, t / "short-bad.json", badly), code=2)
    assert '"status.growth_judged" is not a boolean' in r.err
    assert one_line(r.err)


def test_sites_of_one_line_are_one_fail_line(t):
    """Sites that share an origin line are one FAIL line, their bytes
    summed, the largest first."""
    line = {"function": "forward", "file": "/src/model.py", "line": 17, "module": None,
            "python": True}

    def one_origin(d):
        for leak in d["leaks"]:
            if leak["site"] in (4, 9, 1):
                leak["origin"] = dict(line)
            if leak["site"] == 1:
                leak["device"] = 1  # another kind (pinned host) and device: a line of its own
    r = gpuleak("check", derive(DEMO, t / "oneline.json", one_origin), "--max-leaked", "0",
                "--no-default-suppressions", code=1)
    assert ("leak of 12582912 byte(s) in 7 allocation(s) of device memory at "
            "/src/model.py:17 in forward (2 sites)") in r.out
    assert "leak of 10485760" not in r.out
    assert ("leak of 1048576 byte(s) in 1 allocation(s) of pinned host memory at "
            "/src/model.py:17 in forward") in r.out


def test_a_tensor_is_never_hidden_by_the_allocators_rule(t):
    """PyTorch's allocator default rule hides its segments, never its tensors."""
    def with_tensor(d):
        seg = next(leak for leak in d["leaks"] if leak["site"] == 4)
        frame = {"function": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
                 "file": None, "line": None, "module": "/x/libc10_cuda.so", "offset": "0x10",
                 "address": "0x10", "inlined": False}
        seg["stack"] = [frame] + seg["stack"]
        d["leaks"] = [seg, dict(seg, site=99, kind="tensor")]
    r = gpuleak("check", derive(DEMO, t / "tensor.json", with_tensor), "--max-leaked", "0", code=1)
    assert "of PyTorch tensor memory at" in r.out
    assert "*c10*cuda*CUDACachingAllocator* (default)" in r.out


def test_sizes_and_options():
    assert one_line(gpuleak("check", DEMO, "--max-leaked", "12XB", code=2).err)
    r = gpuleak("check", DEMO, "--fail-on-leak", "20M", code=0)
    assert f"PASS {DEMO}: --fail-on-leak 20.0 MiB" in r.out
    gpuleak("check", DEMO, "--max-leaked=20m", code=0)
    assert "--max-leaked needs a value" in gpuleak("check", DEMO, "--max-leaked", code=2).err
    gpuleak("check", code=2)
    gpuleak("check", "--frob", DEMO, code=2)


def test_junit(t, text_file):
    junit = t / "junit.xml"
    gpuleak("check", DEMO, DEMO, "--max-peak", "1MiB", "--junit", junit, code=1)
    assert well_formed(junit)
    assert ('<testsuites name="gpuleak" tests="2" failures="2" errors="0" skipped="0">'
            in junit.read_text())
    junit2 = t / "junit2.xml"
    gpuleak("check", DEMO, text_file, "--junit", junit2, code=2)
    assert well_formed(junit2)
    assert "<error" in junit2.read_text()
    junit3 = t / "junit3.xml"
    gpuleak("check", DEMO, "--max-leaked", "1GiB", "--junit", junit3, code=0)
    assert well_formed(junit3)


SNAPSHOT = f"{FIX}/snapshot.json"


def test_a_snapshot(t):
    """A snapshot lists what was live while the program ran: the leak
    budget is skipped (one line, not a failure); growth and peak are
    judged as ever."""
    r = gpuleak("check", SNAPSHOT, "--max-leaked", "0", code=3)
    assert (f"SKIP {SNAPSHOT}: --max-leaked 0 B: a snapshot taken while the program ran "
            "(moment snapshot): live is not leaked; growth and peak are judged") in r.out
    assert "FAIL" not in r.out
    r = gpuleak("check", SNAPSHOT, "--max-peak", "10MiB", code=1)
    assert f"FAIL {SNAPSHOT}: --max-peak 10.0 MiB" in r.out
    r = gpuleak("check", SNAPSHOT, DEMO, code=1)
    assert f"SKIP {SNAPSHOT}" in r.out
    assert f"FAIL {DEMO}: --max-leaked 0 B" in r.out
    junit = t / "junit-snap.xml"
    gpuleak("check", SNAPSHOT, "--max-leaked", "0", "--max-peak", "16MiB", "--junit", junit, code=3)
    assert well_formed(junit)
    xml = junit.read_text()
    assert '<testsuites name="gpuleak" tests="2" failures="0" errors="0" skipped="1">' in xml
    assert '<testcase classname="gpuleak" name="max-leaked">' in xml
    assert ('<skipped message="a snapshot taken while the program ran (moment snapshot): '
            'live is not leaked; growth and peak are judged"/>') in xml


def test_a_dump_on_request(t):
    """No "complete": the moment says it."""
    path = derive(DEMO, t / "request.json", with_status({"moment": "request"}))
    r = gpuleak("check", path, "--max-leaked", "0", code=3)
    assert (f"SKIP {path}: --max-leaked 0 B: a dump on request taken while the program ran "
            "(moment request)") in r.out


def test_a_signals_report(t):
    """A report a signal wrote as it killed the program is final, but lists
    what was live then (the program's frees never ran): the leak budget is
    skipped as on a snapshot; growth and peak are judged. A CI job's
    timeout (SIGTERM) judged nothing: exit 3, not a green build."""
    path = derive(DEMO, t / "signal.json", with_status(
        {"moment": "signal", "complete": True, "signal": 15, "locks_skipped": 2}))
    r = gpuleak("check", path, "--max-leaked", "0", code=3)
    assert (f"SKIP {path}: --max-leaked 0 B: a report taken when the program was killed by "
            "signal 15 (SIGTERM): live is not leaked; growth and peak are judged") in r.out
    assert "FAIL" not in r.out
    r = gpuleak("check", path, "--max-leaked", "0", "--max-peak", "10MiB", "--max-growth", "1MiB",
                code=1)
    assert f"SKIP {path}: --max-leaked" in r.out
    assert f"FAIL {path}: --max-peak 10.0 MiB" in r.out
    assert f"FAIL {path}: --max-growth 1.0 MiB" in r.out
    gpuleak("check", path, "--max-leaked", "0", "--allow-unjudged", code=0)
    junit = t / "junit-signal.xml"
    gpuleak("check", path, "--max-leaked", "0", "--junit", junit, code=3)
    xml = junit.read_text()
    assert 'skipped="1"' in xml
    assert '<skipped message="a report taken when the program was killed by signal 15 (SIGTERM)' in xml
    unnamed = derive(DEMO, t / "signal-unnamed.json", with_status(
        {"moment": "signal", "complete": True, "signal": 40}))
    r = gpuleak("check", unnamed, "--max-leaked", "0", code=3)
    assert ("--max-leaked 0 B: a report taken when the program was killed by signal 40: "
            "live is not leaked") in r.out


def test_status_complete_not_a_boolean(t):
    path = derive(DEMO, t / "badcomplete.json", with_status({"moment": "snapshot", "complete": "no"}))
    r = gpuleak("check", path, code=2)
    assert '"status.complete" is not a boolean' in r.err
    assert one_line(r.err)


def test_an_oom_snapshot(t):
    path = derive(f"{FIX}/oom.json", t / "oom-snapshot.json",
                  with_status({"moment": "snapshot", "complete": False}))
    r = gpuleak("check", path, "--max-leaked", "0", "--max-growth", "0", code=3)
    assert f"SKIP {path}" in r.out
    assert f"PASS {path}: --max-growth 0 B: growth 0 B" in r.out


def test_check_needs_a_size_before_the_files():
    """run takes a gate alone (0); check needs its size: a report given
    where the size goes is named as such (it read 'bad size "FILE"')."""
    r = gpuleak("check", "--fail-on-leak", DEMO, code=2)
    assert (f'gpuleak check: --fail-on-leak needs a SIZE before the files: "{DEMO}" is a file '
            "(--fail-on-leak 0 allows none)") in r.err
    assert one_line(r.err)
    assert 'bad size "20XB"' in gpuleak("check", "--max-leaked", "20XB", DEMO, code=2).err



def test_the_total_against_the_budget(t):
    """Issue 40: a budget's first FAIL line gives the total against it
    and over how many sites: sites each under 12 MiB (10, 2 and 1 MiB)
    fail it together, and the line says so."""
    r = gpuleak("check", DEMO, "--max-leaked", "12MiB", code=1)
    first = r.out.splitlines()[0]
    assert first == (f"FAIL {DEMO}: --max-leaked 12.0 MiB: 13.0 MiB leaked in all (13631488 byte(s)), "
                     "at 3 site(s)")
    assert "leak of 10485760 byte(s)" in r.out
    r = gpuleak("check", DEMO, "--max-growth", "1MiB", code=1)
    assert (f"FAIL {DEMO}: --max-growth 1.0 MiB: grew by 6.0 MiB in all (6291456 byte(s)), "
            "at 1 site(s)") in r.out
    assert "PASS" not in gpuleak("check", DEMO, "--max-leaked", "12MiB", code=1).out

    def no_site(d):
        d["growth"] = {"bytes": 6291456, "sites": []}
    r = gpuleak("check", derive(DEMO, t / "growth-no-site.json", no_site), "--max-growth", "1MiB", code=1)
    assert "--max-growth 1.0 MiB: grew by 6.0 MiB in all (6291456 byte(s)), at no site recorded" in r.out


def test_what_no_budget_reads_is_not_parsed(t):
    """Without --max-peak, check never reads the peak section nor the
    timeline (half a big report's text, and its time): a report whose
    peak section is not what the format says is judged on the rest, and
    refused as soon as a peak budget needs it."""
    def spoil(d):
        d["peak"]["sites"] = {"not": ["a list"]}
        d["timeline"]["points"] = "not a list"
    broken = derive(DEMO, t / "broken-peak.json", spoil)
    assert gpuleak("check", broken, code=1).out == gpuleak("check", DEMO, code=1).out.replace(DEMO, broken)
    r = gpuleak("check", broken, "--max-peak", "1GiB", code=2)
    one_line(r.err)
    assert "peak" in r.err
