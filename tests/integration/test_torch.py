"""PyTorch tensors under the shim: tests/python/tensors_demo.py drives the fake
libc10_cuda.so (tests/fakecuda/fake_c10_cuda.cpp), a caching allocator laid
out as PyTorch's, whose trace-tracker events shim/entry/torch_trace.c follows. The
script writes, from its own bookkeeping, what memory_stats() would say (the
tensors allocated and freed, their bytes, the highest live bytes) and the
line that keeps one batch in five; the report must say the same, name that
line, and keep the caching allocator's cache out of the leaks. Where the
shim cannot attach (another backend, a stripped library, events it cannot
read) it says so once, tracks the segments only, and the program runs on."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import reports as report_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
SCRIPT = os.path.join(ROOT, "tests/python/tensors_demo.py")
FAKE_C10 = os.path.join(BUILD, "fakec10", "libc10_cuda.so")
FAKE_C10_OTHER = os.path.join(BUILD, "fakec10-other", "libc10_cuda.so")
FAKE_C10_STRIPPED = os.path.join(BUILD, "fakec10-stripped", "libc10_cuda.so")
GIB = 1 << 30

# The settings a run must not inherit from the caller's environment.
CLEARED = ("PYTORCH_CUDA_ALLOC_CONF", "FAKE_C10_BACKEND", "FAKE_C10_EXPANDABLE",
           "FAKE_C10_BAD_LAYOUT", "FAKECUDA_OOM_AFTER", "FAKECUDA_BOOKLESS")


def run_script(tmp, scenario=None, extra_env=None, shim=True):
    """Runs the script in tmp; returns the process and the expect.json it
    wrote (None if none)."""
    env = {k: v for k, v in os.environ.items()
           if k not in CLEARED and not k.startswith("GPULEAK_")}
    env.update({
        "FAKECUDA_DEVICES": "2",
        "FAKE_C10": FAKE_C10,
        "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
        "EXPECT_OUT": os.path.join(tmp, "expect.json"),
    })
    if shim:
        env.update({
            "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
            "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json"),
        })
    else:
        env.pop("LD_PRELOAD", None)
    env.update(extra_env or {})
    args = [sys.executable, SCRIPT] + ([scenario] if scenario else [])
    proc = subprocess.run(args, env=env, cwd=tmp, capture_output=True, text=True, timeout=120)
    expect = None
    if os.path.exists(env["EXPECT_OUT"]):
        with open(env["EXPECT_OUT"]) as fh:
            expect = json.load(fh)
    return proc, expect


def report_paths(tmp):
    """The reports at exit in tmp (a report on request has a name of its own)."""
    return [os.path.join(tmp, f) for f in os.listdir(tmp)
            if f.startswith("r-") and f.endswith(".json") and ".request-" not in f]


def call_line(path, text):
    """The line number of the one line of path that contains text."""
    with open(path) as fh:
        found = [n for n, line in enumerate(fh, 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


class TorchTensorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for path in (os.path.join(BUILD, "libgpuleak.so"), FAKE_C10, FAKE_C10_STRIPPED):
            if not os.path.exists(path):
                raise unittest.SkipTest("%s not built (make integration)" % path)
        # What the program does without the shim: every run under it must
        # compute the same.
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-")
        proc, cls.baseline = run_script(tmp, shim=False)
        if proc.returncode != 0 or cls.baseline is None:
            raise AssertionError("the script fails without the shim:\n" + proc.stderr)

    def run_demo(self, scenario=None, extra_env=None):
        """Runs the script under the shim; it must succeed and write one
        report. Returns (report, expect, stderr)."""
        tmp = self.last_tmp = tempfile.mkdtemp(prefix="gpuleak-torch-")
        proc, expect = run_script(tmp, scenario, extra_env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIsNotNone(expect, proc.stderr)
        reports = report_paths(tmp)
        self.assertEqual(len(reports), 1, proc.stderr)
        return report_files.load(reports[0]), expect, proc.stderr

    def assert_program_unchanged(self, expect):
        for key in ("stats", "kept", "kept_bytes", "high", "keep_line"):
            self.assertEqual(expect[key], self.baseline[key], key)

    def assert_tensor_counts(self, report, expect):
        """kinds.tensor says what memory_stats() would."""
        stats = expect["stats"]
        tensor = report["kinds"]["tensor"]
        self.assertEqual(tensor["allocations"], stats["allocations"])
        self.assertEqual(tensor["frees"], stats["frees"])
        self.assertEqual(tensor["bytes_allocated"], stats["requested_allocated"])
        self.assertEqual(tensor["live_bytes"],
                         stats["requested_allocated"] - stats["requested_freed"])
        self.assertEqual(tensor["peak_bytes"], expect["high"])

    def assert_one_tensor_leak(self, report, expect):
        """One leak, the kept tensors, at the line that keeps them."""
        leaks = report["leaks"]
        self.assertEqual(len(leaks), 1, [(l["kind"], l["owner"], l["bytes"]) for l in leaks])
        leak = leaks[0]
        self.assertEqual(leak["kind"], "tensor")
        self.assertEqual(leak["bytes"], expect["kept_bytes"])
        self.assertEqual(leak["allocations"], expect["kept"])
        frame = {"function": "keep_for_logging", "file": expect["file"], "line": expect["keep_line"]}
        self.assertIn(frame, leak["python_stack"])
        return leak

    def refusal_line(self, stderr):
        """The one stderr line in which the shim says it does not follow the
        allocator's tensors."""
        lines = [line for line in stderr.splitlines()
                 if "gpuleak:" in line and "PyTorch's allocator" in line]
        self.assertEqual(len(lines), 1, stderr)
        return lines[0]

    def assert_refused(self, report, expect, stderr, reason_part, consequence):
        self.assert_program_unchanged(expect)
        line = self.refusal_line(stderr)
        reason = report["torch_allocator"]["tensors"]
        self.assertNotIn(reason, ("attached", "not seen", None))
        self.assertIn(reason_part, reason)
        self.assertIn(reason, line)
        self.assertIn(consequence, line)
        self.assertEqual(report["kinds"]["tensor"]["allocations"], 0)
        self.assertEqual(report["kinds"]["tensor"]["live_bytes"], 0)
        return line

    def test_cublas_workspace_is_kept_not_leaked(self):
        """PyTorch's cuBLAS handle keeps a workspace for the process (32 MiB
        on Hopper), allocated as a tensor is: listed as kept by cuBLAS with
        the line whose product took it, never as a leak, so a clean script
        passes the gate."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-")
        script = os.path.join(ROOT, "tests/python/workspace_demo.py")
        env = {k: v for k, v in os.environ.items()
               if k not in CLEARED and not k.startswith("GPULEAK_")}
        env.update({"FAKECUDA_DEVICES": "1", "FAKE_C10": FAKE_C10,
                    "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                    "PYTHONPATH": os.path.join(ROOT, "tests/python/faketorch"),
                    "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                    "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json")})
        proc = subprocess.run([sys.executable, script], env=env, cwd=tmp,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("Kept for the process by CUDA libraries, not leaks (32.0 MiB", proc.stderr)
        self.assertNotIn("Leak of", proc.stderr)
        path, = report_paths(tmp)
        report = report_files.load(path)
        self.assertEqual(report["leaks"], [])
        kept, = report["kept_by_libraries"]
        self.assertEqual((kept["kind"], kept["owner"], kept["bytes"]), ("tensor", "cublas", 32 << 20))
        self.assertEqual(kept["origin"]["line"], call_line(script, "# FIRST-PRODUCT"))
        self.assertEqual(report["totals"]["kept_bytes"], 32 << 20)
        self.assertEqual(report["totals"]["leaked_bytes"], 0)
        gate = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", path],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(gate.returncode, 0, gate.stdout + gate.stderr)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("Kept for the process by CUDA libraries, not leaks:", text)

    # 1
    def test_tensors_followed_through_events(self):
        report, expect, _ = self.run_demo()
        self.assert_program_unchanged(expect)
        torch = report["torch_allocator"]
        self.assertEqual(torch["mode"], "native")
        self.assertIsNone(torch["PYTORCH_CUDA_ALLOC_CONF"])
        self.assertIsNone(expect["alloc_conf"])  # the program's own environment
        self.assertEqual(torch["tensors"], "attached")
        self.assert_tensor_counts(report, expect)
        leak = self.assert_one_tensor_leak(report, expect)
        # The script's alloc() helper is the origin of the tensors it frees
        # and of the ones it keeps: the leak's origin goes on to the caller
        # where the two paths part.
        self.assertEqual(leak["origin"]["function"], "alloc")
        self.assertEqual([(c["function"], c["line"]) for c in leak["origin"]["callers"]],
                         [("keep_for_logging", expect["keep_line"])])
        for leak in report["leaks"]:
            self.assertNotEqual(leak["owner"], "pytorch-caching-allocator")
        self.assertEqual(report["totals"]["leaked_bytes"], expect["kept_bytes"])
        self.assertEqual(report["totals"]["leaked_allocations"], expect["kept"])
        self.assertGreater(torch["reserve_bytes"], 0)
        self.assertEqual(report["peak"]["sites_at"], "tensors")
        self.assertEqual(report["peak"]["sites_at_bytes"], expect["high"])
        # The segments are still the driver's allocations.
        self.assertGreater(report["kinds"]["device"]["allocations"], 0)
        self.assertEqual(report["kinds"]["device"]["allocations"], torch["events"]["segment_alloc"])
        # Frees completed later, on another thread, are counted once each.
        events = torch["events"]
        self.assertEqual(events["alloc"], expect["stats"]["allocations"])
        self.assertEqual(events["free_requested"], expect["stats"]["frees"])
        self.assertEqual(events["free_completed"], events["free_requested"])
        self.assertEqual(report["totals"]["unknown_frees"], 0)
        self.assertIsNone(report["oom"])

    # 2
    def test_async_allocator_asked_for(self):
        report, expect, _ = self.run_demo(extra_env={"GPULEAK_TORCH_ALLOCATOR": "async"})
        self.assertEqual(expect["alloc_conf"], "backend:cudaMallocAsync")
        self.assertEqual(report["torch_allocator"]["mode"], "cudaMallocAsync")
        self.assertEqual(report["torch_allocator"]["PYTORCH_CUDA_ALLOC_CONF"],
                         "backend:cudaMallocAsync")

    def test_users_alloc_conf_is_left_alone(self):
        report, expect, _ = self.run_demo(extra_env={
            "GPULEAK_TORCH_ALLOCATOR": "async",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
        self.assertEqual(expect["alloc_conf"], "expandable_segments:True")
        self.assertEqual(report["torch_allocator"]["mode"], "user")
        self.assertEqual(report["torch_allocator"]["PYTORCH_CUDA_ALLOC_CONF"],
                         "expandable_segments:True")

    # 3
    def test_expandable_segments(self):
        report, expect, _ = self.run_demo(extra_env={"FAKE_C10_EXPANDABLE": "1"})
        self.assert_program_unchanged(expect)
        torch = report["torch_allocator"]
        self.assertEqual(torch["tensors"], "attached")
        self.assert_tensor_counts(report, expect)
        self.assertGreater(report["kinds"]["vmm"]["allocations"], 0)
        self.assertEqual(torch["events"]["segment_map"], report["kinds"]["vmm"]["allocations"])
        self.assertEqual(report["kinds"]["device"]["allocations"], 0)
        self.assert_one_tensor_leak(report, expect)
        self.assertEqual(report["totals"]["leaked_bytes"], expect["kept_bytes"])

    # 4a
    def test_refused_other_backend(self):
        report, expect, stderr = self.run_demo(extra_env={"FAKE_C10_BACKEND": "async"})
        self.assert_refused(report, expect, stderr, "not its native caching allocator",
                            "tracking its segments only")
        # That backend's tensors are each one cuMemAllocAsync.
        self.assertGreater(report["kinds"]["pool"]["allocations"], 0)
        self.assertEqual(report["kinds"]["pool"]["allocations"], expect["stats"]["allocations"])

    # 4b
    def test_refused_stripped_library(self):
        report, expect, stderr = self.run_demo(extra_env={"FAKE_C10": FAKE_C10_STRIPPED})
        self.assert_refused(report, expect, stderr, "stripped", "tracking its segments only")
        self.assertGreater(report["kinds"]["device"]["allocations"], 0)
        self.assertEqual(sum(report["torch_allocator"]["events"].values()), 0)

    # 4c
    def test_refused_unknown_event_layout(self):
        report, expect, stderr = self.run_demo(extra_env={"FAKE_C10_BAD_LAYOUT": "1"})
        self.assert_refused(report, expect, stderr, "layout", "no longer tracked")
        self.assertGreater(report["kinds"]["device"]["allocations"], 0)
        # An event of an action it does not know is not counted as any.
        self.assertEqual(sum(report["torch_allocator"]["events"].values()), 0)

    # 5
    def test_driver_allocation_before_allocator_init(self):
        report, expect, _ = self.run_demo("preinit")
        self.assert_program_unchanged(expect)
        device = report["kinds"]["device"]
        torch = report["torch_allocator"]
        # The script's own allocation must have happened, or the scenario
        # tests nothing: it is one driver allocation more than the segments.
        self.assertEqual(device["failed_allocations"], 0,
                         "the script's pre-init cuMemAlloc failed; nothing was tested")
        self.assertEqual(device["allocations"], torch["events"]["segment_alloc"] + 1)
        self.assertEqual(torch["tensors"], "attached")
        self.assertEqual(torch["events"]["alloc"], expect["stats"]["allocations"])
        self.assert_tensor_counts(report, expect)
        # The leaks: the kept tensors, and the script's own allocation (never
        # freed), which is the program's, not the caching allocator's.
        tensors = [l for l in report["leaks"] if l["kind"] == "tensor"]
        self.assertEqual(len(tensors), 1, report["leaks"])
        self.assertEqual(tensors[0]["bytes"], expect["kept_bytes"])
        self.assertIn({"function": "keep_for_logging", "file": expect["file"],
                       "line": expect["keep_line"]}, tensors[0]["python_stack"])
        others = [(l["kind"], l["owner"], l["bytes"]) for l in report["leaks"] if l["kind"] != "tensor"]
        self.assertEqual(others, [("device", "user", 4096)])

    # 6
    def test_programs_own_tracker_keeps_its_events(self):
        report, expect, _ = self.run_demo("own-tracker")
        self.assert_program_unchanged(expect)
        self.assertEqual(expect["own_tracker"], 0)
        self.assertGreater(expect["own_events"], 0)
        torch = report["torch_allocator"]
        self.assertEqual(torch["tensors"], "attached")
        self.assert_tensor_counts(report, expect)
        # The program attaches its tracker after init and before the first
        # tensor; the shim attaches at the first segment, before that
        # segment's event, and no event comes earlier: from then on both
        # trackers are called for every event, so they count the same.
        self.assertEqual(expect["own_events"], sum(torch["events"].values()))

    # 7
    def test_out_of_memory_event(self):
        report, expect, _ = self.run_demo("oom")
        self.assert_program_unchanged(expect)
        oom = report["oom"]
        self.assertIsNotNone(oom)
        self.assertEqual(oom["kind"], "tensor")
        self.assertEqual(oom["bytes"], 64 * GIB)
        self.assertEqual(report["torch_allocator"]["events"]["oom"], 1)
        line = call_line(expect["file"], "lib.fake_c10_record_oom(")
        self.assertTrue(oom["python_stack"], oom)
        self.assertEqual(oom["python_stack"][0],
                         {"function": "main", "file": expect["file"], "line": line})
        # The tensors are still counted as before.
        self.assert_tensor_counts(report, expect)

    def test_out_of_memory_from_fragmentation_names_its_cause_and_cure(self):
        """The cache held more unused bytes than were asked (issue 38): the
        report gives the device's reserved and allocated bytes, and the exit
        summary and gpuleak report say fragmentation, with its cure."""
        report, expect, stderr = self.run_demo("oom-fragmented")
        self.assert_program_unchanged(expect)
        oom, want = report["oom"], expect["oom"]
        self.assertGreater(want["reserved"] - want["allocated"], want["asked"])
        self.assertEqual((oom["torch_reserved_bytes"], oom["torch_allocated_bytes"]),
                         (want["reserved"], want["allocated"]))
        self.assertIn("Cause: fragmentation.", stderr)
        self.assertIn("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", stderr)
        path = os.path.join(self.last_tmp, os.path.basename(report_paths(self.last_tmp)[0]))
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path], capture_output=True,
                              text=True, timeout=60).stdout
        self.assertIn("  Cause: fragmentation.", text)

    def test_out_of_memory_of_tensors_gives_the_facts_and_no_cause(self):
        """64 GiB asked of a cache with a few MiB unused: the facts, no
        cause, no advice."""
        _, _, stderr = self.run_demo("oom")
        self.assertIn("cached but unused.", stderr)
        self.assertNotIn("Cause:", stderr)

    def test_out_of_memory_holders_are_tensors_not_the_cache(self):
        report, _, _ = self.run_demo("oom")
        oom = report["oom"]
        # At PyTorch's own OOM the holders are the tensors; its cache holds
        # them, so listing its segments too would count the memory twice.
        self.assertTrue(oom["sites"])
        self.assertEqual({s["kind"] for s in oom["sites"]}, {"tensor"})
        self.assertLessEqual(sum(s["bytes"] for s in oom["sites"]), oom["live_bytes"])
        self.assertEqual(oom["count"], 1)

    def test_library_replaced_on_disk_is_refused(self):
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-lib-")
        lib = os.path.join(tmp, "libc10_cuda.so")
        other = os.path.join(tmp, "other.so")
        shutil.copy(FAKE_C10, lib)
        shutil.copy(FAKE_C10_OTHER, other)
        report, expect, stderr = self.run_demo(extra_env={"FAKE_C10": lib,
                                                          "FAKE_C10_REPLACE_WITH": other})
        self.assert_refused(report, expect, stderr, "not the library loaded",
                            "tracking its segments only")

    def test_events_refused_midway_set_the_tensors_aside(self):
        report, expect, stderr = self.run_demo(extra_env={"FAKE_C10_BAD_LAYOUT_AFTER": "120"})
        self.assert_program_unchanged(expect)
        self.assertIn("layout", report["torch_allocator"]["tensors"])
        # Tensors alive when the events stopped are not leaks (their frees
        # were never seen), and the cache is no longer set aside.
        self.assertEqual([l for l in report["leaks"] if l["kind"] == "tensor"], [])
        self.assertEqual(report["torch_allocator"]["reserve_bytes"], 0)
        self.assertGreater(report["kinds"]["tensor"]["allocations"], 0)

    def test_own_driver_leak_kept_with_stacks_off(self):
        report, expect, _ = self.run_demo("preinit", extra_env={"GPULEAK_STACK_DEPTH": "0",
                                                                "GPULEAK_PYTHON": "0"})
        # The program's own 4 KiB cuMemAlloc shares the frameless device site
        # with PyTorch's segments; only the segments are its cache.
        self.assertEqual(report["totals"]["leaked_bytes"], expect["kept_bytes"] + 4096)
        device = [l for l in report["leaks"] if l["kind"] == "device"]
        self.assertEqual([(l["bytes"], l["allocations"]) for l in device], [(4096, 1)])

    def test_leak_through_an_installed_library_names_the_script(self):
        """The user's line is the origin even when an installed package
        (a site-packages folder) allocates; the library frame is the via."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-lib-")
        env = dict(os.environ)
        env.update({"LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                    "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                    "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json"),
                    "FAKE_C10": FAKE_C10, "EXPECT_OUT": os.path.join(tmp, "expect.json")})
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests/python/library_demo.py")],
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(env["EXPECT_OUT"]) as fh:
            expect = json.load(fh)
        report = report_files.load(report_paths(tmp)[0])
        self.assertEqual(len(report["leaks"]), 1, report["leaks"])
        leak = report["leaks"][0]
        self.assertEqual(leak["bytes"], expect["kept_bytes"])
        origin = leak["origin"]
        self.assertEqual((origin["file"], origin["line"], origin["function"]),
                         (expect["file"], expect["keep_line"], "main"))
        self.assertEqual((origin["via"]["file"], origin["via"]["line"]),
                         (expect["via_file"], expect["via_line"]))
        self.assertIn("library_demo.py:%d in main, via Layer._activation __init__.py:%d"
                      % (expect["keep_line"], expect["via_line"]), proc.stderr)
        # The command's views say the same.
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", report_paths(tmp)[0]],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("via Layer._activation __init__.py:%d" % expect["via_line"], text)

    def run_script_file(self, name, extra_env=None):
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-py-")
        env = dict(os.environ)
        env.update(extra_env or {})
        env.update({"LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                    "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                    "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json"),
                    "FAKE_C10": FAKE_C10, "EXPECT_OUT": os.path.join(tmp, "expect.json")})
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests/python", name)],
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(env["EXPECT_OUT"]) as fh:
            expect = json.load(fh)
        path = report_paths(tmp)[0]
        return report_files.load(path), expect, proc.stderr, path

    def test_what_a_script_held_to_its_end_is_reported(self):
        """A list and a dict cache kept in module globals: Python's shutdown
        frees them before the report at exit, so nothing leaks then; the
        report says what was held when Python began to finish, at the
        script's lines (through its Tensor class, a helper whose freed
        tensors share its line)."""
        report, expect, stderr, path = self.run_script_file("finish_demo.py")
        self.assertEqual(report["totals"]["leaked_bytes"], 0)
        held = report["held_at_finish"]
        self.assertIsNotNone(held)
        got = {}
        for site in held["sites"]:
            callers = site["origin"].get("callers") or []
            self.assertEqual(site["origin"]["function"], "Tensor.__init__")
            got[tuple(c["line"] for c in callers)] = site["bytes"]
        # Each held path goes down to its first caller that the freed
        # activations do not share, and no further: the weights' builder
        # functions beyond make_weights are not shown.
        self.assertEqual(got, {(expect["history_line"],): expect["history_bytes"],
                               (expect["cache_line"],): expect["cache_bytes"],
                               (expect["weights_line"],): 65536})
        self.assertIn("Still held when Python finished", stderr)
        self.assertIn("finish_demo.py:%d" % expect["history_line"], stderr)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("Still held when Python finished", text)
        self.assertIn("from <module> finish_demo.py:%d" % expect["history_line"], text)

    def test_what_shutdown_did_not_free_is_reachable_not_leaked(self):
        """As PyTorch leaves a model's parameters live at exit (seen on the
        H100): memory the program's names held as Python finished and its
        shutdown did not free is listed as still reachable, not leaked;
        the gate judges only the buffer nothing held."""
        report, expect, stderr, path = self.run_script_file("teardown_kept_demo.py")
        leaks = [(s["origin"]["line"], s["bytes"]) for s in report["leaks"]]
        self.assertEqual(leaks, [(expect["lost_line"], 1 << 16)])
        self.assertEqual(report["totals"]["leaked_bytes"], 1 << 16)
        reachable = report["reachable_at_exit"]
        self.assertEqual([s["bytes"] for s in reachable], [1 << 20])
        self.assertEqual(reachable[0]["held_by"][0]["name"], "model.weight")
        self.assertEqual(report["totals"]["reachable_bytes"], 1 << 20)
        self.assertIn("was still live at exit: Python's shutdown did not free it", stderr)
        # The leak nothing held says so, rather than leaving a blank.
        leak = stderr[stderr.index("Leak of 65536 byte(s)"):]
        self.assertIn("held by no Python object the search reached from the program's names", leak)
        gate = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", path],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(gate.returncode, 1, gate.stdout + gate.stderr)
        self.assertIn("teardown_kept_demo.py:%d" % expect["lost_line"], gate.stdout)
        self.assertIn("65536 byte(s)", gate.stdout)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("Still reachable at exit", text)

    def test_a_leak_beside_a_reachable_tensor_of_its_site_names_no_holder(self):
        """One site with a tensor PyTorch keeps past teardown and one lost:
        the reachable part is listed apart with its holder; the leak entry
        keeps only the lost bytes, and names no holder, since whatever the
        search named of the site is reachable or was freed."""
        report, expect, stderr, path = self.run_script_file("teardown_mixed_demo.py")
        leaks = report["leaks"]
        self.assertEqual([(s["origin"]["line"], s["bytes"]) for s in leaks],
                         [(expect["made_line"], 1 << 16)], leaks)
        self.assertNotIn("held_by", leaks[0])
        reachable = report["reachable_at_exit"]
        self.assertEqual([s["bytes"] for s in reachable], [1 << 20])
        self.assertEqual(reachable[0]["site"], leaks[0]["site"])
        self.assertEqual(reachable[0]["held_by"][0]["name"], "kept")
        summary = stderr[stderr.index("Leak of"):stderr.index("Still held when Python finished")]
        self.assertNotIn("held by kept", summary)
        self.assertIn("held by no Python object the search reached", summary)
        gate = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", path],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(gate.returncode, 1, gate.stdout)
        self.assertNotIn("held by", gate.stdout)

    def test_a_hundred_steps_of_a_leak_grow_and_fail_the_gate(self):
        """A hundred steps keeping a tensor each, the whole script: growth
        is judged from checkpoints taken every few allocations early in a
        run (every 256 before: two samples, no finding), and check's
        default gate fails it at its line, though nothing is live at exit."""
        report, expect, stderr, path = self.run_script_file("short_leak_demo.py")
        self.assertEqual(report["totals"]["leaked_bytes"], 0)
        grown = [s for s in report["growth"] if s["kind"] == "tensor"]
        self.assertEqual([s["origin"]["line"] for s in grown], [expect["leak"]])
        self.assertEqual(grown[0]["held_by"][0]["name"], "kept[...]")
        gate = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", path],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(gate.returncode, 1, gate.stdout + gate.stderr)
        self.assertIn("--max-growth 0 B: growth of", gate.stdout)
        self.assertIn("short_leak_demo.py:%d" % expect["leak"], gate.stdout)

    def test_a_helper_s_paths_of_other_fates_read_apart(self):
        """The weights, a cache that fills once and a leak, all through one
        helper: the leak grew and the others did not, so its line shows the
        caller that keeps it, and comes first in what was held."""
        report, expect, stderr, path = self.run_script_file("helper_fates_demo.py")
        held = stderr[stderr.index("Still held when Python finished"):]
        first = held.splitlines()[1]
        self.assertIn("helper_fates_demo.py:%d in new_buffer, from <module> helper_fates_demo.py:%d"
                      % (expect["helper"], expect["kept"]), first)
        self.assertIn("[grew during the run]", first)
        self.assertIn("held by kept[...] (list in helper_fates_demo.py)", held.splitlines()[2])
        self.assertIn("from <listcomp> helper_fates_demo.py:%d" % expect["weights"], held)
        self.assertIn("held by weights[...] (list in helper_fates_demo.py): 12.0 MiB", held)

    def test_the_summary_says_what_was_held_when_nothing_leaked(self):
        """A helper's line that two callers use, for memory of one fate
        (held, neither grew in so short a run), is one line of the
        summary's held section, summing two sites, with the holders of both
        summed. With nothing live at
        exit, the summary's last line says the held memory is above: it
        said "no leaks" alone, after listing it."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-py-")
        script = os.path.join(tmp, "held_lines.py")
        with open(script, "w") as fh:
            fh.write("import sys\n"
                     "sys.path.insert(0, %r)\n"
                     "import torch\n"
                     "def new_buffer(n):\n"
                     "    return torch.empty(n)\n"
                     "kept, cache = [], {}\n"
                     "for i in range(8):\n"
                     "    kept.append(new_buffer(65536))\n"
                     "    cache[i %% 2] = new_buffer(4096)\n" % os.path.join(ROOT, "tests/python/faketorch"))
        env = dict(os.environ)
        env.update({"LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                    "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                    "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json"), "FAKE_C10": FAKE_C10})
        proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("Still held when Python finished, before its shutdown freed it (520.0 KiB in 2 site(s); "
                      "by line):\n   520.0 KiB PyTorch tensor memory from %s:5 in new_buffer "
                      "(owner: pytorch-tensor) [2 sites]\n"
                      "      held by kept[...] (list in held_lines.py): 512.0 KiB\n"
                      "      held by cache[...] (dict in held_lines.py): 8.0 KiB\n" % script, proc.stderr)
        self.assertRegex(proc.stderr, r"\n\ngpuleak: no leaks at exit, but 520.0 KiB was still held when "
                                      r"Python finished \(above\): ")

    def test_who_holds_what_the_script_kept_is_named(self):
        """At Python's atexit the shim asks the interpreter which objects
        keep the live tensors: a module-level list, a dict, an attribute of
        an object, a hook's closure, the autograd graphs of kept losses.
        Every view names them; without the search (GPULEAK_HOLDERS_MS=0)
        the held list stands, nameless."""
        # Every held line in the summary: the default five can leave out the
        # graph line, after the lines that grew (how many did is timing).
        report, expect, stderr, path = self.run_script_file("holders_demo.py", {"GPULEAK_SUMMARY_SITES": "10"})
        held = report["held_at_finish"]
        by_line = {site["origin"]["line"]: site for site in held["sites"]}
        want = {"history": ("history[...]", "list", None, False),
                "cache": ("cache[...]", "dict", None, False),
                "weight": ("net.weight", "Tensor", "Net", False),
                "kept": ("net.kept[...]", "list", "Net", False),
                "hook": ("hook.<closure>.stash[...]", "list", None, False),
                "graph": ("losses[...]", "list", None, True),
                "loss": ("losses[...]", "list", None, False)}
        for what, holder in want.items():
            site = by_line[expect[what]]
            top = site["held_by"][0]
            self.assertEqual((top["name"], top["type"], top["owner"], top["graph"]), holder, what)
            self.assertEqual(top["file"], "holders_demo.py")
            self.assertEqual(top["bytes"], site["bytes"], what)
        search = held["holders_search"]
        self.assertEqual(search["ended"], "all")
        self.assertEqual(search["named_bytes"], held["tensor_bytes"])
        self.assertIn("held by history[...] (list in holders_demo.py)", stderr)
        self.assertIn("held by the autograd graph of losses[...] (in holders_demo.py)", stderr)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("held by net.kept[...] (list, attribute of a Net, in holders_demo.py): 10.0 KiB "
                      "in 5 allocation(s)", text)
        report, _, _, _ = self.run_script_file("holders_demo.py", {"GPULEAK_HOLDERS_MS": "0"})
        self.assertEqual(len(report["held_at_finish"]["sites"]), len(held["sites"]))
        self.assertNotIn("holders_search", report["held_at_finish"])
        self.assertFalse(any("held_by" in s for s in report["held_at_finish"]["sites"]))

    def test_holders_of_driver_memory_are_named(self):
        """Arrays over the driver's own allocations (CuPy's, Numba's kind)
        whose class never frees them: the leaks and the held sites name the
        list and the attribute. Leaks, not still reachable: the arrays die
        at module teardown and nothing returns their memory (only PyTorch's
        tensors are kept past it by their framework), so the gate fails."""
        report, expect, stderr, path = self.run_script_file("driver_holders_demo.py")
        self.assertEqual(report["reachable_at_exit"], [])
        self.assertEqual(report["totals"]["reachable_bytes"], 0)
        for section in (report["leaks"], report["held_at_finish"]["sites"]):
            # By line, as the views group: since 3.12 one line's first run
            # and later ones may enter the interpreter through different
            # native frames, and be two sites.
            by_line = {}
            for s in section:
                held = by_line.setdefault(s["origin"]["callers"][0]["line"], {})
                for h in s["held_by"]:
                    key = (h["name"], h["owner"])
                    held[key] = held.get(key, 0) + h["bytes"]
            self.assertEqual(by_line[expect["batches"]], {("batches[...]", None): 12 * 4096})
            self.assertEqual(by_line[expect["outputs"]], {("trainer.outputs[...]", "Trainer"): 4 * 2048})
        self.assertIn("  held by batches[...] (list in driver_holders_demo.py): 48.0 KiB", stderr)
        self.assertNotIn("Still reachable", stderr)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("  held by trainer.outputs[...] (list, attribute of a Trainer, in driver_holders_demo.py)",
                      text)
        check = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", path],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(check.returncode, 1, check.stdout)
        self.assertIn("held by batches[...] (list in driver_holders_demo.py)", check.stdout)

    def test_holders_through_frames_generators_and_libraries(self):
        """Issue 31: driver memory kept through a caught exception's
        traceback, a suspended generator, a model only a library's trainer
        keeps, and an instance-level __cuda_array_interface__: every held
        byte is named, the library's private path kept beside the user's
        name, and the search ends done."""
        report, expect, stderr, path = self.run_script_file("reach_demo.py")
        held = report["held_at_finish"]
        named = {}
        for site in held["sites"]:
            for h in site.get("held_by", []):
                key = (h["name"], h["type"], h["owner"], h.get("path"))
                named[key] = named.get(key, 0) + h["bytes"]
        self.assertEqual(named, {
            ("step() local act, kept by skipped[...] (an exception's traceback)", "Buffer", None, None):
                2 * 8192,
            ("Net.kept[...]", "list", "Net", "trainer._connector._selector.model.kept[...]"): 3 * 4096,
            ("batches() local staging, kept by stream (a suspended batches() generator)", "Buffer",
             None, None): 2048,
            ("raw", "Raw", None, None): 1024})
        self.assertEqual(held["holders_search"]["ended"], "done")
        self.assertEqual(held["holders_search"]["named_bytes"], sum(named.values()))
        self.assertIn("held by Net.kept[...] (list, attribute of a Net, in reach_demo.py; "
                      "reached as trainer._connector._selector.model.kept[...]): 12.0 KiB", stderr)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("reached as trainer._connector._selector.model.kept[...]", text)
        # Both views say how the search went and how much of the held
        # memory it named: all but the two steps' buffers no object kept.
        self.assertRegex(stderr, r"The search for holders looked at \d+ object\(s\) in [0-9.]+ s and "
                                 r"ended done; it named holders for 31\.0 KiB of the 47\.0 KiB held \(66%\)\.")
        self.assertRegex(text, r"The search for holders looked at \d+ object\(s\) in [0-9.]+ s and "
                               r"ended done; it named holders for 31\.0 KiB of the 47\.0 KiB held \(66%\)\.")

    def test_out_of_memory_names_the_frames_that_hold_it(self):
        """Issue 31: at the first out-of-memory failure the main thread is
        asked, at its next bytecode, who holds the live memory: the failed
        step's activations, kept by its frame (the exception's traceback),
        are named in the oom section and the summary."""
        report, expect, stderr, path = self.run_script_file("oom_holders_demo.py",
                                                            {"FAKECUDA_OOM_AFTER": "10"})
        oom = report["oom"]
        self.assertEqual(oom["holders_search"]["ended"], "all")
        site, = oom["sites"]
        self.assertEqual(site["bytes"], 10 << 20)
        self.assertEqual([(h["name"], h["type"], h["bytes"]) for h in site["held_by"]],
                         [("train_step() local activations[...]", "list", 10 << 20)])
        self.assertIn("held by train_step() local activations[...] (list in oom_holders_demo.py): "
                      "10.0 MiB", stderr)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("held by train_step() local activations[...] (list in oom_holders_demo.py): "
                      "10.0 MiB in 10 allocation(s)", text)

    def test_a_report_on_request_names_who_holds_the_memory_now(self):
        """Issue 31: a report asked for with GPULEAK_DUMP_SIGNAL while the
        program runs names the holders then (a function's local list, a
        global cache), from a search the main thread ran for it."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-dump-py-")
        copy = os.path.join(tmp, "dump.json")
        report, expect, _, _ = self.run_script_file("dump_holders_demo.py", {"DUMP_COPY": copy})
        with open(copy) as fh:
            dump = json.load(fh)
        self.assertEqual(dump["status"]["moment"], "request")
        self.assertEqual(dump["holders_search"]["ended"], "all")
        named = {h["name"]: h["bytes"] for leak in dump["leaks"] for h in leak.get("held_by", [])}
        self.assertEqual(named, {"serve() local pending[...]": 4 * 8192, "cache[...]": 4096})
        # The exit report's holders are the finish's own: the cache only.
        named = {h["name"] for s in report["held_at_finish"]["sites"] for h in s.get("held_by", [])}
        self.assertEqual(named, {"cache[...]"})

    def test_a_daemon_thread_allocating_to_the_end_keeps_the_held_section(self):
        """Issue 32 item 8: a daemon thread allocating until the process
        exits made the report drop what the script held when Python
        finished (its allocations after the finish looked like a program
        going on past it)."""
        for _ in range(3):
            report, expect, _, _ = self.run_script_file("daemon_alloc_demo.py")
            held = report["held_at_finish"]
            self.assertIsNotNone(held)
            named = {h["name"]: h["bytes"] for s in held["sites"] for h in s.get("held_by", [])}
            self.assertEqual(named.get("kept[...]"), 4 * 65536)

    def test_origins_are_judged_again_from_the_report(self):
        """gpuleak report and check re-judge origins with other rules from
        the frames the report holds: skipping the array class's own line
        makes each keeping line the origin, with no rerun; a bad rules value
        is a usage error. (No holder search: the arrays are then leaks at
        exit, which check lists by origin.)"""
        report, expect, _, path = self.run_script_file("driver_holders_demo.py", {"GPULEAK_HOLDERS_MS": "0"})
        gpuleak = os.path.join(BUILD, "gpuleak")
        plain = subprocess.run([gpuleak, "check", path], capture_output=True, text=True, timeout=60)
        self.assertIn(":17 in DeviceArray.__init__, from <module>", plain.stdout)
        for cmd in ("check", "report"):
            again = subprocess.run([gpuleak, cmd, path, "--origin-skip", "DeviceArray.__init__"],
                                   capture_output=True, text=True, timeout=60)
            if cmd == "check":
                self.assertNotIn("in DeviceArray.__init__", again.stdout)
            for what in ("batches", "outputs"):
                self.assertIn("%s:%d in <module>" % (os.path.join(ROOT, "tests/python/driver_holders_demo.py"),
                                                     expect[what]), again.stdout, cmd)
        self.assertEqual(plain.returncode, 1)
        bad = subprocess.run([gpuleak, "check", path, "--origin-rules", "some"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--origin-rules takes none or default", bad.stderr)

    def test_a_leak_once_an_epoch_is_growth(self):
        """Validation outputs kept once an epoch, eight epochs: the kept
        line is the one growth finding, held by the module's list; without
        the leak, nothing grows."""
        report, expect, stderr, path = self.run_script_file("epoch_demo.py")
        self.assertEqual([(g["origin"]["line"], [h["name"] for h in g["held_by"]]) for g in report["growth"]],
                         [(expect["keep_line"], ["module.validation_outputs[...]"])])
        self.assertEqual(report["growth"][0]["held_by"][0]["role"], "other_tensors")
        # The cause and cure, in the exit summary and gpuleak report alike.
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path], capture_output=True,
                              text=True, timeout=60).stdout
        gate = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", "--max-growth", "1K", path],
                              capture_output=True, text=True, timeout=60).stdout
        for view, out in (("summary", stderr), ("gpuleak report", text), ("gpuleak check", gate)):
            with self.subTest(view=view):
                self.assertIn("Cause: module.validation_outputs[...] keeps tensors from step after step", out)
                self.assertIn("collections.deque(maxlen=N)", out)
        report, _, stderr, path = self.run_script_file("epoch_demo.py", {"EPOCH_LEAK": "0"})
        self.assertEqual(report["growth"], [])
        self.assertNotIn("Cause:", stderr)

    def test_burst_after_a_quiet_start_up_is_judged(self):
        """200 quick steps after 1.5 s of start-up: checkpoints by the
        allocations made, not only by the clock, give the burst enough
        samples; its leaking line grows, and nothing else does."""
        report, expect, _, _ = self.run_script_file("burst_demo.py")
        growth = report["growth"]
        self.assertTrue(growth, "no growth finding for the burst")
        top = growth[0]["origin"]
        self.assertEqual((top["file"], top["line"]), (expect["file"], expect["leak_line"]))
        self.assertEqual(len(growth), 1, [(g["origin"], g["bytes"]) for g in growth])

    def test_steady_burst_after_a_quiet_start_up_has_no_growth(self):
        report, _, _, _ = self.run_script_file("burst_demo.py", {"BURST_LEAK": "0"})
        self.assertEqual(report["growth"], [])

    def test_recursion_and_two_devices(self):
        report, expect, _, _ = self.run_script_file("shapes_demo.py", {"FAKECUDA_DEVICES": "2"})
        by_device = {}
        for leak in report["leaks"]:
            origin = leak["origin"]
            callers = [(c["function"], c["line"]) for c in origin.get("callers") or []]
            # A recursion's frame is one caller, never repeated.
            self.assertEqual(len(callers), len(set(callers)), callers)
            if callers and callers[0][1] == expect["two_devices_line"]:
                by_device[leak["device"]] = leak["allocations"]
        # One line keeping tensors on two devices: a site per device.
        self.assertEqual(by_device, {0: 6, 1: 6})

    def test_a_program_with_no_frame_of_its_own(self):
        """Run from a site-packages folder, every Python frame is an
        installed package's: the innermost one is the origin, marked."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-sp-")
        os.makedirs(os.path.join(tmp, "site-packages"))
        script = os.path.join(tmp, "site-packages", "shapes_demo.py")
        shutil.copy(os.path.join(ROOT, "tests/python/shapes_demo.py"), script)
        env = dict(os.environ)
        env.update({"LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"), "FAKECUDA_DEVICES": "2",
                    "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                    "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json"),
                    "FAKE_C10": FAKE_C10, "EXPECT_OUT": os.path.join(tmp, "expect.json")})
        proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = report_files.load(report_paths(tmp)[0])
        self.assertTrue(report["leaks"])
        for leak in report["leaks"]:
            self.assertTrue(leak["origin"]["library"], leak["origin"])
            self.assertEqual(leak["origin"]["file"], script)
        self.assertIn("no frame of the program's own", proc.stderr)

    # 8
    def test_disabled(self):
        tmp = tempfile.mkdtemp(prefix="gpuleak-torch-")
        proc, expect = run_script(tmp, extra_env={"GPULEAK_ENABLE": "0",
                                                  "GPULEAK_TORCH_ALLOCATOR": "async"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIsNotNone(expect)
        self.assertEqual(report_paths(tmp), [])
        self.assertIsNone(expect["alloc_conf"])
        self.assertNotIn("gpuleak:", proc.stderr)
        self.assert_program_unchanged(expect)

    # 9
    def test_counts_without_stacks(self):
        report, expect, _ = self.run_demo(extra_env={"GPULEAK_STACK_DEPTH": "0",
                                                     "GPULEAK_PYTHON": "0"})
        self.assert_program_unchanged(expect)
        self.assertEqual(report["torch_allocator"]["tensors"], "attached")
        self.assert_tensor_counts(report, expect)
        tensor_leaks = [l for l in report["leaks"] if l["kind"] == "tensor"]
        self.assertEqual(sum(l["bytes"] for l in tensor_leaks), expect["kept_bytes"])
        self.assertEqual(sum(l["allocations"] for l in tensor_leaks), expect["kept"])
        for leak in report["leaks"]:
            self.assertEqual(leak["stack"], [])
            self.assertEqual(leak["python_stack"], [])
        # Without a stack to name the owner, PyTorch's segment events still
        # say which driver allocations are its cache: not a leak.
        self.assertEqual(report["totals"]["leaked_bytes"], expect["kept_bytes"])
        self.assertGreater(report["torch_allocator"]["reserve_bytes"], 0)


if __name__ == "__main__":
    unittest.main()
