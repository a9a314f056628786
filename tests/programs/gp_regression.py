"""Gaussian-process regression written out by hand, as lecture notes do: an RBF kernel, the negative log
marginal likelihood through a Cholesky factor (cholesky, cholesky_solve, the log-determinant from the factor's
diagonal), its hyperparameters fitted with Adam, and the posterior mean and variance at test points.
The data is a noisy sine generated here."""
import math

import rawdev as torch

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

x = torch.linspace(-3, 3, 24, device=device).unsqueeze(1)
y = torch.sin(x).squeeze(1) + 0.1 * torch.randn(24, device=device)
x_test = torch.linspace(-2.8, 2.8, 10, device=device).unsqueeze(1)

log_length = torch.tensor(0.0, device=device, requires_grad=True)
log_scale = torch.tensor(0.0, device=device, requires_grad=True)
log_noise = torch.tensor(-1.0, device=device, requires_grad=True)


def kernel(a, b):
    d2 = torch.cdist(a, b).pow(2)
    return log_scale.exp().pow(2) * torch.exp(-0.5 * d2 / log_length.exp().pow(2))


def nll():
    K = kernel(x, x) + (log_noise.exp().pow(2) + 1e-4) * torch.eye(len(x), device=device)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(1), L)
    return (0.5 * (y.unsqueeze(1) * alpha).sum() + torch.log(torch.diagonal(L)).sum()
            + 0.5 * len(x) * math.log(2 * math.pi))


optimizer = torch.optim.Adam([log_length, log_scale, log_noise], lr=0.05)
history = []
for step in range(60):
    optimizer.zero_grad()
    loss = nll()
    loss.backward()
    optimizer.step()
    history.append(loss.item())
    if step % 20 == 0:
        print(f"step {step}: nll {loss.item():.4f} length {log_length.exp().item():.3f}")

with torch.no_grad():
    K = kernel(x, x) + (log_noise.exp().pow(2) + 1e-4) * torch.eye(len(x), device=device)
    L = torch.linalg.cholesky(K)
    Ks = kernel(x_test, x)
    mean = Ks @ torch.cholesky_solve(y.unsqueeze(1), L)
    v = torch.linalg.solve_triangular(L, Ks.T, upper=False)
    var = log_scale.exp().pow(2) - (v * v).sum(0)
    rmse = (mean.squeeze(1) - torch.sin(x_test).squeeze(1)).pow(2).mean().sqrt().item()
print(f"posterior variance range {var.min().item():.4f}..{var.max().item():.4f}")
print(f"RESULT first_nll={history[0]:.4f} last_nll={history[-1]:.4f} rmse={rmse:.4f} min_var={var.min().item():.6f}")
