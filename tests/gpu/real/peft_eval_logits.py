"""PEFT's LoRA over a small GPT-2 (built from its config: no download),
evaluated outside torch.no_grad(), the logits of every batch kept in a
list for metrics at the end: each kept tensor keeps its graph. The leak is
the evaluation's forward line, held by `all_logits` (its items and their
graphs). LEAK=0: the same loop under torch.no_grad() keeping the argmax."""
import os
import sys

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
LEAK = os.environ.get("LEAK", "1") == "1"

torch.manual_seed(0)
config = GPT2Config(n_layer=4, n_head=8, n_embd=512, n_positions=256, vocab_size=8192)
base = GPT2LMHeadModel(config)
model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn"],
                                        fan_in_fan_out=True)).cuda()
model.eval()
all_logits = []


def evaluate():
    tokens = torch.randint(0, config.vocab_size, (8, 128), device="cuda")
    logits = model(tokens).logits  # LEAK-LINE
    all_logits.append(logits if LEAK else logits.argmax(-1))


for _ in range(STEPS):
    if LEAK:
        evaluate()
    else:
        with torch.no_grad():
            evaluate()
torch.cuda.synchronize()
print("peft_eval_logits: %d batches, %.1f MiB allocated" % (STEPS, torch.cuda.memory_allocated() / 2**20))
