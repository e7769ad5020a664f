"""A PyTorch fit with a closure: L-BFGS calls the forward and backward itself, inside
optimizer.step(closure), several times a step (as SciPy-style full-batch fits are written)."""

import torch
from torch import nn

torch.manual_seed(0)
x = torch.linspace(-2, 2, 512).unsqueeze(1)
y = torch.sin(3 * x) + 0.05 * torch.randn_like(x)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)


def closure():
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for step in range(12):
    loss = optimizer.step(closure)
    if step % 4 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
