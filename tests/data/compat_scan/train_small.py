# A tiny program in the style of the corpus, for tests/test_compat_scan.py (never run).
import numpy as np
import torch
import torch.distributed.rpc as rpc
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2, bias=True)

    def forward(self, x):
        return F.relu(self.fc(x)).clamp(min=0)


model = Net()
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
data = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
loader = DataLoader(data, batch_size=4, shuffle=True, no_such_option=3)
for x, y in loader:
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
values = np.zeros(3).frobnicate_rows()
torch.no_such_function(1)
rpc.init_rpc("worker", rank=0, world_size=1)
picked = torch.zeros(3, 4)[None, ..., [0, 2]]
