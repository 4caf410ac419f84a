"""A LightningModule that keeps its validation_step outputs in a list it
never clears (the on_validation_epoch_end pattern, half done): seven epochs,
seven validation passes. The leak is validation_step's line, held by the
module's attribute. LEAK=0: the list is cleared at each epoch's end."""
import os
import sys

import torch
import torch.nn as nn

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
LEAK = os.environ.get("LEAK", "1") == "1"


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256))
        self.val_outputs = []

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def validation_step(self, batch, _):
        x, y = batch
        out = self.net(x)  # LEAK-LINE
        self.val_outputs.append(out)
        return nn.functional.mse_loss(out, y)

    def on_validation_epoch_end(self):
        if not LEAK:
            self.val_outputs.clear()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1e-3)


def loader(n):
    data = torch.utils.data.TensorDataset(torch.randn(n, 256), torch.randn(n, 256))
    return torch.utils.data.DataLoader(data, batch_size=64)


model = Regressor()
trainer = pl.Trainer(max_epochs=EPOCHS, accelerator="gpu", devices=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                     num_sanity_val_steps=0)
trainer.fit(model, loader(2048), loader(1024))
print("lightning_val_outputs: %d epochs, %d outputs kept" % (EPOCHS, len(model.val_outputs)))
