"""A spatial transformer network in the style of the PyTorch tutorial: a localization net predicts an affine
transform (initialised to the identity), F.affine_grid + F.grid_sample resample the input, and a small CNN
classifies it. The data is generated here: a bright 5x5 patch at a random place in a 20x20 image, labelled by
the quadrant it is in."""
import rawdev as torch
import rawdev.nn as nn
import rawdev.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_data(n):
    x = torch.rand(n, 1, 20, 20) * 0.1
    rows, cols = torch.randint(0, 16, (n,)), torch.randint(0, 16, (n,))
    for i in range(n):
        r, c = int(rows[i]), int(cols[i])
        x[i, 0, r:r + 5, c:c + 5] += 1.0
    y = (rows + 2 >= 10).long() * 2 + (cols + 2 >= 10).long()
    return x, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.localization = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
            nn.Conv2d(4, 6, kernel_size=3), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        self.fc_loc = nn.Sequential(nn.Linear(6 * 3 * 3, 16), nn.ReLU(True), nn.Linear(16, 3 * 2))
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.conv = nn.Conv2d(1, 8, kernel_size=5, padding=2)
        self.fc = nn.Linear(8 * 5 * 5, 4)

    def stn(self, x):
        xs = self.localization(x).view(-1, 6 * 3 * 3)
        theta = self.fc_loc(xs).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x):
        x = self.stn(x)
        x = F.max_pool2d(F.relu(self.conv(x)), 4)
        return self.fc(x.flatten(1))


x_train, y_train = make_data(128)
x_test, y_test = make_data(64)
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
losses = []
for epoch in range(6):
    model.train()
    perm = torch.randperm(128)
    total = 0.0
    for i in range(0, 128, 32):
        idx = perm[i:i + 32]
        data, target = x_train[idx].to(device), y_train[idx].to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(idx)
    losses.append(total / 128)
    model.eval()
    with torch.no_grad():
        acc = (model(x_test.to(device)).argmax(1) == y_test.to(device)).float().mean().item()
    print(f"epoch {epoch}: loss {losses[-1]:.4f} test accuracy {acc:.3f}")
print(f"RESULT first_loss={losses[0]:.4f} last_loss={losses[-1]:.4f} accuracy={acc:.4f}")
