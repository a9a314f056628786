"""torch.nn.modules.linear.NonDynamicallyQuantizableLinear: PyTorch's Linear subclass that MultiheadAttention's
out_proj is, reachable at PyTorch's path, in MHA, and in a PyTorch-written whole-module .pt file that names it."""
import zipfile
from pathlib import Path

import numpy as np
import rawdev
import rawdev.nn as nn
from rawdev.nn.modules.linear import NonDynamicallyQuantizableLinear

FIXTURE = Path(__file__).resolve().parent / "data" / "pt" / "sequential_module.pt"


def test_it_is_a_linear_at_pytorchs_path():
    lin = NonDynamicallyQuantizableLinear(3, 2)
    assert isinstance(lin, nn.Linear) and lin.weight.shape == (2, 3) and lin.bias.shape == (2,)
    x = rawdev.randn(4, 3)
    ref = x.numpy().astype(np.float64) @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    assert np.abs(lin(x).detach().numpy() - ref).max() < 1e-5
    assert repr(lin).startswith("NonDynamicallyQuantizableLinear(in_features=3, out_features=2")


def test_multihead_attention_out_proj_is_one():
    mha = nn.MultiheadAttention(8, 2)
    assert type(mha.out_proj) is NonDynamicallyQuantizableLinear
    assert "out_proj.weight" in mha.state_dict()


def test_a_pytorch_file_naming_it_loads(tmp_path):
    out = tmp_path / "renamed.pt"
    old = b"torch.nn.modules.linear\nLinear\n"
    new = b"torch.nn.modules.linear\nNonDynamicallyQuantizableLinear\n"
    with zipfile.ZipFile(FIXTURE) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("data.pkl"):
                assert old in data
                data = data.replace(old, new)
            zout.writestr(info, data)
    m = rawdev.load(out)
    assert [type(c) for c in m] == [NonDynamicallyQuantizableLinear, nn.ReLU, NonDynamicallyQuantizableLinear]


def test_a_whole_transformer_layer_saved_by_rawdev_keeps_it(tmp_path):
    m = nn.TransformerEncoderLayer(8, 2, 16).eval()
    rawdev.save(m, tmp_path / "layer.pt")
    m2 = rawdev.load(tmp_path / "layer.pt").eval()
    assert type(m2.self_attn.out_proj) is NonDynamicallyQuantizableLinear
    x = rawdev.randn(3, 2, 8)
    assert np.array_equal(m(x).detach().numpy(), m2(x).detach().numpy())
