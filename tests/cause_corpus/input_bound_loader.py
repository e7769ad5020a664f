"""An input-bound loader: each item costs 2 ms of Python in ``__getitem__`` and the DataLoader
has no workers, so the step waits for its batch far longer than the tiny model computes.

CAUSE_WORKERS sets the DataLoader's workers (0: the cause; 2: the cause removed), CAUSE_STEPS
stops after that many steps, CAUSE_TIMES=1 prints the steps' times (boundary to boundary)."""

import json
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

WORKERS = int(os.environ.get("CAUSE_WORKERS", "0"))
STEPS = int(os.environ.get("CAUSE_STEPS", "0"))


class SlowItems(Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, i):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.002:  # Python work per item: decoding, augmenting
            pass
        return torch.randn(64), torch.randn(1)


model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(SlowItems(), batch_size=16, shuffle=True, num_workers=WORKERS)
times, last, n = [], time.perf_counter(), 0
for epoch in range(3):
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        now = time.perf_counter()
        times.append(now - last)
        last, n = now, n + 1
        if n == STEPS:
            break
    if n == STEPS:
        break
    last = time.perf_counter()  # the next epoch's first step is not timed against the epoch's end
if os.environ.get("CAUSE_TIMES"):
    print("CAUSE_TIMES", json.dumps({"batch": 16, "steps_s": times[1:]}))
