# The classic PyTorch "GPU vs CPU" matmul benchmark as it is usually posted: one call per device,
# the first call inside the clock, no torch.cuda.synchronize(), and the ratio printed as the speed-up.
import time

import torch

n = 1024
a = torch.randn(n, n)
b = torch.randn(n, n)

start = time.time()
c = torch.mm(a, b)
cpu_time = time.time() - start

a_gpu = a.cuda()
b_gpu = b.cuda()
start = time.time()
c_gpu = torch.mm(a_gpu, b_gpu)
gpu_time = time.time() - start

print(f"CPU {cpu_time:.4f} s, GPU {gpu_time:.4f} s: the GPU is {cpu_time / gpu_time:.0f}x faster")
