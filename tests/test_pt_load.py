"""rawdev.load on PyTorch's own torch.save files (tests/data/pt, written by tools/make_pt_fixtures.py).

Each model fixture loads into its rawdev twin with load_state_dict(strict=True) and must give the
outputs PyTorch computed (stored in expected.npz) on the cpu and on the device. No PyTorch here.
"""
import builtins
import io
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.ops import cuda as cuda_ops
from rawdev.serialization import CheckpointError

DATA = os.path.join(os.path.dirname(__file__), "data", "pt")
EXP = dict(np.load(os.path.join(DATA, "expected.npz")))


def path(name):
    return os.path.join(DATA, name)


def close(got, want, tol=1e-5):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    err = np.max(np.abs(got - want) / (1.0 + np.abs(want))) if want.size else 0.0
    assert err <= tol, f"max relative error {err}"


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def cnn():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(4, 3))


class Block(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def lstm():
    return nn.LSTM(4, 6, num_layers=2, batch_first=True)


MODELS = {"mlp": mlp, "cnn_bn": cnn, "lstm": lstm, "gpt_block": Block}


@pytest.fixture
def poison():
    cuda_ops.set_poison(True)
    yield
    cuda_ops.set_poison(False)


def run_model(name, device):
    model = MODELS[name]()
    sd = rawdev.load(path(f"{name}.pt"), map_location=device, weights_only=True)
    assert list(sd) == list(model.state_dict())
    model.load_state_dict(sd, strict=True)
    model = model.to(device).eval()
    x = rawdev.tensor(EXP[f"{name}.x"], device=device)
    with rawdev.no_grad():
        out = model(x)
    if name == "lstm":
        y, (h, c) = out
        close(h.cpu().numpy(), EXP["lstm.h"])
        close(c.cpu().numpy(), EXP["lstm.c"])
        out = y
    assert out.device.type == rawdev.device(device).type
    close(out.cpu().numpy(), EXP[f"{name}.y"])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pytorch_state_dict_gives_pytorchs_outputs_on_cpu(name):
    run_model(name, "cpu")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pytorch_state_dict_gives_pytorchs_outputs_on_the_device(name, driver, poison):
    run_model(name, "cuda")


def test_the_loaded_weights_are_the_saved_values():
    sd = rawdev.load(path("mlp.pt"))
    w = sd["0.weight"].numpy()
    model = mlp()
    model.load_state_dict(sd)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), w)
    assert isinstance(sd, dict) and all(isinstance(v, rawdev.Tensor) for v in sd.values())
    assert not any(v.requires_grad for v in sd.values())


@pytest.mark.parametrize("name", ["shared.pt", "shared_big.pt"])
def test_shared_storages_and_views_have_the_saved_values(name):
    sd = rawdev.load(path(name))
    for k, v in sd.items():
        np.testing.assert_array_equal(v.numpy(), EXP[f"shared.{k}"], err_msg=k)


def test_tensors_of_one_storage_share_memory_on_the_cpu():
    sd = rawdev.load(path("shared.pt"))
    sd["enc.weight"].add_(100.0)
    w = EXP["shared.enc.weight"] + 100.0
    np.testing.assert_array_equal(sd["dec.weight"].numpy(), w)
    np.testing.assert_array_equal(sd["row"].numpy(), w[1])
    np.testing.assert_array_equal(sd["col"].numpy(), w[:, 2])
    np.testing.assert_array_equal(sd["t"].numpy(), w.T)
    sd["tail"].mul_(0.0)
    np.testing.assert_array_equal(sd["head"].numpy(), [0, 1, 2, 0])


def test_tied_weights_load_into_a_model_with_shared_values():
    sd = rawdev.load(path("shared.pt"))
    a, b = nn.Linear(6, 4, bias=False), nn.Linear(6, 4, bias=False)
    a.load_state_dict({"weight": sd["enc.weight"]})
    b.load_state_dict({"weight": sd["dec.weight"]})
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())


def test_dtypes():
    sd = rawdev.load(path("dtypes.pt"))
    want = {"f16": rawdev.float16, "bf16": rawdev.bfloat16, "i64": rawdev.int64, "b": rawdev.bool,
            "i32": rawdev.int32, "i16": rawdev.int16, "i8": rawdev.int8, "u8": rawdev.uint8,
            "f64": rawdev.float64, "empty": rawdev.float32, "scalar": rawdev.float32}
    for k, dt in want.items():
        assert sd[k].dtype is dt, k
        got = sd[k].float().numpy() if dt is rawdev.bfloat16 else sd[k].numpy()
        np.testing.assert_array_equal(got, EXP[f"dtypes.{k}"], err_msg=k)
    assert sd["i64"].tolist()[0] == -(2 ** 40)
    assert sd["scalar"].shape == () and sd["empty"].shape == (0, 3)


def test_plain_values_dtypes_devices_sizes_and_parameters():
    obj = rawdev.load(path("misc.pt"))
    assert obj["n"] == 3 and obj["f"] == 1.5 and obj["s"] == "text" and obj["none"] is None and obj["b"] is True
    assert obj["t"] == (1, 2) and obj["set"] == {1, 2} and tuple(obj["size"]) == (2, 3)
    assert obj["dtype"] is rawdev.float16 and obj["dev"] == rawdev.device("cpu")
    assert isinstance(obj["l"], list) and obj["l"][0].tolist() == [1.0, 1.0]
    assert isinstance(obj["p"], nn.Parameter) and obj["p"].requires_grad and obj["p"].tolist() == [3.0, 3.0]


def adam_after_one_step(ckpt_model, ckpt_opt, device):
    model = mlp()
    model.load_state_dict(ckpt_model, strict=True)
    model = model.to(device)
    opt = rawdev.optim.Adam(model.parameters(), lr=1e-2, betas=(0.8, 0.99), weight_decay=0.01)
    opt.load_state_dict(ckpt_opt)
    x = rawdev.tensor(EXP["adam.x"], device=device)
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
    for k, v in model.state_dict().items():
        close(v.detach().cpu().numpy(), EXP[f"adam.after.{k}"])


def test_general_checkpoint_and_adam_state_give_pytorchs_next_step():
    ckpt = rawdev.load(path("checkpoint.pt"))
    assert list(ckpt) == ["epoch", "model_state_dict", "optimizer_state_dict", "loss"]
    assert ckpt["epoch"] == 2 and ckpt["loss"] == 0.25
    adam = rawdev.load(path("adam.pt"))
    assert adam["param_groups"][0]["params"] == [0, 1, 2, 3] and adam["param_groups"][0]["betas"] == (0.8, 0.99)
    adam_after_one_step(ckpt["model_state_dict"], ckpt["optimizer_state_dict"], "cpu")


def test_adam_state_on_the_device(driver, poison):
    ckpt = rawdev.load(path("checkpoint.pt"), map_location="cuda")
    assert ckpt["optimizer_state_dict"]["state"][0]["exp_avg"].device.type == "cuda"
    adam_after_one_step(ckpt["model_state_dict"], ckpt["optimizer_state_dict"], "cuda")


@pytest.mark.parametrize("name,glob", [("evil_os_system.pt", "os.system"), ("evil_eval.pt", "builtins.eval"),
                                       ("evil_load_from_bytes.pt", "torch.storage._load_from_bytes")])
@pytest.mark.parametrize("weights_only", [True, False])
def test_a_forbidden_global_is_refused_without_being_called(name, glob, weights_only, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(("system", a)))
    monkeypatch.setattr(builtins, "eval", lambda *a, **k: calls.append(("eval", a)))
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: calls.append(("loads", a)))
    with pytest.raises(CheckpointError, match=f"refusing to load global '{glob}' from .*{name}: only tensors"):
        rawdev.load(path(name), weights_only=weights_only)
    assert calls == []


def test_a_whole_module_loads_as_the_rawdev_layer():
    # torch.save(nn.Linear(2, 2)) by PyTorch: GLOBAL torch.nn.modules.linear Linear, NEWOBJ, BUILD of its __dict__
    m = rawdev.load(path("whole_module.pt"))
    assert type(m) is rawdev.nn.Linear and (m.in_features, m.out_features) == (2, 2) and m.training
    assert isinstance(m.weight, rawdev.nn.Parameter) and m.weight.requires_grad and m.bias.shape == (2,)
    w, b = m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64)
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    got = m(rawdev.tensor(x, dtype=rawdev.float32)).detach().numpy()
    assert np.abs(got - (x @ w.T + b)).max() < 1e-6
    assert list(m.state_dict()) == ["weight", "bias"]


def test_legacy_pickle_is_refused_with_how_to_convert():
    with pytest.raises(CheckpointError, match=r"legacy \(non-zip\) PyTorch pickle.*torch.save"):
        rawdev.load(path("legacy.pt"))


def test_file_objects():
    with open(path("mlp.pt"), "rb") as fh:
        a = rawdev.load(fh)
    b = rawdev.load(io.BytesIO(open(path("mlp.pt"), "rb").read()))
    for k in a:
        np.testing.assert_array_equal(a[k].numpy(), b[k].numpy())
    with open(path("evil_os_system.pt"), "rb") as fh, pytest.raises(CheckpointError, match="os.system"):
        rawdev.load(fh)


def test_map_location_forms_on_the_cpu():
    ref = rawdev.load(path("mlp.pt"))
    for ml in ("cpu", rawdev.device("cpu"), {"cuda:0": "cpu"}):
        sd = rawdev.load(path("mlp_cuda.pt"), map_location=ml)
        for k in ref:
            assert sd[k].device.type == "cpu"
            np.testing.assert_array_equal(sd[k].numpy(), ref[k].numpy())
    seen = []
    sd = rawdev.load(path("mlp_cuda.pt"), map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cuda:0"] * 4 and sd["0.weight"].device.type == "cpu"


def test_map_location_to_the_device(driver):
    ref = rawdev.load(path("mlp.pt"))
    for ml in (None, "cuda", "cuda:0", {"cpu": "cuda:0"}):
        src = "mlp.pt" if isinstance(ml, dict) else "mlp_cuda.pt"
        sd = rawdev.load(path(src), map_location=ml)
        for k in ref:
            assert sd[k].device.type == "cuda", (ml, k)
            np.testing.assert_array_equal(sd[k].cpu().numpy(), ref[k].numpy())


def test_the_allowlist_is_the_documented_one(tmp_path):
    # a pickle built by hand with an allowlisted constructor that is not a tensor: refused at the walk
    pkl = b"\x80\x02ctorch\nFloatStorage\nq\x00."
    p = tmp_path / "m.pt"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("m/data.pkl", pkl)
    with pytest.raises(CheckpointError, match="holds a _StorageType object"):
        rawdev.load(p)


FOUR_FLOATS = np.arange(4, dtype="<f4").tobytes()


def _pt_file(tmp_path, pkl, storage=FOUR_FLOATS):
    p = tmp_path / "hand.pt"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("hand/data.pkl", b"\x80\x02" + pkl)
        z.writestr("hand/data/0", storage)
        z.writestr("hand/byteorder", b"little")
    return p


def _storage(kind=b"FloatStorage", numel=b"K\x04"):
    return b"(X\x07\x00\x00\x00storagectorch\n" + kind + b"\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu" + numel + b"tQ"


def _tensor(offset=b"K\x00", size=b"K\x04\x85", stride=b"K\x01\x85", hooks=b"ccollections\nOrderedDict\n)R",
            storage=None):
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + (storage or _storage()) + offset + size + stride + b"\x89"
            + hooks + b"tR")


def test_a_hand_made_tensor_pickle_loads(tmp_path):
    t = rawdev.load(_pt_file(tmp_path, _tensor() + b"."))
    assert t.dtype is rawdev.float32 and t.tolist() == [0.0, 1.0, 2.0, 3.0]
    t = rawdev.load(_pt_file(tmp_path, _tensor(offset=b"K\x01", size=b"K\x02\x85", stride=b"K\x02\x85") + b"."))
    assert t.tolist() == [1.0, 3.0]


# t0 = (1,), t[i] = (t[i-1], t[i-1]): 60 levels of shared tuples, whose hash would take 2**60 steps
_DAG = b"K\x01\x85q\x00" + b"".join(b"h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"\x86q" + bytes([i])
                                       for i in range(1, 61))


@pytest.mark.parametrize("pkl,want", [
    (_tensor() + b"}X\x01\x00\x00\x00aK\x01sb.", "BUILD .*on a _TensorRef"),               # BUILD on a tensor
    (_tensor(hooks=b"}X\x01\x00\x00\x00aK\x01s") + b".", "backward hooks"),
    (_tensor(stride=b"J\xff\xff\xff\xff\x85") + b".", "negative size or stride"),
    (_tensor(offset=b"K\x01") + b".", "reaches element 4 of storage '0', which holds 4"),
    (_tensor(size=b"K\x04K\x04\x86", stride=b"K\x01\x85") + b".", "stride .* has 1 entries, its size has 2"),
    (_tensor(size=b"X\x01\x00\x00\x00a\x85") + b".", "size .* is not a tuple of at most 64 ints"),
    (_tensor(size=b"K\x02\x85", storage=_storage(numel=b"K\x03")) + b".",
     "holds 16 bytes but FloatStorage of 3 elements needs 12"),
    (_tensor(storage=_storage(kind=b"ComplexFloatStorage")) + b".", "global 'torch.ComplexFloatStorage'"),
    (_tensor(storage=_storage(kind=b"UntypedStorage")) + b".", "global 'torch.UntypedStorage'"),
    (_storage() + b".", "bare storage"),
    (b"X\x03\x00\x00\x00abcQ.", "unknown persistent id"),
    (b"]" * 1000 + b"a" * 999 + b".", "nested"),
    (b"ctorch._utils\n_rebuild_tensor_v2\n)\x81.", "NEWOBJ .*of a function"),
    (b"ctorch\nTensor\n.", "global 'torch.Tensor'"),
    (b"ctorch.nn.modules.linear\nNoSuchLayer\n)\x81.", "global 'torch.nn.modules.linear.NoSuchLayer'.*state_dict"),
    (b"ctorch.nn.modules.linear\nLinear\n)R.", "calls the class torch.nn.modules.linear.Linear \\(REDUCE\\)"),
    (b"cbuiltins\ngetattr\n.", "global 'builtins.getattr'"),
    (b"c__builtin__\ngetattr\n.", "global 'builtins.getattr'"),
    (b"ctorch\nfloat32\n.", None),
    (b"cbuiltins\nset\n.", "holds a function object"),
    (_DAG + b"}h\x3cK\x01s.", "a dict key or set element is a tuple, not a plain value"),
    (_DAG + b"cbuiltins\nset\n](h\x3ce\x85R.", "a dict key or set element is a tuple"),
    (_DAG + b"ccollections\nOrderedDict\n](h\x3cK\x01\x86e\x85R.", "a dict key or set element is a tuple"),
    (b"}" + _tensor() + b"K\x01s.", "a dict key or set element is a _TensorRef"),
    (b"](K\x01\x90.", r"opcode ADDITEMS \(144\), which torch.load\(weights_only=True\) refuses too"),
    (b"](" + _tensor() + _tensor(storage=_storage(kind=b"IntStorage")) + b"e.", "referred to as both"),
])
def test_hand_made_pickles_are_checked(tmp_path, pkl, want):
    p = _pt_file(tmp_path, pkl)
    if want is None:
        assert rawdev.load(p) is rawdev.float32
        return
    with pytest.raises(CheckpointError, match=want):
        rawdev.load(p)


def test_big_endian_storages_are_byteswapped(tmp_path):
    p = tmp_path / "big.pt"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("big/data.pkl", b"\x80\x02" + _tensor(storage=_storage(kind=b"LongStorage")) + b".")
        z.writestr("big/data/0", np.array([1, -2, 2 ** 40, 7], dtype=">i8").tobytes())
        z.writestr("big/byteorder", b"big")
    assert rawdev.load(p).tolist() == [1, -2, 2 ** 40, 7]


def test_a_safetensors_file_whose_header_length_looks_like_a_pickle_still_loads(tmp_path):
    # 640 = 0x280: the file starts with b"\x80\x02", a pickle's PROTO 2, but not PyTorch's legacy magic number
    head = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'.ljust(640)
    p = tmp_path / "w.safetensors"
    p.write_bytes(struct.pack("<Q", 640) + head + np.array([1.5, -2.0], dtype="<f4").tobytes())
    assert p.read_bytes()[:2] == b"\x80\x02"
    assert rawdev.load(p)["w"].tolist() == [1.5, -2.0]
