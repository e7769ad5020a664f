"""Two PyTorch training loops in one script, one after the other: a small encoder pre-trained for
a few steps, then a wider classifier trained for many more (each its own model and optimizer; the
batches sliced from tensors, no DataLoader)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 16))

    def forward(self, x):
        return self.net(x)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)


torch.manual_seed(0)
X = torch.randn(2048, 16)
Y = torch.randint(0, 4, (2048,))

encoder = Encoder()
opt_e = torch.optim.Adam(encoder.parameters(), lr=1e-3)
for i in range(0, 40 * 16, 16):  # loop 1: 40 steps at batch 16
    xb = X[i : i + 16]
    opt_e.zero_grad()
    loss = F.mse_loss(encoder(xb), xb)
    loss.backward()
    opt_e.step()
print(f"encoder loss {loss.item():.3f}")

classifier = Classifier()
opt_c = torch.optim.SGD(classifier.parameters(), lr=0.05)
for epoch in range(6):  # loop 2: 6 x 64 = 384 steps at batch 32
    for i in range(0, len(X), 32):
        xb, yb = X[i : i + 32], Y[i : i + 32]
        opt_c.zero_grad()
        loss = F.cross_entropy(classifier(xb), yb)
        loss.backward()
        opt_c.step()
print(f"classifier loss {loss.item():.3f}")
