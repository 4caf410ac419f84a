"""Process life under the shim (issue 7): signals, dump on request, periodic
snapshots, fork, children, report files that must not be replaced, argv
redaction, and a stress run checked against the fake driver's own books."""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, Base, alone, clean_env, report_files, run, sites_with  # noqa: E402

PROG = BUILD / "tests" / "prog_life"
SHIM = BUILD / "libgpuleak.so"
STRESS_SECONDS = float(os.environ.get("GPULEAK_STRESS_SECONDS", "20"))


class LifeTest(Base):
    def test_a_program_that_embeds_python_and_goes_on(self):
        """Python's finish is the program's end only where the thread that
        finalized it stops allocating: an embedder that goes on (200
        allocations after Py_FinalizeEx) has no held-at-finish section;
        one that ends at once has it (issue 32, item 8, counts only the
        finishing thread's allocations)."""
        prog = BUILD / "tests" / "prog_embed"
        for mode, held in (("goes-on", None), ("ends", 4 * 65536)):
            with self.subTest(mode=mode):
                tmp = os.path.join(self.tmp, mode)
                os.mkdir(tmp)
                r = run([prog, mode], tmp)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = r.report["held_at_finish"]
                self.assertEqual(got if got is None else got["gpu_bytes"], held)

    def start(self, *args, env_extra=None):
        """Starts prog_life under the shim and waits for its "ready" line."""
        env = clean_env()
        env.update({"LD_PRELOAD": str(SHIM), "GPULEAK_OUTPUT": os.path.join(self.tmp, "r-%p.json")})
        env.update(env_extra or {})
        proc = subprocess.Popen([str(PROG), *args], env=env, cwd=self.tmp, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertEqual(proc.stdout.readline().strip(), "ready")
        return proc

    def reports(self):
        out = []
        for path in sorted(glob.glob(os.path.join(self.tmp, "r-*.json"))):
            out.append(report_files.load(path))
        return out

    def wait_for(self, predicate, seconds=10):
        end = time.time() + seconds
        while time.time() < end:
            try:
                if predicate():
                    return True
            except (OSError, ValueError, IndexError, KeyError):
                pass
            time.sleep(0.05)
        return False

    def test_sigterm_at_default_writes_report_then_dies_of_it(self):
        proc = self.start("sleep", "30")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, -signal.SIGTERM)
        (rep,) = self.reports()
        self.assertEqual(rep["status"]["moment"], "signal")
        self.assertTrue(rep["status"]["complete"])
        self.assertEqual(len(sites_with(rep["leaks"], "leak_before_sleep")), 1)

    def test_program_handler_is_never_replaced(self):
        proc = self.start("own-term")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 7)
        (rep,) = self.reports()
        self.assertEqual(rep["status"]["moment"], "exit")

    def test_dump_signal_writes_now_and_program_runs_on(self):
        """The report on request keeps a name of its own (r-PID.request-1.json):
        the report at exit, written later to r-PID.json, no longer replaces it
        (issue 40)."""
        proc = self.start("sleep", "3")
        proc.send_signal(signal.SIGUSR2)
        request = os.path.join(self.tmp, "r-%d.request-1.json" % proc.pid)
        self.assertTrue(self.wait_for(lambda: report_files.load(request)["status"]["moment"] == "request"))
        _, stderr = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0)
        self.assertIn("report written to %s (on request" % request, stderr)
        self.assertEqual(sorted(r["status"]["moment"] for r in self.reports()), ["exit", "request"])

    def test_snapshot_survives_sigkill(self):
        proc = self.start("sleep", "30", env_extra={"GPULEAK_FLUSH_INTERVAL": "1"})
        self.assertTrue(self.wait_for(lambda: self.reports()[0]["status"]["moment"] == "snapshot"))
        proc.kill()
        proc.communicate(timeout=20)
        (rep,) = self.reports()
        self.assertFalse(rep["status"]["complete"])
        self.assertEqual(len(sites_with(rep["leaks"], "leak_before_sleep")), 1)

    def test_a_quick_exit_writes_the_report_first(self):
        """_exit and _Exit run no exit handler (os._exit at the end of a
        training script): the report is written before, the status kept; a
        vfork child's _exit before it neither writes one nor stops the
        parent's tracking."""
        for how in ("_exit", "_Exit"):
            r = run([PROG, "quick-exit", how], self.tmp)
            self.assertEqual(r.returncode, 5, r.stderr)
            (rep,) = r.reports
            self.assertEqual(rep["process"]["pid"], r.pid)
            self.assertEqual(rep["status"]["moment"], "exit")
            self.assertTrue(rep["status"]["complete"])
            self.assertEqual(len(sites_with(rep["leaks"], "leak_before_sleep")), 1)
            self.assertIn(4242, [s["live_bytes"] for s in rep["leaks"]])
            os.unlink(glob.glob(os.path.join(self.tmp, "r-*.json"))[0])

    def test_daemon_writes_the_report_and_says_why(self):
        """daemon() ends its caller (glibc's own _exit) and starts a forked
        child, never tracked: the report is written at the call, with one
        line saying so."""
        r = run([PROG, "daemon"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        (rep,) = r.reports
        self.assertEqual(rep["process"]["pid"], r.pid)
        self.assertEqual(len(sites_with(rep["leaks"], "leak_before_sleep")), 1)
        self.assertIn("daemon() called after the first CUDA call", r.stderr)
        self.assertRegex(r.stdout, r"daemon \d+")
        self.assertNotIn("daemon %d" % r.pid, r.stdout)

    def test_forked_child_writes_no_report_of_its_own(self):
        r = run([PROG, "fork"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        (rep,) = r.reports
        self.assertEqual(rep["process"]["pid"], r.pid)
        self.assertEqual(rep["totals"]["allocations"], 3)

    def test_fork_while_tracking_starts_never_hangs_the_child(self):
        # A fork while another thread is starting tracking once left the
        # child to start it again over a libunwind lock held by a thread it
        # does not have: about a quarter of these runs hung for good.
        env = clean_env()
        env.update({"LD_PRELOAD": str(SHIM), "GPULEAK_OUTPUT": os.path.join(self.tmp, "r-%p.json")})
        for delay_us in range(0, 800, 20):
            proc = subprocess.Popen([str(PROG), "fork-while-starting", str(delay_us)], env=env,
                                    cwd=self.tmp, text=True, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
            try:
                _, stderr = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                self.fail("fork %d us into the first call: the process hung" % delay_us)
            self.assertEqual(proc.returncode, 0, stderr)
        # Every parent wrote its report (a child forked before tracking had
        # begun may write its own too).
        pids = {report_files.load(p)["process"]["pid"]
                for p in glob.glob(os.path.join(self.tmp, "r-*.json"))}
        self.assertGreaterEqual(len(pids), 40)

    def test_children_forked_during_snapshots_exit(self):
        # Each snapshot dlopened and dlclosed libdw and its chain (exit
        # handlers run under glibc's exit-handler lock) and walked the loaded
        # objects (under the loader's write lock); fork resets neither, so a
        # child forked meanwhile hung in exit() or in its own walk: 9 of
        # about 9,000 children over 8 s of 8 forking threads.
        r = run([PROG, "fork-exit", "6", "8"], self.tmp, timeout=120,
                env_extra={"GPULEAK_FLUSH_INTERVAL": "1", "GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"^0 of [1-9][0-9]* children hung")
        # A child forked while a snapshot was being written flushed its copy
        # of the report's buffer into the parent's file at its exit, and the
        # parent's next report took that for another process's.
        self.assertNotIn("another process wrote", r.stderr)
        (rep,) = r.reports
        self.assertEqual(rep["status"]["moment"], "exit")

    def test_sigterm_kills_a_forked_child_at_once(self):
        # The child inherits the fatal-signal handler but not the reporter
        # thread it waits for: it waited 5 s before dying.
        r = run([PROG, "fork-term"], self.tmp, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("died of signal 15", r.stdout)

    def test_children_write_their_own_reports(self):
        script = f"{PROG} sleep 0 & {PROG} sleep 0; wait"
        r = run(["/bin/sh", "-c", script], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.reports), 2)
        self.assertNotEqual(r.reports[0]["process"]["pid"], r.reports[1]["process"]["pid"])

    def test_never_replaces_a_file_that_is_not_a_report(self):
        precious = os.path.join(self.tmp, "precious.txt")
        with open(precious, "w") as f:
            f.write("weights of a model trained for a week\n")
        link = os.path.join(self.tmp, "link.json")
        os.symlink(precious, link)
        for target in (precious, link):
            r = run([PROG, "sleep", "0"], self.tmp, env_extra={"GPULEAK_OUTPUT": target,
                                                                "TMPDIR": self.tmp})
            self.assertEqual(r.returncode, 0)
            with open(precious) as f:
                self.assertEqual(f.read(), "weights of a model trained for a week\n")
            self.assertTrue(os.path.islink(link))
            fallback = os.path.join(self.tmp, f"gpuleak-{r.pid}.json")
            self.assertIn(f"writing to fallback {fallback}", r.stderr)
            self.assertTrue(os.path.exists(fallback))

    def test_a_directory_as_the_output_is_named_as_one(self):
        """GPULEAK_OUTPUT naming a directory: the warning says it is one, and
        how to name the report in it (it said "it exists and is not a
        gpuleak report")."""
        out = os.path.join(self.tmp, "reports")
        os.mkdir(out)
        r = run([PROG, "sleep", "0"], self.tmp, env_extra={"GPULEAK_OUTPUT": out, "TMPDIR": self.tmp})
        self.assertEqual(r.returncode, 0)
        self.assertIn(f"cannot write the report to {out} (it is a directory; GPULEAK_OUTPUT names "
                      f"the report's file, as DIR/gpuleak-%p.json); writing to fallback "
                      f"{os.path.join(self.tmp, f'gpuleak-{r.pid}.json')}", r.stderr)

    def test_an_old_report_is_replaced(self):
        r1 = run([PROG, "sleep", "0"], self.tmp, env_extra={"GPULEAK_OUTPUT": "same.json"})
        r2 = run([PROG, "sleep", "0"], self.tmp, env_extra={"GPULEAK_OUTPUT": "same.json"})
        self.assertNotIn("fallback", r2.stderr)
        self.assertNotIn("another process", r2.stderr)  # an earlier run's, in silence
        with open(os.path.join(self.tmp, "same.json")) as f:
            self.assertEqual(json.load(f)["process"]["pid"], r2.pid)
        self.assertNotEqual(r1.pid, r2.pid)

    def test_processes_sharing_a_path_without_pid_say_so(self):
        # Every process of a multi-process program (torchrun's ranks) wrote
        # one GPULEAK_OUTPUT without %p, and only the last report was left,
        # silently. The process that replaces a report another one wrote
        # while it ran says so, once; its own snapshots are not another's.
        same = os.path.join(self.tmp, "same.json")
        first = self.start("sleep", "3", env_extra={"GPULEAK_OUTPUT": same,
                                                    "GPULEAK_FLUSH_INTERVAL": "1"})
        self.assertTrue(self.wait_for(lambda: report_files.load(same)["status"]["moment"] == "snapshot"))
        # A second snapshot of its own over the first (each is a new file
        # renamed over the last).
        inode = os.stat(same).st_ino
        self.assertTrue(self.wait_for(lambda: os.stat(same).st_ino != inode))
        # Stopped while the other runs, just after a snapshot: the other's
        # run, however slow the machine, sees no snapshot of the first.
        os.kill(first.pid, signal.SIGSTOP)
        try:
            other = run([PROG, "sleep", "0"], self.tmp, env_extra={"GPULEAK_OUTPUT": same})
        finally:
            os.kill(first.pid, signal.SIGCONT)
        self.assertEqual(other.returncode, 0, other.stderr)
        # The other's report replaced a snapshot older than its own start.
        self.assertNotIn("another process", other.stderr)
        _, stderr = first.communicate(timeout=20)
        self.assertEqual(first.returncode, 0, stderr)
        warnings = [line for line in stderr.splitlines() if "another process" in line]
        self.assertEqual(warnings, [f"gpuleak: another process wrote {same} while this one ran; this "
                                    "report replaces its report: GPULEAK_OUTPUT has no %p, so every "
                                    "process writes that one file and the last one wins (use "
                                    "gpuleak-%p.json for a report per process)"], stderr)
        self.assertEqual(report_files.load(same)["process"]["pid"], first.pid)

    def test_redact_argv(self):
        r = run([PROG, "sleep", "0"], self.tmp, env_extra={"GPULEAK_REDACT_ARGV": "1"})
        argv = r.report["process"]["argv"]
        self.assertEqual(argv[0], str(PROG))
        self.assertEqual(argv[1:], ["<redacted>", "<redacted>"])
        r = run([PROG, "sleep", "0"], self.tmp)
        self.assertIn("sleep", r.reports[-1]["process"]["argv"])

    def test_no_fork_lands_inside_the_shims_loader_calls(self):
        # The report's first dlopen of libdw (and the unwinder's
        # dl_iterate_phdr, and the driver's lookups) held glibc's loader
        # lock with no fork guard: 1 child in about 15,000 of the test above
        # hung at its own dl_iterate_phdr, the lock's owner the shim's
        # gpuleak-report thread. prog_forkdl makes each of those calls last
        # 20 ms, so a fork inside one shows every time.
        # With GPULEAK_FAST_UNWIND=0 the stacks are libunwind's, which
        # walks the loader itself.
        for fast in ("1", "0"):
            with self.subTest(fast_unwind=fast):
                for path in glob.glob(os.path.join(self.tmp, "r-*.json")):
                    os.unlink(path)
                r = run([BUILD / "tests" / "prog_forkdl", "3", "4"], self.tmp, timeout=120,
                        env_extra={"GPULEAK_FLUSH_INTERVAL": "1", "GPULEAK_SUMMARY": "0",
                                   "GPULEAK_FAST_UNWIND": fast})
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                m = re.match(r"0 of (\d+) children forked inside the loader; (\d+) calls", r.stdout)
                self.assertIsNotNone(m, r.stdout)
                self.assertGreater(int(m.group(1)), 10)
                self.assertGreater(int(m.group(2)), 3)  # the shim did call the loader meanwhile
                (rep,) = r.reports
                self.assertEqual(rep["status"]["moment"], "exit")

    @alone  # 32 threads for STRESS_SECONDS would skew every test beside it
    def test_stress_nothing_lost_nothing_invented(self):
        threads = 32
        r = run([PROG, "stress", str(STRESS_SECONDS), str(threads)], self.tmp,
                timeout=STRESS_SECONDS * 4 + 120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        rep, counts = r.report, r.counts
        self.assertEqual(rep["status"]["moment"], "exit")
        self.assertIsNone(rep["status"]["reason"])
        self.assertGreater(counts["succeeded"]["cuMemAlloc_v2"], 1000)
        for kind in ("device", "pool", "vmm", "managed", "host", "array"):
            with self.subTest(kind=kind):
                k = rep["kinds"][kind]
                self.assertEqual(k["allocations"], counts["allocations"][kind])
                self.assertEqual(k["frees"], counts["frees"][kind])
                self.assertEqual(k["leaked_allocations"], counts["live"][kind])
                self.assertEqual(k["leaked_bytes"], counts["live_bytes"][kind])
        self.assertEqual(rep["totals"]["leaked_allocations"], threads)
        self.assertEqual(rep["totals"]["unknown_frees"], 0)


if __name__ == "__main__":
    unittest.main()
