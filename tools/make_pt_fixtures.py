"""Write tests/data/pt/*.pt (PyTorch's own torch.save files) and tests/data/pt/expected.npz.

Run with a PyTorch installation (the tests never import torch):

    /work/torchref/bin/python tools/make_pt_fixtures.py

Each model here has a twin in tests/test_pt_load.py built from rawdev.nn with the same structure; the
expected outputs (float64-free: PyTorch's float32 results) and inputs go to expected.npz. The files with
forbidden globals are written by hand (zip + pickle opcodes as bytes): nothing in them is ever executed.
"""
import io
import os
import sys
import zipfile

import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "pt")
exp = {}


def save(obj, name):
    torch.save(obj, os.path.join(OUT, name))


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


def put(z, name, data):
    """A zip entry with a fixed timestamp, so the fixtures are the same bytes on every run."""
    z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def rewrite(src, dst, pkl=None, byteswap=False, byteorder=None):
    """Copy a torch.save zip, optionally replacing data.pkl bytes, the byteorder and swapping storages."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("/data.pkl") and pkl is not None:
                data = pkl(data)
            if info.filename.endswith("/byteorder") and byteorder is not None:
                data = byteorder.encode()
            if byteswap and "/data/" in info.filename:
                data = np.frombuffer(data, dtype="<f4").astype(">f4").tobytes()
            put(zout, info.filename, data)


def forbidden(name, module, attr, arg=b"echo pwned"):
    """A torch.save-shaped zip whose data.pkl calls module.attr(arg): GLOBAL + REDUCE, written as bytes."""
    pkl = (b"\x80\x02}q\x00X\x01\x00\x00\x00xq\x01c" + module.encode() + b"\n" + attr.encode() + b"\nq\x02X"
           + len(arg).to_bytes(4, "little") + arg + b"q\x03\x85q\x04Rq\x05s.")
    with zipfile.ZipFile(os.path.join(OUT, name), "w", zipfile.ZIP_STORED) as z:
        put(z, "model/data.pkl", pkl)
        put(z, "model/byteorder", b"little")
        put(z, "model/version", b"3\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)

    m = mlp().eval()
    x = torch.randn(5, 8)
    save(m.state_dict(), "mlp.pt")
    exp["mlp.x"], exp["mlp.y"] = x.numpy(), m(x).detach().numpy()

    c = cnn()
    c.train()
    for _ in range(3):
        c(torch.randn(4, 3, 6, 6) * 2 + 0.5)
    c.eval()
    x = torch.randn(2, 3, 6, 6)
    save(c.state_dict(), "cnn_bn.pt")
    exp["cnn_bn.x"], exp["cnn_bn.y"] = x.numpy(), c(x).detach().numpy()

    lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
    x = torch.randn(2, 5, 4)
    save(lstm.state_dict(), "lstm.pt")
    out, (h, cc) = lstm(x)
    exp["lstm.x"], exp["lstm.y"], exp["lstm.h"], exp["lstm.c"] = (x.numpy(), out.detach().numpy(),
                                                                   h.detach().numpy(), cc.detach().numpy())

    b = Block().eval()
    x = torch.randn(2, 5, 16)
    save(b.state_dict(), "gpt_block.pt")
    exp["gpt_block.x"], exp["gpt_block.y"] = x.numpy(), b(x).detach().numpy()

    # Adam: two steps, then the state; the test loads both and takes the third step
    m = mlp()
    opt = torch.optim.Adam(m.parameters(), lr=1e-2, betas=(0.8, 0.99), weight_decay=0.01)
    x = torch.randn(6, 8)
    for _ in range(2):
        opt.zero_grad()
        m(x).pow(2).mean().backward()
        opt.step()
    save({"epoch": 2, "model_state_dict": m.state_dict(), "optimizer_state_dict": opt.state_dict(),
          "loss": 0.25}, "checkpoint.pt")
    save(opt.state_dict(), "adam.pt")
    opt.zero_grad()
    m(x).pow(2).mean().backward()
    opt.step()
    exp["adam.x"] = x.numpy()
    for k, v in m.state_dict().items():
        exp[f"adam.after.{k}"] = v.numpy()

    # shared storages and views
    w = torch.randn(4, 6)
    base = torch.arange(10, dtype=torch.float32)
    shared = {"enc.weight": w, "dec.weight": w, "row": w[1], "col": w[:, 2], "tail": base[3:],
              "head": base[:4], "t": w.t()}
    save(shared, "shared.pt")
    for k, v in shared.items():
        exp[f"shared.{k}"] = v.contiguous().numpy()

    dt = {"f16": torch.randn(3, 2).half(), "bf16": torch.randn(5).bfloat16(),
          "i64": torch.tensor([-(2 ** 40), 3, 7]), "b": torch.tensor([True, False, True]),
          "i32": torch.tensor([1, -2], dtype=torch.int32), "i16": torch.tensor([300, -5], dtype=torch.int16),
          "i8": torch.tensor([-7, 8], dtype=torch.int8), "u8": torch.tensor([0, 255], dtype=torch.uint8),
          "f64": torch.randn(2, 2, dtype=torch.float64), "empty": torch.zeros(0, 3), "scalar": torch.tensor(2.5)}
    save(dt, "dtypes.pt")
    for k, v in dt.items():
        exp[f"dtypes.{k}"] = v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy()

    save({"n": 3, "f": 1.5, "s": "text", "none": None, "t": (1, 2), "l": [torch.ones(2)], "dtype": torch.float16,
          "dev": torch.device("cpu"), "size": torch.Size([2, 3]), "set": {1, 2}, "b": True,
          "p": nn.Parameter(torch.full((2,), 3.0))}, "misc.pt")

    # on a "cuda:0" location (as if saved from a GPU), for map_location
    src = os.path.join(OUT, "mlp.pt")
    rewrite(src, os.path.join(OUT, "mlp_cuda.pt"),
            pkl=lambda d: d.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"))
    # big-endian storages (as written on a big-endian machine)
    rewrite(os.path.join(OUT, "shared.pt"), os.path.join(OUT, "shared_big.pt"), byteswap=True, byteorder="big")

    torch.save(nn.Linear(2, 2), os.path.join(OUT, "whole_module.pt"))   # a module, not its state_dict
    forbidden("evil_os_system.pt", "os", "system")
    forbidden("evil_eval.pt", "builtins", "eval", b"__import__('os').system('echo pwned')")
    forbidden("evil_load_from_bytes.pt", "torch.storage", "_load_from_bytes", b"x")

    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf, _use_new_zipfile_serialization=False)
    with open(os.path.join(OUT, "legacy.pt"), "wb") as fh:
        fh.write(buf.getvalue())

    np.savez(os.path.join(OUT, "expected.npz"), **exp)
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
