"""A tiny batch sliced by the loop: a small MLP trained 8 samples at a time from tensors the
script slices itself (no DataLoader), so each step is mostly its fixed cost (Python, dispatch)
and hardly the arithmetic of its 8 samples.

CAUSE_BATCH sets the slice (default 8; 256: the cause removed), CAUSE_STEPS stops after that
many steps, CAUSE_TIMES=1 prints the steps' times."""

import json
import os
import time

import torch

BATCH = int(os.environ.get("CAUSE_BATCH", "8"))
STEPS = int(os.environ.get("CAUSE_STEPS", "0"))

torch.manual_seed(0)
x_all, y_all = torch.randn(8192, 32), torch.randn(8192, 1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
times, n = [], 0
for epoch in range(4):
    for i in range(0, len(x_all) - BATCH + 1, BATCH):
        t0 = time.perf_counter()
        x, y = x_all[i : i + BATCH], y_all[i : i + BATCH]
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        n += 1
        if n == STEPS:
            break
    if n == STEPS:
        break
if os.environ.get("CAUSE_TIMES"):
    print("CAUSE_TIMES", json.dumps({"batch": BATCH, "steps_s": times[5:]}))
