"""The shim in hostile settings (issue 23): a setuid program whose
environment the user chose, report paths that name someone else's file, a
rank that climbs out of the report directory, a shared temporary directory
where another user took the fallback name first."""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, FAKE_DIR, ROOT, Base, clean_env, report_files, run  # noqa: E402

PROG = BUILD / "tests" / "prog_life"
SHIM = BUILD / "libgpuleak.so"
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def nobody_uid():
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None


class SecureModeTest(unittest.TestCase):
    """A setuid program runs in secure-execution mode; the user who starts
    it chose its environment, so no variable of it may steer the shim."""

    @unittest.skipUnless(os.geteuid() == 0 and nobody_uid() is not None,
                         "needs root to make a program setuid to nobody")
    def test_setuid_program_ignores_the_users_variables(self):
        tmp = tempfile.mkdtemp(prefix="gpuleak-suid-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        os.chmod(tmp, 0o777)
        prog = os.path.join(tmp, "prog")
        # In secure mode LD_PRELOAD paths with a slash and LD_LIBRARY_PATH
        # are ignored (an admin-wide /etc/ld.so.preload is not), so the
        # shim and the fake driver are linked in, found by absolute rpath.
        subprocess.run(["cc", "-std=gnu11", f"-I{CUDA_HOME}/include", "-O0", "-o", prog,
                        str(ROOT / "tests" / "integration" / "prog_life.c"),
                        f"-L{BUILD}", "-lgpuleak", f"-Wl,-rpath,{BUILD}",
                        f"-L{FAKE_DIR}", "-lcuda", f"-Wl,-rpath,{FAKE_DIR}", "-lpthread"],
                       check=True)
        os.chown(prog, nobody_uid(), -1)
        os.chmod(prog, 0o4755)
        elsewhere = tempfile.mkdtemp(prefix="gpuleak-suid-out-")
        self.addCleanup(shutil.rmtree, elsewhere, ignore_errors=True)
        os.chmod(elsewhere, 0o777)
        env = clean_env()
        env.update({"GPULEAK_OUTPUT": os.path.join(elsewhere, "chosen-%p.json"),
                    "TMPDIR": elsewhere, "RANK": "../x"})
        proc = subprocess.run([prog, "sleep", "0"], env=env, cwd=tmp, text=True,
                              capture_output=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.listdir(elsewhere), [], "the user's GPULEAK_OUTPUT was used")
        written = [n for n in os.listdir(tmp) if n.startswith("gpuleak-")]
        self.assertEqual(len(written), 1, f"want the default ./gpuleak-<pid>.json in {os.listdir(tmp)}")
        rep = report_files.load(os.path.join(tmp, written[0]))
        self.assertIsNone(rep["process"]["rank"])


class ReportPathTest(Base):
    """Where the report may go, and what it may replace (issue 23, item 12)."""

    def test_an_empty_hard_linked_file_is_kept(self):
        # An empty file is someone's too: it was replaced by a new 0644
        # inode, cutting its hard link.
        target = os.path.join(self.tmp, "out.json")
        with open(target, "w"):
            pass
        os.chmod(target, 0o600)
        os.link(target, os.path.join(self.tmp, "other-name"))
        before = os.stat(target)
        r = run([PROG, "sleep", "0"], self.tmp, env_extra={"GPULEAK_OUTPUT": target,
                                                            "TMPDIR": self.tmp,
                                                            "GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        after = os.stat(target)
        self.assertEqual((after.st_ino, after.st_mode, after.st_nlink, after.st_size),
                         (before.st_ino, before.st_mode, 2, 0))
        fallback = os.path.join(self.tmp, f"gpuleak-{r.pid}.json")
        self.assertEqual(r.stderr.splitlines(),
                         [f"gpuleak: cannot write the report to {target} (it exists and is not "
                          f"a gpuleak report); writing to fallback {fallback}"])
        self.assertEqual(report_files.load(fallback)["process"]["pid"], r.pid)

    @unittest.skipUnless(os.geteuid() == 0 and nobody_uid() is not None,
                         "needs root to give a report to another user")
    def test_another_users_report_is_kept(self):
        """Issue 32 item 10: in a folder both may write (not sticky), a
        report of the same name that another user wrote was replaced; it is
        theirs: the report goes to the fallback, with one line saying so."""
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        theirs = os.path.join(shared, "report.json")
        with open(theirs, "w") as f:
            f.write('{"format":"gpuleak-report","version":2, "theirs": true}\n')
        os.chown(theirs, nobody_uid(), -1)
        r = run([PROG, "sleep", "0"], self.tmp,
                env_extra={"GPULEAK_OUTPUT": theirs, "TMPDIR": self.tmp, "GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(theirs) as f:
            self.assertIn('"theirs": true', f.read())
        self.assertIn(f"cannot write the report to {theirs} (it is another user's file); "
                      "writing to fallback", r.stderr)

    def test_rank_cannot_climb_out_of_the_report_directory(self):
        out = os.path.join(self.tmp, "out")
        os.mkdir(out)
        r = run([PROG, "sleep", "0"], self.tmp,
                env_extra={"GPULEAK_OUTPUT": os.path.join(out, "r-%r-%p.json"),
                           "RANK": "../../escaped", "GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.listdir(out), [f"r-0-{r.pid}.json"])
        self.assertIn("RANK=../../escaped is not a whole number", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escaped")))
        self.assertEqual(report_files.load(os.path.join(out, f"r-0-{r.pid}.json"))["process"]["rank"],
                         None)

    def test_a_slurm_task_names_its_report_and_records_its_job(self):
        """Issue 34: the rank, local rank and job from Slurm's variables,
        in the path (%r, %l, %j) and in the report; a job id that would
        climb out of the directory is not used, with one line."""
        r = run([PROG, "sleep", "0"], self.tmp,
                env_extra={"GPULEAK_OUTPUT": os.path.join(self.tmp, "r-%j-%r-%l.json"),
                           "SLURM_PROCID": "7", "SLURM_LOCALID": "3", "SLURM_JOB_ID": "4242",
                           "GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        process = report_files.load(os.path.join(self.tmp, "r-4242-7-3.json"))["process"]
        self.assertEqual((process["rank"], process["local_rank"], process["job"]), (7, 3, "4242"))
        r = run([PROG, "sleep", "0"], self.tmp,
                env_extra={"GPULEAK_OUTPUT": os.path.join(self.tmp, "j-%j.json"),
                           "SLURM_JOB_ID": "../../up", "GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "j-none.json")))
        self.assertIn("SLURM_JOB_ID=../../up is not a job id", r.stderr)

    def test_a_rank_with_a_newline_is_one_warning_line(self):
        """Issue 32 item 10: a newline in RANK split the warning in two
        lines; a reader (or a log parser) saw a line the shim never meant."""
        r = run([PROG, "sleep", "0"], self.tmp,
                env_extra={"GPULEAK_OUTPUT": os.path.join(self.tmp, "r-%r-%p.json"),
                           "RANK": "1\ngpuleak: forged", "GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([line for line in r.stderr.splitlines() if "forged" in line],
                         ["gpuleak: RANK=1?gpuleak: forged is not a whole number; it is not used as the rank"])

    def test_fallback_name_taken_in_a_shared_directory(self):
        # Another user of a sticky /tmp can make gpuleak-PID.json (and the
        # temporary name beside it) before the process writes: the report
        # was lost. It must go to a name nobody took, and say which.
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        precious = os.path.join(self.tmp, "precious")
        with open(precious, "w") as f:
            f.write("not yours\n")
        env = clean_env()
        env.update({"LD_PRELOAD": str(SHIM), "GPULEAK_OUTPUT": "/nonexistent/dir/r.json",
                    "TMPDIR": shared, "GPULEAK_SUMMARY": "0"})
        # The shell's pid becomes the program's at exec: the names can be
        # taken before the program starts.
        proc = subprocess.Popen(["/bin/sh", "-c", 'read go; exec "$0" sleep 0', str(PROG)],
                                env=env, cwd=self.tmp, text=True, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        taken = os.path.join(shared, f"gpuleak-{proc.pid}.json")
        os.symlink(precious, taken)
        os.mkdir(f"{taken}.tmp.{proc.pid}")
        stdout, stderr = proc.communicate("go\n", timeout=60)
        self.assertEqual(proc.returncode, 0, stderr)
        with open(precious) as f:
            self.assertEqual(f.read(), "not yours\n")
        self.assertTrue(os.path.islink(taken))
        written = [n for n in os.listdir(shared)
                   if n.startswith(f"gpuleak-{proc.pid}-") and n.endswith(".json")]
        self.assertEqual(len(written), 1, os.listdir(shared))
        path = os.path.join(shared, written[0])
        self.assertEqual(stderr.splitlines(),
                         ["gpuleak: cannot write the report to /nonexistent/dir/r.json (No such "
                          f"file or directory); writing to fallback {path}"])
        self.assertEqual(report_files.load(path)["process"]["pid"], proc.pid)
        self.assertEqual(oct(os.stat(path).st_mode & 0o777), oct(0o644 & ~current_umask()))


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


if __name__ == "__main__":
    unittest.main()
