"""An out-of-memory failure that fragmentation causes (issue 38). The
process's share is capped at 5% of the GPU by PyTorch's own setting and
filled, without running out, with 4 MiB tensors (PyTorch cuts five from
each 20 MiB segment) up to the last whole segment under the cap; three of
every five are then freed, so every segment keeps live tensors and 12 MiB
of holes. A 20 MiB tensor then fits no hole, needs a segment of its own
that the cap refuses, and no segment can be given back: PyTorch raises
OutOfMemoryError (the program's first) with far more cached than asked.
Writes what torch.cuda said then to EXPECT_OUT for check_oom_cause.py."""
import json
import os

import torch

MIB = 1 << 20
FRACTION = 0.05
torch.cuda.set_per_process_memory_fraction(FRACTION)
cap = int(torch.cuda.get_device_properties(0).total_memory * FRACTION)
segments = cap // (20 * MIB)
kept = [torch.empty(4 * MIB, dtype=torch.uint8, device="cuda") for _ in range(5 * segments)]
held = [t for i, t in enumerate(kept) if i % 5 in (0, 2)]
kept.clear()
facts = None
try:
    torch.empty(20 * MIB, dtype=torch.uint8, device="cuda")
except torch.cuda.OutOfMemoryError:
    facts = {"reserved": torch.cuda.memory_reserved(), "allocated": torch.cuda.memory_allocated(),
             "asked": 20 * MIB}
print("oom_fragmented:", facts)
with open(os.environ["EXPECT_OUT"], "w") as fh:
    json.dump(facts, fh)
