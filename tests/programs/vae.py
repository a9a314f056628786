"""A VAE in the style of the classic example: fc encoder to (mu, logvar), the reparameterization trick,
a sigmoid decoder, BCE + KL loss summed over the batch, Adam, then sampling from the prior."""
import argparse

import rawdev as torch
import rawdev.utils.data
from rawdev import nn, optim
from rawdev.nn import functional as F

parser = argparse.ArgumentParser(description="VAE Example")
parser.add_argument("--batch-size", type=int, default=32, metavar="N")
parser.add_argument("--epochs", type=int, default=3, metavar="N")
parser.add_argument("--no-accel", action="store_true", default=False)
parser.add_argument("--seed", type=int, default=1, metavar="S")
parser.add_argument("--log-interval", type=int, default=2, metavar="N")
args = parser.parse_args()

use_accel = not args.no_accel and torch.accelerator.is_available()
torch.manual_seed(args.seed)
device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
print(f"Using device: {device}")

# 'images' in [0, 1]: blurry blobs at random places on a 12x12 grid
g = torch.Generator().manual_seed(0)
centers = torch.randint(2, 10, (160, 2), generator=g).float()
yy, xx = torch.meshgrid(torch.arange(12.0), torch.arange(12.0), indexing="ij")
d2 = (yy[None] - centers[:, 0, None, None]) ** 2 + (xx[None] - centers[:, 1, None, None]) ** 2
images = torch.exp(-d2 / 6.0).clamp(0, 1)
dataset = torch.utils.data.TensorDataset(images, torch.zeros(160))
train_loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
D = 144


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, 64)
        self.fc21 = nn.Linear(64, 8)
        self.fc22 = nn.Linear(64, 8)
        self.fc3 = nn.Linear(8, 64)
        self.fc4 = nn.Linear(64, D)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, D))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-2)


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, D), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def train(epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item() / len(data)))
    avg = train_loss / len(train_loader.dataset)
    print("====> Epoch: {} Average loss: {:.4f}".format(epoch, avg))
    return avg


losses = [train(epoch) for epoch in range(1, args.epochs + 1)]
with torch.no_grad():
    sample = torch.randn(16, 8).to(device)
    sample = model.decode(sample).cpu()
    print("sample", tuple(sample.view(16, 1, 12, 12).shape), f"{sample.min().item():.3f}..{sample.max().item():.3f}")
print(f"RESULT first_loss={losses[0]:.4f} last_loss={losses[-1]:.4f}")
