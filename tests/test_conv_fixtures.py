"""PyTorch's own state_dicts (written by tools/make_conv_fixtures.py with PyTorch, stored as safetensors) load
into the same rawdev layers with strict=True and give PyTorch's outputs and input gradients, on the cpu and on
the simulated GPU."""
from pathlib import Path

import numpy as np
import pytest
import rawdev
from rawdev import nn
from safetensors.numpy import load_file

DATA = Path(__file__).resolve().parent / "data" / "conv"


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(6), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 3))


MODELS = {
    "conv1d": lambda: nn.Conv1d(3, 5, 4, stride=2, padding=1, dilation=2),
    "conv2d": lambda: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2),
    "conv2d_same": lambda: nn.Conv2d(3, 2, 4, padding="same", bias=False),
    "conv_transpose2d": lambda: nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
    "batchnorm1d": lambda: nn.BatchNorm1d(5),
    "batchnorm2d": lambda: nn.BatchNorm2d(3, momentum=None),
    "cnn": cnn,
}


def test_every_fixture_has_a_model():
    assert sorted(p.stem for p in DATA.glob("*.safetensors")) == sorted(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pytorch_state_dict_loads_strict_and_matches(name, driver):
    f = load_file(str(DATA / f"{name}.safetensors"))
    state = {k[len("state."):]: rawdev.tensor(v) for k, v in f.items() if k.startswith("state.")}
    for dev in ("cpu", "cuda"):
        m = MODELS[name]()
        m.load_state_dict(state, strict=True)
        m.to(dev).eval()
        x = rawdev.tensor(f["input"], device=dev, requires_grad=True)
        y = m(x)
        np.testing.assert_allclose(y.detach().cpu().numpy(), f["output"], rtol=1e-4, atol=1e-5)
        (y * rawdev.tensor(f["gout"], device=dev)).sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), f["grad_input"], rtol=1e-4, atol=1e-5)
        if "batchnorm" in name or name == "cnn":    # the buffers came from PyTorch's training steps
            bn = [b for b in m.modules() if isinstance(b, (nn.BatchNorm1d, nn.BatchNorm2d))][0]
            prefix = "" if "batchnorm" in name else "1."
            np.testing.assert_array_equal(bn.running_var.cpu().numpy(), f[f"state.{prefix}running_var"])
            assert int(bn.num_batches_tracked.item()) == int(f[f"state.{prefix}num_batches_tracked"])
