"""Saving and loading an entire model, as the PyTorch "saving and loading models" recipe does it: torch.save(model)
of a user-defined nn.Module (with a submodule list, a buffer and plain attributes), torch.load with
weights_only=False, then inference and more training with the loaded copy; plus the safe-globals route."""
import os
import tempfile

import numpy as np
import rawdev as torch
import rawdev.nn as nn
import rawdev.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"Using {device} device")


class TinyClassifier(nn.Module):
    def __init__(self, in_features=10, hidden=(32, 16), classes=3):
        super().__init__()
        sizes = [in_features, *hidden]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.norm = nn.LayerNorm(hidden[-1])
        self.head = nn.Linear(hidden[-1], classes)
        self.register_buffer("feature_mean", torch.zeros(in_features))
        self.classes = ["low", "mid", "high"]
        self.dropout_p = 0.1

    def forward(self, x):
        x = x - self.feature_mean
        for layer in self.layers:
            x = F.dropout(F.relu(layer(x)), self.dropout_p, self.training)
        return self.head(self.norm(x))


torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
X = torch.randn(256, 10, generator=g)
w_true = torch.randn(10, generator=g)
score = X @ w_true
y = (score > -0.5).long() + (score > 0.5).long()
X, y = X.to(device), y.to(device)

model = TinyClassifier().to(device)
model.feature_mean.copy_(X.mean(0))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()


def train(net, opt, steps):
    net.train()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(net(X), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


first_loss = train(model, optimizer, 1)[0]
train(model, optimizer, 60)

path = os.path.join(tempfile.mkdtemp(), "model.pth")
torch.save(model, path)
torch.save({"optimizer": optimizer, "stats": np.array([1.5, 2.5])}, path + ".opt")

# PyTorch >= 2.6 loads a user-defined class only with weights_only=False (or an allowlist)
try:
    torch.load(path)
    refused = 0
except Exception as e:   # pickle.UnpicklingError in PyTorch
    refused = int("Weights only load failed" in str(e))

loaded = torch.load(path, weights_only=False)
loaded.eval()
model.eval()
with torch.no_grad():
    same = float((loaded(X) - model(X)).abs().max().item() < 1e-6)
    accuracy = (loaded(X).argmax(1) == y).float().mean().item()

with torch.serialization.safe_globals([TinyClassifier]):
    allowed = torch.load(path)
opt_state = torch.load(path + ".opt", weights_only=False)
stats_ok = float(np.allclose(opt_state["stats"], [1.5, 2.5]))

# keep training the loaded copy with a fresh optimizer
optimizer2 = torch.optim.Adam(loaded.parameters(), lr=1e-2)
last_loss = train(loaded, optimizer2, 20)[-1]
print(f"loaded {type(loaded).__name__} with classes {loaded.classes}; allowlisted copy {type(allowed).__name__}")
print(f"RESULT first_loss={first_loss:.4f} last_loss={last_loss:.4f} accuracy={accuracy:.4f} same={same:.0f} "
      f"refused={refused} stats_ok={stats_ok:.0f}")
