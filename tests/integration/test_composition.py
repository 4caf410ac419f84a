"""What the GPU memory is made of (common/composition.h) and the cause a
kept autograd graph is named by (common/diagnosis.c): a training loop over
the fake PyTorch (tests/python/train_roles_demo.py) whose parameters,
gradients, optimizer state, buffer and a validation total that keeps every
step's graph are each a known size; the report's composition at Python's
finish must give each role its bytes and owner and sum exactly to the
driver's memory; the exit summary and gpuleak report must name the cause,
and a clean loop (validation under no_grad) must get no advice."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import reports as report_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
DEMO = os.path.join(ROOT, "tests", "python", "train_roles_demo.py")


def run_demo(extra_env=None):
    """The demo under the shim: its report, its expectations, its stderr
    and gpuleak report's text of the report."""
    with tempfile.TemporaryDirectory(prefix="gpuleak-roles-") as tmp:
        return run_demo_in(tmp, extra_env)


def run_demo_in(tmp, extra_env):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULEAK_", "ROLES_"))}
    env.update({
        "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda"),
        "LD_PRELOAD": os.path.join(BUILD, "libgpuleak.so"),
        "PYTHONPATH": os.path.join(ROOT, "tests", "python", "faketorch"),
        "FAKE_C10": os.path.join(BUILD, "fakec10", "libc10_cuda.so"),
        "GPULEAK_OUTPUT": os.path.join(tmp, "r.json"),
        "EXPECT_OUT": os.path.join(tmp, "expect.json"),
    })
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, DEMO], env=env, cwd=tmp, capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(proc.stderr)
    with open(env["EXPECT_OUT"]) as fh:
        expect = json.load(fh)
    path = os.path.join(tmp, "r.json")
    text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", path], capture_output=True,
                          text=True, timeout=120).stdout
    return report_files.load(path), expect, proc.stderr, text


def parts_of(composition):
    return {p["role"]: p for p in composition["parts"]}


class CompositionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.report, cls.expect, cls.stderr, cls.text = run_demo()
        cls.composition = cls.report["held_at_finish"]["composition"]
        cls.parts = parts_of(cls.composition)

    def test_each_role_has_its_bytes_and_owner(self):
        owners = {"parameters": "model", "gradients": "model", "buffers": "model",
                  "optimizer_state": "opt", "saved_for_backward": "total_val"}
        for role, owner in owners.items():
            with self.subTest(role=role):
                self.assertEqual(self.parts[role]["bytes"], self.expect[role])
                self.assertEqual(self.parts[role]["by"][0],
                                 {"name": owner, "bytes": self.expect[role]})

    def test_the_parts_sum_to_the_drivers_memory(self):
        self.assertEqual(sum(p["bytes"] for p in self.composition["parts"]),
                         self.composition["gpu_bytes"])
        self.assertEqual(self.composition["gpu_bytes"], self.report["held_at_finish"]["gpu_bytes"])
        cache = self.parts["torch_cache"]["bytes"]
        tensors = sum(p["bytes"] for role, p in self.parts.items()
                      if role not in ("torch_cache", "outside_torch"))
        self.assertEqual(tensors, self.report["held_at_finish"]["tensor_bytes"])
        self.assertGreater(cache, 0)

    def test_a_modules_tensors_are_named_through_it(self):
        """Adam's state is keyed by the parameters: the shortest path to a
        weight ran through opt.state; the module names it instead."""
        held = {(h["name"], h["role"], h["part"])
                for section in ("held_at_finish",)
                for s in self.report[section]["sites"] for h in s.get("held_by", [])}
        for want in (("model.encoder.weight", "parameters", "model"),
                     ("model.head.weight.grad", "gradients", "model"),
                     ("model.running_mean", "buffers", "model"),
                     ("total_val", "saved_for_backward", "total_val")):
            self.assertIn(want, held)
        self.assertTrue(any(role == "optimizer_state" and part == "opt" for _, role, part in held))

    def test_both_views_give_the_composition_and_the_cause(self):
        for view, text in (("summary", self.stderr), ("gpuleak report", self.text)):
            with self.subTest(view=view):
                self.assertIn("GPU memory at Python's finish", text)
                self.assertIn("optimizer state 2.5 MiB (opt)", text)
                self.assertIn("Cause: total_val keeps the autograd graph", text)
                self.assertIn("loss.item()", text)

    def test_a_clean_loop_gets_no_advice(self):
        report, expect, stderr, text = run_demo({"ROLES_CLEAN": "1"})
        parts = parts_of(report["held_at_finish"]["composition"])
        self.assertNotIn("saved_for_backward", parts)
        self.assertEqual(parts["parameters"]["bytes"], expect["parameters"])
        for view in (stderr, text):
            self.assertIn("GPU memory at Python's finish", view)
            self.assertNotIn("Cause:", view)

    def test_the_peak_by_the_calls_that_made_it(self):
        """No walk saw the tensors' peak: its composition is inferred from
        each site's Python frames (torch/nn's __init__, autograd's
        backward, torch/optim, a module's call), sums to the peak, and
        gives levers only in a run that ran out of memory."""
        peak = self.report["peak"]
        composition = peak["composition"]
        self.assertTrue(composition["inferred"])
        self.assertEqual(composition["gpu_bytes"], peak["sites_at_bytes"])
        self.assertEqual(sum(p["bytes"] for p in composition["parts"]), composition["gpu_bytes"])
        parts = parts_of(composition)
        for role in ("parameters", "gradients", "optimizer_state"):
            self.assertEqual(parts[role]["bytes"], self.expect[role], role)
        self.assertGreater(parts["activations"]["bytes"], 0)
        for view, out in (("summary", self.stderr), ("gpuleak report", self.text)):
            with self.subTest(view=view):
                self.assertIn("Tensors at their peak, by the calls that made them", out)
                self.assertNotIn("Lever:", out)
        _, _, stderr, text = run_demo({"ROLES_OOM": "1"})
        for view, out in (("summary", stderr), ("gpuleak report", text)):
            with self.subTest(view=view, oom=True):
                self.assertIn("Lever: the optimizer's state was 2.5 MiB of the peak", out)

    def test_gradients_no_optimizer_steps(self):
        """The optimizer steps the head only: the encoder's gradient is
        computed and kept for nothing; every gradient of the full run is
        stepped (above: no such part, no such cause)."""
        report, expect, stderr, text = run_demo({"ROLES_FROZEN": "1"})
        parts = parts_of(report["held_at_finish"]["composition"])
        for role in ("gradients", "untrained_gradients", "optimizer_state"):
            self.assertEqual(parts[role]["bytes"], expect[role], role)
        self.assertEqual(parts["untrained_gradients"]["by"][0]["name"], "model")
        for view, out in (("summary", stderr), ("gpuleak report", text)):
            with self.subTest(view=view):
                self.assertIn("Cause: 1.0 MiB of gradients belong to parameters of model that no optimizer steps", out)
                self.assertIn("requires_grad_(False)", out)
        self.assertNotIn("untrained_gradients", self.parts)
        self.assertNotIn("no optimizer steps", self.stderr)

    def test_a_second_copy_of_the_weights(self):
        """A second model of the same size and a dict of tensors as large as
        the weights (a checkpoint kept on the GPU): each named once, the
        cure once; the training run alone has no such cause (above)."""
        report, expect, stderr, text = run_demo({"ROLES_COPY": "1"})
        parts = parts_of(report["held_at_finish"]["composition"])
        self.assertEqual(sorted(o["name"] for o in parts["parameters"]["by"]), ["backup", "model"])
        for view, out in (("summary", stderr), ("gpuleak report", text)):
            with self.subTest(view=view):
                self.assertEqual(out.count("Cause: two copies of the same weights: "), 1)
                self.assertIn("each hold 1.2 MiB of parameters", out)
                self.assertEqual(out.count("Cause: checkpoint[...] holds 1.3 MiB of tensors, as much as"), 1)
                self.assertEqual(out.count("map_location=\"cpu\""), 1)
        self.assertNotIn("copies of the same weights", self.stderr)
        self.assertNotIn("as much as", self.stderr)

    def test_a_report_on_request_gives_it_too(self):
        """Asked for while the program runs: the composition then, in the
        report and gpuleak report's view, with the cause its evidence shows."""
        with tempfile.TemporaryDirectory(prefix="gpuleak-roles-") as tmp:
            copy = os.path.join(tmp, "asked.json")
            run_demo_in(tmp, {"ROLES_DUMP": "1", "GPULEAK_DUMP_SIGNAL": "USR2", "DUMP_COPY": copy})
            asked = report_files.load(copy)
            text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", copy], capture_output=True,
                                  text=True, timeout=120).stdout
        self.assertEqual(asked["status"]["moment"], "request")
        composition = asked["composition"]
        self.assertEqual(sum(p["bytes"] for p in composition["parts"]), composition["gpu_bytes"])
        self.assertEqual(parts_of(composition)["optimizer_state"]["bytes"], self.expect["optimizer_state"])
        self.assertIn("GPU memory when this report was taken, 8.0 MiB:", text)
        self.assertIn("Cause: total_val keeps the autograd graph", text)

    def test_a_periodic_snapshot_gives_the_live_memory_by_call(self):
        """A snapshot asks for no walk of the heap: its composition is the
        memory then, the tensors by the roles their calls imply, summing
        to the live GPU bytes; a job killed after it keeps that."""
        with tempfile.TemporaryDirectory(prefix="gpuleak-roles-") as tmp:
            copy = os.path.join(tmp, "snapshot.json")
            run_demo_in(tmp, {"ROLES_SNAPSHOT": "1", "GPULEAK_FLUSH_INTERVAL": "1", "DUMP_COPY": copy})
            snap = report_files.load(copy)
            text = subprocess.run([os.path.join(BUILD, "gpuleak"), "report", copy], capture_output=True,
                                  text=True, timeout=120).stdout
        self.assertEqual(snap["status"]["moment"], "snapshot")
        composition = snap["composition"]
        self.assertTrue(composition["inferred"])
        self.assertEqual(sum(p["bytes"] for p in composition["parts"]), composition["gpu_bytes"])
        self.assertEqual(composition["gpu_bytes"], snap["totals"]["live_bytes"])
        parts = parts_of(composition)
        for role in ("parameters", "gradients", "optimizer_state"):
            self.assertEqual(parts[role]["bytes"], self.expect[role], role)
        self.assertIn("GPU memory when this report was taken, by the calls that made them", text)
        self.assertNotIn("Cause:", text)

    def test_at_an_oom_the_failing_steps_own_graph_is_not_a_cause(self):
        """The step that failed was using its graph (a local of its frame,
        kept by the exception in flight); the validation total kept across
        steps is the cause."""
        report, expect, stderr, text = run_demo({"ROLES_OOM": "1"})
        oom = report["oom"]
        composition = oom["composition"]
        self.assertEqual(sum(p["bytes"] for p in composition["parts"]), composition["gpu_bytes"])
        self.assertEqual(composition["gpu_bytes"], oom["torch_reserved_bytes"])
        saved = {o["name"]: o["bytes"] for o in parts_of(composition)["saved_for_backward"]["by"]}
        self.assertEqual(saved["total_val"], expect["saved_for_backward"])
        self.assertIn("failing_step() local out", saved)
        for view, out in (("summary", stderr), ("gpuleak report", text)):
            with self.subTest(view=view):
                self.assertIn("GPU memory at the failure", out)
                self.assertIn("Cause: total_val keeps", out)
                self.assertNotIn("Cause: failing_step() local out", out)


class CheckCauseTest(unittest.TestCase):
    def test_a_failing_line_held_by_a_graph_gives_its_cause(self):
        """gpuleak check (and gpuleak run, which judges with it): a leaking
        line whose largest holder is an autograd graph gives that cause
        under its FAIL line; the same line held by a plain name gives none."""
        fixture = os.path.join(ROOT, "tests", "cli", "fixtures", "demo.json")
        with open(fixture) as fh:
            doc = json.load(fh)
        leak = doc["leaks"][0]
        for graph, want in ((True, True), (False, False)):
            leak["held_by"] = [{"name": "losses[...]", "type": "list", "owner": None, "file": "train.py",
                                "graph": graph, "role": "saved_for_backward" if graph else "other_tensors",
                                "part": "losses[...]", "bytes": leak["bytes"], "allocations": 1}]
            with tempfile.TemporaryDirectory(prefix="gpuleak-roles-") as tmp:
                path = os.path.join(tmp, "r.json")
                with open(path, "w") as fh:
                    json.dump(doc, fh)
                out = subprocess.run([os.path.join(BUILD, "gpuleak"), "check", "--max-leaked", "0", path],
                                     capture_output=True, text=True, timeout=60).stdout
            with self.subTest(graph=graph):
                self.assertIn("FAIL", out)
                self.assertEqual("Cause: losses[...] keeps the autograd graph" in out, want, out)


if __name__ == "__main__":
    unittest.main()
