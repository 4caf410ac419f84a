"""JAX and CuPy as their users run them, over fakes of the frameworks'
interfaces (tests/python/frameworks): JAX's pool as one VMM block its
arrays are cut from, each array with its traceback and jax.live_arrays();
CuPy's pool of chunks with its memory hooks (per thread) and PooledMemory.
The demos (tests/python/jax_demo.py, cupy_demo.py) keep outputs across
steps or keep nothing; under `gpuleak run --max-leaked --max-growth` the
keeping ones must fail (23) with the line that made the arrays, the name
that keeps them and the framework's words, the clean ones pass (0), and
the pool itself must never be the leak nor the holder's memory. Also:
shim/python/pools.py read directly, with hostile stand-ins for the
frameworks (it must never raise, import, or run a class of the program's)."""
import concurrent.futures
import functools
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
FRAMEWORKS = os.path.join(ROOT, "tests", "python", "frameworks")


def run_demo(script, mode_var, mode, seconds="2.5", gates=True, snapshots="20"):
    """The demo under `gpuleak run`: (exit code, report, expectations,
    stderr, `gpuleak report`'s text). It runs on past its seconds until
    gpuleak's checkpoints have taken that many snapshots: ten samples past
    the run's first fifth for the growth rule, and more."""
    with tempfile.TemporaryDirectory(prefix="gpuleak-frameworks-") as tmp:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPULEAK_", "JAX_", "CUPY_"))}
        env.update({
            "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
            "PYTHONPATH": FRAMEWORKS,
            "FAKE_POOLS": os.path.join(BUILD, "fakepools"),
            "EXPECT_OUT": os.path.join(tmp, "expect.json"),
            mode_var: mode,
            mode_var.split("_")[0] + "_SECONDS": seconds,
            mode_var.split("_")[0] + "_SNAPSHOTS": snapshots,
        })
        report = os.path.join(tmp, "r.json")
        cmd = [os.path.join(BUILD, "gpuleak"), "run", "-o", report]
        if gates:
            cmd += ["--max-leaked", "--max-growth"]
        cmd += ["--", sys.executable, os.path.join(ROOT, "tests", "python", script)]
        proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=120)
        with open(env["EXPECT_OUT"]) as fh:
            expect = json.load(fh)
        with open(report) as fh:
            doc = json.load(fh)
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", report],
                              capture_output=True, text=True, timeout=60).stdout
        return proc.returncode, doc, expect, proc.stderr, text


def run_demos(*calls):
    """The run_demo calls given (functools.partial), at once: each demo
    mostly sleeps between its steps, and one after another they were half
    the time of the tests that run alone. Their results, in order."""
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return [f.result() for f in [pool.submit(call) for call in calls]]


def sites(doc, section):
    return doc.get(section) or []


def origin_line(site):
    origin = site.get("origin") or {}
    return origin.get("file", ""), origin.get("line")


class JaxTest(unittest.TestCase):
    ALONE = True  # the checkpoints' samples depend on time (conftest.py)

    @classmethod
    def setUpClass(cls):
        # Six seconds: the checkpoints come every 100 ms or more (at most
        # 1% of the program's time), and the growth rule wants ten samples
        # past the run's first fifth; at four, a run that started cold (its
        # first .pyc files written) once got 12 and found no growth.
        demo = functools.partial(run_demo, "jax_demo.py", "JAX_MODE", seconds="6")
        cls.keep, cls.cache, cls.clean = run_demos(functools.partial(demo, mode="keep"),
                                                   functools.partial(demo, mode="cache"),
                                                   functools.partial(demo, mode="clean"))

    def test_kept_outputs_fail_the_gate_at_the_line_that_made_them(self):
        code, doc, expect, stderr, _ = self.keep
        self.assertEqual(code, 23, stderr)
        grown = sites(doc, "growth")
        self.assertTrue(grown, "no growth found")
        top = grown[0]
        self.assertEqual((top["kind"], top["framework"]), ("tensor", "jax"))
        self.assertTrue(origin_line(top)[0].endswith("jax_demo.py"))
        self.assertEqual(origin_line(top)[1], expect["step"])
        self.assertEqual(top["held_by"][0]["name"], "history[...]")
        self.assertIn("JAX array memory from", stderr)
        self.assertIn("Cure: keep what later steps need as numbers (float(x)) or on the host "
                      "(jax.device_get)", stderr)

    def test_a_cache_keyed_by_step_is_named(self):
        code, doc, expect, stderr, _ = self.cache
        self.assertEqual(code, 23, stderr)
        lines = {origin_line(s)[1]: s for s in sites(doc, "growth")}
        self.assertIn(expect["cache"], lines, stderr)
        self.assertEqual(lines[expect["cache"]]["held_by"][0]["name"], "cache[...]")

    def test_a_clean_loop_passes(self):
        code, doc, _, stderr, _ = self.clean
        self.assertEqual(code, 0, stderr)
        self.assertEqual(sites(doc, "leaks"), [])
        self.assertEqual(sites(doc, "growth"), [])

    def test_the_pool_is_the_cache_never_the_leak_or_the_holder(self):
        """XLA's block (VMM memory mapped into a reserved range) made at the
        first operation: not a leak, not held by the first array placed in
        it, not at the peak; the report says JAX's arrays were seen in
        snapshots and the composition names JAX's pool."""
        for code, doc, _, stderr, text in (self.keep, self.clean):
            kinds = {s["kind"] for section in ("leaks", "reachable_at_exit", "growth")
                     for s in sites(doc, section)}
            kinds |= {s["kind"] for s in doc["peak"]["sites"]}
            self.assertNotIn("vmm", kinds, stderr)
            self.assertEqual(doc["peak"]["sites_at"], "tensors")
            held = doc["held_at_finish"]
            self.assertEqual({s["kind"] for s in held["sites"]}, {"tensor"})
            self.assertEqual(doc["frameworks"]["jax"]["seen"], "in snapshots")
            self.assertGreater(doc["frameworks"]["jax"]["snapshots"], 1)
            parts = {p["role"]: p["bytes"] for p in held["composition"]["parts"]}
            self.assertEqual(sum(parts.values()), held["composition"]["gpu_bytes"])
            self.assertGreater(parts.get("torch_cache", 0), 0)
            self.assertIn("JAX's pool", stderr)
            self.assertIn("JAX's pool", text)
            self.assertNotIn("PyTorch", stderr)

    def test_an_uncaught_out_of_memory_error_is_the_oom_with_its_holder(self):
        """JAX raises RESOURCE_EXHAUSTED inside its pool (the driver refuses
        nothing); the program dies of it. At Python's finish the error's
        frames still hold what filled the pool: the report's OOM names the
        line, the bytes asked, the holder and JAX's pool."""
        code, doc, expect, stderr, text = run_demo("jax_demo.py", "JAX_MODE", "oom", gates=False)
        self.assertEqual(code, 1, stderr)
        oom = doc["oom"]
        self.assertEqual((oom["kind"], oom["framework"], oom["bytes"]), ("tensor", "jax", expect["batch"]))
        site = doc["stacks"][str(oom["site"])]
        frames = [doc["python_frames"][i] for i in site["python_stack"]]
        self.assertIn(("jax_demo.py", expect["oom"]),
                      [(os.path.basename(f["file"]), f["line"]) for f in frames])
        self.assertEqual(oom["sites"][0]["held_by"][0]["name"], "batches[...]")
        self.assertEqual(oom["sites"][0]["framework"], "jax")
        self.assertIn("JAX's pool held 256.0 MiB", stderr)
        self.assertIn("JAX array memory asked on device 0, from", stderr)
        self.assertIn("JAX's pool held 256.0 MiB", text)

    def test_a_sharded_array_is_held_by_its_name(self):
        """Each piece of an array sharded over devices is its own array at
        the line that made the whole, held by the whole's name."""
        _, doc, expect, stderr, _ = self.clean
        held = {origin_line(s)[1]: s for s in doc["held_at_finish"]["sites"]}
        self.assertIn(expect["shard"], held, stderr)
        self.assertEqual(held[expect["shard"]]["held_by"][0]["name"], "table")
        self.assertEqual(held[expect["shard"]]["bytes"], 64 * 256 * 4)

    def test_the_command_words_the_framework(self):
        _, _, expect, _, text = self.keep
        self.assertIn("jax_demo.py:%d" % expect["step"], text)
        self.assertIn("keeps arrays from step after step", text)
        self.assertIn("(jax.device_get)", text)


class CupyTest(unittest.TestCase):
    ALONE = True  # the checkpoints' samples depend on time (conftest.py)

    @classmethod
    def setUpClass(cls):
        demo = functools.partial(run_demo, "cupy_demo.py", "CUPY_MODE")
        # Only the worker's arrays come from snapshots; the main thread's
        # are seen one by one, and its scans come once a second.
        cls.keep, cls.thread, cls.clean = run_demos(functools.partial(demo, mode="keep", snapshots="0"),
                                                    functools.partial(demo, mode="thread", seconds="6"),
                                                    functools.partial(demo, mode="clean", snapshots="0"))

    def test_kept_results_fail_the_gate_at_their_line(self):
        code, doc, expect, stderr, _ = self.keep
        self.assertEqual(code, 23, stderr)
        top = sites(doc, "growth")[0]
        self.assertEqual((top["kind"], top["framework"]), ("tensor", "cupy"))
        self.assertEqual(origin_line(top)[1], expect["filter"])
        self.assertEqual(top["held_by"][0]["name"], "kept[...]")
        self.assertIn("CuPy array memory from", stderr)
        seen = doc["frameworks"]["cupy"]
        self.assertEqual(seen["seen"], "one by one on the main thread, in snapshots elsewhere")
        self.assertGreater(seen["arrays_seen_one_by_one"], 100)

    def test_a_clean_loop_passes_and_the_chunks_are_the_pools(self):
        code, doc, _, stderr, _ = self.clean
        self.assertEqual(code, 0, stderr)
        self.assertEqual(sites(doc, "leaks"), [])
        self.assertEqual(sites(doc, "growth"), [])
        self.assertIn("CuPy's pool", stderr)

    def test_arrays_of_another_thread_are_found_in_snapshots(self):
        """CuPy's hooks are per thread: a worker's arrays are found by heap
        scans at the checkpoints, with no line, and their growth and holder
        still are; the chunks the worker took are CuPy's pool, not leaks."""
        code, doc, _, stderr, _ = self.thread
        self.assertEqual(code, 23, stderr)
        self.assertEqual(sites(doc, "leaks"), [], stderr)
        top = sites(doc, "growth")[0]
        self.assertEqual(top["framework"], "cupy")
        self.assertEqual(top["held_by"][0]["name"], "kept[...]")
        self.assertGreater(doc["frameworks"]["cupy"]["from_snapshots"], 100)
        self.assertIn("found in a snapshot of CuPy's pool", stderr)


class NoFrameworkTest(unittest.TestCase):
    def test_a_profiled_program_sees_none_of_the_shims_python(self):
        """A program profiled by itself over seconds of checkpoints sees
        none of the shim's Python: not pools.py's (the checkpoints ask
        sys.modules from C, and run nothing without JAX or CuPy), not the
        holder search's at its finish, which ran (the layout it read is in the
        report) with the thread's tracing paused."""
        with tempfile.TemporaryDirectory(prefix="gpuleak-profiled-") as tmp:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GPULEAK_")}
            env.update({"LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
                        "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
                        "GPULEAK_OUTPUT": os.path.join(tmp, "r.json"),
                        "EXPECT_OUT": os.path.join(tmp, "seen.json")})
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "python", "profiled_demo.py")],
                                  env=env, cwd=tmp, capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(env["EXPECT_OUT"]) as fh:
                seen = json.load(fh)
            with open(env["GPULEAK_OUTPUT"]) as fh:
                doc = json.load(fh)
        self.assertEqual(seen, [])
        self.assertIn("stdlib", doc["python_layout"], "layout.py did not run: the test would pass blind")


def load_pools():
    """shim/python/pools.py as the shim runs it: its own namespace."""
    namespace = {}
    with open(os.path.join(ROOT, "shim", "python", "pools.py")) as fh:
        exec(compile(fh.read(), "pools.py", "exec"), namespace)
    return namespace


class PoolsPyTest(unittest.TestCase):
    """pools.py alone, with stand-ins for the frameworks in sys.modules."""

    def setUp(self):
        self.saved = {k: sys.modules[k] for k in list(sys.modules)
                      if k.split(".")[0] in ("jax", "jaxlib", "cupy")}
        for k in self.saved:
            del sys.modules[k]
        self.pools = load_pools()

    def tearDown(self):
        for k in [k for k in sys.modules if k.split(".")[0] in ("jax", "jaxlib", "cupy")]:
            del sys.modules[k]
        sys.modules.update(self.saved)

    def test_nothing_loaded_lists_nothing_and_imports_nothing(self):
        before = set(sys.modules)
        self.assertEqual(self.pools["arrays"](), "#\t")
        self.assertEqual(self.pools["arm"](print, print, print, print), "")
        self.assertEqual(set(sys.modules) - before, set())

    def test_hostile_frameworks_never_raise(self):
        jax = types.ModuleType("jax")

        def live_arrays():
            raise RuntimeError("backend gone")
        jax.live_arrays = live_arrays
        sys.modules["jax"] = jax
        memory = types.ModuleType("cupy.cuda.memory")

        class PooledMemory:  # fields as properties: Python code, never read
            @property
            def ptr(self):
                raise AssertionError("a property of the program's ran")
            size = device_id = ptr
        memory.PooledMemory = PooledMemory
        sys.modules["cupy.cuda.memory"] = memory
        keep = PooledMemory()  # noqa: F841 (found by the heap scan)
        self.assertEqual(self.pools["arrays"](1), "#\t")

        class BadArray:
            def is_deleted(self):
                return False

            def unsafe_buffer_pointer(self):
                return 1 << 40

            @property
            def traceback(self):
                raise ValueError("no traceback")

            def devices(self):
                raise RuntimeError("no devices")
        jax.live_arrays = lambda: [BadArray(), 42, None]
        self.assertEqual(self.pools["arrays"](0), "#\tjax")

    def test_a_module_getattr_is_never_run(self):
        jax = types.ModuleType("jax")

        def module_getattr(name):
            raise AssertionError("the module's __getattr__ ran for %s" % name)
        jax.__getattr__ = module_getattr
        sys.modules["jax"] = jax
        self.assertEqual(self.pools["arrays"](), "#\t")

    def test_known_arrays_are_listed_without_their_frames(self):
        """An array listed before is listed again without its frames (the
        shim has them) and without being read again; a new array at the
        same address is not taken for it (its traceback differs)."""
        sys.path.insert(0, FRAMEWORKS)
        try:
            import jax.numpy as jnp

            def jax_lines(answer):
                return [l.split("\t") for l in answer.split("\n") if l.startswith("jax\t")]
            a = jnp.ones((16,))
            (line,) = jax_lines(self.pools["arrays"](0))
            self.assertEqual(int(line[1]), a.unsafe_buffer_pointer())
            self.assertEqual(int(line[2]), a.on_device_size_in_bytes())
            self.assertNotEqual(line[5], "-")
            (again,) = jax_lines(self.pools["arrays"](0))
            self.assertEqual(again[:5], line[:5])
            self.assertEqual(again[5], "-")
            address = a.unsafe_buffer_pointer()
            del a
            b = jnp.ones((16,))  # first fit: the same address
            self.assertEqual(b.unsafe_buffer_pointer(), address)
            (third,) = jax_lines(self.pools["arrays"](0))
            self.assertNotEqual(third[4], line[4])
            self.assertNotEqual(third[5], "-")
        finally:
            sys.path.remove(FRAMEWORKS)


    def test_an_older_jaxlib_is_read_through_its_other_readers(self):
        """A traceback without raw_frames() gives its frames through the
        Python traceback it makes of itself; an array without
        on_device_size_in_bytes() its nbytes."""
        def made_here():
            raise ValueError("a traceback of real frames")
        try:
            made_here()
        except ValueError as e:
            python_tb = e.__traceback__

        class OldTraceback:
            def as_python_traceback(self):
                return python_tb

        class Device:
            platform, id = "gpu", 0

        class OldArray:
            nbytes = 4096
            traceback = OldTraceback()

            def is_deleted(self):
                return False

            def unsafe_buffer_pointer(self):
                return 1 << 41

            def devices(self):
                return {Device()}
        keep = OldArray()
        jax = types.ModuleType("jax")
        jax.live_arrays = lambda: [keep]
        sys.modules["jax"] = jax
        (line,) = [l.split("\t") for l in self.pools["arrays"](0).split("\n") if l.startswith("jax\t")]
        self.assertEqual((int(line[1]), int(line[2])), (1 << 41, 4096))
        codes = [int(pair.split(":")[0]) for pair in line[5].split(",")]
        self.assertEqual(codes[0], id(made_here.__code__))  # innermost first
        self.assertEqual(codes[-1], id(sys._getframe().f_code))

    def test_a_sharded_array_is_listed_once_by_its_pieces(self):
        """A sharded array's buffers are its pieces' (JAX lists both): each
        address once, whichever array names it."""
        sys.path.insert(0, FRAMEWORKS)
        try:
            import jax
            whole = jax.shard((8, 16), 4)
            answer = self.pools["arrays"](0)
            addresses = [int(l.split("\t")[1]) for l in answer.split("\n") if l.startswith("jax\t")]
            pieces = sorted(s.data.unsafe_buffer_pointer() for s in whole.addressable_shards)
            self.assertEqual(sorted(addresses), pieces)
        finally:
            sys.path.remove(FRAMEWORKS)


class OtherInterpretersTest(unittest.TestCase):
    ALONE = True  # the checkpoints' samples depend on time (conftest.py)

    def test_another_cpython(self):
        """The tests above under another CPython this machine has: pools.py
        and the checkpoints' pending calls run in the program's own
        interpreter. 3.12 first, the real JAX's and CuPy's on the lent GPU,
        else the newest; one only, for the time a run of each takes (all
        four passed on 2026-12-07)."""
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from pythons import other_pythons
        others = sorted(other_pythons(), key=lambda p: ("3.12" not in p, [-ord(c) for c in p]))[:1]
        if not others:
            self.skipTest("no other CPython 3.10-3.13 here")
        classes = [name for name, value in globals().items() if isinstance(value, type)
                   and issubclass(value, unittest.TestCase) and value is not type(self)]
        count = sum(unittest.defaultTestLoader.loadTestsFromTestCase(globals()[c]).countTestCases()
                    for c in classes)
        for python in others:
            with self.subTest(python=python):
                done = subprocess.run([python, "-m", "unittest", *("test_frameworks." + c for c in classes)],
                                      cwd=os.path.dirname(os.path.abspath(__file__)),
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      timeout=900)
                self.assertEqual(done.returncode, 0, python + ":\n" + done.stdout[-4000:])
                self.assertIn("Ran %d tests" % count, done.stdout)


if __name__ == "__main__":
    unittest.main()
