"""A PyTorch loop with an optimizer over tensors: linear regression on random data, batches cut
by slicing, the loss read with .item() every step (a user's first script)."""

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
X = torch.randn(4096, 32)
true_w = torch.randn(32, 1)
Y = X @ true_w + 0.1 * torch.randn(4096, 1)

w = torch.zeros(32, 1, device=device, requires_grad=True)
b = torch.zeros(1, device=device, requires_grad=True)
opt = torch.optim.SGD([w, b], lr=0.05)

for epoch in range(5):
    total = 0.0
    for i in range(0, len(X), 64):
        xb, yb = X[i : i + 64].to(device), Y[i : i + 64].to(device)
        loss = ((xb @ w + b - yb) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / (len(X) // 64):.4f}")
