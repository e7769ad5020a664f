"""Thread oversubscription: the script sets torch's CPU threads to 8 itself, more than the cores
of a small machine, so on busy cores its threads wait for each other in every matmul.

CAUSE_THREADS sets the thread count (default 8; 1: the cause removed), CAUSE_STEPS stops after
that many steps, CAUSE_TIMES=1 prints the steps' times."""

import json
import os
import time

import torch

torch.set_num_threads(int(os.environ.get("CAUSE_THREADS", "8")))
STEPS = int(os.environ.get("CAUSE_STEPS", "0"))

torch.manual_seed(0)
x_all, y_all = torch.randn(4096, 256), torch.randn(4096, 1)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
times, n = [], 0
for epoch in range(6):
    for x, y in loader:
        t0 = time.perf_counter()
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
    print("CAUSE_TIMES", json.dumps({"batch": 64, "threads": torch.get_num_threads(), "steps_s": times[1:]}))
