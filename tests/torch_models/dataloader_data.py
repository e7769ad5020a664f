"""Family 8: a DataLoader data function (`--data dataloader_data.py:loader`) for an MLP classifier."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build():
    return nn.Sequential(nn.Linear(24, 48), nn.ReLU(), nn.Linear(48, 6))


def loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 24, generator=g)
    y = torch.randint(0, 6, (2048,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
