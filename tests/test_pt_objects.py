"""Whole modules in PyTorch-written .pt files (torch.save(model)): torch.nn's standard layers load as rawdev's,
a user's class under PyTorch 2.6's weights_only rules; nothing from the file is called. The fixture
tests/data/pt/sequential_module.pt is written by tools/make_pt_module_fixture.py (no PyTorch needed)."""
import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
from rawdev.serialization import CheckpointError, clear_safe_globals, safe_globals

FIXTURE = Path(__file__).resolve().parent / "data" / "pt" / "sequential_module.pt"
W1 = np.arange(12, dtype=np.float64).reshape(4, 3) / 10 - 0.5
B1 = np.array([0.1, -0.2, 0.3, -0.4])
W2 = np.array([[0.5, -1.0, 0.25, 2.0], [-0.75, 0.5, 1.5, -0.25]])
B2 = np.array([0.05, -0.05])


class UserNet(nn.Module):
    """Stands for a program's own class: the fixture renamed to name it."""

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


def _reference(x):
    return np.maximum(x @ W1.T + B1, 0) @ W2.T + B2


def _renamed(tmp_path, old, new):
    """The fixture with one GLOBAL's name replaced (GLOBAL names are text lines in the pickle)."""
    out = tmp_path / "renamed.pt"
    with zipfile.ZipFile(FIXTURE) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("data.pkl"):
                assert old in data
                data = data.replace(old, new)
            zout.writestr(info, data)
    return out


@pytest.fixture(autouse=True)
def _clean():
    clear_safe_globals()
    yield
    clear_safe_globals()


def test_a_pytorch_sequential_loads_as_rawdev_layers():
    m = rawdev.load(FIXTURE)
    assert type(m) is nn.Sequential and [type(c) for c in m] == [nn.Linear, nn.ReLU, nn.Linear]
    assert (m[0].in_features, m[0].out_features, m[2].in_features, m[2].out_features) == (3, 4, 4, 2)
    assert [k for k, _ in m.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    x = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0], [0.0, 0.0, 0.0]])
    got = m(rawdev.tensor(x, dtype=rawdev.float32))
    want = _reference(x)
    assert np.abs(got.detach().numpy() - want).max() <= 1e-6 * (1 + np.abs(want).max())
    got.sum().backward()
    assert m[0].weight.grad.shape == (4, 3)
    # the same through a file object
    assert type(rawdev.load(io.BytesIO(FIXTURE.read_bytes()))) is nn.Sequential


def test_a_user_class_follows_the_weights_only_rules(tmp_path):
    p = _renamed(tmp_path, b"torch.nn.modules.container\nSequential", f"{__name__}\nUserNet".encode())
    with pytest.raises(CheckpointError, match=r"Weights only load failed(.|\n)*GLOBAL test_pt_objects\.UserNet "
                                              r"was not an allowed global by default") as ei:
        rawdev.load(p)
    assert isinstance(ei.value, pickle.UnpicklingError)
    m = rawdev.load(p, weights_only=False)
    assert type(m) is UserNet and list(m._modules) == ["0", "1", "2"]
    x = np.array([[0.5, 0.5, -0.5]])
    assert np.allclose(m(rawdev.tensor(x, dtype=rawdev.float32)).detach().numpy(), _reference(x), atol=1e-6)
    with safe_globals([UserNet]):
        assert type(rawdev.load(p)) is UserNet


def test_what_the_pickle_may_not_name(tmp_path):
    # a function where the class was: never called, refused by name under either weights_only
    p = _renamed(tmp_path, b"torch.nn.modules.container\nSequential", b"os\nsystem")
    for wo in (True, False):
        with pytest.raises(CheckpointError, match="refusing to load global 'os.system'"):
            rawdev.load(p, weights_only=wo)
    # a C type (not a plain Python class) is refused even with weights_only=False
    p = _renamed(tmp_path, b"torch.nn.modules.container\nSequential", b"io\nBytesIO")
    with pytest.raises(CheckpointError, match="refusing to load global 'io.BytesIO'"):
        rawdev.load(p, weights_only=False)
    # a torch.nn class rawdev does not have
    p = _renamed(tmp_path, b"torch.nn.modules.activation\nReLU", b"torch.nn.modules.activation\nNoSuch")
    with pytest.raises(CheckpointError, match="global 'torch.nn.modules.activation.NoSuch'"):
        rawdev.load(p)


@pytest.mark.slow
def test_map_location_cuda(driver):
    m = rawdev.load(FIXTURE, map_location="cuda")
    assert m[0].weight.is_cuda and m[2].bias.is_cuda
    x = np.array([[1.0, 2.0, 3.0]])
    got = m(rawdev.tensor(x, dtype=rawdev.float32, device="cuda")).cpu().detach().numpy()
    assert np.abs(got - _reference(x)).max() < 1e-5
