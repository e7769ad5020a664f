"""A PyTorch loop that saves its weights as Hugging Face models are saved: safetensors'
``save_model`` every epoch (its file written in Rust, no Python open), into a folder the user
already has."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_model

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data, labels = torch.randn(2048, 20), torch.randint(0, 3, (2048,))
os.makedirs("weights", exist_ok=True)
for epoch in range(4):
    for i in range(0, len(data), 32):
        opt.zero_grad()
        loss = F.cross_entropy(model(data[i : i + 32]), labels[i : i + 32])
        loss.backward()
        opt.step()
        if i == 0:  # early in the epoch: diagnose's capture stops the script after a few steps
            save_model(model, os.path.join("weights", "model.safetensors"))
