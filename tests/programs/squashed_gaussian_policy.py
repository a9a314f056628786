"""The actor update of soft actor-critic on a one-dimensional continuous bandit, as SAC implementations write it:
the policy is a Gaussian squashed by tanh (a TransformedDistribution with TanhTransform(cache_size=1), so
log_prob of a sampled action reuses the pre-tanh value), actions come from rsample so the reward's gradient
flows into the policy's parameters, and the loss is α·log π(a) − r(a). The best action is 0.6."""
import rawdev as torch
from rawdev import nn
from rawdev.distributions import Normal, TransformedDistribution
from rawdev.distributions.transforms import TanhTransform

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Using {device} device")


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Parameter(torch.zeros(1))
        self.log_std = nn.Parameter(torch.zeros(1))

    def forward(self):
        base = Normal(self.mu, self.log_std.clamp(-5, 2).exp())
        return TransformedDistribution(base, [TanhTransform(cache_size=1)])


def reward(a):
    return -(a - 0.6) ** 2


actor = Actor().to(device)
optimizer = torch.optim.Adam(actor.parameters(), lr=0.05)
alpha = 0.01
history = []
for step in range(200):
    pi = actor()
    actions = pi.rsample((128,))
    loss = (alpha * pi.log_prob(actions) - reward(actions)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())
    if step % 50 == 0:
        print(f"step {step}: loss {loss.item():.4f} mean action {torch.tanh(actor.mu).item():.3f}")

with torch.no_grad():
    pi = actor()
    a = pi.sample((4096,))
    inside = bool(((a > -1) & (a < 1)).all())
    mode = torch.tanh(actor.mu).item()
print(f"RESULT first_loss={history[0]:.5f} last_loss={history[-1]:.5f} mode={mode:.4f} "
      f"mean_reward={reward(a).mean().item():.5f} inside={int(inside)}")
