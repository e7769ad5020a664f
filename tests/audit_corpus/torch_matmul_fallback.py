# The same matmul benchmark with the usual device fallback: plain tensors, the first call of each
# device timed, no torch.cuda.synchronize(), the ratio printed as the speed-up.
import time

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
n = 512
a = torch.randn(n, n)
b = torch.randn(n, n)

start = time.perf_counter()
for _ in range(3):
    c = a @ b
cpu_time = time.perf_counter() - start

a_dev = a.to(device)
b_dev = b.to(device)
start = time.perf_counter()
for _ in range(3):
    c_dev = a_dev @ b_dev
gpu_time = time.perf_counter() - start

print(f"CPU {cpu_time:.4f} s, {device} {gpu_time:.4f} s: {cpu_time / gpu_time:.1f}x")
