"""The Python package (python/gpuleak) and its pytest plugin, over the fake
driver and the fake PyTorch allocator: a test that leaks fails with its
line and holder named, a clean one passes, a growing one fails on its
repeats, xdist's workers keep their own numbers, and JUnit carries them."""
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
SUITE = os.path.join(ROOT, "tests", "python", "pytest_suite")


def python_with(module):
    """An interpreter that can import module (Debian's has python3-pytest)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run([exe, "-c", "import " + module],
                                                  capture_output=True).returncode == 0:
            return exe
    return None


def line_of(marker):
    with open(os.path.join(SUITE, "test_gpu.py")) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text)


class PytestPluginTest(unittest.TestCase):
    def setUp(self):
        self.python = python_with("pytest")
        self.assertIsNotNone(self.python, "pytest is needed: apt-get install python3-pytest")
        self.tmp = tempfile.mkdtemp(prefix="gpuleak-pytest-")

    def pytest_env(self, extra_env=None):
        """The environment pytest runs in: the package and the fake torch
        importable, the shim found through GPULEAK_LIB (not preloaded)."""
        env = dict(os.environ)
        env.update({"PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "python"),
                                                   os.path.join(ROOT, "tests", "python", "faketorch")]),
                    "FAKE_C10": os.path.join(BUILD, "fakec10", "libc10_cuda.so"),
                    "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                    "GPULEAK_LIB": os.path.join(BUILD, "libgpuleak.so"),
                    "GPULEAK_OUTPUT": os.path.join(self.tmp, "r-%p.json"),
                    "GPULEAK_SUMMARY": "0",
                    "COLUMNS": "200"})  # the short summary's lines whole
        env.update(extra_env or {})
        env.pop("LD_PRELOAD", None)
        return env

    def run_pytest(self, *args, suite=SUITE, python_options=(), env=None, cwd=None):
        env = env or self.pytest_env()
        junit = os.path.join(self.tmp, "junit-%d.xml" % len(os.listdir(self.tmp)))
        proc = subprocess.run([self.python] + list(python_options) + ["-m", "pytest", "-p", "gpuleak.pytest_plugin", "-p", "no:cacheprovider",
                               "--junitxml", junit, suite] + list(args),
                              env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
        return proc, self.verdicts(junit)

    @staticmethod
    def verdicts(junit):
        """Each test's (outcome, leaked bytes) from JUnit: outcome "failure"
        (its call failed), "error" (its setup or teardown did), or False."""
        cases = {}
        for case in ET.parse(junit).iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            outcome = next((tag for tag in ("failure", "error") if case.find(tag) is not None), False)
            cases[case.get("name")] = (outcome, props.get("gpuleak_leaked_bytes"))
        return cases

    def expect_verdicts(self, cases, thread_charged=False):
        """A breach is the test's failure (its call), never an error at
        teardown; another Python thread's memory is charged only when
        asked."""
        self.assertEqual(cases, {"test_clean": (False, "0"),
                                 "test_first_matmul": (False, "0"),
                                 "test_uses_its_state": (False, "0"),
                                 "test_uses_a_session_fixture": (False, "0"),
                                 "test_uses_function_fixtures": (False, "0"),
                                 "test_leaks": ("failure", "65536"),
                                 "test_within_its_budget": (False, "4096"),
                                 "test_grows_on_each_run": ("failure", str(4 * 8192)),
                                 "test_steady_on_each_run": (False, "0"),
                                 "test_leaks_through_a_helper": ("failure", "2048"),
                                 "test_while_a_thread_allocates":
                                     ("failure", "1024") if thread_charged else (False, "0"),
                                 "test_skipped_while_a_thread_allocates":
                                     (False, "1024" if thread_charged else "0")})

    def test_leaking_tests_fail_with_their_line_and_holder(self):
        proc, cases = self.run_pytest("--gpuleak")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.expect_verdicts(cases)
        out = proc.stdout
        self.assertIn("64.0 KiB of GPU memory left behind (budget 0 B)", out)
        self.assertIn("test_gpu.py:%d in test_leaks" % line_of("# LEAK-LINE"), out)
        self.assertIn("held by kept[...] (list in test_gpu.py): 64.0 KiB", out)
        self.assertIn("grew by at least 8.0 KiB on each of 3 runs", out)
        self.assertIn("test_gpu.py:%d in test_grows_on_each_run" % line_of("# GROW-LINE"), out)
        # The cause its holder shows, in every view's words (common/diagnosis.c).
        self.assertIn("Cause: cache[...] keeps tensors from step after step", out)
        self.assertIn("collections.deque(maxlen=N)", out)
        self.assertEqual(out.count("Cause:"), 1, out)  # a leak that did not grow has none
        self.assertIn("gpuleak: 3 test(s) left GPU memory behind", out)
        # pytest's own words: FAILED with the line, as a broken assertion.
        self.assertIn("3 failed, 8 passed, 1 skipped", out)
        self.assertNotIn("error", out.split("short test summary info")[-1])
        self.assertRegex(out, r"FAILED \S*test_gpu.py::test_leaks - gpuleak: 64.0 KiB left behind at "
                              r"test_gpu.py:%d in test_leaks\n" % line_of("# LEAK-LINE"))
        # Through a helper: the test's own line first, the helper's as the way.
        self.assertRegex(out, r"2.0 KiB in 1 allocation\(s\) of tensor memory at test_gpu.py:%d in "
                              r"test_leaks_through_a_helper\n.*by way of test_gpu.py:%d in alloc"
                         % (line_of("# OWN-LINE"), line_of("# HELPER-LINE")))
        # One report for the session, with a mark per test on its timeline.
        reports = [f for f in os.listdir(self.tmp) if f.startswith("r-")]
        self.assertEqual(len(reports), 1)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", os.path.join(self.tmp, reports[0])],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertRegex(text, r"marks \('\|' on the axis\):.*test_clean")

    def test_every_thread_is_charged_when_asked(self):
        proc, cases = self.run_pytest("--gpuleak", "--gpuleak-all-threads")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.expect_verdicts(cases, thread_charged=True)
        self.assertIn("test_gpu.py:%d in loader.<locals>.prefetch" % line_of("# THREAD-LINE"), proc.stdout)

    def test_the_session_leaves_no_report_in_the_tests_folder_and_no_summary(self):
        """Unless asked, the report goes to the temporary directory (named
        at the end of pytest's output) and the shim prints no exit summary
        after pytest's own."""
        env = self.pytest_env()
        for name in ("GPULEAK_OUTPUT", "GPULEAK_SUMMARY"):
            env.pop(name)
        env["TMPDIR"] = self.tmp
        cwd = tempfile.mkdtemp(prefix="gpuleak-pytest-cwd-")
        proc, cases = self.run_pytest("--gpuleak", "-k", "test_leaks", env=env, cwd=cwd)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(os.listdir(cwd), [])
        self.assertEqual([f for f in os.listdir(SUITE) if f.endswith(".json")], [])
        self.assertNotIn("gpuleak: summary", proc.stderr)
        self.assertEqual(proc.stderr.strip(), "")
        found = re.search(r"gpuleak: the session's report: (\S+)", proc.stdout)
        self.assertIsNotNone(found, proc.stdout)
        self.assertTrue(found.group(1).startswith(os.path.join(self.tmp, "gpuleak-pytest-%d" % os.getuid())))
        self.assertTrue(os.path.exists(found.group(1)))
        # Asked for: where asked.
        asked = os.path.join(self.tmp, "asked-%p.json")
        proc, cases = self.run_pytest("--gpuleak", "-k", "test_clean", "--gpuleak-report", asked,
                                      env=env, cwd=cwd)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTrue(any(f.startswith("asked-") for f in os.listdir(self.tmp)))

    def test_a_failing_test_s_locals_are_not_a_leak(self):
        """pytest keeps a failing test's traceback in sys.last_traceback
        (for post-mortem debugging), and its frame's tensors with it: a test
        that fails on its own, or an expected failure, leaves nothing."""
        proc, cases = self.run_pytest("--gpuleak", suite=os.path.join(ROOT, "tests", "python", "pytest_failing"))
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(cases, {"test_fails_on_its_own": ("failure", "0"),
                                 "test_expected_to_fail": (False, "0"),
                                 "test_clean_after_them": (False, "0")})
        self.assertIn("gpuleak: no test left GPU memory behind", proc.stdout)

    def test_xdist_workers_keep_their_own_numbers(self):
        if python_with("xdist") != self.python:
            self.skipTest("pytest-xdist is not installed for this interpreter")
        proc, cases = self.run_pytest("--gpuleak", "-n", "2")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.expect_verdicts(cases)
        self.assertIn("gpuleak: 3 test(s) left GPU memory behind", proc.stdout)

    def test_the_rerun_keeps_the_interpreter_s_options(self):
        """The re-execution under the shim keeps the command line as typed:
        an interpreter option (-X) reaches the rerun."""
        proc, cases = self.run_pytest("--gpuleak", "-k", "test_clean", python_options=["-X", "dev"])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("dev mode: True", proc.stdout)

    def test_without_the_option_nothing_changes(self):
        proc, cases = self.run_pytest()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTrue(all(not failed and leaked is None for failed, leaked in cases.values()), cases)

    def test_the_package_is_a_no_op_without_the_shim(self):
        code = ("import gpuleak\n"
                "assert not gpuleak.loaded() and not gpuleak.tracking()\n"
                "m = gpuleak.mark('x')\n"
                "assert m.id == 0 and gpuleak.live_since(m) == [] and gpuleak.live_bytes() == 0\n"
                "assert gpuleak.snapshot() is False\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        env.pop("LD_PRELOAD", None)
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_the_api_answers_under_the_shim(self):
        """Marks, gains since a mark with their line and holder, live bytes
        by kind and a snapshot now, from a program under the shim."""
        code = ("import gpuleak, torch, json, os\n"
                "assert gpuleak.loaded()\n"
                "m = gpuleak.mark('before')\n"
                "kept = [torch.empty(4096) for _ in range(3)]  # KEPT\n"
                "gone = torch.empty(1 << 20); del gone\n"
                "sites = gpuleak.holders(gpuleak.live_since(m))\n"
                "print(json.dumps({'sites': [(s.kind, s.bytes, s.live_allocations, s.origin, s.holders)"
                " for s in sites], 'tensor': gpuleak.live_bytes('tensor'), 'nothing': gpuleak.live_bytes('nope'),"
                " 'snap': gpuleak.snapshot()}))\n")
        script = os.path.join(self.tmp, "api_demo.py")
        with open(script, "w") as fh:
            fh.write(code)
        env = dict(os.environ)
        env.update({"PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "python"),
                                                   os.path.join(ROOT, "tests", "python", "faketorch")]),
                    "FAKE_C10": os.path.join(BUILD, "fakec10", "libc10_cuda.so"),
                    "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                    "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                    "GPULEAK_OUTPUT": os.path.join(self.tmp, "api-%p.json"), "GPULEAK_SUMMARY": "0"})
        proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        import json
        got = json.loads(proc.stdout.splitlines()[-1])
        (kind, gained, allocations, origin, holders), = got["sites"]
        self.assertEqual((kind, gained, allocations, holders),
                         ("tensor", 3 * 4096, 3, [["kept[...] (list in api_demo.py)", 3 * 4096]]))
        # The comprehension's own frame (<listcomp>) is inlined from Python 3.12.
        self.assertRegex(origin, "^%s:4 in (<listcomp>|<module>)$" % re.escape(script))
        self.assertEqual(got["tensor"], 3 * 4096)
        self.assertEqual(got["nothing"], 0)
        self.assertTrue(got["snap"])

    def run_usage(self, *args, suite=SUITE, extra_env=None):
        """pytest with the plugin where a usage error is expected: no JUnit."""
        env = self.pytest_env(extra_env)
        return subprocess.run([self.python, "-m", "pytest", "-p", "gpuleak.pytest_plugin", "-p",
                               "no:cacheprovider", suite] + list(args),
                              env=env, capture_output=True, text=True, timeout=120)

    def test_a_bad_budget_is_a_usage_error(self):
        """A budget the plugin cannot read is one line and pytest's usage
        exit (4), as the command's sizes are: before, '10XB' or 'lots' was
        an INTERNALERROR traceback. The command's sizes are all taken (a
        bare T too)."""
        for bad in ("10XB", "lots", "-1", "1.5"):
            proc = self.run_usage("--gpuleak", "--gpuleak-max-leaked", bad)
            self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
            self.assertIn("gpuleak: --gpuleak-max-leaked: bad size %r" % bad, proc.stderr)
            self.assertNotIn("Traceback", proc.stdout + proc.stderr)
            self.assertNotIn("INTERNALERROR", proc.stdout + proc.stderr)
        proc = self.run_usage("--gpuleak", "--gpuleak-max-leaked", "1T", "-k", "test_clean")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_a_bad_marker_is_a_usage_error(self):
        """A marker's typo stops the run before any test, naming the test:
        before, a bad max_leaked or repeat failed the test with a traceback
        from inside the plugin, and a size given without its keyword, or a
        misspelt keyword, was left out: a budget of 0 without a word."""
        suite = os.path.join(self.tmp, "suite")
        os.mkdir(suite)
        for name, marker, message in (
                ("size", 'max_leaked="lots"', "max_leaked: bad size 'lots'"),
                ("repeat", 'repeat="x"', "repeat takes a whole number from 1, not 'x'"),
                ("positional", '"1MiB"', "takes keywords only (max_leaked=SIZE, repeat=N), not ('1MiB',)"),
                ("keyword", 'max_leak="1MiB"', "unknown keyword max_leak")):
            path = os.path.join(suite, "test_%s.py" % name)
            with open(path, "w") as fh:
                fh.write("import pytest\n\n@pytest.mark.gpuleak(%s)\ndef test_it():\n    pass\n" % marker)
            proc = self.run_usage("--gpuleak", suite=path)
            os.unlink(path)
            self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
            self.assertIn("test_%s.py::test_it: @pytest.mark.gpuleak" % name, proc.stderr)
            self.assertIn(message, proc.stderr)
            self.assertNotIn("Traceback", proc.stdout + proc.stderr)

    def test_a_missing_gpuleak_lib_is_named(self):
        """GPULEAK_LIB set to a path with nothing there: the error names the
        variable and its value (before, it asked to set GPULEAK_LIB, which
        was set)."""
        proc = self.run_usage("--gpuleak", extra_env={"GPULEAK_LIB": "/nonexistent/libgpuleak.so"})
        self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
        self.assertIn("gpuleak: GPULEAK_LIB=/nonexistent/libgpuleak.so: no such file", proc.stderr)

    def test_it_installs_offline_into_a_virtual_environment(self):
        """Issue 40: `pip install ./python` needs the network (build
        isolation) or the wheel package; scripts/install-python.sh installs
        it into a venv made from the system's Python with nothing more, and
        `python -m pytest --gpuleak` there finds the plugin by its entry
        point (no -p, no PYTHONPATH to python/) and the shim where this
        checkout's make put it (no GPULEAK_LIB, no gpuleak on PATH), as the
        README shows it."""
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([self.python, "-m", "venv", "--without-pip", "--system-site-packages", venv],
                       check=True, timeout=120)
        py = os.path.join(venv, "bin", "python")
        done = subprocess.run([os.path.join(ROOT, "scripts", "install-python.sh"), py],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        env = self.pytest_env()
        env["PYTHONPATH"] = os.path.join(ROOT, "tests", "python", "faketorch")
        del env["GPULEAK_LIB"]
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                      if not os.path.exists(os.path.join(d, "gpuleak")))
        proc = subprocess.run([py, "-m", "pytest", "-p", "no:cacheprovider", SUITE, "--gpuleak",
                               "-k", "test_leaks and not helper"],
                              env=env, capture_output=True, text=True, timeout=120, cwd=self.tmp)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("FAILED", proc.stdout)
        self.assertIn("gpuleak: 64.0 KiB left behind", proc.stdout)

    def test_the_plugin_is_registered_for_pip(self):
        with open(os.path.join(ROOT, "python", "pyproject.toml")) as fh:
            text = fh.read()
        self.assertRegex(text, r'\[project\.entry-points\.pytest11\]\s*gpuleak = "gpuleak\.pytest_plugin"')


if __name__ == "__main__":
    unittest.main()
