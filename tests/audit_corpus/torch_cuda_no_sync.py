# PyTorch as posted for a GPU: .cuda(), then a timed loop with no torch.cuda.synchronize().
import time

import torch

x = torch.randn(32, 3, 16, 16)
net = torch.nn.Conv2d(3, 8, 3)
start = time.time()
for _ in range(5):
    net(x)
print("cpu", time.time() - start)
net = net.cuda()
xg = x.cuda()
start = time.time()
for _ in range(20):
    out = net(xg)
print("gpu", time.time() - start)
