"""Symbol names and symbolization at report time (issue 23): names from the
ELF symbol tables themselves where libdw is absent (or forced off), for
binaries built without -g, stripped of debug info, or carrying only
MiniDebugInfo; and no network, ever, while a report is written."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, FAKE_DIR, ROOT, Base, run  # noqa: E402

SYMBOLS = BUILD / "tests" / "symbols"
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
VARIANTS = ("nodebug", "strip-debug", "minidebuginfo")


def sections(path):
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split("]", 1)[1].split()[0] for line in out.splitlines()
            if line.strip().startswith("[") and "]" in line and line.split("]", 1)[1].split()}


class ElfNamesTest(Base):
    """prog_symbols leaks through cudaStaticMalloc (static, named like nvcc's
    static cudart), leak_from_static (static) and main: none of them is in
    .dynsym, so dladdr alone named none (`?? (prog+0x...)`), and the origin
    rule that skips cudart by name could not apply."""

    def check_names(self, variant, env):
        tmp = tempfile.mkdtemp(prefix="gpuleak-sym-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        r = run([SYMBOLS / variant], tmp, env_extra=dict(env, GPULEAK_SUMMARY="0"))
        self.assertEqual(r.returncode, 0, r.stderr)
        (site,) = r.report["leaks"]
        names = [f.get("function") for f in site["stack"]]
        self.assertEqual(names[:3], ["cudaStaticMalloc", "leak_from_static", "main"], names)
        self.assertEqual(site["origin"]["function"], "leak_from_static")
        for f in site["stack"][:3]:
            self.assertTrue(f["module"].endswith("/" + variant), f)

    def test_names_without_libdw(self):
        for variant in VARIANTS:
            with self.subTest(variant=variant):
                self.check_names(variant, {"GPULEAK_NO_LIBDW": "1"})

    def test_names_with_libdw_and_no_dwarf(self):
        for variant in VARIANTS:
            with self.subTest(variant=variant):
                self.check_names(variant, {})

    def test_a_tight_address_space_limit_names_frames_without_libdw(self):
        """libdw ends the process when a mapping or a malloc of its fails
        (elfutils' out-of-memory handler calls exit): under ulimit -v with
        less than 1 GiB of room the frames are named from the symbol
        tables, and the program's status is its own."""
        tmp = tempfile.mkdtemp(prefix="gpuleak-sym-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        for limit, named_lines in (("unlimited", True), ("600000", False)):
            with self.subTest(limit=limit):
                r = run(["sh", "-c", 'ulimit -v %s && exec "$0"' % limit, BUILD / "tests" / "prog_symbols"],
                        tmp, env_extra={"GPULEAK_SUMMARY": "0"})
                self.assertEqual(r.returncode, 0, r.stderr)
                (site,) = r.reports[-1]["leaks"]
                frames = site["stack"][:3]
                self.assertEqual([f.get("function") for f in frames],
                                 ["cudaStaticMalloc", "leak_from_static", "main"])
                self.assertEqual([isinstance(f.get("line"), int) for f in frames], [named_lines] * 3)
                for old in os.listdir(tmp):
                    if old.startswith("r-"):
                        os.unlink(os.path.join(tmp, old))

    def test_fixtures_are_what_they_claim(self):
        have = {v: sections(SYMBOLS / v) for v in VARIANTS}
        for v in VARIANTS:
            self.assertNotIn(".debug_info", have[v], v)
        self.assertIn(".symtab", have["nodebug"])
        self.assertIn(".symtab", have["strip-debug"])
        self.assertNotIn(".symtab", have["minidebuginfo"])
        self.assertIn(".gnu_debugdata", have["minidebuginfo"])


class LocalDebugInfoTest(Base):
    """libdw looks for separate debug info on this machine only."""

    def test_no_network_while_writing_the_report(self):
        # With DEBUGINFOD_URLS set, libdw's standard search asked the server
        # for every module without local debug info: 3 connections and 6.7
        # s of exit for this program. The test's own server must see none.
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        self.addCleanup(server.close)
        accepted = []

        def accept():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                accepted.append(conn)
                conn.close()
        threading.Thread(target=accept, daemon=True).start()
        url = "http://127.0.0.1:%d" % server.getsockname()[1]
        start = time.monotonic()
        r = run([SYMBOLS / "nodebug"], self.tmp,
                env_extra={"DEBUGINFOD_URLS": url, "GPULEAK_SUMMARY": "0",
                           "DEBUGINFOD_CACHE_PATH": os.path.join(self.tmp, "cache"),
                           "DEBUGINFOD_TIMEOUT": "30"})
        took = time.monotonic() - start
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(accepted, [], f"{len(accepted)} connection(s) to {url}")
        self.assertLess(took, 30.0)  # never waited out a request's timeout
        self.assertEqual(r.report["leaks"][0]["stack"][0]["function"], "cudaStaticMalloc")

    def split_debug(self, name, build_id=True):
        """prog_symbols built with -g, its debug info moved to .debug/
        beside it and named by .gnu_debuglink. Returns (program, debug)."""
        bindir = os.path.join(self.tmp, name)
        os.makedirs(os.path.join(bindir, ".debug"))
        prog = os.path.join(bindir, "prog")
        debug = os.path.join(bindir, ".debug", "prog.debug")
        subprocess.run(["cc", "-std=gnu11", f"-I{CUDA_HOME}/include", "-O0", "-g",
                        "-Wl,--build-id" + ("" if build_id else "=none"), "-o", prog,
                        str(ROOT / "tests" / "integration" / "prog_symbols.c"),
                        f"-L{FAKE_DIR}", "-lcuda"], check=True)
        subprocess.run(["objcopy", "--only-keep-debug", prog, debug], check=True)
        subprocess.run(["strip", "--strip-debug", prog], check=True)
        subprocess.run(["objcopy", "--add-gnu-debuglink=" + debug, prog], check=True)
        self.assertNotIn(".debug_info", sections(prog))
        return prog, debug

    def first_frame(self, prog):
        tmp = tempfile.mkdtemp(prefix="gpuleak-sym-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        r = run([prog], tmp, env_extra={"GPULEAK_SUMMARY": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.report["leaks"][0]["stack"][0]

    def test_debug_file_named_by_debuglink(self):
        # Debug info moved beside the binary still gives lines: checked by
        # build id, or by the link's CRC for a binary without one.
        for build_id in (True, False):
            with self.subTest(build_id=build_id):
                prog, _ = self.split_debug("with-id" if build_id else "no-id", build_id)
                frame = self.first_frame(prog)
                self.assertEqual((frame["function"], os.path.basename(frame["file"] or "")),
                                 ("cudaStaticMalloc", "prog_symbols.c"))
                self.assertGreater(frame["line"], 0)

    def test_debug_file_of_another_build_is_refused(self):
        # A .debug file replaced by another build's: its lines would be
        # wrong, so there are none.
        for build_id in (True, False):
            with self.subTest(build_id=build_id):
                name = "other-id" if build_id else "other-no-id"
                prog, debug = self.split_debug(name, build_id)
                other, other_debug = self.split_debug(name + "-2", build_id)
                with open(other_debug, "ab") as f:
                    f.write(b"\0" * 64)  # another file, another CRC
                shutil.copy(other_debug, debug)
                if build_id:  # and another build id
                    subprocess.run(["objcopy", "--remove-section=.note.gnu.build-id", debug],
                                   check=True)
                frame = self.first_frame(prog)
                self.assertEqual(frame["function"], "cudaStaticMalloc")
                self.assertIsNone(frame["file"])


if __name__ == "__main__":
    unittest.main()
