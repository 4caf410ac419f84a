"""Two ranks on one GPU under torchrun (the two-GPU kind is not lent): a
DistributedDataParallel loop over the gloo backend (NCCL refuses two ranks on
one device), where rank 1 keeps a batch every 5 steps. Each rank's shim
writes its own report (%r in GPULEAK_OUTPUT); `gpuleak merge` must show rank
1 as the one that grew."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.cuda.set_device(0)
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256)).cuda())
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
kept = []
for step in range(int(os.environ.get("STEPS", "150"))):
    x = torch.randn(32, 256, device="cuda")  # LEAK-LINE
    loss = model(x).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if rank == 1 and step % 5 == 0:
        kept.append(x)
torch.cuda.synchronize()
dist.destroy_process_group()
print("rank %d done, kept %d batches" % (rank, len(kept)))
