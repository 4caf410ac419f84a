"""train.py: a small PyTorch training loop that leaks on purpose, for
scripts/gpu-check.sh.

8 Linear layers 1024 wide, batch 64, SGD, on cuda. Every 10 iterations an
evaluation output is kept together with its autograd graph (the classic
leak: the graph keeps every activation of that forward pass alive). The line
that allocates and keeps it carries the marker comment LEAK-LINE; the check
finds the line number with grep and looks for it in the report's Python
stacks.

Prints one JSON line starting with "TRAIN-STATS " at the end (iterations,
ms/iter median, kept tensors, torch.cuda.memory_stats() numbers), for
information only.

Usage: python3 train.py [iterations]   (default 200)
"""
import json
import os
import statistics
import sys
import time

import torch


def build_model():
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).cuda()


def memory_stats():
    keys = [
        "allocation.all.allocated", "allocation.all.freed", "allocation.all.peak",
        "segment.all.allocated", "segment.all.freed", "segment.all.current",
        "allocated_bytes.all.current", "allocated_bytes.all.peak",
        "reserved_bytes.all.current", "reserved_bytes.all.peak",
        "num_alloc_retries", "num_ooms",
    ]
    try:
        s = torch.cuda.memory_stats()
    except Exception as e:  # some backends don't keep every statistic
        return {"error": repr(e)}
    return {k: s[k] for k in keys if k in s}


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    torch.manual_seed(0)
    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    x = torch.randn(64, 1024, device="cuda")
    y = torch.randn(64, 1024, device="cuda")
    xe = torch.randn(64, 1024, device="cuda")
    kept = []
    times = []
    torch.cuda.synchronize()
    for it in range(iters):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        opt.step()
        if it % 10 == 0:
            kept.append(model(xe))  # LEAK-LINE: kept with its graph, never released
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    stats = {
        "iterations": iters,
        "ms_per_iter_median": round(statistics.median(times) * 1e3, 4),
        "ms_per_iter_first": round(times[0] * 1e3, 4),
        "kept": len(kept),
        "loss": float(loss.item()),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "allocator_backend": torch.cuda.get_allocator_backend(),
        "torch": torch.__version__,
        "memory_stats": memory_stats(),
    }
    print("TRAIN-STATS " + json.dumps(stats, sort_keys=True), flush=True)
    return kept


if __name__ == "__main__":
    _kept = main()
