"""Integration tests: the shim against the fake driver.

Each program in tests/integration/prog_*.c runs under
LD_PRELOAD=build/libgpuleak.so with build/fakecuda first on LD_LIBRARY_PATH.
Two independent accounts come out of each run: the shim's report
(docs/report-format.md) and the fake's own books (FAKECUDA_COUNTS), and the
tests hold them against each other and against the numbers each program is
written to produce (prog_*.expect.json, also checked without the shim by
FakeAloneTest, so a wrong constant here cannot hide behind a wrong shim).

Run from the repository root: python3 -m unittest discover -s tests/integration
"""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import reports as report_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
SHIM = BUILD / "libgpuleak.so"
FAKE_DIR = BUILD / "fakecuda"

KINDS = ("device", "pool", "vmm", "managed", "host", "array")

# The fake's counted entry points by family, for summing its books.
ALLOC_FNS = {
    "cuMemAlloc": "device", "cuMemAlloc_v2": "device",
    "cuMemAllocPitch": "device", "cuMemAllocPitch_v2": "device",
    "cuMemAllocAsync": "pool", "cuMemAllocAsync_ptsz": "pool",
    "cuMemAllocFromPoolAsync": "pool", "cuMemAllocFromPoolAsync_ptsz": "pool",
    "cuMemCreate": "vmm", "cuMemAllocManaged": "managed",
    "cuMemAllocHost": "host", "cuMemAllocHost_v2": "host", "cuMemHostAlloc": "host",
    "cuArrayCreate": "array", "cuArrayCreate_v2": "array",
    "cuArray3DCreate": "array", "cuArray3DCreate_v2": "array",
}
FREE_FNS = ("cuMemFree", "cuMemFree_v2", "cuMemFreeAsync", "cuMemFreeAsync_ptsz",
            "cuMemRelease", "cuMemFreeHost", "cuArrayDestroy")
TEARDOWN_NAMES = {
    "cuCtxDestroy": "cuCtxDestroy", "cuCtxDestroy_v2": "cuCtxDestroy",
    "cuDevicePrimaryCtxReset": "cuDevicePrimaryCtxReset",
    "cuDevicePrimaryCtxReset_v2": "cuDevicePrimaryCtxReset",
}

CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
MIB = 1 << 20

def load_expected():
    """What each program run must leave in the fake's books, from the
    prog_NAME.expect.json beside each program (derived by hand from its
    header comment): by mode ("" for a program without one), every entry
    point with a non-zero success count, the live allocations by kind as
    [count, bytes], and anything else the run is about. Keyed here by
    (NAME, MODE) or (NAME,), the program's argv after its path."""
    expected = {}
    for path in sorted(Path(__file__).parent.glob("prog_*.expect.json")):
        name = path.name[len("prog_"):-len(".expect.json")]
        for mode, exp in json.loads(path.read_text()).items():
            exp["live"] = {kind: tuple(v) for kind, v in exp["live"].items()}
            exp["teardown"] = {fn: tuple(v) for fn, v in exp.get("teardown", {}).items()}
            expected[(name, mode) if mode else (name,)] = exp
    return expected


EXPECTED = load_expected()
# Programs that allocate from several threads: the shim sees events in an
# order the fake's lock did not impose, so peaks may differ by a block.
MULTITHREADED = {key for key, exp in EXPECTED.items() if exp.get("multithreaded")}


def alone(test):
    """Marks a test that judges time: `make integration` runs it after the
    parallel pass, by itself (conftest.py)."""
    test.alone = True
    return test


def clean_env():
    """The caller's environment without anything that would change a run."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPULEAK_", "FAKECUDA_")) and k != "LD_PRELOAD"}
    env["LD_LIBRARY_PATH"] = str(FAKE_DIR)
    return env


class Run:
    """One finished program run: exit status, output, and both accounts."""

    def __init__(self, proc, stdout, stderr, tmp, counts, reports):
        self.pid = proc.pid
        self.returncode = proc.returncode
        self.stdout = stdout
        self.stderr = stderr
        self.tmp = tmp
        self.counts = counts
        self.reports = reports

    @property
    def report(self):
        assert len(self.reports) == 1, f"expected one report, found {len(self.reports)}"
        return self.reports[0]


def run(argv, tmp, shim=True, env_extra=None, timeout=300, output=True):
    """Runs argv in tmp (its working directory) under the shim and the fake;
    collects every r-*.json report in tmp (the reports on request, which
    have names of their own, apart: Run.requests) and the fake's counts."""
    env = clean_env()
    env["FAKECUDA_COUNTS"] = os.path.join(tmp, "counts.json")
    if shim:
        env["LD_PRELOAD"] = str(SHIM)
        if output:
            env["GPULEAK_OUTPUT"] = os.path.join(tmp, "r-%p.json")
    env.update(env_extra or {})
    proc = subprocess.Popen([str(a) for a in argv], env=env, cwd=tmp, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    counts = None
    counts_path = os.path.join(tmp, "counts.json")
    if os.path.exists(counts_path):
        with open(counts_path) as f:
            counts = json.load(f)
    reports, requests = [], []
    for path in sorted(glob.glob(os.path.join(tmp, "r-*.json"))):
        (requests if ".request-" in path else reports).append(report_files.load(path))
    done = Run(proc, stdout, stderr, tmp, counts, reports)
    done.requests = requests
    return done


def prog_argv(key):
    name, *args = key
    return [BUILD / "tests" / f"prog_{name}", *args]


def has_function(site, name):
    """True when a native frame of the site is the function name (C, so an
    exact match; a demangled C++ name would carry its parameters)."""
    return any(frame.get("function") == name for frame in site.get("stack", []))


def sites_with(sites, name):
    return [s for s in sites if has_function(s, name)]


class Base(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpuleak-it-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def run_key(self, key, shim=True, env_extra=None, **kw):
        exp = EXPECTED[key]
        env = dict(exp.get("env", {}))
        env.update(env_extra or {})
        r = run(prog_argv(key), self.tmp, shim=shim, env_extra=env, **kw)
        want_rc = exp.get("returncode", 0)
        self.assertEqual(r.returncode, want_rc,
                         f"{key}: exit {r.returncode}, want {want_rc}; stderr:\n{r.stderr}")
        return r

    def check_fake_books(self, key, counts, shim=False):
        """The fake's account of the run is exactly what the program is
        written to do: every call reached the driver once, as the ABI asked."""
        exp = EXPECTED[key]
        self.assertIsNotNone(counts, "the fake wrote no counts")
        ignore = set()
        if shim:
            # The shim may look at the primary context (Retain, then Release)
            # before a reset; harmless as long as no Release destroyed it,
            # which the teardown books below would show.
            ignore = {"cuDevicePrimaryCtxRelease_v2"} - set(exp["succeeded"])
        nonzero = {k: v for k, v in counts["succeeded"].items() if v and k not in ignore}
        self.assertEqual(nonzero, exp["succeeded"], f"{key}: successful driver calls")
        if "calls" in exp:
            self.assertEqual({k: v for k, v in counts["calls"].items()
                              if v and k not in ignore}, exp["calls"])
        live = {k: (counts["live"][k], counts["live_bytes"][k]) for k in KINDS
                if counts["live"][k] or counts["live_bytes"][k]}
        self.assertEqual(live, exp["live"], f"{key}: live at exit")
        self.assertEqual(counts["unknown_frees"], exp.get("unknown_frees", 0))
        self.assertEqual(counts["oom_failures"], exp.get("oom_failures", 0))
        teardown = {k: (v["allocations"], v["bytes"]) for k, v in counts["teardown"].items()
                    if v["allocations"]}
        self.assertEqual(teardown, exp.get("teardown", {}))


class FakeAloneTest(Base):
    """Each program without the shim: the programs and the fake agree with
    EXPECTED on their own, so the shim tests' constants are known good."""

    def test_programs_without_shim(self):
        for key in EXPECTED:
            with self.subTest(key=key):
                tmp = tempfile.mkdtemp(prefix="gpuleak-fake-")
                self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
                self.tmp = tmp
                r = self.run_key(key, shim=False)
                self.assertEqual(r.reports, [])
                self.check_fake_books(key, r.counts)

    def test_bad_mode_is_an_error(self):
        # A typo in a mode must not pass as a run that did nothing.
        r = run(prog_argv(("direct", "no-such-mode")), self.tmp, shim=False)
        self.assertEqual(r.returncode, 91)

    def test_fake_oom_after_zero(self):
        # OOM_AFTER=0 fails the first allocation: the budget counts successes.
        r = run(prog_argv(("errors", "oom")), self.tmp, shim=False,
                env_extra={"FAKECUDA_OOM_AFTER": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.counts["succeeded"]["cuMemAlloc_v2"], 0)
        self.assertEqual(r.counts["oom_failures"], 3)

    def test_fake_short_thread_run(self):
        # The thread program's arguments work (the shim test uses defaults).
        r = run([BUILD / "tests" / "prog_threads", "4", "1000", "2"], self.tmp, shim=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.counts["succeeded"]["cuMemAlloc_v2"], 4 * 1002)
        self.assertEqual(r.counts["live"]["device"], 8)


@unittest.skipUnless(SHIM.exists(), "build/libgpuleak.so is not built")
class ShimTest(Base):
    """Each program under the shim: the report agrees with the fake."""

    def run_shim(self, key, env_extra=None, **kw):
        r = self.run_key(key, env_extra=env_extra, **kw)
        self.assertEqual(len(r.reports), 1,
                         f"{key}: want one report in {self.tmp}, stderr:\n{r.stderr}")
        # The shim must not change what reaches the driver.
        self.check_fake_books(key, r.counts, shim=True)
        self.check_against_fake(key, r.report, r.counts)
        return r

    def check_against_fake(self, key, rep, counts):
        """Every total the report shares with the fake's books is equal."""
        succ, calls = counts["succeeded"], counts["calls"]
        t = rep["totals"]
        self.assertEqual(t["allocations"], sum(succ[f] for f in ALLOC_FNS), "allocations")
        self.assertEqual(t["frees"], sum(succ[f] for f in FREE_FNS), "frees")
        self.assertEqual(t["failed_allocations"],
                         sum(calls[f] - succ[f] for f in ALLOC_FNS), "failed_allocations")
        self.assertEqual(t["unknown_frees"], counts["unknown_frees"], "unknown_frees")
        self.assertEqual(t["bytes_allocated"], sum(counts["bytes_allocated"].values()))
        self.assertEqual(t["leaked_allocations"], sum(counts["live"].values()))
        self.assertEqual(t["leaked_bytes"], sum(counts["live_bytes"].values()))
        self.assertEqual(t["live_bytes"], sum(counts["live_bytes"].values()))
        self.assertEqual(t["maps"], succ["cuMemMap"], "maps")
        self.assertEqual(t["unmaps"], succ["cuMemUnmap"], "unmaps")
        td = counts["teardown"]
        self.assertEqual(t["teardown_leaked_allocations"],
                         sum(td[n]["allocations"] for n in TEARDOWN_NAMES))
        self.assertEqual(t["teardown_leaked_bytes"], sum(td[n]["bytes"] for n in TEARDOWN_NAMES))
        with self.subTest(total="peak_bytes"):  # a wrong peak must not hide the rest
            if key not in MULTITHREADED:
                # The process peak is of GPU memory: pinned host memory is left out.
                self.assertEqual(t["peak_bytes"], counts["gpu_peak_bytes"], "peak_bytes")
    
        for kind in KINDS:
            k = rep["kinds"][kind]
            with self.subTest(kind=kind):
                self.assertEqual(k["allocations"], counts["allocations"][kind])
                self.assertEqual(k["frees"], counts["frees"][kind])
                self.assertEqual(k["failed_allocations"],
                                 sum(calls[f] - succ[f] for f, fk in ALLOC_FNS.items()
                                     if fk == kind))
                self.assertEqual(k["bytes_allocated"], counts["bytes_allocated"][kind])
                self.assertEqual(k["leaked_allocations"], counts["live"][kind])
                self.assertEqual(k["leaked_bytes"], counts["live_bytes"][kind])
                self.assertEqual(k["live_bytes"], counts["live_bytes"][kind])
                if key not in MULTITHREADED:
                    self.assertEqual(k["peak_bytes"], counts["peak_bytes"][kind])


        # Devices the fake saw used appear with the same numbers; any other
        # device listed (one that only saw failures) holds nothing.
        by_dev = {d["device"]: d for d in rep["devices"]}
        used = {d["device"]: d for d in counts["devices"] if d["allocations"]}
        self.assertLessEqual(set(used), set(by_dev), "devices listed")
        for dev, got in by_dev.items():
            with self.subTest(device=dev):
                for field in ("allocations", "frees", "live_bytes", "peak_bytes",
                              "leaked_bytes", "leaked_allocations"):
                    self.assertIn(field, got, "devices entries are flat (docs/report-format.md)")
                d = used.get(dev, dict(allocations=0, frees=0, live=0, live_bytes=0,
                                       peak_bytes=0))
                self.assertEqual(got["allocations"], d["allocations"])
                self.assertEqual(got["frees"], d["frees"])
                self.assertEqual(got["leaked_allocations"], d["live"])
                self.assertEqual(got["leaked_bytes"], d["live_bytes"])
                self.assertEqual(got["live_bytes"], d["live_bytes"])
                if key not in MULTITHREADED:
                    self.assertEqual(got["peak_bytes"], d["peak_bytes"])

        leaks = rep["leaks"]
        self.assertEqual(sum(s["bytes"] for s in leaks), t["leaked_bytes"])
        self.assertEqual(sum(s["allocations"] for s in leaks), t["leaked_allocations"])
        self.assertEqual([s["bytes"] for s in leaks],
                         sorted((s["bytes"] for s in leaks), reverse=True), "leaks sorted")
        for s in leaks + rep["teardown_leaks"] + rep["failures"]:
            self.assertIn(s["kind"], KINDS)
            self.assertNotIn("libgpuleak", " ".join(f.get("module") or ""
                                                     for f in s["stack"]),
                             "the shim's own frames are dropped")
        self.assertEqual(sum(s["bytes"] for s in rep["teardown_leaks"]),
                         t["teardown_leaked_bytes"])

    def leak_site(self, rep, function, innermost=None, section="leaks"):
        """The one site of the section whose stack holds function; its
        innermost frame must be `innermost` (default: function itself), the
        caller of the driver call, since the shim drops its own frames."""
        found = sites_with(rep[section], function)
        self.assertEqual(len(found), 1,
                         f"want one {section} site with {function}; stacks: "
                         + json.dumps([[f.get("function") for f in s["stack"]]
                                       for s in rep[section]]))
        site = found[0]
        self.assertEqual(site["stack"][0].get("function"), innermost or function)
        return site

    def assert_site(self, site, kind, nbytes, allocations, device=0):
        self.assertEqual((site["kind"], site["bytes"], site["allocations"], site["device"]),
                         (kind, nbytes, allocations, device))

    # ---- doors ------------------------------------------------------------

    def test_another_library_of_the_drivers_names_answers_as_itself(self):
        """Issue 32 item 4: a program linked against another library that
        exports cuMemAlloc_v2 (a stub, a test double) got
        CUDA_ERROR_NOT_INITIALIZED from the shim; one that looked the names
        up in such a library beside the driver had the driver's calls go to
        the stub (one cache for both). Each answers as itself now
        (prog_stub checks every return code and address)."""
        stub = str(BUILD / "stubcuda" / "libstubcuda.so")
        for args in (("linked",), ("beside", stub)):
            with self.subTest(mode=args[0]):
                for shim in (False, True):
                    tmp = os.path.join(self.tmp, "%s-%d" % (args[0], shim))
                    os.mkdir(tmp)
                    r = run([BUILD / "tests" / "prog_stub", *args], tmp, shim=shim)
                    self.assertEqual(r.returncode, 0, r.stderr)

    def test_direct_link(self):
        r = self.run_shim(("direct", "basic"))
        rep = r.report
        self.assertEqual(rep["format"], "gpuleak-report")
        self.assertEqual(rep["version"], 2)
        # Each frame is written once, and each listed site's stack once.
        frames = [json.dumps(f, sort_keys=True) for f in rep["frames"]]
        self.assertEqual(len(frames), len(set(frames)))
        for entry in rep["leaks"] + rep["sites"]:
            self.assertIn(str(entry["site"]), rep["stacks"])
        self.assertEqual(len(rep["stacks"]), len({e["site"] for e in rep["sites"]}))
        self.assertEqual(rep["process"]["pid"], r.pid)
        self.assertEqual(rep["process"]["argv"][-1], "basic")
        self.assertEqual(rep["status"]["tracking"], "on")
        big = self.leak_site(rep, "leak_big")
        pitch = self.leak_site(rep, "leak_pitch")
        here = self.leak_site(rep, "leak_here")
        self.assert_site(big, "device", 65536, 1)
        self.assert_site(pitch, "device", 10240, 1)
        # Two calls from one line are one site.
        self.assert_site(here, "device", 8192, 2)
        self.assertEqual(rep["leaks"], [big, pitch, here])
        self.assertEqual(sites_with(rep["leaks"], "alloc_and_free"), [])
        frame = here["stack"][0]
        self.assertTrue(frame["module"].endswith("prog_direct"), frame)
        self.assertRegex(frame["offset"], r"^0x[0-9a-f]+$")
        self.assertTrue(has_function(here, "main"))

    def test_devices(self):
        rep = self.run_shim(("direct", "devices")).report
        self.assert_site(self.leak_site(rep, "leak_on_device1"), "device", 2 * 12288, 2, device=1)
        by_dev = {d["device"]: d for d in rep["devices"]}
        self.assertEqual((by_dev[0]["frees"], by_dev[0]["leaked_allocations"]), (3, 0))
        self.assertEqual(by_dev[1]["leaked_bytes"], 2 * 12288)

    def check_legacy_abi(self, key):
        """The 32-bit ABI reaches the caller intact (the program's canary
        and exit code) and the driver's 32-bit function does the work (the
        fake's books); a report, if any, agrees with the fake."""
        r = self.run_key(key)
        self.check_fake_books(key, r.counts, shim=True)
        self.assertLessEqual(len(r.reports), 1)
        if r.reports:
            self.check_against_fake(key, r.report, r.counts)

    def test_direct_legacy_abi(self):
        self.check_legacy_abi(("direct", "legacy"))

    def test_static_cudart_door(self):
        rep = self.run_shim(("procaddr", "static")).report
        v1 = self.leak_site(rep, "v1gpa_leak")
        nested = self.leak_site(rep, "nested_leak")
        plain = self.leak_site(rep, "procaddr_leak")
        self.assert_site(v1, "device", 3 * MIB, 1)
        self.assert_site(nested, "device", 2 * MIB, 1)
        self.assert_site(plain, "device", 1 * MIB, 1)
        self.assertEqual(rep["leaks"], [v1, nested, plain])

    def test_ptsz_door(self):
        # check_fake_books asserts the _ptsz functions themselves were called.
        rep = self.run_shim(("procaddr", "ptsz")).report
        self.assert_site(self.leak_site(rep, "ptsz_pool_leak"), "pool", 8192, 1)
        self.assert_site(self.leak_site(rep, "ptsz_leak"), "pool", 4096, 1)

    def test_legacy_version_door(self):
        self.check_legacy_abi(("procaddr", "legacy"))

    def test_pools(self):
        rep = self.run_shim(("pool",)).report
        self.assert_site(self.leak_site(rep, "pool_leak"), "pool", 5000, 1)
        self.assert_site(self.leak_site(rep, "async_leak"), "pool", 3000, 1)
        self.assertEqual(len(rep["leaks"]), 2)

    def test_vmm(self):
        rep = self.run_shim(("vmm",)).report
        self.assert_site(self.leak_site(rep, "vmm_leak"), "vmm", 2 * MIB, 1)
        self.assertEqual(sites_with(rep["leaks"], "vmm_round_trip"), [])
        self.assertEqual((rep["totals"]["maps"], rep["totals"]["unmaps"]), (2, 1))

    def test_managed_host_array(self):
        r = self.run_shim(("kinds",), env_extra={"GPULEAK_SUMMARY": "1"})
        rep = r.report
        # Pinned host memory is in the host's RAM: the summary names no device.
        self.assertIn("allocation(s) of pinned host memory, allocated from:", r.stderr)
        self.assertNotIn("pinned host memory on device", r.stderr)
        for function, kind, nbytes in [("managed_leak", "managed", 6000),
                                       ("host_leak", "host", 7000),
                                       ("hostalloc_leak", "host", 7100),
                                       ("array2d_leak", "array", 32768),
                                       ("array3d_leak", "array", 2048),
                                       ("array1d_leak", "array", 200)]:
            with self.subTest(function=function):
                self.assert_site(self.leak_site(rep, function), kind, nbytes, 1)
        self.assertEqual(len(rep["leaks"]), 6)

    def test_the_next_step_works_as_typed(self):
        """The summary's next step names the command a person can type:
        "gpuleak" when PATH finds this build's, else its absolute path
        (before, "gpuleak" was printed even where no such command was)."""
        path = ":".join(d for d in os.environ.get("PATH", "/usr/bin:/bin").split(":")
                        if d and not os.path.exists(os.path.join(d, "gpuleak")))
        for env_path, command in ((path, str(BUILD.resolve() / "gpuleak")),
                                  (str(BUILD) + ":" + path, "gpuleak")):
            with self.subTest(command=command):
                r = self.run_shim(("kinds",), env_extra={"GPULEAK_SUMMARY": "1", "PATH": env_path})
                report = os.path.join(self.tmp, "r-%d.json" % r.pid)
                self.assertIn("gpuleak: next: %s html %s (a page), %s report %s (by line)"
                              % (command, report, command, report), r.stderr)
                os.unlink(report)

    def test_stacks_off_one_site_per_kind(self):
        """With no frames to tell call paths apart, a kind's allocations
        share one site: its leaks add up there, with an empty stack."""
        rep = self.run_shim(("kinds",), env_extra={"GPULEAK_STACK_DEPTH": "0",
                                                   "GPULEAK_PYTHON": "0"}).report
        got = {(s["kind"], s["bytes"], s["allocations"], len(s["stack"])) for s in rep["leaks"]}
        self.assertEqual(got, {("managed", 6000, 1, 0), ("host", 14100, 2, 0),
                               ("array", 32768 + 2048 + 200, 3, 0)})
        self.assertEqual(len(rep["leaks"]), 3)

    def test_context_teardown(self):
        rep = self.run_shim(("teardown",)).report
        self.assert_site(self.leak_site(rep, "leak_after_reset"), "device", 1000, 1)
        self.assertEqual(len(rep["leaks"]), 1)
        by_teardown = {}
        for s in rep["teardown_leaks"]:
            self.assertIn(s["teardown"], ("cuCtxDestroy", "cuDevicePrimaryCtxReset"))
            n, b = by_teardown.get(s["teardown"], (0, 0))
            by_teardown[s["teardown"]] = (n + s["allocations"], b + s["bytes"])
        self.assertEqual(by_teardown, {"cuCtxDestroy": (3, 10240),
                                       "cuDevicePrimaryCtxReset": (1, 8192)})
        primary = self.leak_site(rep, "leak_in_primary", section="teardown_leaks")
        self.assertEqual(primary["teardown"], "cuDevicePrimaryCtxReset")
        for s in sites_with(rep["teardown_leaks"], "leak_in_ctx"):
            self.assertEqual(s["teardown"], "cuCtxDestroy")
        # The pointer the teardown freed, freed again, is unknown to both.
        self.assertEqual(rep["totals"]["unknown_frees"], 1)

    def test_threads(self):
        rep = self.run_shim(("threads",), timeout=600).report
        t = rep["totals"]
        self.assertEqual((t["allocations"], t["frees"]), (16 * 100003, 16 * 100000))
        self.assertEqual((t["leaked_allocations"], t["leaked_bytes"]), (48, 48 * 4096))
        # Every thread leaks from the same line; sites may split by thread
        # (their stacks end in the same frames), but together hold all 48.
        sites = sites_with(rep["leaks"], "thread_leak")
        self.assertEqual(sum(s["allocations"] for s in sites), 48)
        self.assertEqual(len(sites), len(rep["leaks"]))
        for s in sites:
            self.assertEqual(s["stack"][0].get("function"), "thread_leak")

    def test_self_time(self):
        """GPULEAK_SELF_TIME=1 times every recorded call, on every thread
        (finished ones included), and changes nothing the program sees."""
        plain = self.run_shim(("direct", "basic")).report["totals"]
        self.assertNotIn("shim_time_ns", plain)
        self.assertNotIn("shim_timed_calls", plain)
        for key in (("direct", "basic"), ("threads",), ("errors", "errno")):
            self.tmp = tempfile.mkdtemp(prefix="gpuleak-it-")
            self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
            began = time.monotonic_ns()
            r = self.run_shim(key, env_extra={"GPULEAK_SELF_TIME": "1"}, timeout=600)
            wall_ns = time.monotonic_ns() - began
            t = r.report["totals"]
            calls = t["allocations"] + t["frees"] + t["failed_allocations"] + t["unknown_frees"]
            self.assertEqual(t["shim_timed_calls"], calls, key)
            if calls:
                self.assertGreater(t["shim_time_ns"], 0, key)
                # Nanoseconds, not ticks: bounded by the run's own wall time,
                # on each of its threads (a loaded host stretches both alike,
                # so no speed is judged here).
                threads = 17 if key == ("threads",) else 1
                self.assertLess(t["shim_time_ns"], wall_ns * threads, key)
                self.assertLess(t["shim_clock_read_ns"], wall_ns, key)
                self.assertRegex(r.stderr, r"gpuleak: its own time was [0-9.]+ ms over %d call"
                                 % calls)
            # Every allocation call, failed or not, takes one stack, and
            # its parts are parts of the call's own time.
            captures = t["allocations"] + t["failed_allocations"]
            self.assertEqual(t["shim_captures"], captures, key)
            if captures:
                self.assertLessEqual(t["shim_native_stack_ns"] + t["shim_python_frames_ns"]
                                     + t["shim_intern_ns"], t["shim_time_ns"], key)
                # Interning a stack the thread's site cache already knows is
                # a lookup of a few ns, which the clock reads' own cost (left
                # out) can cover whole: 0 is a true reading there.
                self.assertGreaterEqual(t["shim_intern_ns"], 0, key)
                self.assertGreater(t["shim_native_stack_ns"], 0, key)
                self.assertGreaterEqual(t["shim_native_frames"], 2 * captures, key)
                self.assertGreaterEqual(t["shim_unwound_frames"], t["shim_native_frames"], key)
                self.assertLessEqual(t["shim_reused_frames"], t["shim_unwound_frames"], key)
                # No Python line to trust in a C program: every stack walked.
                self.assertEqual(t["shim_trusted_captures"], 0, key)
                self.assertRegex(r.stderr, r"gpuleak: of it, %d stack\(s\) taken: native [0-9]+ ns "
                                 r"a stack \([0-9.]+ frames; [0-9]+%% of those its unwinder gave "
                                 r"taken from recent stacks; 0%% of the stacks of a trusted Python "
                                 r"line, not walked\)" % captures)
            if key == ("threads",):
                # 1.6M allocations from one line per thread: the own
                # unwinder's memory takes most of each stack from the last.
                self.assertGreater(t["shim_reused_frames"], t["shim_unwound_frames"] // 2, key)
        self.tmp = tempfile.mkdtemp(prefix="gpuleak-it-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        r = self.run_shim(("threads",), env_extra={"GPULEAK_SELF_TIME": "1",
                                                   "GPULEAK_FAST_UNWIND": "0"}, timeout=600)
        self.assertEqual(r.report["totals"]["shim_unwound_frames"], 0)  # all libunwind's
        self.assertEqual(r.report["totals"]["shim_reused_frames"], 0)

    # ---- failures -----------------------------------------------------------

    def test_out_of_memory(self):
        rep = self.run_shim(("errors", "oom")).report
        self.assertEqual(rep["leaks"], [])
        dev = self.leak_site(rep, "oom_attempt", section="failures")
        self.assertEqual((dev["kind"], dev["result"], dev["bytes"]),
                         ("device", CUDA_ERROR_OUT_OF_MEMORY, 2 * MIB))
        managed = self.leak_site(rep, "oom_managed_attempt", section="failures")
        self.assertEqual((managed["kind"], managed["result"], managed["bytes"]),
                         ("managed", CUDA_ERROR_OUT_OF_MEMORY, 4096))
        self.assertEqual(len(rep["failures"]), 2)

    def test_zero_size(self):
        rep = self.run_shim(("errors", "zero")).report
        site = self.leak_site(rep, "zero_size_attempt", section="failures")
        self.assertEqual((site["result"], site["bytes"]), (CUDA_ERROR_INVALID_VALUE, 0))

    def test_unknown_frees(self):
        # The program exits non-zero unless each free returned
        # CUDA_ERROR_INVALID_VALUE through the shim.
        rep = self.run_shim(("errors", "unknown")).report
        self.assertEqual(rep["totals"]["unknown_frees"], 3)
        self.assertEqual(rep["leaks"], [])

    def test_exit_code_passes_through(self):
        rep = self.run_shim(("errors", "exit3")).report
        self.assert_site(self.leak_site(rep, "leak_before_exit"), "device", 4096, 1)

    def test_errno_passes_through(self):
        self.run_shim(("errors", "errno"))

    def test_dlsym_probe_without_driver_finds_nothing(self):
        # "Is CUDA here?" through dlsym(RTLD_DEFAULT) found the shim's own
        # exports in a process without the driver (and calling one loaded
        # it). Without the shim: NULL and a dlerror message. A symbol of
        # nobody's is named in dlerror as the program's, as without the shim
        # (the shim's own name was given).
        said = {}
        for shim in (False, True):
            with self.subTest(shim=shim):
                r = run([BUILD / "tests" / "prog_dlopen", "probe"], self.tmp, shim=shim)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("cuMemAlloc_v2: NULL", r.stdout)
                self.assertEqual(r.reports, [])
                said[shim] = r.stdout.splitlines()[-1]
        self.assertEqual(said[True], said[False])
        self.assertIn("prog_dlopen: undefined symbol: gpuleak_test_no_such_symbol", said[True])

    def test_driver_dlclosed_and_loaded_again_elsewhere(self):
        # The wrappers kept the first driver's function pointers: after a
        # dlclose and a dlopen at another base they jumped into unmapped
        # code. The shim also held its own reference, so the program's
        # dlclose did not unload the driver.
        second = os.path.join(self.tmp, "second")
        os.mkdir(second)
        shutil.copy(FAKE_DIR / "libcuda.so.1", second)
        for driver in ("libcuda.so.1", os.path.join(second, "libcuda.so.1")):
            with self.subTest(driver=driver):
                for old in glob.glob(os.path.join(self.tmp, "r-*.json")):
                    os.unlink(old)
                r = run([BUILD / "tests" / "prog_dlopen", "reload", driver], self.tmp,
                        env_extra={"GPULEAK_SUMMARY": "0"})
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                t = r.report["totals"]
                self.assertEqual((t["allocations"], t["frees"], t["leaked_allocations"],
                                  t["leaked_bytes"]), (4, 3, 1, 4000))
                # The books of the driver loaded second (the first wrote its
                # own when it was unloaded): every call after the reload
                # reached it.
                self.assertEqual((r.counts["succeeded"]["cuMemAlloc_v2"],
                                  r.counts["succeeded"]["cuMemFree_v2"],
                                  r.counts["live_bytes"]["device"]), (2, 1, 4000))
                self.leak_site(r.report, "reload")

    # ---- configuration and output -------------------------------------------

    def test_unknown_escape_in_output_is_said_once(self):
        """A typo in the path pattern (%P for %p) is kept as written, with
        one warning naming it, and the report is written there."""
        r = self.run_key(("direct", "basic"), output=False,
                         env_extra={"GPULEAK_OUTPUT": os.path.join(self.tmp, "r-%P-%p-%d.json"),
                                    "GPULEAK_SUMMARY": "0"})
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("%P is no escape", lines[0])
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "r-%%P-%d-%%d.json" % r.pid)), os.listdir(self.tmp))

    def test_unwritable_output_falls_back(self):
        r = self.run_key(("direct", "basic"), output=False,
                         env_extra={"GPULEAK_OUTPUT": "/nonexistent/dir/r.json",
                                    "GPULEAK_SUMMARY": "0"})
        lines = r.stderr.splitlines()
        paths = [p for p in re.findall(r"(/[^\s'\"]+\.json)", r.stderr)
                 if not p.startswith("/nonexistent/") and os.path.exists(p)]
        self.assertEqual(len(paths), 1, f"want one existing fallback path in:\n{r.stderr}")
        fallback = paths[0]
        self.addCleanup(os.unlink, fallback)
        self.assertEqual(len(lines), 1, f"want one warning line, got:\n{r.stderr}")
        self.assertIn(fallback, lines[0])
        self.assertIn(str(r.pid), os.path.basename(fallback))
        rep = report_files.load(fallback)
        self.assertEqual(rep["process"]["pid"], r.pid)
        self.check_against_fake(("direct", "basic"), rep, r.counts)
        self.assertFalse(os.path.exists("/nonexistent/dir/r.json"))

    def test_invalid_stack_depth(self):
        r = self.run_key(("direct", "basic"), env_extra={"GPULEAK_STACK_DEPTH": "banana"})
        named = [l for l in r.stderr.splitlines() if "GPULEAK_STACK_DEPTH" in l]
        self.assertEqual(len(named), 1, r.stderr)
        self.assertRegex(named[0], r"\b64\b")
        self.assertIn("banana", named[0])
        self.assertEqual(len(r.reports), 1)
        # The default depth is in force: stacks are recorded.
        self.leak_site(r.report, "leak_here")

    def test_no_cuda_no_report(self):
        for output in (True, False):  # an explicit pattern, and the default ./gpuleak-%p.json
            with self.subTest(output=output):
                tmp = tempfile.mkdtemp(prefix="gpuleak-true-")
                self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
                r = run(["/bin/true"], tmp, output=output)
                self.assertEqual(r.returncode, 0)
                self.assertEqual((r.stdout, r.stderr), ("", ""))
                self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main()
