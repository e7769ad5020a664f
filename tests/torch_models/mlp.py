"""Family 1: an MLP as nn.Sequential, returned bare (defaults: CrossEntropyLoss with --classes, Adam)."""

import torch.nn as nn


def build():
    return nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
