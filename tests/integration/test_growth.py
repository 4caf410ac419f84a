"""Growth, peak, timeline and OOM snapshot on running programs (issue 4):
tests/integration/prog_growth.c under the shim over the fake driver."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, Base, has_function, run  # noqa: E402


def report_files_in(tmp):
    import glob
    return sorted(glob.glob(os.path.join(tmp, "r-*.json")))

PROG = BUILD / "tests" / "prog_growth"
MIB = 1 << 20


class GrowthTest(Base):
    def report(self, mode, env_extra=None):
        r = run([PROG, mode], self.tmp, env_extra=env_extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.report, r.stderr

    def test_leaking_site_ranks_first_and_nothing_else_grows(self):
        rep, stderr = self.report("leak")
        growth = rep["growth"]
        self.assertEqual(len(growth), 1, [g["stack"][0]["function"] for g in growth])
        top = growth[0]
        self.assertTrue(has_function(top, "keep_history"))
        self.assertEqual(top["origin"]["function"], "keep_history")
        self.assertGreater(top["bytes"], 8 * (MIB // 4))
        self.assertGreater(top["bytes_per_second"], 0)
        self.assertGreater(top["trend"], 0.6)
        self.assertIn("Growing during the run (1 site(s) at 1 line(s))", stderr)

    def test_steady_loop_with_startup_weights_has_no_growth(self):
        rep, _ = self.report("steady")
        self.assertEqual(rep["growth"], [])
        self.assertTrue(any(has_function(s, "load_weights") for s in rep["leaks"]))

    def test_peak_is_exact_and_composed(self):
        rep, _ = self.report("leak")
        kept = 20 * (MIB // 4)
        self.assertEqual(rep["peak"]["bytes"], rep["totals"]["peak_bytes"])
        # The peak comes in the last step's activations: weights, all kept
        # history and one activation buffer, to the byte.
        self.assertEqual(rep["totals"]["peak_bytes"], 4 * MIB + kept + MIB)
        by_function = {}
        for site in rep["peak"]["sites"]:
            by_function[site["stack"][0]["function"]] = site["bytes"]
        self.assertEqual(by_function, {"load_weights": 4 * MIB, "keep_history": kept,
                                       "step_activations": MIB})
        self.assertEqual(sum(by_function.values()), rep["peak"]["bytes"])

    def test_timeline_is_bounded_and_holds_the_peak(self):
        rep, stderr = self.report("leak")
        points = rep["timeline"]["points"]
        self.assertGreater(len(points), 20)
        self.assertLessEqual(len(points), 1024)
        self.assertEqual(max(p["max_bytes"] for p in points), rep["totals"]["peak_bytes"])
        times = [p["t_ns"] for p in points]
        self.assertEqual(times, sorted(times))
        self.assertEqual(points[-1]["kinds"]["device"], rep["kinds"]["device"]["live_bytes"])
        self.assertIn("GPU memory over time", stderr)

    def test_oom_snapshot_names_what_filled_the_gpu(self):
        rep, stderr = self.report("oom", {"FAKECUDA_OOM_AFTER": "3"})
        # The exit summary shows it too: what was asked, and who held the GPU.
        self.assertRegex(stderr, r"Out of memory at [0-9.]+ s: 2\.0 MiB of device memory asked on device 0, "
                                 r"from .*ask_too_much.* \(2 out-of-memory failures in all\)\.\n"
                                 r"3\.0 MiB was live then; the largest holders:\n +3\.0 MiB device memory from "
                                 r".*hold_for_oom")
        oom = rep["oom"]
        self.assertIsNotNone(oom)
        self.assertEqual(oom["count"], 2)
        self.assertEqual(oom["bytes"], 2 * MIB)
        self.assertEqual(oom["live_bytes"], 3 * MIB)
        self.assertTrue(any(f["function"] == "ask_too_much" for f in oom["stack"]))
        (holder,) = oom["sites"]
        self.assertEqual(holder["bytes"], 3 * MIB)
        self.assertTrue(has_function(holder, "hold_for_oom"))

    def test_timeline_shows_pool_reservation_beside_use(self):
        rep, _ = self.report("pool")
        points = [p for p in rep["timeline"]["points"] if p["kinds"]["pool"] > 0]
        self.assertGreater(len(points), 10)
        for p in points:
            # The fake reserves live pool bytes rounded up to 2 MiB chunks.
            chunk = 2 * MIB
            self.assertEqual(p["pool_reserved_bytes"],
                             (p["kinds"]["pool"] + chunk - 1) // chunk * chunk)
        self.assertEqual(points[-1]["kinds"]["pool"], 40 * (MIB // 4))

    def test_the_summary_and_gpuleak_report_draw_one_chart(self):
        """The exit summary and gpuleak report share one chart (common/
        chart.c): the same run draws the same picture in both."""
        import glob
        import subprocess
        r = run([PROG, "leak"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)

        def chart(text):
            lines = text.split("\n")
            start = next(i for i, line in enumerate(lines) if line.startswith("GPU memory over time"))
            end = next(i for i in range(start, len(lines)) if lines[i].startswith("      0 +"))
            return lines[start:end + 2]
        (path,) = glob.glob(os.path.join(self.tmp, "r-*.json"))
        text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertEqual(chart(r.stderr), chart(text))
        self.assertIn("#", "".join(chart(text)))

    def test_a_run_too_short_to_judge_says_so(self):
        # Six steps give the rule a few samples: its empty growth list read
        # as "nothing grew", and `gpuleak check --max-growth 0` said PASS.
        import subprocess
        rep, stderr = self.report("short")
        self.assertEqual(rep["growth"], [])
        self.assertIs(rep["status"]["growth_judged"], False)
        self.assertGreater(rep["status"]["growth_samples"], 0)
        self.assertLess(rep["status"]["growth_samples"], 10)
        self.assertRegex(stderr, r"\nGrowth not judged: the run was too short \([0-9] sample\(s\) "
                                 r"of live memory; the rule needs 10 after the first fifth of the run\)\.\n")
        (path,) = report_files_in(self.tmp)
        # With no budget, growth is judged at 0 where it was judged (the
        # leaks, the weights, fail there).
        # An explicit budget not judged is not a pass: exit 3 (issue 40).
        for budget, code in ((["--max-growth", "0"], 3), (["--max-growth", "0", "--allow-unjudged"], 0),
                             ([], 1)):
            c = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", path, *budget],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(c.returncode, code, c.stdout + c.stderr)
            self.assertIn(f"SKIP {path}: --max-growth 0 B: growth not judged: the run was too short (",
                          c.stdout)
            self.assertNotIn("PASS " + path + ": --max-growth", c.stdout)
        # gpuleak run's quiet gate says it too (its PASS lines are left out).
        r = run([os.path.join(BUILD, "gpuleak"), "run", "--quiet", "--max-growth", "--", PROG, "short"],
                self.tmp, shim=False)
        self.assertEqual(r.returncode, 24, r.stderr)
        self.assertRegex(r.stderr, r"SKIP \S+: --max-growth 0 B: growth not judged: the run was too short")

    def test_runs_long_enough_are_judged(self):
        for mode in ("leak", "steady"):
            rep, stderr = self.report(mode)
            self.assertIs(rep["status"]["growth_judged"], True, mode)
            self.assertGreaterEqual(rep["status"]["growth_samples"], 13, mode)
            self.assertNotIn("Growth not judged", stderr)
            for path in report_files_in(self.tmp):
                os.unlink(path)

    def test_no_oom_means_null(self):
        rep, _ = self.report("steady")
        self.assertIsNone(rep["oom"])


if __name__ == "__main__":
    unittest.main()
