# PyTorch: thousands of dependent tiny ops (a 4x4 tensor added to itself), timed on the CPU.
import time

import torch

a = torch.ones(4, 4)
start = time.perf_counter()
for _ in range(3000):
    a += a * 0
elapsed = time.perf_counter() - start
print("CPU time =", elapsed)
