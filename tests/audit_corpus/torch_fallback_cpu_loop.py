# PyTorch with the usual fallback; the timed loops are plain tensors, one never on the device path.
import time

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
a = torch.rand(64, 64)
t0 = time.perf_counter()
for _ in range(20):
    b = a @ a
print("cpu loop", time.perf_counter() - t0)
g = torch.rand(64, 64, device=device)
t0 = time.perf_counter()
for _ in range(20):
    h = g @ g
print("gpu loop", time.perf_counter() - t0)
