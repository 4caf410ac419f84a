"""`gpuleak export`: folded stacks, CSV and Chrome's trace, each with the
exact peak, and its refusals."""
import csv
import json

from conftest import DEMO, derive, gpuleak, one_line


def test_folded():
    r = gpuleak("export", DEMO, "--format", "folded", code=0)
    assert "_start;__libc_start_main;__libc_start_call_main;main;train_step;keep_for_logging 10485760" in r.out
    assert "train (train.py:42);forward (model.py:17);_PyEval_EvalFrameDefault;cudaMalloc 2097152" in r.out
    assert len(r.out.splitlines()) == 4


def test_an_empty_export_says_why(short):
    """Issue 40: on stderr; still exit 0."""
    r = gpuleak("export", short, "--format", "folded", "--what", "growth", code=0)
    assert r.out == ""
    assert "no sites to export (the run was too short for the growth rule to judge growth)" in r.err


def test_csv(t):
    timeline = t / "t.csv"
    gpuleak("export", DEMO, "--format", "csv", "-o", timeline, code=0)
    assert "t_s,bytes,device,pool,vmm,managed,host,array" in timeline.read_text()
    notl = derive(DEMO, t / "notl.json", lambda d: d.pop("timeline"))
    r = gpuleak("export", notl, "--format=csv", code=0)
    assert ('4,"device",0,10485760,5,0,10485760,10485760,"keep_for_logging",'
            '"tests/demo/demo.c",23,"demo",0x1291') in r.out


def test_never_onto_its_own_input(t):
    path = derive(DEMO, t / "self.json", lambda d: d.pop("timeline"))
    before = open(path).read()
    r = gpuleak("export", path, "--format", "csv", "-o", path, code=2)
    assert "is the report itself" in r.err
    assert open(path).read() == before


def test_chrome_trace_and_the_exact_peak(t):
    """The exact peak survives the export: the highest max_bytes of the
    timeline, in the CSV and in the trace, is the report's peak."""
    trace, timeline = t / "trace.json", t / "t2.csv"
    gpuleak("export", DEMO, "--format", "chrome-trace", "-o", trace, code=0)
    gpuleak("export", DEMO, "--format", "csv", "-o", timeline, code=0)
    ev = json.loads(trace.read_text())["traceEvents"]
    counters = [e for e in ev if e["ph"] == "C"]
    assert len(counters) > 10 and all(isinstance(e["ts"], (int, float)) for e in counters)
    assert any(e["ph"] == "M" for e in ev)
    peak = json.load(open(DEMO))["totals"]["peak_bytes"]
    rows = list(csv.DictReader(open(timeline)))
    assert max(int(r["max_bytes"]) for r in rows) == peak
    assert all(int(r["max_bytes"]) >= int(r["bytes"]) for r in rows)
    highs = [e["args"]["max_bytes"] for e in counters if "max_bytes" in e["args"]]
    assert len(highs) == len(rows) and max(highs) == peak
    kinds = [e["args"] for e in ev if e["name"].startswith("GPU memory by kind")]
    assert kinds and all(set(k) == {"device", "host"} for k in kinds)
    assert not any(e["name"].startswith("PyTorch") for e in ev)
    notl = derive(DEMO, t / "notl-trace.json", lambda d: d.pop("timeline"))
    gpuleak("export", notl, "--format", "chrome-trace", code=0)


def test_tensors_are_a_track_of_their_own(t):
    """With PyTorch's tensors (allocated memory) in the timeline, they are a
    track of their own, never stacked on the driver's kinds (reserved)."""
    def with_tensors(d):
        for p in d["timeline"]["points"]:
            p["kinds"]["tensor"] = p["kinds"]["device"] // 2
    trace = t / "trace-t.json"
    gpuleak("export", derive(DEMO, t / "tensors.json", with_tensors), "--format", "chrome-trace",
            "-o", trace, code=0)
    ev = json.loads(trace.read_text())["traceEvents"]
    tensors = [e["args"]["tensor"] for e in ev if e["name"].startswith("PyTorch tensors")]
    assert len(tensors) == 11 and max(tensors) == 14680064 // 2
    assert all("tensor" not in e["args"] for e in ev if e["name"].startswith("GPU memory by kind"))


def test_what_to_fold():
    r = gpuleak("export", DEMO, "--format", "folded", "--what", "peak", code=0)
    assert "main;train_step;keep_for_logging 10485760" in r.out
    assert "main;train_step 4194304" in r.out
    assert len(r.out.splitlines()) == 3
    r = gpuleak("export", DEMO, "--format", "folded", "--what=growth", code=0)
    assert "main;train_step;keep_for_logging 6291456" in r.out
    assert len(r.out.splitlines()) == 1
    r = gpuleak("export", DEMO, "--format", "folded", "--what", "leaked", code=0)
    assert len(r.out.splitlines()) == 4


def test_refusals(t):
    nopeak = derive(DEMO, t / "nopeak.json", lambda d: d.pop("peak"))
    r = gpuleak("export", nopeak, "--format", "folded", "--what", "peak", code=2)
    assert """--what peak needs the report's "peak" section""" in r.err
    assert one_line(r.err)
    gpuleak("export", DEMO, "--format", "csv", "--what", "peak", code=2)
    gpuleak("export", DEMO, "--format", "folded", "--what", "lots", code=2)
    gpuleak("export", DEMO, "--format", "svg", code=2)
    assert "--format is needed" in gpuleak("export", DEMO, code=2).err
    gpuleak("export", DEMO, "--format", "csv", "-o", "/nonexistent/dir/x.csv", code=2)
