"""The README's Python example runs as printed, on the simulated GPU and on the cpu, and trains."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _refs import HANG_GUARD_S

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 1, "the README has one Python example"
    return blocks[0]


@pytest.mark.parametrize("driver,device", [("sim", "cuda"), ("none", "cpu")])
def test_readme_example_runs(driver, device):
    check = ("\nw0 = model.fc1.weight.detach().cpu().numpy().copy()\n"
             "loss2 = criterion(model(inputs), labels)\n"
             "import math; assert math.isfinite(loss.item()) and loss2.item() < loss.item(),"
             " (loss.item(), loss2.item())\n"
             "print('device', device, model.fc1.weight.device.type, inputs.device.type)\n")
    if driver == "none":
        from conftest import real_gpu
        if real_gpu() is None:
            pytest.skip("a real GPU is present: auto picks it")
    env = {**os.environ, "RAWDEV_DRIVER": "sim" if driver == "sim" else "auto"}
    p = subprocess.run([sys.executable, "-c", readme_example() + check], capture_output=True, text=True,
                       timeout=HANG_GUARD_S, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["device", device, device, device]
