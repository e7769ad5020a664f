"""Family 6: the (module, loss_fn, optimizer) tuple, SGD with momentum as users often write it."""

import torch
import torch.nn as nn


def build():
    model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 5))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, loss_fn, optimizer
