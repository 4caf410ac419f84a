"""Python frames under the shim: tests/python/frames_demo.py allocates through
the fake driver with ctypes (which releases the GIL, as PyTorch does) from
nested functions, a method, a generator, a lambda, two threads and the middle
of a long function. The script writes, from the interpreter's own frames, the
file, function and line each allocation came from; the report must name the
same ones in every leak's python_stack."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import reports as report_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")


class PythonFramesTest(unittest.TestCase):
    def run_demo(self, extra_env=None):
        tmp = tempfile.mkdtemp(prefix="gpuleak-py-")
        env = dict(os.environ)
        env.update({
            "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
            "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
            "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json"),
            "EXPECT_OUT": os.path.join(tmp, "expect.json"),
        })
        env.update(extra_env or {})
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests/python/frames_demo.py")],
                              env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        reports = [f for f in os.listdir(tmp) if f.startswith("r-")]
        self.assertEqual(len(reports), 1, proc.stderr)
        report = report_files.load(os.path.join(tmp, reports[0]))
        with open(env["EXPECT_OUT"]) as fh:
            expect = json.load(fh)
        return report, expect, proc.stderr

    def test_every_site_names_its_python_line(self):
        report, expect, _ = self.run_demo()
        self.assertEqual(report["process"]["python"].split(".")[:2],
                         expect["python"].split(".")[:2])
        self.assertGreaterEqual(len(expect["sites"]), 10)
        # Allocations from the same Python stack sum to one entry; the
        # script's sizes are all distinct, so its bytes are its own.
        want = {}
        for size, site in expect["sites"].items():
            key = tuple(tuple(frame) for frame in site["stack"])
            bytes_, count = want.get(key, (0, 0))
            want[key] = (bytes_ + int(size), count + 1)
        # A site is a native and a Python stack: since 3.12 a generator's
        # first run and its resumptions enter the interpreter through
        # different native frames, two sites of one Python stack, summed here.
        got = {}
        for leak in report["leaks"]:
            key = tuple((f["function"], f["file"], f["line"]) for f in leak["python_stack"])
            bytes_, count = got.get(key, (0, 0))
            got[key] = (bytes_ + leak["bytes"], count + leak["allocations"])
        for key, (bytes_, count) in want.items():
            with self.subTest(function=key[0][0], line=key[0][2]):
                self.assertIn(key, got, "no leak with this Python stack")
                self.assertEqual(got[key], (bytes_, count))
        self.assertEqual(len(got), len(want))

    def test_python_frames_can_be_turned_off(self):
        report, expect, _ = self.run_demo({"GPULEAK_PYTHON": "0"})
        self.assertTrue(report["leaks"])
        for leak in report["leaks"]:
            self.assertEqual(leak["python_stack"], [])

    def test_summary_shows_python_line_first(self):
        _, expect, stderr = self.run_demo()
        # The summary shows the largest sites; each starts with its Python line.
        lines = ["%s in %s:%d (Python)" % (s["function"], s["file"], s["line"])
                 for s in expect["sites"].values()]
        shown = [line for line in lines if ("#0 " + line) in stderr]
        self.assertGreaterEqual(len(shown), 3, stderr)


def run_script(test, script, *args, python=sys.executable, shim=True, env=None):
    """Runs tests/python/SCRIPT with args under python over the fake driver,
    the shim preloaded unless shim is false, env's variables added; asserts
    it exited 0. Returns the process and its report (None without the shim)."""
    tmp = tempfile.mkdtemp(prefix="gpuleak-py-")
    full = dict(os.environ)
    full.update({"LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                 "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json")})
    if shim:
        full["LD_PRELOAD"] = os.path.join(BUILD, "libgpuleak.so")
    full.update(env or {})
    proc = subprocess.run([python, os.path.join(ROOT, "tests", "python", script), *args],
                          env=full, capture_output=True, text=True, timeout=120)
    test.assertEqual(proc.returncode, 0, proc.stderr)
    if not shim:
        return proc, None
    (name,) = [f for f in os.listdir(tmp) if f.startswith("r-")]
    return proc, report_files.load(os.path.join(tmp, name))


class EachPython:
    """check(python) under this interpreter and under each other CPython
    3.10 to 3.13 the machine has (tests/pythons.py): where each keeps what
    the shim reads or pauses differs by version."""

    def test_this_interpreter(self):
        self.check(sys.executable)

    def test_other_interpreters(self):
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from pythons import other_pythons
        for python in other_pythons():
            with self.subTest(python=python):
                self.check(python)


class NativePathsTest(unittest.TestCase):
    """One Python line reaching the driver through two native paths
    (tests/python/native_paths_demo.py): the native frames tell the two
    sites apart until the line's native key has been the same 16 times in a
    row, after which the line is trusted and not walked natively; the
    interpreter's own frames tell nothing apart."""

    def sites(self, order, count, trusted, second="runtime"):
        """The leaks' allocation counts by site; trusted: how many stacks
        the shim took with no native walk (GPULEAK_SELF_TIME counts them)."""
        proc, report = run_script(self, "native_paths_demo.py", order, str(count), second,
                                  env={"GPULEAK_SUMMARY": "0", "GPULEAK_SELF_TIME": "1"})
        line = int(proc.stdout)
        self.assertEqual(sum(leak["allocations"] for leak in report["leaks"]), 2 * count)
        for leak in report["leaks"]:
            self.assertEqual(leak["python_stack"][0]["line"], line)
        self.assertEqual(report["totals"]["shim_trusted_captures"], trusted)
        return sorted(leak["allocations"] for leak in report["leaks"])

    def test_two_native_paths_from_the_start_are_two_sites(self):
        self.assertEqual(self.sites("interleaved", 64, trusted=0), [64, 64])

    def test_a_second_path_before_the_line_is_trusted_is_its_own_site(self):
        self.assertEqual(self.sites("late", 8, trusted=0), [8, 8])

    def test_a_second_path_after_the_line_is_trusted_joins_the_first(self):
        """The price of not walking: as stacks that differ below the key's
        native frames, the later path is counted with the first. The line
        is trusted from its 17th allocation on."""
        self.assertEqual(self.sites("late", 64, trusted=128 - 16), [128])

    def test_paths_apart_only_inside_the_interpreter_are_one_site(self):
        """A call through functools.partial differs from the direct one in
        libpython's frames alone, as a specialized instruction's path does
        from its first runs' (3.13 made two sites of one line that way): one
        site, trusted from its 17th allocation on."""
        self.assertEqual(self.sites("interleaved", 64, trusted=128 - 16, second="partial"), [128])


class ManyLinesTest(unittest.TestCase):
    """A step of 200 allocating lines run 100 times
    (tests/python/many_lines_demo.py): every line is trusted from its 17th
    allocation on, 84 of each line's 100 stacks taken with no native walk.
    The lines' keys were a thread's, in a table of 256 slots by hash: a
    third of 200 lines shared a slot with another, each pushing the other
    out before it was trusted: 37% of the stacks were trusted."""

    def test_every_line_is_trusted_after_16(self):
        proc, report = run_script(self, "many_lines_demo.py", "200", "100",
                                  env={"GPULEAK_SUMMARY": "0", "GPULEAK_SELF_TIME": "1"})
        self.assertEqual(proc.stdout.strip(), "lines=200 steps=100")
        counts = sorted(site["total_allocations"] for site in report["sites"])
        self.assertEqual(counts, [100] * 200)
        self.assertEqual(report["totals"]["shim_trusted_captures"], 200 * (100 - 16))


class AuditHooksTest(EachPython, unittest.TestCase):
    """A program with an audit hook (tests/python/audit_hooks_demo.py): the
    hook is the program's code, and it would see every event of what the
    shim runs in the interpreter. So nothing runs there; the held memory is
    still reported, and both the summary and the report say why no holder
    is named. The hooks' place differs by version."""

    def check(self, python):
        proc, report = run_script(self, "audit_hooks_demo.py", python=python)
        self.assertNotIn("audit after the script", proc.stderr)
        self.assertIn("The search for holders did not run: the program has audit hooks", proc.stderr)
        held = report["held_at_finish"]
        self.assertEqual(held["holders_search"]["ended"], "audit_hooks")
        self.assertEqual(sorted(site["bytes"] for site in held["sites"]), [1 << 16, 3 << 20])


class TracingTest(EachPython, unittest.TestCase):
    """A program traced and profiled (tests/python/tracing_demo.py), as
    under coverage or cProfile: its functions are its code, and the shim's
    helpers, run in the interpreter at exit, must not be traced. What they
    see after the script is what they see without gpuleak; the search
    still names the holder. 3.10 pauses tracing by hand (it has no
    PyThreadState_EnterTracing)."""

    def events(self, python, shim):
        proc, report = run_script(self, "tracing_demo.py", python=python, shim=shim,
                                  env={"GPULEAK_SUMMARY": "0"})
        if shim:
            held = report["held_at_finish"]
            self.assertEqual(held["sites"][0]["held_by"][0]["name"], "held")
        return sorted(line for line in proc.stderr.splitlines() if line.startswith("after the script"))

    def check(self, python):
        self.assertEqual(self.events(python, True), self.events(python, False))


class FinalizersTest(EachPython, unittest.TestCase):
    """A program leaving cyclic garbage with finalizers
    (tests/python/finalizers_demo.py): no collection may start inside the
    shim's helpers, where it would run the program's finalizers (3.12 and
    3.13 collected there: 20 finalizers ran)."""

    def check(self, python):
        proc, _ = run_script(self, "finalizers_demo.py", python=python, env={"GPULEAK_SUMMARY": "0"})
        self.assertNotIn("a finalizer ran inside gpuleak's helpers", proc.stderr)


class QuickExitTest(unittest.TestCase):
    def test_os_exit_writes_the_report_first(self):
        """os._exit (a training script's last line, to skip a hanging
        shutdown) runs no exit handler: the report is written before it,
        and its status is the program's."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-py-")
        script = os.path.join(tmp, "quick.py")
        with open(script, "w") as fh:
            fh.write("import os, torch\nkeep = torch.empty(1 << 20)  # KEPT\nos._exit(3)\n")
        env = dict(os.environ)
        env.update({"LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                    "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                    "PYTHONPATH": os.path.join(ROOT, "tests", "python", "faketorch"),
                    "FAKE_C10": os.path.join(BUILD, "fakec10", "libc10_cuda.so"),
                    "GPULEAK_OUTPUT": os.path.join(tmp, "r-%p.json"), "GPULEAK_SUMMARY": "0"})
        proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        (name,) = [f for f in os.listdir(tmp) if f.startswith("r-")]
        report = report_files.load(os.path.join(tmp, name))
        self.assertTrue(report["status"]["complete"])
        lines = [(f["file"], f["line"]) for leak in report["leaks"] for f in leak["python_stack"][:4]]
        self.assertIn((script, 2), lines)


class CallersTest(EachPython, unittest.TestCase):
    """One helper called in turn from two lines of one caller, 300 times
    (tests/python/callers_demo.py): two sites, each with its line's
    allocations, however warm the shim's per-thread tables are. A key whose
    low bits missed the caller's few bytes of difference put both lines in
    one table slot, and on 3.13 (whose later calls reach the driver through
    other interpreter frames) each line's later calls made a third site."""

    def check(self, python):
        proc, report = run_script(self, "callers_demo.py", python=python,
                                  env={"GPULEAK_SUMMARY": "0"})
        first, second = (int(n) for n in proc.stdout.split("lines=")[1].split(","))
        got = sorted((leak["allocations"], leak["python_stack"][1]["line"])
                     for leak in report["leaks"])
        self.assertEqual(got, [(100, first), (200, second)])


class RandomWalksTest(EachPython, unittest.TestCase):
    """Allocations from about 900 stacks made at random
    (tests/python/random_walks_demo.py: functions calling each other to a
    random depth from one of two lines each, recursion included), each
    stack's allocations sized apart: each stack is one site, at its own
    lines. The keys reuse each thread's last walk frame by frame, and a
    thread's table holds 256 of them: a key pushed out and met again took
    a second site on 3.13, whose later calls reach the driver through other
    interpreter frames."""

    def check(self, python):
        proc, report = run_script(self, "random_walks_demo.py", "7", python=python,
                                  env={"GPULEAK_SUMMARY": "0"})
        stacks = json.loads(proc.stdout.splitlines()[-1])
        sizes = []
        for leak in report["leaks"]:
            size = leak["bytes"] // leak["allocations"]
            self.assertEqual(size * leak["allocations"], leak["bytes"], "a site of two stacks")
            want = [tuple(f) for f in stacks[str(size)]]
            got = [(f["function"], f["line"]) for f in leak["python_stack"]]
            self.assertEqual(got[1:], want)  # the first is allocate()'s own line
            sizes.append(size)
        self.assertEqual(sorted(sizes), sorted(int(size) for size in stacks))


if __name__ == "__main__":
    unittest.main()
