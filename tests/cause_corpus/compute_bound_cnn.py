"""A compute-bound CNN: three 3x3 convolutions on 32x32 images, so the step's time is the
arithmetic per sample and grows with the batch (per-sample time nearly flat across batches).

CAUSE_BATCH sets the DataLoader's batch (default 32), CAUSE_STEPS stops after that many steps,
CAUSE_TIMES=1 prints the steps' times."""

import json
import os
import time

import torch
from torch import nn

BATCH = int(os.environ.get("CAUSE_BATCH", "32"))
STEPS = int(os.environ.get("CAUSE_STEPS", "0"))

torch.manual_seed(0)
images, labels = torch.randn(1024, 3, 32, 32), torch.randint(0, 10, (1024,))
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1),
    nn.ReLU(),
    nn.Conv2d(32, 32, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(64, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=BATCH, shuffle=True)
times, n = [], 0
for epoch in range(4):
    for x, y in loader:
        t0 = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        n += 1
        if n == STEPS:
            break
    if n == STEPS:
        break
if os.environ.get("CAUSE_TIMES"):
    print("CAUSE_TIMES", json.dumps({"batch": BATCH, "steps_s": times[1:]}))
