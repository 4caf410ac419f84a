"""pytest --gpuleak: GPU memory each test leaves behind, by line and holder.

Per test, a mark is put on the report's timeline before its setup; after
its teardown (and a garbage collection), the lines that hold more GPU
memory than at the mark are the test's leak. A test that leaves more than
its budget (--gpuleak-max-leaked, or the marker's max_leaked) fails, as
pytest fails a test whose body breaks an assertion: its call is FAILED,
with the test's own line, the helper's line it went by, and the objects
that hold the memory. @pytest.mark.gpuleak(repeat=N) runs the body N times
and fails when every run after the first keeps more memory: growth.

Only the test's own thread is charged by default: what another Python
thread allocates meanwhile (a data loader, a server's worker, a fixture's
thread) is not the test's; threads that run no Python (PyTorch's autograd
engine) work for the test and are charged. --gpuleak-all-threads charges
every thread.

Without the shim in the process, --gpuleak runs pytest again under it
(LD_PRELOAD, from GPULEAK_LIB or next to the gpuleak command), with no exit
summary after pytest's output and the report out of the test folder (in
the temporary directory, or --gpuleak-report PATH); each process (an xdist
worker too) measures its own tests only."""
import gc
import glob
import os
import re
import sys
import tempfile
import threading

import pytest
from _pytest._code.code import ExceptionChainRepr, ReprEntry, ReprFileLocation, ReprTraceback
from _pytest.runner import runtestprotocol

import gpuleak

_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1 << 20, "mb": 10**6,
               "mib": 1 << 20, "g": 1 << 30, "gb": 10**9, "gib": 1 << 30,
               "t": 1 << 40, "tb": 10**12, "tib": 1 << 40}
_SIZES = "sizes: 123, 4KiB, 1.5MB, 2GiB, 10M (KB=1000, KiB=1024; a bare K, M, G or T is binary)"


def parse_size(text):
    """'0', '512', '4KiB', '1.5MB', '2G' -> bytes, as the gpuleak command
    reads sizes; ValueError naming the text and the sizes taken for anything
    else."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    unit = found.group(2).lower() if found else None
    if unit not in _SIZE_UNITS or ("." in found.group(1) and _SIZE_UNITS[unit] == 1):
        raise ValueError("bad size %r (%s)" % (text, _SIZES))
    return int(float(found.group(1)) * _SIZE_UNITS[unit])


def _human(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


def pytest_addoption(parser):
    group = parser.getgroup("gpuleak", "GPU memory leaks (gpuleak)")
    group.addoption("--gpuleak", action="store_true", default=False,
                    help="fail tests that leave GPU memory behind (runs pytest under libgpuleak.so)")
    group.addoption("--gpuleak-max-leaked", default="0", metavar="SIZE",
                    help="GPU memory a test may leave behind (default 0)")
    group.addoption("--gpuleak-all-threads", action="store_true", default=False,
                    help="charge a test with what every thread allocated while it ran, not only "
                         "its own thread and the native threads working for it")
    group.addoption("--gpuleak-report", default=None, metavar="PATH",
                    help="write the session's report to PATH (%%p the pid); without it, and "
                         "without GPULEAK_OUTPUT, it goes to the temporary directory")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpuleak(max_leaked=SIZE, repeat=N): GPU memory budget "
                                       "of this test; repeat runs its body N times to judge growth")
    if not config.getoption("--gpuleak"):
        return
    try:
        max_leaked = parse_size(config.getoption("--gpuleak-max-leaked"))
    except ValueError as e:
        raise pytest.UsageError("gpuleak: --gpuleak-max-leaked: %s" % e)
    if not gpuleak.loaded():
        _rerun_under_shim(config)
    config._gpuleak = _Session(max_leaked, config.getoption("--gpuleak-all-threads"))
    config.pluginmanager.register(config._gpuleak, "gpuleak-session")


def _rerun_under_shim(config):
    """Runs this pytest again with the shim preloaded, once."""
    if os.environ.get("GPULEAK_PYTEST_REEXEC"):
        raise pytest.UsageError("gpuleak: libgpuleak.so was preloaded but is not in the process")
    lib = gpuleak._library_path()
    if lib is None and os.environ.get("GPULEAK_LIB"):
        raise pytest.UsageError("gpuleak: GPULEAK_LIB=%s: no such file; set it to the path of "
                                "libgpuleak.so (build/libgpuleak.so, or PREFIX/lib/libgpuleak.so)"
                                % os.environ["GPULEAK_LIB"])
    if lib is None:
        raise pytest.UsageError("gpuleak: libgpuleak.so not found: set GPULEAK_LIB, or put the "
                                "gpuleak command on PATH, or run `gpuleak run -- pytest ...`")
    env = dict(os.environ)
    env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["GPULEAK_PYTEST_REEXEC"] = "1"
    # pytest's own output is the answer: the shim's exit summary would
    # follow it with thirty lines on the whole session.
    env.setdefault("GPULEAK_SUMMARY", "0")
    report = config.getoption("--gpuleak-report")
    if report:
        env["GPULEAK_OUTPUT"] = report
    elif "GPULEAK_OUTPUT" not in env:
        env["GPULEAK_OUTPUT"] = _report_folder() + "/gpuleak-%p.json"
    # The command line as it was, interpreter options (-X, -W) included;
    # pytest.main() called from a program has none to give: then pytest's own.
    args = list(getattr(sys, "orig_argv", []))
    if not args or "pytest" not in " ".join(args):
        args = [sys.executable, "-m", "pytest"] + list(config.invocation_params.args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(str(config.invocation_params.dir))
    os.execve(sys.executable, args, env)


REPORTS_KEPT = 3  # as pytest keeps its last three temporary folders


def _report_folder():
    """The user's folder for the reports of sessions that did not ask for
    one, in the temporary directory, with only the newest few kept."""
    folder = os.path.join(tempfile.gettempdir(), "gpuleak-pytest-%d" % os.getuid())
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.getuid():
        return tempfile.mkdtemp(prefix="gpuleak-pytest-")  # someone else's name: one of our own
    old = sorted(glob.glob(os.path.join(folder, "gpuleak-*.json")), key=os.path.getmtime)
    for path in old[:max(0, len(old) - (REPORTS_KEPT - 1))]:
        try:
            os.unlink(path)
        except OSError:
            pass
    return folder


def _release_instance(item):
    """A test method's class instance (a fresh one per test) is kept by its
    item, through the bound method, for the whole session: what the test
    or its setup_method set on self would be charged to it. Its teardown is
    done: the item keeps the plain function instead (so item.obj stays set,
    and pytest does not make another instance), as pytest's own unittest
    support drops its TestCase."""
    if getattr(item, "cls", None) is None:
        return
    function = getattr(getattr(item, "_obj", None), "__func__", None)
    if function is not None:
        item._obj = function
    if getattr(item, "_instance", None) is not None:
        item._instance = None


def _frame_parts(text):
    """"file:line in function" -> (file, line, function), or None."""
    found = re.fullmatch(r"(.*):(\d+) in (.*)", text)
    return (found.group(1), int(found.group(2)), found.group(3)) if found else None


def _test_line(item, site):
    """The test's own line in the site's stack (the frame of the test
    function, innermost first), as "file:line in function", or None."""
    function = getattr(item, "function", None)
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    for text in site.python_frames():
        parts = _frame_parts(text)
        if parts and parts[0] == code.co_filename and parts[2].split(".")[-1] == code.co_name:
            return "%s:%d in %s" % (os.path.basename(parts[0]), parts[1], parts[2])
    return None


def _short(where):
    """A frame as the failure shows it: the file's name, not its path."""
    parts = _frame_parts(where or "")
    return "%s:%d in %s" % (os.path.basename(parts[0]), parts[1], parts[2]) if parts else where


class _Session:
    def __init__(self, max_leaked, all_threads):
        self.max_leaked = max_leaked
        self.all_threads = all_threads
        self.failures = []   # (nodeid, what it left), from the call reports

    def pytest_collection_modifyitems(self, items):
        """Every gpuleak marker is read before a test runs: a typo in one is
        a usage error, not a silently different budget (or a test failing
        with a traceback from inside the plugin)."""
        for item in items:
            for marker in item.iter_markers("gpuleak"):
                where = "%s: @pytest.mark.gpuleak" % item.nodeid
                if marker.args:
                    raise pytest.UsageError("gpuleak: %s takes keywords only (max_leaked=SIZE, repeat=N), "
                                            "not %r" % (where, marker.args))
                unknown = sorted(set(marker.kwargs) - {"max_leaked", "repeat"})
                if unknown:
                    raise pytest.UsageError("gpuleak: %s: unknown keyword %s (it takes max_leaked=SIZE, "
                                            "repeat=N)" % (where, ", ".join(unknown)))
                if "max_leaked" in marker.kwargs:
                    try:
                        parse_size(marker.kwargs["max_leaked"])
                    except ValueError as e:
                        raise pytest.UsageError("gpuleak: %s: max_leaked: %s" % (where, e))
                repeat = marker.kwargs.get("repeat", 1)
                if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
                    raise pytest.UsageError("gpuleak: %s: repeat takes a whole number from 1, not %r"
                                            % (where, repeat))

    def _budget(self, item):
        marker = item.get_closest_marker("gpuleak")
        max_leaked = self.max_leaked
        repeat = 1
        if marker is not None:
            if "max_leaked" in marker.kwargs:
                max_leaked = parse_size(marker.kwargs["max_leaked"])
            repeat = int(marker.kwargs.get("repeat", 1))
        return max_leaked, max(repeat, 1)

    def _gained(self, mark):
        """The sites that gained since mark, another Python thread's left
        out unless every thread is charged."""
        sites = gpuleak.live_since(mark)
        if self.all_threads:
            return sites
        own = threading.get_ident()
        return [s for s in sites if s.thread in (0, own)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """pytest's own run of a test, its reports held back until the
        teardown has measured what the test left: a breach then fails the
        test's call, as a failed assertion in its body would (one FAILED,
        not a PASSED and an ERROR at teardown), as pytest-rerunfailures
        holds its reports back."""
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        failure = getattr(item, "_gpuleak_failure", None)
        for report in reports:
            if (failure is not None and report.when == "call" and report.passed
                    and not hasattr(report, "wasxfail")):
                report.outcome = "failed"
                report.longrepr = failure
                report.user_properties.append(("gpuleak_failure", failure.reprcrash.message))
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        gc.collect()
        item._gpuleak_mark = gpuleak.mark(item.nodeid)
        item._gpuleak_shared = {}
        self._item = item

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        """A fixture wider than the test (class, module, session scope)
        lives on after it: what its setup allocated is not the test's."""
        item = getattr(self, "_item", None)
        if fixturedef.scope == "function" or item is None or not gpuleak.loaded():
            yield
            return
        before = gpuleak.mark("setup " + fixturedef.argname)
        yield
        for s in self._gained(before):
            item._gpuleak_shared[s.site] = item._gpuleak_shared.get(s.site, 0) + s.bytes

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        outcome = yield
        _, repeat = self._budget(item)
        if repeat < 2 or outcome.excinfo is not None:
            return
        # Each run after the first must not keep more than the one before.
        kept = []
        for _ in range(repeat - 1):
            gc.collect()
            kept.append(sum(s.bytes for s in self._gained(item._gpuleak_mark)))
            item.runtest()
        gc.collect()
        kept.append(sum(s.bytes for s in self._gained(item._gpuleak_mark)))
        steps = [b - a for a, b in zip(kept, kept[1:])]
        if steps and all(step > 0 for step in steps):
            item._gpuleak_growth = (min(steps), repeat)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield
        mark = getattr(item, "_gpuleak_mark", None)
        if mark is None or not gpuleak.tracking():
            return
        # pytest keeps a failing test's exception in sys.last_* for
        # post-mortem debugging (done by now), and through its traceback the
        # test's frames and every tensor in their locals: memory the test
        # did not leave behind, it would be charged with it.
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            if hasattr(sys, name):
                delattr(sys, name)
        # pytest lets go of the test's fixture values (item.funcargs) only
        # once the teardown phase is over, after this hook: a function-scoped
        # fixture's model or batch, torn down already, would be charged to
        # every test that used it. Nothing reads them after their teardown.
        if getattr(item, "funcargs", None):
            item.funcargs = {}
        _release_instance(item)
        gc.collect()
        shared = getattr(item, "_gpuleak_shared", {})
        sites = []
        for s in self._gained(mark):
            s.bytes -= min(s.bytes, shared.get(s.site, 0))
            if s.bytes > 0:
                sites.append(s)
        leaked = sum(s.bytes for s in sites)
        max_leaked, _ = self._budget(item)
        item.user_properties.append(("gpuleak_leaked_bytes", leaked))
        growth = getattr(item, "_gpuleak_growth", None)
        if leaked <= max_leaked and growth is None:
            return
        item._gpuleak_failure = self._failure(item, sites, leaked, max_leaked, growth)

    def _failure(self, item, sites, leaked, max_leaked, growth):
        """The failure of a test that broke its budget: by the test's own
        line (the helper's line it went by under it), as the report
        groups, each with the objects that hold its memory."""
        groups = {}
        for s in sites:
            origin = _short(s.origin)
            own = _test_line(item, s) or origin or "site %d" % s.site
            group = groups.setdefault(own, {"sites": [], "via": set()})
            group["sites"].append(s)
            if origin and origin != own:
                group["via"].add(origin)
        ranked = sorted(groups.items(), key=lambda kv: -sum(s.bytes for s in kv[1]["sites"]))
        gpuleak.holders([s for _, group in ranked[:5] for s in group["sites"]])
        where = ranked[0][0] if ranked else "no line"
        lines = []
        if growth is not None:
            lines.append("gpuleak: grew by at least %s on each of %d runs" % (_human(growth[0]), growth[1] - 1))
        if leaked > max_leaked:
            lines.append("gpuleak: %s of GPU memory left behind (budget %s):" % (_human(leaked), _human(max_leaked)))
        for own, group in ranked[:5]:
            members = group["sites"]
            lines.append("  %s in %d allocation(s) of %s memory at %s" % (
                _human(sum(s.bytes for s in members)), sum(s.live_allocations for s in members),
                members[0].kind, own))
            for via in sorted(group["via"]):
                lines.append("    by way of %s" % via)
            named, facts = {}, {}
            for s in members:
                for text, size in s.holders:
                    named[text] = named.get(text, 0) + size
                for name, graph, role, size in s.holder_facts:
                    facts[(name, graph, role)] = facts.get((name, graph, role), 0) + size
            for text, size in sorted(named.items(), key=lambda h: -h[1])[:2]:
                lines.append("    held by %s: %s" % (text, _human(size)))
            # The cause its largest holder shows, in every view's words.
            if facts:
                (name, graph, role), size = max(facts.items(), key=lambda f: f[1])
                cause = gpuleak.diagnosis(name, graph, role, size, growth is not None, 4)
                lines.extend(cause.rstrip("\n").split("\n") if cause else [])
        if len(ranked) > 5:
            lines.append("  ... and %d more line(s)" % (len(ranked) - 5))
        headline = "gpuleak: %s %s at %s" % (
            _human(leaked), "left behind" if leaked > max_leaked else "kept, growing", where)
        path, lineno = item.location[0], (item.location[1] or 0) + 1
        parts = _frame_parts(where)
        if parts is not None and os.path.basename(path) == parts[0]:
            lineno = parts[1]
        crash = ReprFileLocation(path, lineno, headline)
        entry = ReprEntry(["E   " + line for line in lines], None, None, crash, "value")
        return ExceptionChainRepr([(ReprTraceback([entry], None, "value"), crash, None)])

    def pytest_runtest_logreport(self, report):
        """Runs where the results are gathered (xdist's controller too)."""
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == "gpuleak_failure":
                self.failures.append((report.nodeid, value))

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if not self.failures:
            tr.write_sep("=", "gpuleak: no test left GPU memory behind")
        else:
            tr.write_sep("=", "gpuleak: %d test(s) left GPU memory behind" % len(self.failures))
            for nodeid, what in self.failures:
                tr.write_line("%s: %s" % (nodeid, what))
        output = os.environ.get("GPULEAK_OUTPUT")
        if gpuleak.tracking() and output:
            tr.write_line("gpuleak: the session's report: %s (gpuleak report, gpuleak html)"
                          % output.replace("%p", str(os.getpid())))
