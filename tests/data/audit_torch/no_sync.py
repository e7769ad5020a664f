# Classic mistake: time.time() around CUDA work with no device synchronization before the
# second clock read (no sync of any kind), so the GPU number is how fast the kernels were queued.
import time

import torch

torch.manual_seed(0)
cpu = torch.device("cpu")
gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_model(device):
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)


model_cpu = make_model(cpu)
x_cpu = torch.randn(64, 256, device=cpu)
with torch.no_grad():
    model_cpu(x_cpu)  # warm-up
    cpu_times = []
    for _ in range(5):
        start = time.time()
        for _ in range(50):
            y = model_cpu(x_cpu)
        cpu_times.append(time.time() - start)

model_gpu = make_model(gpu)
x_gpu = torch.randn(64, 256, device=gpu)
with torch.no_grad():
    model_gpu(x_gpu)  # warm-up
    gpu_times = []
    for _ in range(5):
        start = time.time()
        for _ in range(50):
            y = model_gpu(x_gpu)
        gpu_times.append(time.time() - start)

print(f"CPU {min(cpu_times):.4f} s, GPU {min(gpu_times):.4f} s per 50 batches")
