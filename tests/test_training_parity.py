"""Same seed, same batches: 50 steps of SGD with momentum and of AdamW on the digits MLP give the same
losses on cuda (simulator / GPU) as on the cpu, within 1e-4 relative at every step."""
import numpy as np
import pytest
import rawdev
from rawdev import nn, optim
from rawdev.demo import split_digits


def train(device, opt_name, steps=50, batch=64, hidden=32):
    Xtr, ytr, _, _ = split_digits(0)
    rawdev.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 10)).to(device)
    if opt_name == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    else:
        opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    order = np.random.default_rng(1).permutation(len(Xtr))
    losses = []
    for s in range(steps):
        idx = order[(s * batch) % (len(Xtr) - batch):][:batch]
        x = rawdev.tensor(Xtr[idx]).to(device)
        y = rawdev.tensor(ytr[idx]).to(device)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), [np.asarray(p.detach().cpu()) for p in model.parameters()]


@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
def test_training_parity(driver, opt_name):
    cpu_losses, cpu_params = train("cpu", opt_name)
    try:
        dev_losses, dev_params = train("cuda", opt_name)
    except NotImplementedError as e:
        if "not shipped" in str(e):
            pytest.skip(str(e).split(";")[0])
        raise
    assert cpu_losses[-1] < 0.7 * cpu_losses[0]          # it does train
    rel = np.abs(dev_losses - cpu_losses) / np.abs(cpu_losses)
    assert rel.max() < 1e-4, f"step {rel.argmax()}: cuda {dev_losses[rel.argmax()]} vs cpu {cpu_losses[rel.argmax()]}"
    for a, b in zip(dev_params, cpu_params):
        assert np.linalg.norm(a - b) / np.linalg.norm(b) < 1e-4
