# Classic mistake: no warm-up — the first timed epoch pays the one-time costs (first use of
# every kernel, allocator growth, cuDNN autotune and lazy CUDA init on a GPU).
import time

import torch

torch.manual_seed(0)
cpu = torch.device("cpu")
gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def epoch_times(device):
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16 * 16 * 16, 10)
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 16, 16, device=device)
    y = torch.randint(0, 10, (32,), device=device)
    times = []
    for epoch in range(3):
        start = time.perf_counter()
        for _ in range(8):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        sync(device)
        times.append(time.perf_counter() - start)
    return times


cpu_times = epoch_times(cpu)
gpu_times = epoch_times(gpu)
print("CPU epochs", [f"{t:.4f}" for t in cpu_times])
print("GPU epochs", [f"{t:.4f}" for t in gpu_times])
