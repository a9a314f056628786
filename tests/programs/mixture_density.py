"""A mixture density network on the inverted-sine toy problem, the way tutorials on MDNs set it up: the target y
is a multi-valued function of x (x = y + 0.3 sin(2πy) + noise), so a network trained with mean squared error
averages the branches; one that outputs the weights, means and scales of a Gaussian mixture
(MixtureSameFamily of a Categorical and a Normal) and is trained on the negative log-likelihood covers them.
The profiler wraps one evaluation, as the profiling recipe shows."""
import math

import rawdev as torch
from rawdev import nn
from rawdev.distributions import Categorical, MixtureSameFamily, Normal
from rawdev.profiler import ProfilerActivity, profile, record_function

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Using {device} device")

n = 512
y = torch.rand(n, 1) * 2 - 1
x = y + 0.3 * torch.sin(2 * math.pi * y) + 0.05 * torch.randn(n, 1)
x, y = x.to(device), y.to(device)


class MDN(nn.Module):
    def __init__(self, hidden=32, components=4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.logits = nn.Linear(hidden, components)
        self.means = nn.Linear(hidden, components)
        self.log_scales = nn.Linear(hidden, components)

    def forward(self, x):
        h = self.body(x)
        scales = torch.exp(self.log_scales(h).clamp(-5, 2))
        return MixtureSameFamily(Categorical(logits=self.logits(h)), Normal(self.means(h), scales))


model = MDN().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
history = []
for step in range(150):
    optimizer.zero_grad()
    loss = -model(x).log_prob(y.squeeze(1)).mean()
    loss.backward()
    optimizer.step()
    history.append(loss.item())
    if step % 50 == 0:
        print(f"step {step}: nll {loss.item():.4f}")

with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    with record_function("evaluate"):
        dist = model(x)
        nll = -dist.log_prob(y.squeeze(1)).mean().item()
        samples = dist.sample((8,))
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
# at x = 0 the inverse has three branches (y = 0 and y ≈ ±0.4); the mixture's modes should cover more than one
probe = torch.zeros(1, 1, device=device)
means = model(probe).component_distribution.mean.squeeze(0)
weights = model(probe).mixture_distribution.probs.squeeze(0)
spread = (means[weights > 0.1].max() - means[weights > 0.1].min()).item()
print(f"RESULT first_loss={history[0]:.5f} last_loss={history[-1]:.5f} eval_nll={nll:.5f} "
      f"sample_ok={int(tuple(samples.shape) == (8, n))} spread={spread:.4f}")
