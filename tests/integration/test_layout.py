"""The interpreter's own layout (shim/python/layout.py): on its own, in fresh
interpreters, it names the standard library's and the packages' folders,
imports nothing and runs none of the program's code; under the shim, the
report records it ("python_layout") and judges Python frames by it, where
the built-in globs know neither folder: a standard library in
pylib/python3.X (PYTHONHOME with PYTHONPLATLIBDIR, as a distribution's
platlibdir or a relocated Python puts it) and a package in a folder laid
out by `pip install --target` (tests/python/deps). A report taken before
Python's finish has no layout and keeps the built-in globs; `gpuleak
report --origin-rules default` judges again by the recorded layout."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import reports as report_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
LAYOUT_PY = os.path.join(ROOT, "shim", "python", "layout.py")
SCRIPT = os.path.join(ROOT, "tests", "python", "layout_demo.py")

# Runs layout.py's layout() in a fresh interpreter after the program's own
# lines (argv[1]); prints the answer, the modules it imported and its time.
CHILD = textwrap.dedent("""\
    import sys, time
    exec(sys.argv[1])
    scope = {}
    with open(%r) as fh:
        exec(compile(fh.read(), "layout.py", "exec"), scope)
    before = set(sys.modules)
    times = []
    for _ in range(20):
        start = time.perf_counter()
        answer = scope["layout"]()
        times.append(time.perf_counter() - start)
    print(repr((answer, sorted(set(sys.modules) - before), sorted(times)[len(times) // 2])))
    """) % LAYOUT_PY


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPULEAK_", "PYTHON")) and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def folders(answer, kind):
    return [line.split("\t", 1)[1] for line in answer.splitlines() if line.startswith(kind + "\t")]


class LayoutAloneTest(unittest.TestCase):
    def ask(self, program="", flags=(), env=None, cwd=None):
        proc = subprocess.run([sys.executable, *flags, "-c", CHILD, program], env=env or clean_env(),
                              cwd=cwd, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        answer, imported, seconds = eval(proc.stdout)
        self.assertEqual(imported, [], "layout.py imported modules")
        print("layout.py %s: %.0f us" % (" ".join(flags) or "plain", seconds * 1e6), file=sys.stderr)
        return answer

    def test_names_this_interpreters_folders(self):
        import site
        answer = self.ask()
        stdlib = os.path.dirname(os.__file__)
        self.assertEqual(folders(answer, "stdlib")[0], getattr(sys, "_stdlib_dir", stdlib))
        self.assertIn(stdlib, folders(answer, "stdlib"))
        for path in site.getsitepackages():
            if os.path.isdir(path):
                self.assertIn(path, folders(answer, "packages"))
        for line in answer.splitlines():
            kind, _, path = line.partition("\t")
            self.assertIn(kind, ("stdlib", "packages"))
            self.assertTrue(path.startswith("/") and not path.endswith("/") and os.path.exists(path),
                            line)

    def test_without_site_and_isolated(self):
        stdlib = os.path.dirname(os.__file__)
        for flags in (("-S",), ("-I",)):
            with self.subTest(flags=flags):
                self.assertIn(stdlib, folders(self.ask(flags=flags), "stdlib"))

    def test_sysconfig_once_the_program_read_it(self):
        import sysconfig
        answer = self.ask("import sysconfig; sysconfig.get_paths()")
        for key in ("stdlib", "purelib"):
            path = sysconfig.get_paths()[key]
            if os.path.isdir(path):
                self.assertIn(path.rstrip("/"), answer)

    def test_never_asks_a_module_of_the_programs(self):
        """A sysconfig.py and a site.py of the program's, imported by it,
        are not the standard library's: layout.py does not call them."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-layout-")
        for name in ("sysconfig", "site"):
            with open(os.path.join(tmp, name + ".py"), "w") as fh:
                fh.write("def _ran(*a, **k):\n    raise SystemExit('layout.py ran %s')\n"
                         "get_paths = getsitepackages = _ran\nUSER_SITE = '/'\n" % name)
        # The standard library's site goes, so that the import finds the
        # program's; sysconfig's configuration reads as loaded.
        answer = self.ask("sys.path.insert(0, %r); sys.modules.pop('site', None); "
                          "import sysconfig, site; assert sysconfig.__file__.startswith(%r); "
                          "sys.modules['_sysconfigdata_x'] = sys" % (tmp, tmp))
        self.assertIn(os.path.dirname(os.__file__), folders(answer, "stdlib"))
        self.assertNotIn("\tpackages\t/\n", "\t" + answer)

    def test_folders_of_installed_distributions(self):
        """A folder on sys.path that holds a .dist-info (pip install
        --target) and one named site-packages are packages' folders; the
        program's own folder, with neither, is not."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-layout-")
        target, named, own = (os.path.join(tmp, n) for n in ("target", "x/site-packages", "own"))
        os.makedirs(os.path.join(target, "pkg-1.0.dist-info"))
        os.makedirs(named)
        os.makedirs(os.path.join(own, "pkg.egg-info"))  # an editable install's source
        answer = self.ask(env=clean_env(PYTHONPATH=":".join((target, named, own))))
        packages = folders(answer, "packages")
        self.assertIn(target, packages)
        self.assertIn(named, packages)
        self.assertNotIn(own, packages)


class LayoutReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(os.path.join(BUILD, "libgpuleak.so")):
            raise unittest.SkipTest("build/libgpuleak.so not built (make integration)")

    def run_demo(self, tmp, **extra):
        """Runs layout_demo.py under the shim; returns the report at exit,
        the snapshot taken before Python's finish, and the expectations."""
        env = clean_env(**extra)
        env.update({
            "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
            "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
            "GPULEAK_OUTPUT": os.path.join(tmp, "r.json"),
            "GPULEAK_SUMMARY": "0",
            "SNAPSHOT_FROM": os.path.join(tmp, "r.request-1.json"),  # the report on request
            "SNAPSHOT_TO": os.path.join(tmp, "mid.json"),
            "EXPECT_OUT": os.path.join(tmp, "expect.json"),
        })
        proc = subprocess.run([sys.executable, SCRIPT], env=env, capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(env["EXPECT_OUT"]) as fh:
            expect = json.load(fh)
        return (report_files.load(env["GPULEAK_OUTPUT"]), report_files.load(env["SNAPSHOT_TO"]),
                expect)

    def origin(self, report, size):
        leak = next(leak for leak in report["leaks"] if leak["bytes"] == size)
        o = leak["origin"]
        return (o["file"], o["line"], o["function"]), o.get("via")

    def assert_judged_by_layout(self, report, expect):
        origin, via = self.origin(report, expect["stdlib_size"])
        self.assertEqual(origin, (expect["file"], expect["stdlib_line"], "through_stdlib"))
        self.assertIsNone(via)
        origin, via = self.origin(report, expect["lib_size"])
        self.assertEqual(origin, (expect["file"], expect["lib_line"], "through_library"))
        self.assertEqual((via["file"], via["line"]), (expect["via_file"], expect["via_line"]))

    def test_report_records_this_interpreters_layout(self):
        tmp = tempfile.mkdtemp(prefix="gpuleak-layout-")
        report, mid, expect = self.run_demo(tmp)
        layout = report["python_layout"]
        self.assertIn(expect["stdlib_dir"], layout["stdlib"])
        self.assertIn(expect["deps"], layout["packages"])
        for path in expect["site_packages"]:
            self.assertIn(path, layout["packages"])
        self.assert_judged_by_layout(report, expect)
        # Before Python's finish: no layout, the built-in globs alone, which
        # know this standard library but not the --target folder.
        self.assertIsNone(mid["python_layout"])
        origin, _ = self.origin(mid, expect["lib_size"])
        self.assertEqual(origin, (expect["via_file"], expect["via_line"], "Grid.make"))

    def test_standard_library_in_a_folder_no_glob_knows(self):
        tmp = tempfile.mkdtemp(prefix="gpuleak-layout-")
        version = "python%d.%d" % sys.version_info[:2]
        stdlib = os.path.join(tmp, "home", "pylib", version)
        os.makedirs(os.path.dirname(stdlib))
        os.symlink(os.path.dirname(os.__file__), stdlib)
        report, mid, expect = self.run_demo(tmp, PYTHONHOME=os.path.join(tmp, "home"),
                                            PYTHONPLATLIBDIR="pylib")
        self.assertEqual(expect["sched_file"], os.path.join(stdlib, "sched.py"))
        self.assertEqual(report["python_layout"]["stdlib"][0], stdlib)
        self.assert_judged_by_layout(report, expect)
        # Without the layout, the frame of sched.py is taken for the user's.
        self.assertIsNone(mid["python_layout"])
        origin, _ = self.origin(mid, expect["stdlib_size"])
        self.assertEqual((origin[0], origin[2]), (expect["sched_file"], "scheduler.run"))

        # The command judges again by the recorded layout; without it, as
        # the built-in globs would.
        path = os.path.join(tmp, "r.json")
        with open(path) as fh:
            raw = json.load(fh)
        del raw["python_layout"]
        bare = os.path.join(tmp, "bare.json")
        with open(bare, "w") as fh:
            json.dump(raw, fh)
        gpuleak = os.path.join(BUILD, "gpuleak")
        want = "%s:%d in through_stdlib" % (expect["file"], expect["stdlib_line"])
        text = subprocess.run([gpuleak, "report", "--origin-rules", "default", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn(want, text)
        self.assertNotIn("sched.py:", text.split("Still held")[1])
        text = subprocess.run([gpuleak, "report", "--origin-rules", "default", bare],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertNotIn(want, text)
        self.assertIn("%s:%d in scheduler.run" % (expect["sched_file"], origin[1]), text)


if __name__ == "__main__":
    unittest.main()
