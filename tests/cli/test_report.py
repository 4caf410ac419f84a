"""`gpuleak report`: the golden views, the sections a report may hold,
the moments a report was taken at, version 2's stack tables, and bad
input (one line naming the file, exit 2) for every reading command."""
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import DEMO, FIX, GPULEAK, ROOT, derive, gpuleak, one_line, with_status

GOLDEN = sorted((ROOT / "tests" / "cli" / "golden").glob("*.txt"))


@pytest.mark.parametrize("golden", GOLDEN, ids=[g.stem for g in GOLDEN])
def test_golden(golden):
    """Each golden file's first line is the command; the rest, its output
    (stdout and stderr together)."""
    first, want = golden.read_text().split("\n", 1)
    args = first.removeprefix("# gpuleak ").split()
    proc = subprocess.run([GPULEAK, *args], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.stdout == want


def test_layout_recorded_in_the_report():
    """layout.json records its interpreter's layout ("python_layout": a
    standard library in pylib/python3.11, a package in a --target folder,
    neither known to the built-in globs), and origins as a shim without it
    wrote them. Judged again, its Python frames are judged by the layout;
    '!' globs still come first; without the field, the built-in globs alone."""
    layout = f"{FIX}/layout.json"
    r = gpuleak("report", layout, code=0)
    assert "/opt/py/pylib/python3.11/sched.py:151 in scheduler.run" in r.out
    r = gpuleak("check", "--origin-rules", "default", layout, code=1)
    assert "device memory at /srv/app/layout_demo.py:48 in through_stdlib" in r.out
    assert ("device memory at /srv/app/layout_demo.py:53 in through_library, "
            "via Grid.make __init__.py:15") in r.out
    r = gpuleak("check", "--origin-skip", "!*/gridlib/*", layout, code=1)
    assert "device memory at /srv/app/deps/gridlib/__init__.py:15 in Grid.make" in r.out
    assert "device memory at /srv/app/layout_demo.py:48 in through_stdlib" in r.out
    r = gpuleak("check", "--origin-rules", "none", layout, code=1)
    assert "device memory at /opt/py/pylib/python3.11/sched.py:151 in scheduler.run" in r.out


def test_layout_absent(t):
    nolayout = derive(f"{FIX}/layout.json", t / "nolayout.json", lambda d: d.pop("python_layout"))
    r = gpuleak("check", "--origin-rules", "default", nolayout, code=1)
    assert "device memory at /opt/py/pylib/python3.11/sched.py:151 in scheduler.run" in r.out
    assert "device memory at /srv/app/deps/gridlib/__init__.py:15 in Grid.make" in r.out


def test_a_search_the_programs_audit_hooks_kept_from_running(t):
    """The shim runs nothing in an interpreter with audit hooks; the view
    says so where it would say how the search went, and nothing else."""
    def hooked(report):
        report["held_at_finish"]["holders_search"] = {
            "objects": 0, "seconds": 0, "ended": "audit_hooks", "named_allocations": 0,
            "named_bytes": 0}
    r = gpuleak("report", derive(f"{FIX}/layout.json", t / "hooked.json", hooked), code=0)
    assert ("  The search for holders did not run: the program has audit hooks (sys.addaudithook), "
            "which would have seen its work, and gpuleak runs none of the program's code.\n") in r.out
    assert "The search for holders looked at" not in r.out


def test_report_and_its_options(t):
    r = gpuleak("report", DEMO, code=0)
    assert ("Leak of 10485760 byte(s) in 5 allocation(s) of device memory on device 0, "
            "allocated from:") in r.out
    assert "#0 forward in /src/model.py:17 (Python)" in r.out
    assert "GPU memory over time: peak" in r.out
    r = gpuleak("report", "--kind", "host", DEMO, code=0)
    assert "tests/demo/demo.c:23 in keep_for_logging" not in r.out
    gpuleak("report", "--device=0", "--top", "1", "--full-stacks", DEMO, code=0)
    gpuleak("report", "--kind", "bogus", DEMO, code=2)
    gpuleak("report", "--top", "x", DEMO, code=2)
    gpuleak("report", code=2)
    r = gpuleak("report", t / "none.json", code=2)
    assert one_line(r.err)


def test_peak_composition_at_which_peak(t):
    """With PyTorch's tensors seen, the peak section holds what each site
    had at the tensors' peak (peak.sites_at_bytes), not at the GPU's
    (peak.bytes): its shares are of that, and its title says which peak."""
    def at_tensors(d):
        d["peak"].update(sites_at="tensors", sites_at_bytes=20971520,
                         sites_at_time_ns=d["peak"]["time_ns"])
    r = gpuleak("report", derive(DEMO, t / "tensor-peak.json", at_tensors), code=0)
    assert "Peak composition (live at the tensors' peak, 20.0 MiB allocated):" in r.out
    assert "    10.0 MiB  50.0%" in r.out
    assert "     4.0 MiB  20.0%" in r.out
    r = gpuleak("report", DEMO, code=0)
    assert "Peak composition (live at the peak):" in r.out
    assert "    10.0 MiB  66.7%" in r.out
    bad = derive(DEMO, t / "tensor-peak-bad.json", lambda d: d["peak"].__setitem__("sites_at", 3))
    r = gpuleak("report", bad, code=2)
    assert '"peak.sites_at" is not a string' in r.err
    assert one_line(r.err)


def test_a_fifo_and_a_pipe(t):
    """A FIFO no one writes blocked the reader for good (issue 32 item 10);
    it reads as empty now. A pipe with a writer is read as a file is."""
    fifo = t / "fifo.json"
    os.mkfifo(fifo)
    r = gpuleak("report", fifo, code=2, timeout=10)
    assert "fifo.json" in r.err
    proc = subprocess.Popen([GPULEAK, "report", "/dev/stdin"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = threading.Thread(target=lambda: proc.stdin.write(Path(ROOT / DEMO).read_text()))
    writer.start()
    writer.join()
    proc.stdin.close()
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0
    assert "demo.c:31 in train_step" in out


BAD = {
    "negative": lambda d: d["totals"].__setitem__("leaked_bytes", -5),
    "wrongtype": lambda d: d["leaks"][0].__setitem__("bytes", "10"),
    "huge": lambda d: d["leaks"][0].__setitem__("bytes", 1e300),
    "nototals": lambda d: d.pop("totals"),
    "badframe": lambda d: d["leaks"][0]["stack"][0].__setitem__("offset", 12),
}


@pytest.fixture(scope="module")
def bad_files(t):
    """Reports each reader must refuse, by name."""
    files = {name: derive(DEMO, t / f"{name}.json", change) for name, change in BAD.items()}
    for name, text in (("empty", ""), ("text", "not json"),
                       ("trunc", (ROOT / DEMO).read_text()[:300]),
                       ("noformat", '{"version":1}\n'),
                       ("v99", '{"format":"gpuleak-report","version":99}\n')):
        (t / f"{name}.json").write_text(text)
        files[name] = str(t / f"{name}.json")
    return files


@pytest.mark.parametrize("command", ["report", "check", "export", "merge", "diff"])
def test_bad_input_is_one_line_naming_the_file(bad_files, command):
    for name, path in bad_files.items():
        if command == "diff":
            gpuleak("diff", DEMO, path, code=2)
            continue
        extra = ["--format", "folded"] if command == "export" else []
        r = gpuleak(command, path, *extra, code=2)
        assert one_line(r.err), name
        assert f"gpuleak: {path}: " in r.err, name


@pytest.mark.parametrize("name,said", [
    ("noformat", 'not a gpuleak report: "format" is missing'),
    ("v99", "unsupported report version 99"),
    ("trunc", "truncated"),
    ("negative", '"totals.leaked_bytes" is negative'),
])
def test_bad_input_says_what_is_wrong(bad_files, name, said):
    assert said in gpuleak("report", bad_files[name], code=2).err


def test_moments(t):
    """A dump on request and a signal's report list what was live then;
    a report without status.moment has no moment line."""
    request = derive(DEMO, t / "request.json", with_status({"moment": "request"}))
    r = gpuleak("report", request, code=0)
    assert ("  moment:   request (a dump on request), taken while the program ran: what it "
            "lists as leaks was live then, not left at exit") in r.out
    assert "17.0 MiB live then" in r.out
    assert "Leaks (live when the report was taken, the program running): 4 site(s)" in r.out
    signal = derive(DEMO, t / "signal.json", with_status(
        {"moment": "signal", "complete": True, "signal": 15, "locks_skipped": 2}))
    r = gpuleak("report", signal, code=0)
    assert ("  moment:   signal, written as signal 15 (SIGTERM) ended the program: what it "
            "lists as leaks was live then") in r.out
    assert "  locks:    2 lock(s) of the shim skipped" in r.out
    assert "Leaks (live when a signal ended the program)" in r.out
    r = gpuleak("report", DEMO, code=0)
    assert "moment:" not in r.out
    assert "locks:" not in r.out


def test_growth_not_judged(short):
    r = gpuleak("report", short, code=0)
    assert "  growth:   not judged: the run was too short (3 sample(s) of live memory)" in r.out


def test_the_oom(t):
    """The OOM: shown after the failures; a malformed section is left out,
    the report still read; the origin options judge its sites again too."""
    oom = f"{FIX}/oom.json"
    r = gpuleak("report", oom, "--top", "1", code=0)
    assert "Out of memory: 2 failure(s) in all; the first, at 0.00 s:" in r.out
    assert ("  2097152 byte(s) of device memory asked on device 0, from "
            "tests/integration/prog_growth.c:50 in ask_too_much") in r.out
    assert ("       1 device        3.0 MiB 100.0%  "
            "tests/integration/prog_growth.c:43 in hold_for_oom") in r.out
    badoom = derive(oom, t / "badoom.json", lambda d: d["oom"].__setitem__("kind", 7))
    r = gpuleak("report", badoom, code=0)
    assert "Out of memory" not in r.out
    assert "Failed allocations: 2 site(s)" in r.out
    r = gpuleak("report", oom, "--origin-skip", "ask_too_much:hold_for_oom", code=0)
    assert "asked on device 0, from tests/integration/prog_growth.c:89 in main" in r.out
    assert "100.0%  tests/integration/prog_growth.c:88 in main" in r.out


def test_kept_and_reachable_judged_again(t):
    """The kept and still-reachable tables are judged again as the leaks are."""
    def listed(r):
        r["kept_by_libraries"], r["reachable_at_exit"], r["leaks"] = r["leaks"], r["leaks"], []
    r = gpuleak("report", derive(f"{FIX}/oom.json", t / "listed.json", listed),
                "--origin-skip", "hold_for_oom", code=0)
    assert "in hold_for_oom" not in r.out
    assert "tests/integration/prog_growth.c:88 in main" in r.out


def as_version_2(d):
    """The fixture is a version 1 report (stacks inline); written as
    version 2, each frame once in "frames", each stack once in "stacks"."""
    frames, pyframes, stacks = [], [], {}

    def index(table, frame):
        if frame not in table:
            table.append(frame)
        return table.index(frame)
    entries = [e for k in ("leaks", "teardown_leaks", "failures", "sites", "growth")
               for e in d.get(k) or []]
    entries += (d.get("peak") or {}).get("sites") or []
    for e in entries:
        st = {"stack": [index(frames, f) for f in e.pop("stack", [])],
              "python_stack": [index(pyframes, f) for f in e.pop("python_stack", [])]}
        stacks.setdefault(str(e["site"]), st)
    d.update(version=2, frames=frames, python_frames=pyframes, stacks=stacks)


@pytest.mark.parametrize("args", ["report", "report --full-stacks", "check --max-leaked 1",
                                  "export --format folded", "export --format csv"])
def test_version_2_reads_as_version_1(t, args):
    v2 = derive(DEMO, t / "v2.json", as_version_2)

    def said(path):
        proc = subprocess.run([GPULEAK, *args.split(), path], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=60)
        return proc.stdout.replace(path, "FILE")
    version_1 = said(DEMO)
    assert len(version_1.splitlines()) > 3
    assert said(v2) == version_1


def test_version_2_bad_tables(t):
    def bad_index(d):
        as_version_2(d)
        next(iter(d["stacks"].values()))["stack"] = [len(d["frames"])]

    def bad_key(d):
        as_version_2(d)
        d["stacks"]["x1"] = d["stacks"].pop(next(iter(d["stacks"])))
    r = gpuleak("report", derive(DEMO, t / "v2-badindex.json", bad_index), code=2)
    assert "names frame" in r.err
    assert one_line(r.err)
    r = gpuleak("report", derive(DEMO, t / "v2-badkey.json", bad_key), code=2)
    assert "is not keyed by a site id" in r.err


def test_a_list_closed_by_the_wrong_bracket_is_refused(t):
    """A list of sites read piecewise ends at the bracket that closes it:
    "[{...}}" was taken as the list (its pieces were good JSON), so
    `report` read it and `html` wrote it into the page as it was, broken
    (found by the fuzzer, its check that a page's two parts make the
    whole)."""
    bad = t / "wrong-bracket.json"
    with open(ROOT / DEMO) as fh:
        d = json.load(fh)
    leaks = json.dumps(d.pop("leaks"))
    text = json.dumps(d)
    bad.write_text(text[:-1] + ', "leaks": ' + leaks[:-1] + "}}")
    for command in (["report"], ["html", "-o", str(t / "wrong-bracket.html")]):
        r = gpuleak(*command, str(bad), code=2)
        assert one_line(r.err) and "not JSON" in r.err and "']' expected" in r.err, r.err
    assert not (t / "wrong-bracket.html").exists()


def test_a_mangled_name_reads_demangled(t):
    """A C++ name the shim left mangled (the program had no C++ runtime:
    nvcc's host code without libstdc++) reads demangled in every view."""
    mangled = derive(DEMO, t / "mangled.json", lambda d: d["leaks"][0]["stack"][0].__setitem__(
        "function", "_ZL16leak_from_staticm.constprop.0"))
    for command, code in (("report", 0), ("check", 1)):
        r = gpuleak(command, mangled, code=code)
        assert "leak_from_static(unsigned long) [clone .constprop.0]" in r.out
        assert "_ZL16leak_from_static" not in r.out


FUZZED = sorted(p for d in ("crashes", "corpus") for p in (ROOT / "tests" / "cli" / d).glob("*")
                if p.is_file())


@pytest.mark.parametrize("path", FUZZED, ids=[p.name for p in FUZZED])
def test_fuzz_finds_replayed(path):
    """Every input the fuzzer kept is read, or refused in one line."""
    proc = subprocess.run([GPULEAK, "report", str(path)], cwd=ROOT, capture_output=True,
                          text=True, errors="replace", timeout=60)
    assert proc.returncode == 0 or (proc.returncode == 2 and one_line(proc.stderr)), proc.stderr
