"""gpu_train.py: the training loop scripts/gpu-bench.sh times (no leak).

    python3 gpu_train.py [ITERATIONS] [WARMUP]

GPU_BENCH_MODEL=gpt2 (scripts/gpu-bench.sh's default): a transformers GPT-2
from a config with random weights (6 layers, 512 wide, 8 heads, batch 8 x
256 tokens), AdamW, its language-model loss. GPU_BENCH_MODEL=mlp: 8 Linear
layers 1024 wide with ReLU, batch 64, SGD, MSE loss. On cuda; ITERATIONS
(default 600) steps, each ended by torch.cuda.synchronize() and timed on
the host. Prints one line

    BENCH ms_per_iter=<median> iters=<n> warmup=<w> backend=<allocator> history=<0|1>
    END end_ns=<CLOCK_REALTIME when the program's last line ran>

with the median over the iterations after the first WARMUP (default 20).
GPU_BENCH_RECORD_HISTORY=1 turns on
torch.cuda.memory._record_memory_history(stacks="all") before the model is
built (PyTorch's own allocation recorder, for comparison).
"""
import os
import statistics
import sys
import time

import torch


def record_history():
    rec = torch.cuda.memory._record_memory_history
    try:
        rec(enabled="all", context="all", stacks="all")
    except TypeError:  # older signature: a bool and keyword options
        rec(True, trace_alloc_record_context=True)


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    warmup = min(warmup, max(iters - 1, 0))
    history = os.environ.get("GPU_BENCH_RECORD_HISTORY") == "1"
    torch.manual_seed(0)
    if history:
        record_history()
    if os.environ.get("GPU_BENCH_MODEL", "mlp") == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=256)
        model = GPT2LMHeadModel(cfg).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        tokens = torch.randint(0, cfg.vocab_size, (8, 256), device="cuda")

        def loss_of():
            return model(tokens, labels=tokens).loss
    else:
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.MSELoss()
        x = torch.randn(64, 1024, device="cuda")
        y = torch.randn(64, 1024, device="cuda")

        def loss_of():
            return loss_fn(model(x), y)
    times = []
    torch.cuda.synchronize()
    for _ in range(iters):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_of()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    steady = times[warmup:] or times
    print("BENCH ms_per_iter=%.4f iters=%d warmup=%d backend=%s history=%d loss=%.4f"
          % (statistics.median(steady) * 1e3, iters, warmup,
             torch.cuda.get_allocator_backend(), int(history), float(loss.item())), flush=True)
    # The program's last line: what follows is its exit (under gpuleak, the
    # report), which scripts/gpu-bench.sh times from this clock to its wait.
    print("END end_ns=%d" % time.time_ns(), flush=True)


if __name__ == "__main__":
    main()
