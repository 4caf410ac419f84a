"""GPT-2 (transformers, built from its config: no download) trained on
random tokens, keeping every other step's loss with its graph, as a user
logging `losses.append(loss)` does. The leak is this script's forward line
(every kept activation was allocated under it), held by the autograd graph
of the list `losses`. LEAK=0: the same loop keeping loss.item()."""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
LEAK = os.environ.get("LEAK", "1") == "1"

torch.manual_seed(0)
config = GPT2Config(n_layer=4, n_head=8, n_embd=512, n_positions=256, vocab_size=8192)
model = GPT2LMHeadModel(config).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
losses = []
for step in range(STEPS):
    tokens = torch.randint(0, config.vocab_size, (8, 128), device="cuda")
    out = model(tokens, labels=tokens)  # LEAK-LINE
    out.loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if step % 2 == 0:
        losses.append(out.loss if LEAK else out.loss.item())
torch.cuda.synchronize()
print("gpt2_kept_loss: %d steps, %.1f MiB allocated" % (STEPS, torch.cuda.memory_allocated() / 2**20))
