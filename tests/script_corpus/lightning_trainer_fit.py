"""A PyTorch Lightning classifier trained with ``Trainer.fit`` on a LightningDataModule whose
DataLoader has no worker processes (the default), as the Lightning tutorials write it; random
data in place of a real dataset."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class RandomData(L.LightningDataModule):
    def __init__(self, batch_size=32):
        super().__init__()
        self.batch_size = batch_size

    def setup(self, stage=None):
        g = torch.Generator().manual_seed(0)
        self.train_set = TensorDataset(torch.randn(4096, 64, generator=g), torch.randint(0, 10, (4096,), generator=g))

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)


class Classifier(L.LightningModule):
    def __init__(self, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main():
    L.seed_everything(0)
    trainer = L.Trainer(max_epochs=3, accelerator="auto", devices=1, logger=False, enable_checkpointing=False)
    trainer.fit(Classifier(), datamodule=RandomData(batch_size=32))


if __name__ == "__main__":
    main()
