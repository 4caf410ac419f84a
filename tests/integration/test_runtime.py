"""Programs written against the CUDA runtime API run without a GPU (issue
40): over the fake runtime (build/fakecuda/libcudart.so.13) and the fake
driver under it, found through LD_LIBRARY_PATH, as the README tells a user.
NVIDIA's own runtime cannot run over the fake driver (it asks the driver
for an integrity check only NVIDIA's can answer)."""
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, Base, prog_argv, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_RUNTIME = os.path.join(BUILD, "fakecuda", "libcudart.so.13")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
NVCC = shutil.which("nvcc") or os.path.join(CUDA_HOME, "bin", "nvcc")


def first_functions(site, n=2):
    return [f.get("function") for f in site["stack"][:n]]


class FakeRuntimeTest(Base):
    def test_a_runtime_program_runs_and_its_leaks_start_at_the_users_call(self):
        r = run(prog_argv(("runtime",)), self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("runtime program done", r.stdout)
        leaks = {leak["kind"]: leak for leak in r.report["leaks"]}
        self.assertEqual(sorted(leaks), ["array", "device", "host", "pool"])
        self.assertEqual(leaks["device"]["bytes"], 1 << 20)
        self.assertEqual(first_functions(leaks["device"]), ["cudaMalloc", "keep_device"])
        self.assertEqual(leaks["host"]["bytes"], 64 << 10)
        self.assertEqual(first_functions(leaks["host"]), ["cudaMallocHost", "keep_pinned"])
        self.assertEqual(leaks["pool"]["bytes"], 256 << 10)
        self.assertEqual(first_functions(leaks["pool"]), ["cudaMallocAsync", "keep_async"])
        self.assertEqual(leaks["array"]["bytes"], 64 * 64 * 16)
        self.assertEqual(first_functions(leaks["array"]), ["cudaMallocArray", "keep_array"])
        # The fake driver's own books agree: what the runtime freed was freed.
        self.assertEqual(r.counts["live_bytes"]["managed"], 0)
        self.assertEqual(r.counts["live"]["array"], 1)
        self.assertEqual(r.counts["frees"]["array"], 1)
        self.assertEqual(r.counts["live_bytes"]["device"], 1 << 20)
        self.assertEqual(r.counts["oom_failures"], 1)

    def test_a_thread_on_another_device_is_charged_there(self):
        r = run(prog_argv(("runtime",)), self.tmp, env_extra={"FAKECUDA_DEVICES": "2"})
        self.assertEqual(r.returncode, 0, r.stderr)
        on_second = [leak for leak in r.report["leaks"] if leak["device"] == 1]
        self.assertEqual(len(on_second), 1, r.report["leaks"])
        self.assertEqual(on_second[0]["bytes"], 32 << 10)
        self.assertEqual(first_functions(on_second[0]), ["cudaMalloc", "keep_on_second_device"])
        self.assertEqual(r.counts["devices"][1]["live_bytes"], 32 << 10)

    def test_without_the_shim_the_program_runs_the_same(self):
        r = run(prog_argv(("runtime",)), self.tmp, shim=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "runtime program done\n")

    def test_its_symbols_carry_the_runtimes_version_node(self):
        """Binaries linked against NVIDIA's libcudart.so.13 ask for
        cudaMalloc@libcudart.so.13; the fake must answer to that name."""
        syms = subprocess.run(["readelf", "--wide", "--dyn-syms", FAKE_RUNTIME],
                              capture_output=True, text=True, check=True).stdout
        self.assertIn("cudaMalloc@@libcudart.so.13", syms)
        self.assertIn("__cudaRegisterFatBinary@@libcudart.so.13", syms)
        self.assertNotIn(" resolve", syms)

    @unittest.skipUnless(os.path.exists(os.path.join(CUDA_HOME, "lib64", "libcudart_static.a")),
                         "no static cudart in the CUDA Toolkit here")
    def test_nvidias_own_runtime_is_told_what_runs_instead(self):
        """NVIDIA's runtime (here its static library, nvcc's default) fails
        every call over the fake driver; the fake says why, once."""
        exe = os.path.join(self.tmp, "static_runtime")
        subprocess.run(["cc", "-I" + os.path.join(CUDA_HOME, "include"), "-o", exe,
                        os.path.join(HERE, "prog_runtime.c"),
                        os.path.join(CUDA_HOME, "lib64", "libcudart_static.a"),
                        "-ldl", "-lpthread", "-lrt"], check=True, capture_output=True, timeout=300)
        r = run([exe], self.tmp, shim=False)
        self.assertEqual(r.returncode, 90, r.stderr)  # its first runtime call failed
        self.assertIn("returned 801", r.stderr)
        self.assertEqual(r.stderr.count("fakecuda: NVIDIA's CUDA runtime cannot run over the fake driver"),
                         1, r.stderr)
        self.assertIn("-cudart shared", r.stderr)

    @unittest.skipUnless(os.access(NVCC, os.X_OK), "no nvcc in the CUDA Toolkit here")
    def test_a_program_nvcc_built_against_nvidias_runtime_runs_over_the_fake(self):
        exe = os.path.join(self.tmp, "runtime_kernel")
        subprocess.run([NVCC, "-g", "-cudart", "shared", "-o", exe,
                        os.path.join(HERE, "runtime_kernel.cu")],
                       check=True, capture_output=True, timeout=300)
        needed = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True).stdout
        self.assertIn("libcudart.so.13", needed)
        r = run([exe], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("kernel program done: no error", r.stdout)
        [leak] = r.report["leaks"]
        self.assertEqual(leak["bytes"], 2 << 20)
        functions = [f.get("function") or "" for f in leak["stack"]]
        self.assertEqual(functions[0], "cudaMalloc")
        user = next(f for f in leak["stack"] if "keep_scratch" in (f.get("function") or ""))
        self.assertTrue(user.get("file", "").endswith("runtime_kernel.cu"), user)
        self.assertEqual(user.get("line"), 16)
        # The summary starts at the call as written, cuda_runtime.h's
        # template, with the runtime's entry folded under it.
        lines = r.stderr.splitlines()
        first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#0 "))
        self.assertIn(" in cudaError cudaMalloc<float>(float**, unsigned long) ", lines[first])
        self.assertIn("1 frame(s) inside the CUDA runtime folded under it", lines[first + 1])
        self.assertIn(" in keep_scratch(int) ", lines[first + 2])
        self.assertIn("runtime_kernel.cu:16", lines[first + 2])


if __name__ == "__main__":
    unittest.main()
