# Classic mistake: a DataLoader with the defaults (num_workers=0, pin_memory=False) inside the
# timed loop: each batch is built in the main process between two steps, from pageable memory.
import time

import torch
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
cpu = torch.device("cpu")
gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Noisy(Dataset):
    """Per-sample preprocessing in Python, as an image pipeline would do."""

    def __init__(self, n):
        self.x = torch.randn(n, 3, 16, 16)
        self.y = torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        img = self.x[i]
        img = (img - img.mean()) / (img.std() + 1e-6)
        if i % 2:
            img = img.flip(-1)
        return img, self.y[i]


loader = DataLoader(Noisy(640), batch_size=32, shuffle=True)


def train(device):
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(768, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xb, yb = next(iter(loader))
    torch.nn.functional.cross_entropy(model(xb.to(device)), yb.to(device)).backward()
    opt.step()  # warm-up step, untimed
    times = []
    for _ in range(3):
        start = time.perf_counter()
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


cpu_times = train(cpu)
gpu_times = train(gpu)
print(f"CPU {min(cpu_times):.3f} s, GPU {min(gpu_times):.3f} s per epoch")
