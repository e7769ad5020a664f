"""A torch script whose set-up dominates: it builds its dataset with seconds of CPU work (a
per-sample transform, as decoding and augmenting images does) before a short, slow-ish training
loop of a small CNN. The pattern behind "imports and data loading took 25 s" on a script whose
step is under a second."""

import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--samples", type=int, default=800)
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--batch-size", type=int, default=32)
args = ap.parse_args()

rng = np.random.default_rng(0)
images = []
for _ in range(args.samples):  # per-sample "decoding": a 2-D FFT round trip and a normalisation
    raw = rng.random((64, 64))
    img = np.abs(np.fft.ifft2(np.fft.fft2(raw) * np.exp(-np.hypot(*np.mgrid[-32:32, -32:32]) / 8)))
    images.append(((img - img.mean()) / (img.std() + 1e-6)).astype("float32")[None, ::2, ::2])
x = torch.from_numpy(np.stack(images))
y = torch.from_numpy(rng.integers(0, 10, size=args.samples))
loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)

model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(32, 64, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(4),
    nn.Flatten(),
    nn.Linear(64 * 16, 10),
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(args.epochs):
    for xb, yb in loader:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
