"""A LightningModule that keeps every training step's output in a list,
passed straight to Trainer.fit (no name of the user's holds the module:
only the trainer's private parts reach it). The leak is training_step's
forward line, held by `Net.kept`, the path through the trainer kept
beside it. LEAK=0: the module keeps the loss as a number."""
import os
import sys

import torch
import torch.nn as nn

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
LEAK = os.environ.get("LEAK", "1") == "1"


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256))
        self.kept = []

    def training_step(self, batch, _):
        x, y = batch
        out = self.body(x)  # LEAK-LINE
        loss = nn.functional.mse_loss(out, y)
        self.kept.append(out.detach() if LEAK else loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1e-3)


data = torch.utils.data.TensorDataset(torch.randn(4096, 256), torch.randn(4096, 256))
trainer = pl.Trainer(max_epochs=EPOCHS, accelerator="gpu", devices=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Net(), torch.utils.data.DataLoader(data, batch_size=64))
torch.cuda.synchronize()
print("lightning_fit_kept: %d epochs, %.1f MiB allocated" % (EPOCHS, torch.cuda.memory_allocated() / 2**20))
