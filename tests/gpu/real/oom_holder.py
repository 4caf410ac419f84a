"""A step that runs out of GPU memory (the process's share capped at a
tenth of the GPU by PyTorch's own setting) while its activations pile up
in a local list; the program catches torch.cuda.OutOfMemoryError and goes
on. The report's oom section must name the holder of the largest block:
the step's local `activations`, kept by the exception's traceback
(tests/gpu/real/check_oom.py)."""
import torch

torch.cuda.set_per_process_memory_fraction(0.1)


def forward_pass():
    activations = []
    while True:
        activations.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))  # LEAK-LINE


def log_failure(err):
    return str(err).splitlines()[0]


try:
    forward_pass()
except torch.cuda.OutOfMemoryError as err:
    for _ in range(3):
        print("oom_holder:", log_failure(err)[:80])
torch.cuda.synchronize()
