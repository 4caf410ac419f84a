#!/usr/bin/env python3
"""`gpuleak html` end to end, run by tests/cli/test_html.py (so under
`make cli-test` and, with the command built with ASan and UBSan, `make
sanitize`): writes pages from a version 1 fixture, a version 2 report of
the demo over the fake driver (with an out-of-memory failure) and a
synthetic report with every section (tests/cli/html_report.py, its names
holding markup), opens them in headless Chromium, and checks that no
script error happened and that the numbers the page computed (each panel's
data-* attributes) are the report's. A script appended to a copy of the
page clicks through every tab, table, sort, filter, page, flame graph
measure and zoom. Keeps BUILD/html-test.png. Then loads a report of
100,000 sites and 1,000,000 allocations and prints how long the page took
(README.md states the figure; timing is not asserted). Bad input: one
line, exit 2, no page.

usage: tests/cli/html_test.py BUILD_DIR [pages|others|large]   (from the repository root)
With a part named, only that part runs: the main page and its clicks, the
other pages (runs not judged, outliers, reachable memory, compositions) and
bad input, or the big report (test_html.py runs the three side by side)."""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import html_report  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
PART = sys.argv[2] if len(sys.argv) > 2 else "all"
G = os.path.join(BUILD, "gpuleak")
FIXTURE = os.path.join(ROOT, "tests/cli/fixtures/demo.json")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")
    return cond


def chromium_binary():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM = chromium_binary()
CHROMIUM_TMP = None  # set by main()


def chromium(tmp, url, *args, budget_ms=10000):
    """Runs headless Chromium on url; returns (stdout, stderr, seconds). CI
    runs as root without a GPU, hence --no-sandbox and --disable-gpu.
    Chromium puts its singleton socket in $TMPDIR and dies (FATAL "Socket
    path too long") when that path passes the 107 bytes a socket's name may
    have, as it did under a CI checkout's deep folders: so its TMPDIR is
    CHROMIUM_TMP, a short folder of /tmp that main() makes and removes."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", f"--user-data-dir={tmp}/chromium-profile", *args, url]
    if budget_ms is not None:
        # Virtual time: the page's timers (the driver's waits, transitions)
        # run at once; performance.now() is virtual then too.
        cmd.insert(-1, f"--virtual-time-budget={budget_ms}")
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                       env={**os.environ, "TMPDIR": CHROMIUM_TMP})
    if not p.stdout.strip() and "--dump-dom" in args:
        fatal = [line for line in p.stderr.splitlines() if ":FATAL:" in line]
        print(f"chromium printed no page for {url}: {fatal[0] if fatal else p.stderr[-300:]}")
    return p.stdout, p.stderr, time.monotonic() - t


class Dom(html.parser.HTMLParser):
    """The attributes of <html> and of every element with an id, and how
    many <script> elements there are."""

    def __init__(self, text):
        super().__init__()
        self.root, self.ids, self.scripts = {}, {}, 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root = a
        if tag == "script":
            self.scripts += 1
        if "id" in a:
            self.ids[a["id"]] = a


def expected(path):
    """What a page must show for the report at path, from the report."""
    d = json.load(open(path))
    sites = lambda v: v if isinstance(v, list) else (v or {}).get("sites") or []  # noqa: E731
    peak = d.get("peak")
    leaks = d.get("leaks") or []
    e = {
        "data-peak-bytes": peak["bytes"] if isinstance(peak, dict) and "bytes" in peak else d["totals"]["peak_bytes"],
        "data-leaked-bytes": sum(s["bytes"] for s in leaks),
        "data-leaked-allocations": sum(s["allocations"] for s in leaks),
        "data-leak-sites": len(leaks),
        "data-growth-bytes": sum(s["bytes"] for s in sites(d.get("growth"))),
        "data-growth-judged": "false" if (d.get("status") or {}).get("growth_judged") is False else "true",
        "data-held-bytes": sum(s["bytes"] for s in sites(d.get("held_at_finish"))),
        "data-failures": sum(s["count"] for s in d.get("failures") or []),
        "data-peak-sites-bytes": sum(s["bytes"] for s in sites(peak)),
    }
    points = (d.get("timeline") or {}).get("points") or []
    e["data-marks"] = len((d.get("timeline") or {}).get("marks") or [])
    if points:
        e["data-chart-peak-bytes"] = max(max(p.get("max_bytes", 0), p["bytes"]) for p in points)
    # The flame graphs' totals: a measure is drawn when it has bytes.
    for key, total in (("leaked", e["data-leaked-bytes"]), ("peak", e["data-peak-sites-bytes"]),
                       ("grown", e["data-growth-bytes"]), ("held", e["data-held-bytes"])):
        if total:
            e[f"data-flame-{key}-bytes"] = total
    # The report's own totals agree with what the page sums: the fixture and
    # the demo are real reports, so this also checks the page's reading.
    check(e["data-leaked-bytes"] == d["totals"]["leaked_bytes"], f"{path}: leaks sum to totals.leaked_bytes")
    check(e["data-peak-bytes"] == d["totals"]["peak_bytes"], f"{path}: peak.bytes is totals.peak_bytes")
    return {k: str(v) for k, v in e.items()}


def compare(dom, index, want, label):
    got = dom.ids.get(f"report-{index}")
    if not check(got is not None, f"{label}: no panel report-{index}"):
        return
    for k, v in want.items():
        check(got.get(k) == v, f"{label}: {k} is {got.get(k)!r}, the report says {v!r}")


def page_ok(dom, label):
    check(dom.root.get("data-status") == "ready", f"{label}: data-status is {dom.root.get('data-status')!r}")
    check("data-errors" not in dom.root, f"{label}: script errors: {dom.root.get('data-errors')}")


# Appended to a copy of the page: uses every control, then says what it saw.
DRIVER = r"""
<script>
(async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const input = (node, value, type = "input") => { node.value = value; node.dispatchEvent(new Event(type)); };
  const html = document.documentElement;
  let details = 0, nasty = false, frames = 0;
  const heads = [];
  try {
    const tabs = [...document.querySelectorAll("#tabs button")];
    for (const tab of tabs.slice(1).concat(tabs.slice(0, 1))) {
      tab.click();
      await sleep(20);
      const panel = document.querySelector("#panels > section:not([hidden])");
      for (const box of panel.querySelectorAll(".table-box")) {
        if (box.querySelector(".scroll").hidden) continue;
        for (const th of box.querySelectorAll("th")) th.click();
        box.querySelector("th").click();
        for (const a of ["next", "last", "prev", "first"]) box.querySelector(`[data-action="${a}"]`).click();
        const filter = box.querySelector('[data-slot="filter"]');
        input(filter, "<b>model</b>.py:17");
        await sleep(200);
        let row = box.querySelector("tbody tr");
        if (!row) { input(filter, ""); await sleep(200); row = box.querySelector("tbody tr"); }
        if (row && !box.closest("#overview")) {
          row.click();
          const detail = box.querySelector('[data-slot="detail"]');
          details += detail.querySelectorAll("li").length;
          nasty = nasty || detail.textContent.includes("evil<\/script><script>document.title='pwned'<\/script>");
          // Every row's heading, for what the detail says of each kind.
          for (const other of [...box.querySelectorAll("tbody tr")].slice(0, 20)) {
            other.click();
            for (const h of detail.querySelectorAll("h4")) heads.push(h.textContent);
          }
        }
        input(filter, "");
        await sleep(200);
      }
      const measure = panel.querySelector('[data-slot="flame-measure"]');
      if (measure) for (const o of [...measure.options]) input(measure, o.value, "change");
      const search = panel.querySelector('[data-slot="flame-search"]');
      if (search) { input(search, "main"); input(search, "(["); input(search, ""); }
      const frame = panel.querySelector(".flame g");
      if (frame) { frame.dispatchEvent(new MouseEvent("click", { bubbles: true })); frames++; }
      for (const b of panel.querySelectorAll('[data-action="flame-reset"], [data-action="zoom-peak"], [data-action="zoom-reset"]')) b.click();
      const from = panel.querySelector('[data-slot="zoom-from"]'), to = panel.querySelector('[data-slot="zoom-to"]');
      if (from && to && to.value) { input(from, "0", "change"); input(to, String(Number(to.value) / 2), "change"); }
      await sleep(400);
    }
    const overviewRow = document.querySelector("#overview tbody tr");
    if (overviewRow) overviewRow.click();
    html.dataset.driverDetails = String(details);
    html.dataset.driverNasty = String(nasty);
    html.dataset.driverFrames = String(frames);
    html.dataset.driverHeads = heads.join(" | ");
    html.dataset.driver = "done";
  } catch (e) {
    gpuleakError("driver: " + (e.stack || e));
  }
})();
</script>
"""


def main():
    if not check(CHROMIUM is not None, "headless Chromium not found (scripts/install-deps.sh installs Debian's chromium)"):
        return
    global CHROMIUM_TMP
    tmp = tempfile.mkdtemp(prefix="gpuleak-html-test.")
    CHROMIUM_TMP = tempfile.mkdtemp(prefix="glc.", dir="/tmp")
    try:
        if PART in ("all", "pages"):
            run(tmp)
        if PART in ("all", "others"):
            not_judged(tmp)
            outliers(tmp)
            reachable(tmp)
            compositions(tmp)
            bad_input(tmp)
            two_parts(tmp)
            many_ranks(tmp)
        if PART in ("all", "large"):
            large(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(CHROMIUM_TMP, ignore_errors=True)


def run(tmp):
    # The reports: the fixture (version 1, stacks inline), the demo over the
    # fake driver refused an allocation (version 2, failures and oom), and
    # the synthetic one with every section, in a file whose name has markup.
    demo = os.path.join(tmp, "demo-oom.json")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "fakecuda"),
               LD_PRELOAD=os.path.join(BUILD, "libgpuleak.so"), GPULEAK_OUTPUT=demo,
               FAKECUDA_OOM_AFTER="5", GPULEAK_SUMMARY="0")
    subprocess.run([os.path.join(BUILD, "demo")], env=env, capture_output=True, timeout=120)
    check(os.path.exists(demo), "the demo wrote no report")
    synthetic = os.path.join(tmp, "rank<1>.json")
    with open(synthetic, "w") as f:
        json.dump(html_report.build(300, 5000, 1, 777, 3), f)
    reports = [FIXTURE, demo, synthetic]
    page = os.path.join(tmp, "page.html")
    p = subprocess.run([G, "html", *reports, "-o", page], capture_output=True, text=True, timeout=120)
    if not check(p.returncode == 0, f"gpuleak html: exit {p.returncode}: {p.stderr.strip()}"):
        return
    text = open(page, encoding="utf-8").read()
    # Self-contained: nothing the page loads names another file or host.
    check(not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", text, re.I),
          "the page loads an outside resource")
    # Report text cannot close the data's <script>: the head's, the data
    # (one per report), three libraries and page.js, no more.
    check(len(re.findall(r"</script", text, re.I)) == 1 + len(reports) + 1 + 4, "a report string closed a <script>")
    check("\\u003c/script" in text and "rank\\u003c1>.json" in text, "'<' in report strings is not escaped")

    # Each report's tab, loaded as a person opens it.
    wants = [expected(r) for r in reports]
    for i, label in enumerate(("fixture (version 1)", "demo with an OOM", "synthetic")):
        out, err, _ = chromium(tmp, f"file://{page}#report={i}", "--dump-dom")
        dom = Dom(out)
        page_ok(dom, label)
        check("Uncaught" not in err, f"{label}: Chromium logged an uncaught error")
        # The page's own, one per report, the outliers' (three reports or
        # more), the four libraries'.
        check(dom.scripts == 1 + len(reports) + 1 + 4, f"{label}: {dom.scripts} <script> elements")
        compare(dom, i, wants[i], label)
    title = re.search(r"<title>(.*?)</title>", out, re.S)
    check(title is not None and title.group(1).startswith("gpuleak: "), "a report's markup ran as script")

    # Every control, on a copy with the driver appended.
    driven = os.path.join(tmp, "driven.html")
    with open(driven, "w", encoding="utf-8") as f:
        head, _, tail = text.rpartition("</body>")
        f.write(head + DRIVER + "</body>" + tail)
    out, err, _ = chromium(tmp, f"file://{driven}", "--dump-dom", budget_ms=60000)
    dom = Dom(out)
    page_ok(dom, "driven")
    check(dom.root.get("data-driver") == "done", "driven: the driver did not finish")
    check(int(dom.root.get("data-driver-details", "0")) > 0, "driven: a row's detail shows no stack")
    heads = dom.root.get("data-driver-heads", "")
    check("of pinned host memory at " in heads, "driven: no detail of the pinned host leak")
    check("pinned host memory on device" not in heads, "driven: pinned host memory is said to be on a device")
    check(dom.root.get("data-driver-nasty") == "true", "driven: the markup in a function name is not shown as text")
    check(dom.ids.get("overview", {}).get("data-reports") == "3", "driven: the overview does not count 3 reports")
    for i, want in enumerate(wants):
        compare(dom, i, want, f"driven report {i}")

    shot = os.path.join(BUILD, "html-test.png")
    chromium(tmp, f"file://{page}#report=2", f"--screenshot={shot}", "--window-size=1400,1000")
    check(os.path.getsize(shot) > 10000 if os.path.exists(shot) else False, f"no screenshot at {shot}")


def outliers(tmp):
    """A page of five ranks, one leaking ten times what the others do: the
    overview names that rank (merge's rule, docs/merge.md) and lists it
    first; a page of ranks alike names none; two reports are not judged."""
    paths = []
    for rank in range(5):
        report = html_report.build(40, 400, rank, 1000 + rank, 7)
        if rank == 3:
            for site in report["leaks"]:
                site["bytes"] *= 10
            report["totals"]["leaked_bytes"] *= 10
        paths.append(os.path.join(tmp, f"rank-{rank}.json"))
        with open(paths[-1], "w") as f:
            json.dump(report, f)
    page = os.path.join(tmp, "ranks.html")
    p = subprocess.run([G, "html", *paths, "-o", page], capture_output=True, text=True, timeout=60)
    if not check(p.returncode == 0, f"html of five ranks: exit {p.returncode}: {p.stderr.strip()}"):
        return
    out, err, _ = chromium(tmp, f"file://{page}", "--dump-dom")
    dom = Dom(out)
    page_ok(dom, "ranks")
    check(dom.ids.get("overview", {}).get("data-outliers") == "3:leaked",
          f"ranks: the overview names {dom.ids.get('overview', {}).get('data-outliers')!r}, not rank 3's leaks")
    overview = out[out.find('id="overview"'):]
    table = overview[overview.find("Reports (5)"):]  # past the chart's legend, a table too
    first = re.search(r"<tbody[^>]*>\s*<tr[^>]*>(.*?)</tr>", table, re.S)
    check(first is not None and "rank-3.json" in first.group(1) and "leaked" in first.group(1),
          "ranks: the rank that stands out is not the overview's first row")
    check("Reports that stand out" in overview and "rank 3" in overview.split("Reports that stand out")[1][:400],
          "ranks: the overview does not say which rank stands out")
    alike = os.path.join(tmp, "alike.html")
    subprocess.run([G, "html", *paths[:3], "-o", alike], capture_output=True, timeout=60)
    out, _, _ = chromium(tmp, f"file://{alike}", "--dump-dom")
    check(Dom(out).ids.get("overview", {}).get("data-outliers") == "" and "None: the reports" in out,
          "ranks alike: the overview names a rank that does not stand out")
    two = os.path.join(tmp, "two.html")
    subprocess.run([G, "html", *paths[:2], "-o", two], capture_output=True, timeout=60)
    check('class="gpuleak-outliers"' not in open(two).read(), "two reports: judged, though merge's rule takes three")


def reachable(tmp):
    """What the program's names held to its end and Python's shutdown did
    not free: a table of its own, with who held it."""
    d = json.load(open(FIXTURE))
    site = dict(d["leaks"][0])
    site["held_by"] = [{"name": "model.weight", "type": "Parameter", "owner": "Linear", "file": "train.py",
                        "graph": False, "bytes": site["bytes"], "allocations": site["allocations"]}]
    d["reachable_at_exit"] = [site]
    path = os.path.join(tmp, "reachable.json")
    with open(path, "w") as f:
        json.dump(d, f)
    page = os.path.join(tmp, "reachable.html")
    p = subprocess.run([G, "html", path, "-o", page], capture_output=True, text=True, timeout=60)
    if not check(p.returncode == 0, f"html reachable.json: exit {p.returncode}: {p.stderr.strip()}"):
        return
    out, _, _ = chromium(tmp, f"file://{page}#report=0", "--dump-dom")
    page_ok(Dom(out), "reachable")
    check("Still reachable at exit" in out, "reachable: no table of what was still reachable at exit")
    check("model.weight" in out, "reachable: the table does not name its holder")


def compositions(tmp):
    """The composition by role at Python's finish, as a bar and a legend
    that name each part as common/composition.h does, in its order; the
    page's table of roles is that header's."""
    header = open(os.path.join(ROOT, "common", "composition.h")).read()
    roles = re.findall(r'X\((\w+), (?:"\w+"|NULL), "([^"]+)"\)', header)
    script = open(os.path.join(ROOT, "cli", "html", "page.js")).read()
    page_roles = re.findall(r'\["(\w+)", "([^"]+)", "#[0-9a-f]{6}"\]', script)
    check(roles and page_roles == roles, f"composition: page.js's roles {page_roles} are not composition.h's {roles}")
    fmt = open(os.path.join(ROOT, "common", "report_format.h")).read()
    frameworks = re.findall(r'X\((\w+), "([^"]+)", "([^"]+)",', fmt)
    page_frameworks = re.findall(r'(\w+): \["([^"]+)", "([^"]+)"\]', script)
    check(frameworks and page_frameworks == frameworks,
          f"frameworks: page.js's {page_frameworks} are not report_format.h's {frameworks}")
    d = json.load(open(FIXTURE))
    gpu = (5 << 18) + (1 << 19) + (1 << 20)
    d["held_at_finish"] = {"time_ns": 0, "gpu_bytes": gpu, "tensor_bytes": gpu - (1 << 20), "sites": [],
                           "composition": {"gpu_bytes": gpu, "parts": [
                               {"role": "parameters", "bytes": 5 << 18, "by": [{"name": "model", "bytes": 5 << 18}]},
                               {"role": "saved_for_backward", "bytes": 1 << 19,
                                "by": [{"name": "<b>total</b>", "bytes": 1 << 19}]},
                               {"role": "torch_cache", "bytes": 1 << 20, "by": []}]}}
    path = os.path.join(tmp, "composition.json")
    with open(path, "w") as f:
        json.dump(d, f)
    page = os.path.join(tmp, "composition.html")
    p = subprocess.run([G, "html", path, "-o", page], capture_output=True, text=True, timeout=60)
    if not check(p.returncode == 0, f"html composition.json: exit {p.returncode}: {p.stderr.strip()}"):
        return
    out, _, _ = chromium(tmp, f"file://{page}#report=0", "--dump-dom")
    page_ok(Dom(out), "composition")
    # printf rounds an exact half to even (1.25 MiB, 2.75 MiB), as the text views print it
    check("At Python's finish: 2.8 MiB of GPU memory, by what it is" in out, "composition: no bar of Python's finish")
    check("parameters 1.2 MiB (model)" in out and "PyTorch's cache 1.0 MiB" in out,
          "composition: the legend does not give each part")
    check("<b>total</b>" not in out and "&lt;b&gt;total&lt;/b&gt;" in out, "composition: an owner's name is markup")
    # JAX's arrays: the cache is JAX's pool, a tensor site is JAX array memory.
    d["frameworks"] = {"jax": {"seen": "in snapshots"}}
    for section in ("leaks", "growth"):
        for site in d.get(section) or []:
            site["kind"], site["framework"] = "tensor", "jax"
    with open(path, "w") as f:
        json.dump(d, f)
    p = subprocess.run([G, "html", path, "-o", page], capture_output=True, text=True, timeout=60)
    if not check(p.returncode == 0, f"html composition.json (JAX): exit {p.returncode}: {p.stderr.strip()}"):
        return
    out, _, _ = chromium(tmp, f"file://{page}#report=0", "--dump-dom")
    check("JAX's pool 1.0 MiB" in out and "PyTorch's cache 1.0 MiB" not in out,
          "composition: JAX's arrays' cache is not named JAX's pool")
    check("tensor (jax)" in out or not d.get("leaks"), "composition: a JAX site's kind does not say JAX")


def not_judged(tmp):
    """A run too short for the growth rule: its empty growth list is not
    shown as "0 B grew", on its card nor in the overview."""
    d = json.load(open(FIXTURE))
    d["growth"] = []
    d["status"] = {"moment": "exit", "complete": True, "growth_samples": 3, "growth_judged": False}
    short = os.path.join(tmp, "short.json")
    with open(short, "w") as f:
        json.dump(d, f)
    page = os.path.join(tmp, "short.html")
    p = subprocess.run([G, "html", short, FIXTURE, "-o", page], capture_output=True, text=True, timeout=60)
    if not check(p.returncode == 0, f"html short.json: exit {p.returncode}: {p.stderr.strip()}"):
        return
    out, _, _ = chromium(tmp, f"file://{page}#report=0", "--dump-dom")
    dom = Dom(out)
    page_ok(dom, "not judged")
    compare(dom, 0, expected(short), "not judged")
    check(re.search(r"Grew during the run</dt><dd>not judged<small>the run was too short \(3 sample", out),
          "not judged: the growth card does not say so")
    out, _, _ = chromium(tmp, f"file://{page}", "--dump-dom")
    check(re.search(r"<td[^>]*>not judged</td>", out), "not judged: the overview's grew column does not say so")

    # A report a signal wrote as it killed the program: its leaks were in use.
    d["status"] = {"moment": "signal", "complete": True, "signal": 15}
    killed = os.path.join(tmp, "killed.json")
    with open(killed, "w") as f:
        json.dump(d, f)
    p = subprocess.run([G, "html", killed, "-o", page], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"html killed.json: exit {p.returncode}: {p.stderr.strip()}")
    out, _, _ = chromium(tmp, f"file://{page}#report=0", "--dump-dom")
    page_ok(Dom(out), "killed")
    check("Written as signal 15 killed the program" in out, "killed: no warning that the leaks were in use")
    check("Live when killed</dt>" in out and "Leaked at exit</dt>" not in out, "killed: the card reads as leaked")


def bad_input(tmp):
    good = open(FIXTURE).read()
    cases = {"empty": "", "text": "not json", "trunc": good[:300], "v99": '{"format":"gpuleak-report","version":99}',
             "wrongtype": good.replace('"bytes": 10485760', '"bytes": "10485760"', 1)}
    out = os.path.join(tmp, "bad.html")
    for name, body in cases.items():
        path = os.path.join(tmp, f"{name}.json")
        with open(path, "w") as f:
            f.write(body)
        p = subprocess.run([G, "html", FIXTURE, path, "-o", out], capture_output=True, text=True, timeout=60)
        check(p.returncode == 2, f"html {name}.json: exit {p.returncode}, wanted 2")
        check(len(p.stderr.splitlines()) == 1 and p.stderr.startswith(f"gpuleak: {path}: "),
              f"html {name}.json: stderr is not one line naming the file: {p.stderr!r}")
        check(not os.path.exists(out) and not [f for f in os.listdir(tmp) if f.startswith("bad.html.")],
              f"html {name}.json: a page or a temporary file was left")
    with open(out, "w") as f:
        f.write("an older page")
    subprocess.run([G, "html", os.path.join(tmp, "text.json"), "-o", out], capture_output=True, timeout=60)
    check(open(out).read() == "an older page", "a failed html replaced the page already there")
    # Without -o the page goes beside the report, named after it (issue 40).
    copy = os.path.join(tmp, "beside.json")
    with open(copy, "w") as f:
        f.write(good)
    p = subprocess.run([G, "html", copy], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and os.path.exists(os.path.join(tmp, "beside.html"))
          and p.stdout == "gpuleak html: wrote %s\n" % os.path.join(tmp, "beside.html"),
          f"html without -o: exit {p.returncode}, {p.stdout!r} {p.stderr!r}")
    for args, what in (([], "no arguments"), ([FIXTURE, "-o"], "-o without a value"),
                       ([FIXTURE, "--frob", "-o", out], "an unknown option"),
                       ([FIXTURE, "-o", FIXTURE], "-o onto a report"),
                       ([FIXTURE, "-o", os.path.join(tmp, "none", "x.html")], "-o in a missing directory")):
        p = subprocess.run([G, "html", *args], capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and len(p.stderr.splitlines()) == 1, f"html with {what}: exit {p.returncode}, {p.stderr!r}")
    p = subprocess.run([G, "html", FIXTURE, "-o", "-"], capture_output=True, timeout=60)
    check(p.returncode == 0 and p.stdout.startswith(b"<!doctype html>"), "html -o - does not write the page on stdout")


REST = '<script type="application/json" class="gpuleak-rest"'
HEAD = re.compile(r'<script type="application/json" class="gpuleak-report">(.*?)</script>', re.S)


def extend(into, more):
    """page.js's extend: each list appended, each object's members added."""
    for key, value in more.items():
        if isinstance(value, list) and isinstance(into.get(key), list):
            into[key].extend(value)
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            extend(into[key], value)
        else:
            into[key] = value


def two_parts(tmp):
    """A report of more than 5,000 sites in a list is written in two parts:
    its largest sites before the page's scripts, the rest after them. The
    parts make the report again; a page cut before its rest (a browser
    still reading it, a truncated copy) shows the largest sites with whole
    totals and says so; a reader at work when the rest arrives keeps the
    panel until asked; a report of 5,000 sites is written whole."""
    report = os.path.join(tmp, "parts.json")
    with open(report, "w") as f:
        json.dump(html_report.build(6_000, 60_000, 0, 77, 3), f)
    page = os.path.join(tmp, "parts.html")
    p = subprocess.run([G, "html", report, "-o", page], capture_output=True, text=True, timeout=120)
    if not check(p.returncode == 0, f"two parts: exit {p.returncode}: {p.stderr.strip()}"):
        return
    with open(page) as f:
        text = f.read()
    with open(report) as f:
        whole = json.load(f)
    heads = HEAD.findall(text)
    rests = re.findall(re.escape(REST) + r' data-report="0">(.*?)</script>', text, re.S)
    if not check(len(heads) == 1 and len(rests) == 1, f"two parts: {len(heads)} head(s), {len(rests)} rest(s)"):
        return
    head = json.loads(heads[0])
    doc = head["report"]
    check(len(doc["leaks"]) == 5000 and len(doc["peak"]["sites"]) == 5000,
          f"two parts: the head holds {len(doc['leaks'])} leaks, {len(doc['peak']['sites'])} peak sites")
    check(doc["leaks"] == whole["leaks"][:5000], "two parts: the head's leaks are not the report's first")
    kept = {str(s["site"]) for k in ("leaks", "sites", "growth", "failures", "teardown_leaks", "kept_by_libraries")
            for s in doc.get(k) or []} | {str(s["site"]) for s in doc["peak"]["sites"]}
    check(kept <= set(doc["stacks"]), "two parts: a site of the head has no stack in it")
    cut = head["cut"]["leaks"]
    check(cut == {"sites": 6000, "bytes": sum(s["bytes"] for s in whole["leaks"][5000:]),
                  "allocations": sum(s["allocations"] for s in whole["leaks"][5000:])},
          f"two parts: the head's count of its rest is {cut}")
    check(text.index(REST) > text.rindex("<script>"), "two parts: the rest comes before the page's script")
    extend(doc, json.loads(rests[0]))
    check(doc == whole, "two parts: the head and the rest do not make the report")
    want = expected(report)

    # Cut before its rest: the largest sites, the totals whole, and a word.
    head_page = os.path.join(tmp, "head-only.html")
    with open(head_page, "w") as f:
        f.write(text[:text.index(REST)] + "</body></html>")
    out, _, _ = chromium(tmp, f"file://{head_page}", "--dump-dom")
    dom = Dom(out)
    page_ok(dom, "head only")
    compare(dom, 0, {k: v for k, v in want.items() if not k.startswith("data-flame-")}, "head only")
    check(dom.ids["report-0"].get("data-flame-leaked-bytes") == str(sum(s["bytes"] for s in whole["leaks"][:5000])),
          "head only: the flame graph is not of the largest sites")
    check(re.search(r'<p class="partial" data-slot="partial">A large report \(6,000 sites in a list\)', out),
          "head only: no word that the page shows the largest sites")
    check("Leaks (the 5,000 largest of 6,000)" in out, "head only: the leaks table does not say it shows the largest")

    # Whole: the same totals, the flame graphs of every site, no word.
    out, _, _ = chromium(tmp, f"file://{page}", "--dump-dom")
    dom = Dom(out)
    page_ok(dom, "whole")
    compare(dom, 0, want, "whole")
    check('data-slot="partial" hidden' in out and "Leaks (6,000)" in out, "whole: the word on the largest sites stays")

    # A reader at work (a key pressed) when the rest arrives: the panel
    # stays as it is and offers to change; asked, it shows every site.
    at_work = text.replace(REST, '<script>document.body.dispatchEvent(new Event("keydown"));</script>' + REST, 1)
    for asked in (False, True):
        name = os.path.join(tmp, f"at-work-{asked}.html")
        with open(name, "w") as f:
            f.write(at_work.replace("</body>", "<script>document.addEventListener('DOMContentLoaded', () => "
                                    "setTimeout(() => document.querySelector('[data-slot=\"partial\"] button')"
                                    ".click()));</script></body>" if asked else "</body>", 1))
        out, _, _ = chromium(tmp, f"file://{name}", "--dump-dom")
        dom = Dom(out)
        page_ok(dom, f"at work, asked {asked}")
        flame = dom.ids["report-0"].get("data-flame-leaked-bytes")
        if asked:
            compare(dom, 0, want, "at work, asked")
            check('data-slot="partial" hidden' in out, "at work, asked: the word stays")
        else:
            check(flame == str(sum(s["bytes"] for s in whole["leaks"][:5000])), "at work: the panel changed unasked")
            check("The page has read the whole report." in out and "Show every site</button>" in out,
                  "at work: no offer to show every site")

    # A tab not shown yet changes unseen, the reader at work or not.
    two = os.path.join(tmp, "two.html")
    p = subprocess.run([G, "html", FIXTURE, report, "-o", two], capture_output=True, text=True, timeout=120)
    with open(two) as f:
        text = f.read()
    with open(two, "w") as f:
        f.write(text.replace(REST, '<script>document.body.dispatchEvent(new Event("keydown"));</script>' + REST, 1)
                .replace("</body>", "<script>document.addEventListener('DOMContentLoaded', () => setTimeout(() => "
                         "document.querySelectorAll('#tabs button')[2].click()));</script></body>", 1))
    out, _, _ = chromium(tmp, f"file://{two}", "--dump-dom")
    dom = Dom(out)
    page_ok(dom, "second tab")
    compare(dom, 1, want, "second tab, shown after the rest")

    # 5,000 sites: whole, in one part.
    with open(report, "w") as f:
        json.dump(html_report.build(5_000, 50_000, 0, 77, 3), f)
    p = subprocess.run([G, "html", report, "-o", page], capture_output=True, text=True, timeout=120)
    with open(page) as f:
        text = f.read()
    heads = HEAD.findall(text)
    check(p.returncode == 0 and REST not in text and "cut" not in json.loads(heads[0]),
          "5,000 sites: the page is in two parts")


def many_ranks(tmp):
    """A page of more than 16 reports (a job's ranks) of more than 64 MiB
    in all holds whole only the ones that stand out; of the others, a
    summary: the whole totals, each list's 20 largest sites, no stacks,
    frames or timeline, and a word naming the file that holds the rest. A
    summary's tab draws without a script error and counts what it left out.
    As many small reports, or --reports whole, are held whole; --reports
    summaries makes summaries of a few. (The reports reach 64 MiB by
    whitespace after the document, which JSON allows.)"""
    paths, small, whole = [], [], []
    for rank in range(20):
        report = html_report.build(40, 400, rank, 2000 + rank, 7)
        if rank == 3:
            for site in report["leaks"]:
                site["bytes"] *= 10
            report["totals"]["leaked_bytes"] *= 10
        paths.append(os.path.join(tmp, f"job-{rank}.json"))
        small.append(os.path.join(tmp, f"small-{rank}.json"))
        whole.append(report)
        for path, padding in ((paths[-1], 7 << 19), (small[-1], 0)):
            with open(path, "w") as f:
                json.dump(report, f)
                f.write(" " * padding)
    page = os.path.join(tmp, "job.html")
    p = subprocess.run([G, "html", *paths, "-o", page], capture_output=True, text=True, timeout=120)
    if not check(p.returncode == 0, f"many ranks: exit {p.returncode}: {p.stderr.strip()}"):
        return
    with open(page) as f:
        text = f.read()
    reports = [json.loads(h) for h in HEAD.findall(text)]
    if not check(len(reports) == 20, f"many ranks: {len(reports)} reports on the page"):
        return
    check(REST not in text, "many ranks: a rest on the page")
    for rank, (got, want) in enumerate(zip(reports, whole)):
        doc = got["report"]
        if rank == 3:
            check("elsewhere" not in got and doc == want, "many ranks: the rank that stands out is not whole")
            continue
        check(got.get("elsewhere") is True, f"many ranks: rank {rank} is not a summary")
        check(not {"stacks", "frames", "python_frames", "timeline"} & set(doc),
              f"many ranks: rank {rank}'s summary keeps {sorted({'stacks', 'frames', 'timeline'} & set(doc))}")
        check(doc["leaks"] == want["leaks"][:20] and doc["totals"] == want["totals"],
              f"many ranks: rank {rank}'s summary is not its 20 largest leaks and its totals")
        cut = (got.get("cut") or {}).get("leaks")
        check(cut is not None and cut["sites"] == 40, f"many ranks: rank {rank}'s cut is {cut}")
    # A summary's own tab, drawn first (the page's #report=).
    out, _, _ = chromium(tmp, f"file://{page}#report=0", "--dump-dom")
    dom = Dom(out)
    page_ok(dom, "a summary's tab")
    want = expected(paths[0])
    compare(dom, 0, {k: want[k] for k in ("data-leaked-bytes", "data-leak-sites", "data-peak-bytes")}, "a summary's tab")
    check("One of many reports on this page" in out and f"gpuleak html {paths[0]}" in out,
          "a summary's tab: no word on where the rest of the report is")
    check("Leaks (the 20 largest of 40)" in out, "a summary's tab: the leaks table does not say it shows the largest")
    check("leaves this report's timeline out" in out and "leaves this report's stacks out" in out,
          "a summary's tab: no word on its timeline or its stacks")
    # Tabs for the overview and the rank that stands out; the others in a list.
    tabs = out[out.find('id="tabs"'):out.find('id="panels"')]
    ntabs, noptions = tabs.count('role="tab"'), tabs.count("<option")
    check(ntabs == 2 and 'class="report-pick"' in tabs and noptions == 20,
          f"many ranks: {ntabs} tab(s), {noptions} option(s) (the list's title and 19 reports)")
    out, _, _ = chromium(tmp, f"file://{page}", "--dump-dom")
    page_ok(Dom(out), "many ranks' overview")
    check("The timelines of the 19 reports this page holds as summaries" in out,
          "many ranks: the overview does not say whose timelines it leaves out")
    # Whole: as many small reports, or --reports whole; summaries of a few
    # with --reports summaries (fewer than three: none stands out).
    for args, want_whole in (([*small], whole), (["--reports", "whole", *paths], whole),
                             (["--reports", "summaries", *small[:2]], None)):
        other = os.path.join(tmp, "job-other.html")
        p = subprocess.run([G, "html", *args, "-o", other], capture_output=True, text=True, timeout=120)
        with open(other) as f:
            docs = [json.loads(h) for h in HEAD.findall(f.read())]
        if want_whole is not None:
            ok = [d["report"] for d in docs] == whole and not any("elsewhere" in d for d in docs)
        else:
            ok = len(docs) == 2 and all(d.get("elsewhere") is True for d in docs)
        check(p.returncode == 0 and ok, f"many ranks, {args[:2]}: exit {p.returncode}, not as asked")
    # A report that cannot be read among many: one line naming it, exit 2, no page.
    bad = os.path.join(tmp, "job-bad.json")
    with open(bad, "w") as f:
        f.write('{"format":')
    nopage = os.path.join(tmp, "job-bad.html")
    p = subprocess.run([G, "html", *paths, bad, "-o", nopage], capture_output=True, text=True, timeout=120)
    check(p.returncode == 2 and p.stderr.count("\n") == 1 and bad in p.stderr and not os.path.exists(nopage),
          f"many ranks, one unreadable: exit {p.returncode}, {p.stderr!r}")


def slot_attr(out, name):
    """An attribute of the page's panel (the report's section), as dumped."""
    found = re.search(r'%s="(\d+)"' % name, out)
    return found.group(1) if found else "?"


def large(tmp):
    """100,000 sites, 1,000,000 allocations: the page's own load time
    (navigation to ready, from data-load-ms) is printed, not asserted."""
    big = os.path.join(tmp, "big.json")
    with open(big, "w") as f:
        json.dump(html_report.build(100_000, 1_000_000, 0, 4242, 1), f, separators=(",", ":"))
    page = os.path.join(tmp, "big.html")
    t = time.monotonic()
    p = subprocess.run([G, "html", big, "-o", page], capture_output=True, text=True, timeout=600)
    write_s = time.monotonic() - t
    if not check(p.returncode == 0, f"html of the large report: exit {p.returncode}: {p.stderr.strip()}"):
        return
    want = expected(big)
    # Real time, so data-load-ms measures: the page is drawn by the time of
    # the load event, when --dump-dom reads it.
    out, _, wall = chromium(tmp, f"file://{page}", "--dump-dom", budget_ms=None)
    dom = Dom(out)
    page_ok(dom, "large")
    compare(dom, 0, want, "large")
    print(f"html: a report of 100,000 sites ({os.path.getsize(big) / 1e6:.0f} MB) made a "
          f"{os.path.getsize(page) / 1e6:.0f} MB page in {write_s:.1f} s; Chromium drew its largest "
          f"sites in {dom.root.get('data-load-ms')} ms from navigation (the browser reading the page's "
          f"first part {dom.root.get('data-start-ms')} ms, JSON.parse {dom.root.get('data-parse-ms')} ms, "
          f"the model {dom.root.get('data-model-ms')} ms, the first tab {dom.root.get('data-draw-ms')} ms), "
          f"every site by {dom.root.get('data-whole-ms')} ms (the flame graphs' trees "
          f"{slot_attr(out, 'data-flame-build-ms')} ms), {wall:.1f} s with its start")


if __name__ == "__main__":
    if PART not in ("all", "pages", "others", "large"):
        sys.exit(f"html_test.py: unknown part {PART!r} (pages, others or large)")
    main()
    print(f"html-test: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
