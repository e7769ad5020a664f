# PyTorch as posted for a GPU, with the device index: X.cuda(0), then a timed matmul loop.
import time

import torch

X = torch.randn(256, 256)
start = time.perf_counter()
for _ in range(10):
    Y = X @ X
print("cpu", time.perf_counter() - start)
Xg = X.cuda(0)
start = time.perf_counter()
for _ in range(10):
    Yg = Xg @ Xg
print("gpu", time.perf_counter() - start)
