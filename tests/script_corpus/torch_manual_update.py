"""A PyTorch MLP trained without an optimizer object: backward, then each parameter moved by
hand (p.data -= lr * p.grad), as pytorch/examples' word language model does."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3)).to(device)
data = torch.randn(2048, 20)
labels = torch.randint(0, 3, (2048,))
lr = 0.1

for epoch in range(3):
    for i in range(0, len(data), 32):
        x = data[i : i + 32].to(device)
        y = labels[i : i + 32].to(device)
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        for p in model.parameters():
            p.data -= lr * p.grad
    print("epoch", epoch, "loss", loss.item())
