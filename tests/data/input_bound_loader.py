import time
import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.0003:  # Python work per item
            pass
        return torch.randn(32), torch.randn(1)


model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Slow(), batch_size=16, shuffle=True, num_workers=0)
for epoch in range(3):
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if epoch == 0:
            float(loss.item())
