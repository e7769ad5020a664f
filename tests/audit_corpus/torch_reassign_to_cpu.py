# PyTorch as posted (the pattern of pytorch/pytorch#7459): the GPU timing first, then the same names
# moved back to the CPU (x = x.cpu()) and a new CPU tensor, and the CPU loop timed with them.
import time

import torch

x = torch.randn(512, 512).cuda()
y = torch.randn(512, 512).cuda()
start = time.time()
for _ in range(10):
    z = x.mm(y)
print("gpu", time.time() - start)

x = x.cpu()
y = torch.randn(512, 512)
start = time.time()
for _ in range(10):
    z = x.mm(y)
print("cpu", time.time() - start)
