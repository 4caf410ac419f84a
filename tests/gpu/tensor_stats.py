"""tensor_stats.py: a training loop under PyTorch's allocator as the user
runs it, for scripts/gpu-check.sh. Checks that gpuleak's tensor events agree
with PyTorch's own counters.

A GPT-2-sized MLP block stack (or a transformers GPT-2 when
TENSOR_STATS_MODEL=gpt2) trains for N steps, then the script reads
torch.cuda.memory_stats(), asks gpuleak for a report now (SIGUSR2, its
default dump signal), waits for that report, and writes both to
EXPECT_OUT: the counters (allocations, frees, requested bytes, peak) and
the environment's PYTORCH_CUDA_ALLOC_CONF as the script saw it. No
allocation is made between the counters' reading and the report.

Usage: python3 tensor_stats.py STEPS   (GPULEAK_OUTPUT must name the report)
"""
import json
import os
import signal
import sys
import time

import torch


def build():
    if os.environ.get("TENSOR_STATS_MODEL") == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=8192, n_positions=256)
        model = GPT2LMHeadModel(cfg).cuda()
        batch = torch.randint(0, 8192, (8, 128), device="cuda")
        return model, lambda: model(batch, labels=batch).loss
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(),
                                                      torch.nn.Linear(2048, 512))
                                  for _ in range(4)]).cuda()
    x = torch.randn(32, 512, device="cuda")
    return model, lambda: model(x).pow(2).mean()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    torch.manual_seed(0)
    model, loss_of = build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        loss = loss_of()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    s = torch.cuda.memory_stats()
    keys = ["allocation.all.allocated", "allocation.all.freed", "allocation.all.current",
            "requested_bytes.all.allocated", "requested_bytes.all.freed",
            "requested_bytes.all.current", "requested_bytes.all.peak",
            "reserved_bytes.all.current", "segment.all.allocated"]
    stats = {k: s.get(k) for k in keys}
    report = None
    out = os.environ.get("GPULEAK_OUTPUT")
    if out and "LD_PRELOAD" in os.environ:
        path = out.replace("%p", str(os.getpid()))
        os.kill(os.getpid(), signal.SIGUSR2)
        for _ in range(200):
            time.sleep(0.05)
            try:
                with open(path) as fh:
                    report = json.load(fh)
                if report["status"]["moment"] == "request":
                    break
            except (OSError, ValueError, KeyError):
                pass
    with open(os.environ["EXPECT_OUT"], "w") as fh:
        json.dump({"stats": stats, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
                   "report_seen": report is not None}, fh)
    if report is not None:
        with open(os.environ["EXPECT_OUT"] + ".report.json", "w") as fh:
            json.dump(report, fh)
    print("TENSOR-STATS", json.dumps(stats))


main()
