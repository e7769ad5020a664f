"""A tiny PyTorch MLP trained at batch 8, its loop slicing its own tensors (no DataLoader): the
batches come from ``X[i : i + 8]``, as many small scripts and tutorials write them."""

import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--batch", type=int, default=8)
args = parser.parse_args()

torch.manual_seed(0)
X = torch.randn(4096, 16)
Y = torch.randint(0, 4, (4096,))
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)

for epoch in range(args.epochs):
    for i in range(0, len(X), args.batch):
        xb, yb = X[i : i + args.batch], Y[i : i + args.batch]
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
