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


if __name__ == "__main__":
    unittest.main()
