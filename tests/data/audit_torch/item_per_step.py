# Classic mistake: loss.item() at every step inside the timed loop (a host read that makes the
# CPU wait for the GPU at every step, so launches are never overlapped with compute).
import time

import torch

torch.manual_seed(0)
cpu = torch.device("cpu")
gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(device):
    model = torch.nn.Sequential(torch.nn.Linear(100, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(10, 100, device=device)
    y = torch.randint(0, 10, (10,), device=device)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()  # warm-up step, untimed
    times = []
    for _ in range(3):
        start = time.perf_counter()
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


cpu_times = train(cpu)
gpu_times = train(gpu)
print(f"CPU {min(cpu_times):.4f} s, GPU {min(gpu_times):.4f} s for 20 steps")
