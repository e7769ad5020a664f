"""A tiny GAN in PyTorch: a generator and a discriminator, each with its own Adam optimizer,
both stepping in every iteration (one training step)."""

import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
nz = 16
netG = nn.Sequential(nn.Linear(nz, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
netD = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1), nn.Sigmoid()).to(device)
optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCELoss()  # on the sigmoid output, as the DCGAN tutorial does
real_data = torch.randn(8192, 2) * 0.5 + 1.0

for it in range(200):
    real = real_data[torch.randint(0, len(real_data), (64,))].to(device)
    ones = torch.ones(64, 1, device=device)
    zeros = torch.zeros(64, 1, device=device)
    # discriminator: real vs fake
    optD.zero_grad()
    fake = netG(torch.randn(64, nz, device=device))
    lossD = bce(netD(real), ones) + bce(netD(fake.detach()), zeros)
    lossD.backward()
    optD.step()
    # generator: fool the discriminator
    optG.zero_grad()
    lossG = bce(netD(fake), ones)
    lossG.backward()
    optG.step()
    if it % 100 == 0:
        print(f"[{it}] loss_D {lossD.item():.3f} loss_G {lossG.item():.3f}")
