"""The general-checkpoint recipe: save model, optimizer, epoch and loss in one dict; load it into fresh
objects and resume training; the resumed run must continue exactly as the uninterrupted one."""
import os
import tempfile

import rawdev as torch
import rawdev.nn as nn
import rawdev.nn.functional as F
import rawdev.optim as optim

device = "cuda" if torch.cuda.is_available() else "cpu"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(6 * 3 * 3, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


g = torch.Generator().manual_seed(0)
inputs = torch.randn(8, 3, 8, 8, generator=g).to(device)
labels = torch.randint(0, 10, (8,), generator=g).to(device)
criterion = nn.CrossEntropyLoss()


def step(net, optimizer):
    optimizer.zero_grad()
    loss = criterion(net(inputs), labels)
    loss.backward()
    optimizer.step()
    return loss.item()


torch.manual_seed(1)
net = Net().to(device)
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for epoch in range(3):
    loss = step(net, optimizer)

EPOCH = 3
PATH = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save({
    "epoch": EPOCH,
    "model_state_dict": net.state_dict(),
    "optimizer_state_dict": optimizer.state_dict(),
    "loss": loss,
}, PATH)

uninterrupted = [step(net, optimizer) for _ in range(3)]

model = Net().to(device)
optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
epoch = checkpoint["epoch"]
loss = checkpoint["loss"]
model.train()
resumed = [step(model, optimizer) for _ in range(3)]
print("epoch", epoch, "loss", loss)
print("uninterrupted", uninterrupted)
print("resumed      ", resumed)
same = all(abs(a - b) <= 1e-6 * max(1.0, abs(a)) for a, b in zip(uninterrupted, resumed))
print(f"RESULT same={int(same)} epoch={epoch}")
