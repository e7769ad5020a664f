"""Host reads every step: a small MLP whose loop reads the loss with ``.item()`` and prints it
after every step, so each step ends waiting on the host.

CAUSE_READS=0 removes the reads and the print, CAUSE_PRINT=0 the print alone, CAUSE_STEPS stops after that many steps,
CAUSE_TIMES=1 prints the steps' times."""

import json
import os
import time

import torch

READS = os.environ.get("CAUSE_READS", "1") != "0"
PRINT = os.environ.get("CAUSE_PRINT", "1") != "0"
STEPS = int(os.environ.get("CAUSE_STEPS", "3000"))

torch.manual_seed(0)
x_all, y_all = torch.randn(4096, 16), torch.randn(4096, 1)
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_all, y_all), batch_size=32, shuffle=True)
times, n = [], 0
while n < STEPS:
    for x, y in loader:
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if READS:
            value = loss.item()
            grad = model[0].weight.grad.abs().max().item()
            if PRINT:
                print(f"step {n} loss {value:.4f} max grad {grad:.4f}")
        times.append(time.perf_counter() - t0)
        n += 1
        if n == STEPS:
            break
if os.environ.get("CAUSE_TIMES"):
    print("CAUSE_TIMES", json.dumps({"batch": 32, "steps_s": times[5:]}))
