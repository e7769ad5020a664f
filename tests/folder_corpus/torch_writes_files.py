"""A PyTorch loop that writes where users' scripts write: a CSV log it opens with "w" in its
working folder, a checkpoint saved every epoch over the last one, an image per epoch beside the
script, a run folder named by the time it started, and a checkpoint saved when it is stopped
(a bare ``except:``, as some scripts guard their training)."""

import csv
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
run_dir = os.path.join("runs", time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}")
os.makedirs(run_dir, exist_ok=True)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data, labels = torch.randn(2048, 20), torch.randint(0, 3, (2048,))

with open("log.csv", "w", newline="") as f:
    log = csv.writer(f)
    try:
        for epoch in range(4):
            for i in range(0, len(data), 32):
                opt.zero_grad()
                loss = F.cross_entropy(model(data[i : i + 32]), labels[i : i + 32])
                loss.backward()
                opt.step()
            log.writerow([epoch, float(loss)])
            torch.save(model.state_dict(), "best.pt")
            with open(os.path.join(here, f"generated_img_{epoch}.png"), "wb") as img:
                img.write(b"\x89PNG fake")
            with open(os.path.join(run_dir, "metrics.txt"), "a") as m:
                m.write(f"{epoch} {float(loss)}\n")
    except:  # noqa: E722 (as the scripts it stands for do)
        torch.save(model.state_dict(), "interrupted.pt")
        raise
