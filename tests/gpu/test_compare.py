"""Unit tests for tests/gpu/compare.py on hand-made JSON (no GPU needed).

  python3 -m unittest discover -s tests/gpu -p 'test_*.py' -v
"""
import copy
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

KINDS = compare.KINDS


def kinds(**over):
    d = {k: {"allocations": 0, "frees": 0, "failed_allocations": 0, "bytes_allocated": 0,
             "live_bytes": 0, "peak_bytes": 0, "leaked_bytes": 0, "leaked_allocations": 0}
         for k in KINDS}
    for k, v in over.items():
        d[k].update(v)
    return d


KINDS_LEAK = kinds(
    device={"allocations": 14, "frees": 11, "failed_allocations": 1, "leaked_allocations": 3,
            "leaked_bytes": 3 << 20, "bytes_allocated": (3 << 20) + 225280 + 17408},
    pool={"allocations": 12, "frees": 11, "leaked_allocations": 1, "leaked_bytes": 256 << 10},
    vmm={"allocations": 2, "frees": 2},
    managed={"allocations": 2, "frees": 1, "leaked_allocations": 1, "leaked_bytes": 4096},
    host={"allocations": 3, "frees": 2, "leaked_allocations": 1, "leaked_bytes": 65536},
    array={"allocations": 3, "frees": 2, "leaked_allocations": 1, "leaked_bytes": 16384},
)


def totals(k, **over):
    t = {f: sum(k[x][f] for x in KINDS) for f in
         ("allocations", "frees", "failed_allocations", "leaked_allocations", "leaked_bytes")}
    t.update({"unknown_frees": 0, "maps": 2, "unmaps": 2, "teardown_leaked_allocations": 0,
              "teardown_leaked_bytes": 0})
    t.update(over)
    return t


def frame(fn, line=None):
    return {"function": fn, "file": "/src/leak.cu" if line else None, "line": line,
            "module": "/tmp/leak-static", "offset": "0x1234", "address": "0x55d0c0de1234",
            "inlined": False}


def report(k=KINDS_LEAK, **over):
    leaks = []
    for i, kind in enumerate(["device", "pool", "host", "managed", "array"]):
        leaks.append({"site": i + 1, "kind": kind, "device": 0, "bytes": k[kind]["leaked_bytes"],
                      "allocations": k[kind]["leaked_allocations"], "frees": 0,
                      "stack": [frame("cudaMalloc"), frame("leak_on_purpose", 80), frame("main", 300)],
                      "python_stack": []})
    sites = [{"site": 9, "kind": "pool", "peak_live_bytes": 1 << 20, "stack": [],
              "python_stack": [{"function": "forward", "file": "/x/torch/nn/modules/linear.py", "line": 134},
                               {"function": "main", "file": "/repo/tests/gpu/train.py", "line": 68}]}]
    r = {"format": "gpuleak-report", "version": 1,
         "process": {"pid": 4242, "python": "3.12.3"},
         "status": {"tracking": "on", "reason": None},
         "totals": totals(k), "kinds": copy.deepcopy(k),
         "leaks": leaks, "teardown_leaks": [], "sites": sites}
    r.update(over)
    return r


def cupti(k=KINDS_LEAK, **over):
    c = {"format": "cupti-count", "version": 1, "pid": 4242, "subscribed": True, "error": None,
         "late_events": 0, "legacy_calls": 0, "kinds": copy.deepcopy(k),
         "totals": dict(totals(k), null_frees=1),
         "functions": {"cuMemAlloc_v2": {"calls": 14, "success": 13, "failed": 1, "legacy": False}}}
    c.update(over)
    return c


EXPECT = {"format": "leak-expect", "kinds": copy.deepcopy(KINDS_LEAK),
          "totals": {"leaked_allocations": 7,
                     "leaked_bytes_without_arrays": (3 << 20) + (256 << 10) + 4096 + 65536,
                     "maps": 2, "unmaps": 2}}


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, obj):
        p = os.path.join(self.dir.name, name)
        with open(p, "w") as f:
            json.dump(obj, f)
        return p

    def run_cmd(self, *argv):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = compare.main(list(argv))
        return rc, buf.getvalue()

    def test_counts_match(self):
        rc, out = self.run_cmd("counts", self.write("r.json", report()), self.write("c.json", cupti()))
        self.assertEqual(rc, 0, out)
        self.assertIn("device", out)
        self.assertNotIn("MISMATCH", out)

    def test_counts_mismatch(self):
        k = copy.deepcopy(KINDS_LEAK)
        k["pool"]["allocations"] += 2
        k["pool"]["frees"] += 2
        rc, out = self.run_cmd("counts", self.write("r.json", report()),
                               self.write("c.json", cupti(k)))
        self.assertEqual(rc, 1, out)
        self.assertIn("pool.allocations: gpuleak 12 cupti 14 (diff -2)", out)
        self.assertIn("totals.allocations", out)

    def test_counts_bytes_only_warn(self):
        k = copy.deepcopy(KINDS_LEAK)
        k["device"]["bytes_allocated"] += 512
        rc, out = self.run_cmd("counts", self.write("r.json", report()), self.write("c.json", cupti(k)))
        self.assertEqual(rc, 0, out)
        self.assertIn("warning: device.bytes_allocated", out)

    def test_counts_cupti_not_subscribed(self):
        rc, out = self.run_cmd("counts", self.write("r.json", report()),
                               self.write("c.json", cupti(subscribed=False, error="cuptiSubscribe: x")))
        self.assertEqual(rc, 3, out)

    def test_counts_tracking_off(self):
        r = report(status={"tracking": "off", "reason": "out of memory"})
        rc, out = self.run_cmd("counts", self.write("r.json", r), self.write("c.json", cupti()))
        self.assertEqual(rc, 1, out)

    def test_missing_file(self):
        rc, out = self.run_cmd("counts", os.path.join(self.dir.name, "nope.json"),
                               self.write("c.json", cupti()))
        self.assertEqual(rc, 2, out)

    def test_expect_match_and_mismatch(self):
        e = self.write("e.json", EXPECT)
        rc, out = self.run_cmd("expect", self.write("r.json", report()), e)
        self.assertEqual(rc, 0, out)
        k = copy.deepcopy(KINDS_LEAK)
        k["host"]["leaked_allocations"] = 0
        k["host"]["leaked_bytes"] = 0
        rc, out = self.run_cmd("expect", self.write("r2.json", report(k)), e)
        self.assertEqual(rc, 1, out)
        self.assertIn("host.leaked_allocations", out)
        # the CUPTI file can be checked against the program too
        rc, out = self.run_cmd("expect", self.write("c.json", cupti()), e)
        self.assertEqual(rc, 0, out)

    def test_stack(self):
        p = self.write("r.json", report())
        rc, out = self.run_cmd("stack", p, "--function", "leak_on_purpose", "--kinds", "device,pool,array")
        self.assertEqual(rc, 0, out)
        rc, out = self.run_cmd("stack", p, "--function", "not_there")
        self.assertEqual(rc, 1, out)
        r = report()
        r["leaks"] = [x for x in r["leaks"] if x["kind"] != "array"]
        rc, out = self.run_cmd("stack", self.write("r2.json", r), "--function", "leak_on_purpose",
                               "--kinds", "device,array")
        self.assertEqual(rc, 1, out)

    def test_pyframes(self):
        p = self.write("r.json", report())
        rc, out = self.run_cmd("pyframes", p, "--file", "train.py", "--line", "68")
        self.assertEqual(rc, 0, out)
        rc, out = self.run_cmd("pyframes", p, "--file", "train.py", "--line", "69")
        self.assertEqual(rc, 1, out)

    def test_kindpos_same_pick(self):
        p = self.write("torch-a-1.json", report())
        rc, _ = self.run_cmd("kindpos", p, "vmm")
        self.assertEqual(rc, 0)
        k = kinds()
        q = self.write("torch-a-2.json", report(k, process={"pid": 7}))
        rc, _ = self.run_cmd("kindpos", q, "vmm")
        self.assertEqual(rc, 1)
        rc, out = self.run_cmd("same", p, p)
        self.assertEqual(rc, 0, out)
        rc, out = self.run_cmd("same", p, q)
        self.assertEqual(rc, 1, out)
        rc, out = self.run_cmd("pick", self.dir.name, "torch-a-")
        self.assertEqual(out.strip().splitlines()[-1], p)
        rc, out = self.run_cmd("pick", self.dir.name, "torch-a-", "--pid", "7")
        self.assertEqual(out.strip().splitlines()[-1], q)
        rc, out = self.run_cmd("pick", self.dir.name, "nothing-")
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()
