# Classic mistake: the data stays in host memory and every batch is moved with .to(device) inside
# the timed loop (a synchronous host-to-device copy from pageable memory at every step).
import time

import torch

torch.manual_seed(0)
cpu = torch.device("cpu")
gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = torch.randn(1280, 100)
labels = torch.randint(0, 10, (1280,))


def train(device):
    model = torch.nn.Sequential(torch.nn.Linear(100, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.nn.functional.cross_entropy(model(data[:64].to(device)), labels[:64].to(device)).backward()
    opt.step()  # warm-up step, untimed
    times = []
    for _ in range(3):
        start = time.perf_counter()
        for i in range(0, 1280, 64):
            xb = data[i : i + 64].to(device)
            yb = labels[i : i + 64].to(device)
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


cpu_times = train(cpu)
gpu_times = train(gpu)
print(f"CPU {min(cpu_times):.4f} s, GPU {min(gpu_times):.4f} s per epoch")
