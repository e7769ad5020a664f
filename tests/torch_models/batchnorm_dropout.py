"""Family 5: BatchNorm and Dropout (train/eval behaviour differs), a regression head (MSE default)."""

import torch.nn as nn


def build():
    return nn.Sequential(nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 1))
