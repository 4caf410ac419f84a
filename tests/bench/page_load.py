#!/usr/bin/env python3
"""page_load.py: how soon a big report's page draws (issue 33's benchmark).
Writes the synthetic report of big_report.py (100,000 sites, 1,000,000
allocations by default), makes its page with each gpuleak given (the
build's, and others to compare, such as an older tree's), and opens each
page in headless Chromium ROUNDS times, interleaved. Chromium is driven
over the DevTools protocol on a pipe (--remote-debugging-pipe), so the
page is read as a browser reads it, with no hook in it: the numbers are
the page's own, from navigation: data-load-ms (its first view drawn) and
data-whole-ms (every site drawn, for a page in two parts). Prints each
page's median and range (not asserted: a benchmark, docs/performance.md).

usage: tests/bench/page_load.py [--gpuleak PATH]... [--sites N] [--allocations N] [--rounds N]"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import html_report  # noqa: E402

# True once the page is drawn whole: its status is set, and a page in two
# parts has drawn its rest. Its value: the two times.
DONE = """(() => {
  const d = document.documentElement.dataset;
  if (d.status !== "ready" || (d.parts === "2" && d.wholeMs === undefined))
    return null;
  return [Number(d.loadMs), Number(d.wholeMs || d.loadMs),
          Number(d.restReadMs || 0), Number(d.restParseMs || 0), Number(d.restModelMs || 0),
          Number(d.restDrawMs || 0), Number(d.startMs), Number(d.parseMs), Number(d.modelMs),
          Number(d.drawMs)];
})()"""


class Browser:
    """A headless Chromium with its DevTools pipe (fd 3 in, fd 4 out)."""

    def __init__(self, tmp):
        to_chrome, self.w = os.pipe()
        self.r, from_chrome = os.pipe()

        def fds():
            a, b = os.dup(to_chrome), os.dup(from_chrome)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [shutil.which("chromium") or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--disable-extensions", f"--user-data-dir={tmp}/profile",
             "--remote-debugging-pipe", "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "TMPDIR": tmp})
        os.close(to_chrome)
        os.close(from_chrome)
        self.buf, self.id = b"", 0

    def call(self, method, params=None, session=None):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" in self.buf:
                text, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(text)
                if reply.get("id") == self.id:
                    return reply.get("result", {})
            more = os.read(self.r, 1 << 20)
            if not more:
                raise RuntimeError("chromium closed its pipe")
            self.buf += more

    def times(self, url, timeout=120):
        """(first view, every site) in ms from navigation, on a new tab."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.navigate", {"url": url}, session)
        end = time.monotonic() + timeout
        try:
            while time.monotonic() < end:
                got = self.call("Runtime.evaluate", {"expression": DONE, "returnByValue": True}, session)
                value = got.get("result", {}).get("value")
                if value:
                    return value
                time.sleep(0.05)
            raise RuntimeError(f"{url}: not drawn in {timeout} s")
        finally:
            self.call("Target.closeTarget", {"targetId": target})

    def close(self):
        self.proc.kill()
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuleak", action="append", help="a gpuleak to make a page with (default: the build's)")
    ap.add_argument("--sites", type=int, default=100_000)
    ap.add_argument("--allocations", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tools = args.gpuleak or [os.path.join(ROOT, "build", "gpuleak")]
    tmp = tempfile.mkdtemp(prefix="gpuleak-page.", dir="/tmp")
    try:
        report = os.path.join(tmp, "big.json")
        with open(report, "w") as f:
            json.dump(html_report.build(args.sites, args.allocations, 0, 4242, 1), f, separators=(",", ":"))
        pages = []
        for i, tool in enumerate(tools):
            page = os.path.join(tmp, f"page{i}.html")
            subprocess.run([tool, "html", report, "-o", page], check=True, capture_output=True, timeout=600)
            pages.append(page)
        results = [[] for _ in pages]
        for _ in range(args.rounds):
            for i, page in enumerate(pages):
                # A browser each time: none keeps another page's memory.
                browser = Browser(tmp)
                try:
                    results[i].append(browser.times(f"file://{page}"))
                finally:
                    browser.close()
        print(f"page of {args.sites} sites, {args.allocations} allocations "
              f"({os.path.getsize(report) / 1e6:.1f} MB report); {args.rounds} rounds, interleaved")
        for tool, page, got in zip(tools, pages, results):
            first, whole = ([t[k] for t in got] for k in (0, 1))
            print(f"{tool}: {os.path.getsize(page) / 1e6:.0f} MB page; first view "
                  f"{statistics.median(first) / 1e3:.2f} s [{min(first) / 1e3:.2f}-{max(first) / 1e3:.2f}], "
                  f"every site {statistics.median(whole) / 1e3:.2f} s [{min(whole) / 1e3:.2f}-{max(whole) / 1e3:.2f}]")
            start, parse, model, draw = (statistics.median(t[k] for t in got) / 1e3 for k in (6, 7, 8, 9))
            print(f"    the first view: its script ran at {start:.2f} s, parsed the head in {parse:.2f} s, "
                  f"made its model in {model:.2f} s, drew in {draw:.2f} s (medians)")
            if any(t[2] for t in got):
                read, parse, model, draw = (statistics.median(t[k] for t in got) / 1e3 for k in (2, 3, 4, 5))
                print(f"    the rest: read by {read:.2f} s, parsed in {parse:.2f} s, made whole in "
                      f"{model:.2f} s, drawn again in {draw:.2f} s (medians)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
