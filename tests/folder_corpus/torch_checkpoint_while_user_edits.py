"""A PyTorch loop that saves its checkpoint over best.pt (torch.save: written from C++, no Python
audit event) and appends to a log every epoch. Its first run waits at its start, once, for the
test (``FOLDER_TEST_PAUSE``: a marker file outside the folder), which edits the user's own files
in the folder then, as a user who keeps working while diagnose runs."""

import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

pause = os.environ.get("FOLDER_TEST_PAUSE")
if pause and not os.path.exists(pause):
    open(pause, "w").close()
    deadline = time.time() + 60
    while not os.path.exists(pause + ".go") and time.time() < deadline:
        time.sleep(0.05)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data, labels = torch.randn(2048, 20), torch.randint(0, 3, (2048,))
for epoch in range(4):
    for i in range(0, len(data), 32):
        opt.zero_grad()
        loss = F.cross_entropy(model(data[i : i + 32]), labels[i : i + 32])
        loss.backward()
        opt.step()
        if i % 512 == 0:
            torch.save(model.state_dict(), "best.pt")
            with open("log.csv", "a") as f:
                f.write(f"{epoch},{float(loss)}\n")
