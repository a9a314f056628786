"""`rawdev mem info | model | run | show`."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import zlib

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.cli import main
from rawdev.cuda import memory as M
from rawdev.memtool import cli as memcli
from rawdev.memtool import html as memhtml
from rawdev.memtool import snapshot as memsnap

from _refs import HANG_GUARD_S


@pytest.fixture(autouse=True)
def _no_history():
    yield
    M.record_history(False)
    M.clear_history()


def test_mem_info(dev, capsys):
    assert main(["mem", "info"]) == 0
    out = capsys.readouterr().out
    assert "driver:" in out and "cuda:0" in out and f"sm_{dev.capability[0]}{dev.capability[1]}" in out
    assert "free of" in out and "rawdev pool: used" in out and "reserved" in out


@pytest.fixture
def ckpt(tmp_path):
    rawdev.manual_seed(1)
    model = nn.Sequential(nn.Linear(13, 30), nn.ReLU(), nn.Linear(30, 3))
    path = str(tmp_path / "mlp.safetensors")
    rawdev.save(model.state_dict(), path)
    return path


def test_mem_model_prints_the_table_and_verifies(dev, ckpt, capsys):
    assert main(["mem", "model", ckpt]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1].split()[:7] == ["name", "shape", "dtype", "bytes", "address", "arena", "off"]
    rows = {ln.split()[0]: ln.split() for ln in lines[2:6]}
    assert set(rows) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    w = rows["0.weight"]
    assert w[1:3] == ["(30,", "13)"] and w[3] == "F32" and w[4] == str(30 * 13 * 4)
    offsets = [int(rows[k][-4]) for k in ("0.weight", "0.bias", "2.weight", "2.bias")]
    assert offsets[0] == 0 and all(o % 256 == 0 for o in offsets)
    assert all(int(r[-3]) >= 256 for r in rows.values())   # alignment of each address
    assert all(r[-1] == "ok" for r in rows.values())
    assert "verified" in out and "MISMATCH" not in out


def test_mem_model_refuses_a_malformed_file_in_one_line(dev, ckpt, capsys):
    data = bytearray(open(ckpt, "rb").read())
    n = struct.unpack("<Q", data[:8])[0]
    data[:8] = struct.pack("<Q", n + 10_000)          # a header length past the end of the file
    bad = ckpt + ".bad"
    open(bad, "wb").write(bytes(data))
    assert main(["mem", "model", bad]) == 2
    err = capsys.readouterr().err
    assert "header claims" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_mem_model_reports_a_corrupted_device_copy(dev, ckpt):
    tensors = memcli.load_to_device(ckpt, "cuda")
    rows = memcli.placement(ckpt, tensors)
    assert all(r["ok"] for r in rows)
    assert rows[0]["owner"] == "0.weight"
    t = tensors["2.weight"]
    M.poke(t.data_ptr() + 8, b"\xde\xad\xbe\xef")
    assert "de ad be ef" in M.peek(t, 16)
    text, ok = memcli.format_placement(memcli.placement(ckpt, tensors), ckpt)
    assert not ok
    assert "MISMATCH: 1 tensor(s) differ between the device copy and the file: 2.weight" in text
    bad = [ln for ln in text.splitlines() if "MISMATCH (file" in ln]
    assert len(bad) == 1 and bad[0].startswith("2.weight")


SCRIPT = """
import sys
import numpy as np
import rawdev
from rawdev import nn, optim
model = nn.Sequential(nn.Linear(20, 40), nn.ReLU(), nn.Linear(40, 5)).cuda()
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = rawdev.tensor(np.ones((8, 20), np.float32), device="cuda")
y = rawdev.tensor(np.arange(8) % 5, device="cuda")
for _ in range(2):
    opt.zero_grad()
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    opt.step()
print("args", sys.argv[1:])
"""


@pytest.fixture(scope="module")
def snap_file(tmp_path_factory):
    """A snapshot of a short training script, recorded by `rawdev mem run` in a subprocess (simulator)."""
    d = tmp_path_factory.mktemp("memrun")
    (d / "train.py").write_text(textwrap.dedent(SCRIPT))
    out = d / "snap.json"
    env = dict(os.environ, RAWDEV_DRIVER="sim")
    r = subprocess.run([sys.executable, "-m", "rawdev.cli", "mem", "run", str(d / "train.py"), "--lr", "3",
                        "--snapshot", str(out)], capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
    assert r.returncode == 0, r.stderr
    assert "args ['--lr', '3']" in r.stdout
    return out


def test_mem_run_writes_a_json_snapshot_with_history(snap_file):
    snap = json.loads(snap_file.read_text())
    ev = snap["device_traces"][0]
    assert {e["action"] for e in ev} == {"alloc", "free_requested"}
    assert any(e.get("frames") and e["frames"][0]["filename"].endswith("train.py") for e in ev) or \
        any(any(f["filename"].endswith("train.py") for f in e.get("frames", [])) for e in ev)
    live = {p["owner"] for s in snap["segments"] for b in s["blocks"] for p in (b.get("parts") or [b])
            if b["state"] == "active_allocated"}
    assert {"0.weight", "0.weight.grad", "momentum_buffer of 0.weight"} <= live


def test_mem_show_text(snap_file, capsys):
    assert main(["mem", "show", str(snap_file)]) == 0
    out = capsys.readouterr().out
    assert "top owners:" in out and "0.weight" in out and "history:" in out and "peak live" in out


def test_mem_show_html_is_self_contained(snap_file, tmp_path):
    out = tmp_path / "mem.html"
    assert main(["mem", "show", str(snap_file), "--html", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 2
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert "<link" not in page and "src=" not in page
    assert "momentum_buffer of 0.weight" in page and "data-tip=" in page


def _png_pixels(path):
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) into an (h, w, c) uint8 array."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            c = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    out = np.zeros((h, w * c), np.int32)
    prev = np.zeros(w * c, np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:
            cur = np.zeros(w * c, np.int32)
            for x in range(w * c):
                a = cur[x - c] if x >= c else 0
                b, cc = prev[x], prev[x - c] if x >= c else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - cc
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
                cur[x] = (line[x] + pred) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, c).astype(np.uint8)


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def test_mem_show_html_renders_in_headless_chromium(snap_file, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("no chromium on this machine (Debian: apt-get install chromium; .ci/run installs it)")
    page = tmp_path / "mem.html"
    memhtml.write(memsnap.load(snap_file), page)
    shot = tmp_path / "mem.png"
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1200,900",
                            "--hide-scrollbars", page.as_uri()], capture_output=True, text=True, timeout=HANG_GUARD_S)
    if not shot.exists():
        pytest.skip(f"chromium could not take a screenshot here: {r.stderr.strip()[-300:]}")
    if os.environ.get("RAWDEV_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["RAWDEV_KEEP_SCREENSHOT"])
    px = _png_pixels(shot)[..., :3]
    assert px.shape[:2] == (900, 1200)
    nonwhite = (px < 240).any(axis=2)
    assert nonwhite.mean() > 0.05, "the page rendered (almost) blank"
    colors = {tuple(c) for c in px[::7, ::7].reshape(-1, 3)}
    assert len(colors) > 20   # the chart's owner colours, not one flat fill
    # the timeline (upper part) has coloured areas: the palette's blue/orange/green are present
    upper = px[250:550]
    assert (upper[..., 2].astype(int) - upper[..., 0] > 40).any()
    assert (upper[..., 0].astype(int) - upper[..., 2] > 40).any()


MARKED = """
import numpy as np
import rawdev
from rawdev import nn, optim
from rawdev.cuda import memory
model = nn.Sequential(nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 4)).cuda()
opt = optim.Adam(model.parameters(), lr=0.1)
x = rawdev.tensor(np.ones((8, 16), np.float32), device="cuda")
y = rawdev.tensor(np.arange(8) % 4, device="cuda")
memory.mark("start")
for _ in range(2):
    opt.zero_grad()
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    opt.step()
with memory.mark("evaluation"):
    with rawdev.no_grad():
        model(x)
"""


@pytest.fixture(scope="module")
def marked_snap(tmp_path_factory):
    d = tmp_path_factory.mktemp("marked")
    (d / "fit_mlp.py").write_text(textwrap.dedent(MARKED))
    out = d / "fit_mlp.mem.json"
    r = subprocess.run([sys.executable, "-m", "rawdev.cli", "mem", "run", str(d / "fit_mlp.py")], capture_output=True,
                       text=True, env=dict(os.environ, RAWDEV_DRIVER="sim"), timeout=HANG_GUARD_S)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def test_phase_and_user_marks_are_recorded(marked_snap):
    marks = [(a["name"], a["stage"]) for a in marked_snap["external_annotations"]]
    phases = [n for n, s in marks if s == "PHASE"]
    assert phases == ["forward", "backward", "optimizer step"] * 2 + ["forward"]
    assert marks[0] == ("start", "START")
    assert ("evaluation", "START") in marks and marks[-1] == ("evaluation", "END")
    times = [a["time"] for a in marked_snap["external_annotations"]]
    assert times == sorted(times)
    assert marked_snap["script"].endswith("fit_mlp.py")


def test_phase_marks_only_while_history_is_on(dev):
    M.clear_history()
    model = nn.Linear(3, 2).cuda()
    model(rawdev.ones(1, 3, device="cuda")).sum().backward()
    M.mark("ignored")
    assert M.annotations() == []
    M.record_history(True, stacks=False)
    model(rawdev.ones(1, 3, device="cuda")).sum().backward()
    with M.mark("range") as m:
        assert isinstance(m, M.mark)
    assert [(a["name"], a["stage"]) for a in M.annotations()] == [
        ("forward", "PHASE"), ("backward", "PHASE"), ("range", "START"), ("range", "END")]


def _rgb(c):
    return np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)], float)


def test_palette_keeps_owners_apart_by_layer_and_role(marked_snap):
    import colorsys
    owners = {p["owner"] for e in marked_snap["device_traces"][0] for p in (e.get("parts") or [e])}
    pal = memhtml.Palette(sorted(owners))
    shown = sorted(o for o in owners if not o.startswith("padding in "))
    cols = {o: pal(o) for o in shown}
    assert len(set(cols.values())) == len(shown), "two owners share a colour"
    for a in shown:   # no near-duplicates: every pair differs visibly
        for b in shown:
            if a < b:
                assert np.abs(_rgb(cols[a]) - _rgb(cols[b])).sum() >= 24, (a, cols[a], b, cols[b])
    hue = lambda o: round(colorsys.rgb_to_hls(*(_rgb(cols[o]) / 255))[0], 2)  # noqa: E731
    light = lambda o: colorsys.rgb_to_hls(*(_rgb(cols[o]) / 255))[1]  # noqa: E731
    for layer in ("0", "2"):   # one hue per layer, lighter from weights to grads to optimizer state
        w, g, s = f"{layer}.weight", f"{layer}.weight.grad", f"exp_avg of {layer}.weight"
        assert hue(w) == hue(g) == hue(s), (w, cols[w], cols[g], cols[s])
        assert light(w) < light(g) < light(s)
    assert hue("0.weight") != hue("2.weight")
    assert memhtml.classify("exp_avg_sq of enc.fc1.weight") == ("enc.fc1", "optimizer state")
    assert memhtml.classify("enc.fc1.bias.grad") == ("enc.fc1", "grads")
    assert memhtml.classify("Linear 3 output") == ("3", "activations")


def test_html_page_has_marks_groups_title_and_the_peak_table(marked_snap, tmp_path):
    out = memhtml.write(marked_snap, tmp_path / "page.html")
    page = open(out).read()
    assert "<title>fit_mlp.py — GPU memory (rawdev)</title>" in page
    for phase in ("forward", "backward", "optimizer step"):
        assert f'data-tip="{phase}: events' in page
    assert ">start</text>" in page and ">evaluation</text>" in page and 'data-tip="evaluation: events' in page
    assert "layer 0 · weights" in page and "layer 2 · optimizer state" in page and "other (incl" not in page
    assert "Top owners at the peak:" in page
    peak = page[page.index("Top owners at the peak:"):]
    assert "0.weight" in peak and "layer 0 · weights" in peak
