"""Stacks start at the user's call (issue 40): a program linked with nvcc's
static cudart has the runtime's own frames (libcudart_static_*) between its
cudaMalloc and the driver. The exit summary and `gpuleak report` fold them
under cudaMalloc and say how many; --full-stacks and the report keep them."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, Base, prog_argv, run  # noqa: E402

FOLD = "(2 frame(s) inside the CUDA runtime folded under it; "


class CudartFoldTest(Base):
    def test_the_runtimes_frames_fold_under_its_call(self):
        r = run(prog_argv(("cudart",)), self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        leak = r.reports[0]["leaks"][0]
        names = [f.get("function") for f in leak["stack"]]
        self.assertEqual(names[:4], ["libcudart_static_3a5f0c11", "libcudart_static_9b2e7d40",
                                     "cudaMalloc", "keep_buffer"])
        lines = r.stderr.splitlines()
        first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#0 "))
        self.assertIn(" in cudaMalloc ", lines[first])
        self.assertEqual(lines[first + 1].strip(), FOLD + "the report has them)")
        self.assertIn(" in keep_buffer ", lines[first + 2])
        self.assertNotIn("libcudart_static", r.stderr)

        path = os.path.join(self.tmp, [f for f in os.listdir(self.tmp) if f.startswith("r-")][0])
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path], capture_output=True,
                              text=True, timeout=60).stdout
        self.assertIn(FOLD + "--full-stacks shows them)", text)
        self.assertNotIn("libcudart_static", text)
        full = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", "--full-stacks", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("#0 ", full)
        self.assertIn("in libcudart_static_3a5f0c11", full)
        self.assertNotIn("folded", full)


if __name__ == "__main__":
    unittest.main()
