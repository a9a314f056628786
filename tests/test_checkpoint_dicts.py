"""rawdev.save / rawdev.load of whole training checkpoints (no pickle): nested dicts with any keys, lists,
tuples, numbers, strings, None, dtypes, devices and tensors (shared ones stored once), optimizer and scheduler
state_dicts; file objects; map_location in each of PyTorch's forms; a resumed run equals an uninterrupted one."""
import io
import json
import math
import struct

import numpy as np
import pytest
import rawdev
from rawdev import nn, optim
from rawdev.serialization import CheckpointError


def _model(seed=0):
    rawdev.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))


def _same(a, b):
    if isinstance(a, rawdev.Tensor):
        return isinstance(b, rawdev.Tensor) and a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape) and \
            np.array_equal(a.detach().cpu().float().numpy(), b.detach().cpu().float().numpy(), equal_nan=True)
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def test_general_checkpoint_round_trips_exactly(tmp_path):
    model = _model()
    opt = optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.9))
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    x, y = rawdev.randn(4, 5), rawdev.tensor([0, 1, 2, 1])
    nn.CrossEntropyLoss()(model(x), y).backward()
    opt.step()
    sched.step()
    t = rawdev.arange(6.0)
    ckpt = {"epoch": 7, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
            "scheduler": sched.state_dict(), "loss": 0.125, "history": [1.5, float("inf"), float("nan")],
            "names": ("a", "b"), "note": None, "flag": True, "big": 2 ** 70, 3: "int key", "shared": [t, t],
            "dtype": rawdev.bfloat16, "where": rawdev.device("cpu"), "half": rawdev.ones(3, dtype=rawdev.float16)}
    path = tmp_path / "ckpt.pt"
    rawdev.save(ckpt, path)
    back = rawdev.load(path, weights_only=True)
    assert _same(back, ckpt)
    assert back["shared"][0] is back["shared"][1]          # a tensor saved twice is one tensor again
    assert rawdev.load(path) is not None and path.read_bytes() == _bytes(ckpt)   # deterministic


def _bytes(obj):
    buf = io.BytesIO()
    rawdev.save(obj, buf)
    return buf.getvalue()


def test_file_objects_both_ways():
    obj = {"w": [rawdev.ones(2, 2)], "step": 3}
    buf = io.BytesIO()
    rawdev.save(obj, buf)
    buf.seek(0)
    assert _same(rawdev.load(buf), obj)
    sd = _model().state_dict()
    buf = io.BytesIO()
    rawdev.save(sd, buf)                                    # a state_dict stays plain safetensors
    from safetensors.numpy import load as st_load
    assert sorted(st_load(buf.getvalue())) == sorted(sd)


def test_resumed_training_continues_exactly(tmp_path, driver):
    def step(m, opt, sched, x, y):
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(m(x), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss.item()

    rng = np.random.default_rng(0)
    data = [(rawdev.tensor(rng.standard_normal((6, 5)).astype(np.float32)).cuda(),
             rawdev.tensor(rng.integers(0, 3, 6)).cuda()) for _ in range(6)]
    m = _model(1).cuda()
    opt = optim.AdamW(m.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
    for x, y in data[:3]:
        step(m, opt, sched, x, y)
    rawdev.save({"epoch": 3, "model": m.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict()},
                tmp_path / "c.pt")
    straight = [step(m, opt, sched, x, y) for x, y in data[3:]]
    ck = rawdev.load(tmp_path / "c.pt")
    assert ck["model"]["0.weight"].is_cuda                 # tensors come back to the device they were saved from
    m2 = _model(2).cuda()
    opt2 = optim.AdamW(m2.parameters(), lr=1e-2)
    sched2 = optim.lr_scheduler.StepLR(opt2, 2, gamma=0.5)
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    sched2.load_state_dict(ck["sched"])
    resumed = [step(m2, opt2, sched2, x, y) for x, y in data[3:]]
    assert ck["epoch"] == 3 and resumed == straight


def test_map_location_forms(tmp_path, driver):
    obj = {"a": rawdev.ones(3).cuda(), "b": rawdev.zeros(2)}
    rawdev.save(obj, tmp_path / "m.pt")
    assert rawdev.load(tmp_path / "m.pt")["a"].is_cuda
    assert not rawdev.load(tmp_path / "m.pt", map_location="cpu")["a"].is_cuda
    assert rawdev.load(tmp_path / "m.pt", map_location=rawdev.device("cuda"))["b"].is_cuda
    assert not rawdev.load(tmp_path / "m.pt", map_location={"cuda:0": "cpu"})["a"].is_cuda
    got = rawdev.load(tmp_path / "m.pt", map_location=lambda storage, loc: storage)
    assert not got["a"].is_cuda and got["a"].tolist() == [1.0, 1.0, 1.0]


def test_unsupported_objects_and_malformed_structures(tmp_path):
    with pytest.raises(TypeError, match=r"cannot store the object\['fn'\], the function .*<lambda>: a lambda"):
        rawdev.save({"fn": lambda: 0}, tmp_path / "x.pt")
    # a structure that points at a tensor the file does not hold
    path = tmp_path / "bad.pt"
    rawdev.save({"x": [rawdev.ones(1)]}, path)
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header["__metadata__"]["rawdev.structure"] = json.dumps({"dict": [[{"str": "x"}, {"tensor": "t.9"}]]})
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n:])
    with pytest.raises(CheckpointError, match="structure is malformed"):
        rawdev.load(path)


def test_a_damaged_pytorch_zip_file_is_a_checkpoint_error(tmp_path):
    p = tmp_path / "model.pt"
    p.write_bytes(b"PK\x03\x04" + b"\0" * 60)
    with pytest.raises(CheckpointError, match="not a readable PyTorch checkpoint.*zip"):
        rawdev.load(p)
