"""The seed article's usage code runs with only its imports changed (`import rawdev as torch`), plus a
training step — on the simulated GPU (cuda is available there) and with no GPU at all (auto -> cpu)."""
import os
import subprocess
import sys
import textwrap

import pytest

from _refs import HANG_GUARD_S

SNIPPET = textwrap.dedent("""
    import rawdev as torch
    import rawdev.nn as nn
    import rawdev.optim as optim

    # 定義模型
    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.fc1 = nn.Linear(64, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = torch.relu(self.fc1(x))
            return self.fc2(x)

    model = Net()

    # 將模型加載到GPU中
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    model.to(device)

    # 定義優化器和損失函數
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.001)

    # one training step
    inputs = torch.randn(16, 64).to(device)
    labels = torch.randint(0, 10, (16,)).to(device)
    before = model.fc1.weight.detach().cpu().numpy().copy()
    optimizer.zero_grad()
    outputs = model(inputs)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    after = model.fc1.weight.detach().cpu().numpy()
    assert outputs.device.type == device.type == model.fc1.weight.device.type == model.fc1.weight.grad.device.type
    assert abs(after - before).max() > 0
    print("device", device, "loss", round(loss.item(), 4))
""")


def _run(env_driver):
    env = dict(os.environ, RAWDEV_DRIVER=env_driver)
    return subprocess.run([sys.executable, "-c", SNIPPET], env=env, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)


def test_seed_snippet_on_the_simulator():
    r = _run("sim")
    if r.returncode and "not shipped" in r.stderr:
        pytest.skip("a kernel family the training step needs is not shipped yet: "
                    + r.stderr.strip().splitlines()[-1][:200])
    assert r.returncode == 0, r.stderr
    assert "device cuda" in r.stdout


def test_seed_snippet_without_a_gpu_runs_on_cpu():
    from conftest import real_gpu
    if real_gpu() is None:
        pytest.skip("a real GPU is present: auto picks it")
    r = _run("auto")
    assert r.returncode == 0, r.stderr
    assert "device cpu" in r.stdout
