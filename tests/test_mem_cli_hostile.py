"""`rawdev mem` on hostile or wrong input: one line saying what is wrong, a nonzero exit, no traceback, and
never more memory than a snapshot can need."""
import json
import os
import threading

import pytest
import rawdev
from rawdev import nn
from rawdev.cli import main
from rawdev.cuda import memory as M
from rawdev.memtool import snapshot as memsnap

DATA = os.path.join(os.path.dirname(__file__), "data", "pt")


@pytest.fixture(autouse=True)
def _no_history():
    yield
    M.record_history(False)
    M.clear_history()


def one_line_error(capsys, *needles):
    """The command's stderr: exactly one line, no traceback, containing every needle."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1, err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def snap_path(dev, tmp_path):
    """A real snapshot (history on, a few owners) written by dump_snapshot."""
    M.record_history(True)
    a = rawdev.ones(64, 32, device="cuda")
    b = (a * 2).sum(0)
    del a
    path = tmp_path / "snap.json"
    M.dump_snapshot(str(path))
    del b
    assert main(["mem", "show", str(path)]) == 0   # the good snapshot is read
    return path


# ----------------------------------------------------------------------------------- show: what is read
def test_show_refuses_dev_zero_behind_a_symlink_without_reading_it(tmp_path, capsys):
    link = tmp_path / "snap.json"
    os.symlink("/dev/zero", link)
    assert main(["mem", "show", str(link)]) == 2
    one_line_error(capsys, "not a rawdev memory snapshot", "not a JSON object")


def test_show_refuses_a_huge_sparse_file_by_its_size(tmp_path, capsys):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.write(b"{")
        f.truncate(8 << 30)   # 8 GiB, sparse: nothing is read
    assert main(["mem", "show", str(big)]) == 2
    one_line_error(capsys, "8.0 GiB", "larger than any rawdev memory snapshot can be", "at most 1.0 GiB")


def test_show_stops_reading_a_stream_at_the_bound(tmp_path):
    """A pipe has no size: the read stops at the bound (here 1 MiB) instead of taking all it is given."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    written = []

    def feed():
        try:
            with open(fifo, "wb") as f:
                f.write(b"{" + b" " * (1 << 20))
                for _ in range(64):   # 64 MiB more than the reader may take
                    f.write(b" " * (1 << 20))
                    written.append(1)
        except BrokenPipeError:
            pass
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    with pytest.raises(memsnap.SnapshotError, match="larger than any rawdev memory snapshot"):
        memsnap.load(str(fifo), limit=1 << 20)
    t.join(60)
    assert len(written) < 64   # the reader closed the pipe early


def test_show_of_a_directory(tmp_path, capsys):
    assert main(["mem", "show", str(tmp_path)]) == 2
    one_line_error(capsys, "directory")


def test_show_of_a_missing_file(tmp_path, capsys):
    assert main(["mem", "show", str(tmp_path / "nope.json")]) == 2
    one_line_error(capsys, "No such file", "nope.json")


# ----------------------------------------------------------------------------------- show: what it holds
WRONG_SHAPES = [
    ([1, 2, 3], "not a JSON object"),
    ({"devices": []}, "expected a JSON object with 'segments'"),
    ({"segments": 5}, "'segments' is int, not a list"),
    ({"segments": [{"address": "0x10"}]}, "segments[0].address is str"),
    ({"segments": [{"address": 16, "total_size": 1, "allocated_size": 1}]}, "segments[0] has no 'blocks'"),
    ({"segments": [{"address": 16, "total_size": 1, "allocated_size": 1, "blocks": [7]}]},
     "segments[0].blocks[0] is int"),
    ({"segments": [], "devices": [{}]}, "devices[0] has no 'index'"),
    ({"segments": [], "devices": [None]}, "devices[0] is NoneType"),
    ({"segments": [], "device_traces": [[{"action": "alloc"}]]}, "device_traces[0][0] has no integer 'size'"),
    ({"segments": [], "device_traces": {"a": 1}}, "'device_traces' is dict"),
]


@pytest.mark.parametrize("doc,why", WRONG_SHAPES, ids=[w for _, w in WRONG_SHAPES])
@pytest.mark.parametrize("html", [False, True], ids=["text", "html"])
def test_show_of_json_of_the_wrong_shape(tmp_path, capsys, doc, why, html):
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(doc))
    out = tmp_path / "out.html"
    assert main(["mem", "show", str(p)] + (["--html", str(out)] if html else [])) == 2
    one_line_error(capsys, why)
    assert not out.exists()


def test_show_of_a_snapshot_with_a_field_broken_deep_inside(snap_path, tmp_path, capsys):
    """A field the shape check does not cover (a device's capability) still gives one line."""
    snap = json.loads(snap_path.read_text())
    snap["devices"][0]["capability"] = None
    p = tmp_path / "broken.json"
    p.write_text(json.dumps(snap))
    assert main(["mem", "show", str(p), "--html", str(tmp_path / "o.html")]) == 2
    one_line_error(capsys, "not a well-formed rawdev memory snapshot", "TypeError")


def test_show_of_json_nested_100000_deep(tmp_path, capsys):
    p = tmp_path / "deep.json"
    p.write_text('{"segments": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["mem", "show", str(p)]) == 2
    one_line_error(capsys, "nested too deeply")


def test_show_of_text_that_is_not_json(tmp_path, capsys):
    p = tmp_path / "snap.json"
    p.write_bytes(b'{"segments": [\xff')
    assert main(["mem", "show", str(p)]) == 2
    one_line_error(capsys, "not valid JSON")


# ----------------------------------------------------------------------------------- show --html: where it goes
def test_html_to_a_directory(snap_path, tmp_path, capsys):
    d = tmp_path / "outdir"
    d.mkdir()
    assert main(["mem", "show", str(snap_path), "--html", str(d)]) == 2
    one_line_error(capsys, "cannot write the HTML report", "is a directory")


def test_html_into_a_missing_directory(snap_path, tmp_path, capsys):
    assert main(["mem", "show", str(snap_path), "--html", str(tmp_path / "no" / "such" / "o.html")]) == 2
    one_line_error(capsys, "cannot write the HTML report", "No such file or directory")


@pytest.mark.skipif(not os.access("/dev/full", os.W_OK), reason="needs a writable /dev/full")
def test_html_to_dev_full(snap_path, capsys):
    assert main(["mem", "show", str(snap_path), "--html", "/dev/full"]) == 2
    one_line_error(capsys, "cannot write the HTML report to /dev/full", "No space left on device")


# ----------------------------------------------------------------------------------- model
def test_model_of_a_directory(dev, tmp_path, capsys):
    assert main(["mem", "model", str(tmp_path)]) == 2
    one_line_error(capsys, "is a directory")


def test_model_of_a_device_file(dev, capsys):
    assert main(["mem", "model", "/dev/zero"]) == 2
    one_line_error(capsys, "not a regular file")


def test_model_of_rawdevs_own_training_checkpoint(dev, tmp_path, capsys):
    """A training checkpoint (epoch, model and optimizer state_dicts, loss): every tensor placed and verified."""
    rawdev.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 2))
    opt = rawdev.optim.Adam(model.parameters(), lr=0.01)
    model(rawdev.randn(4, 5)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.safetensors"
    rawdev.save({"epoch": 3, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
                 "loss": 0.25}, str(path))
    assert main(["mem", "model", str(path)]) == 0
    out = capsys.readouterr().out
    names = [ln.split()[0] for ln in out.splitlines()[2:]]
    assert {"model_state_dict.0.weight", "model_state_dict.2.bias", "optimizer_state_dict.state.0.exp_avg",
            "optimizer_state_dict.state.3.exp_avg_sq"} <= set(names)
    assert "verified: all" in out and "MISMATCH" not in out


def test_model_of_a_pytorch_pt_file(dev, capsys):
    """A PyTorch zip checkpoint is read through rawdev.load, as `rawdev.load` reads it."""
    path = os.path.join(DATA, "gpt_block.pt")
    expected = dict(rawdev.load(path))
    assert main(["mem", "model", path]) == 0
    out = capsys.readouterr().out
    assert "verified: all" in out and "MISMATCH" not in out and "safetensors" not in out
    assert f"{len(expected)} tensors" in out.splitlines()[0]


def test_model_of_a_pt_file_that_is_corrupt(dev, tmp_path, capsys):
    data = open(os.path.join(DATA, "gpt_block.pt"), "rb").read()
    p = tmp_path / "torn.pt"
    p.write_bytes(data[:len(data) // 2])
    assert main(["mem", "model", str(p)]) == 2
    one_line_error(capsys, "rawdev mem model:")


# ----------------------------------------------------------------------------------- run
def test_run_of_a_missing_script(tmp_path, capsys):
    assert main(["mem", "run", str(tmp_path / "nope.py")]) == 2
    one_line_error(capsys, "no such file", "nope.py")


def test_run_of_a_directory(tmp_path, capsys):
    assert main(["mem", "run", str(tmp_path)]) == 2
    one_line_error(capsys, "is a directory")


def test_run_of_a_file_that_is_not_python(tmp_path, capsys):
    p = tmp_path / "model.bin"
    p.write_bytes(b"\x00\x01binary")
    assert main(["mem", "run", str(p)]) == 2
    one_line_error(capsys, "is not a Python script")


def test_show_bound_follows_the_environment(snap_path, capsys, monkeypatch):
    monkeypatch.setenv("RAWDEV_MEM_SHOW_MAX_BYTES", "100")
    assert main(["mem", "show", str(snap_path)]) == 2
    one_line_error(capsys, "at most 100 B", "RAWDEV_MEM_SHOW_MAX_BYTES")
    monkeypatch.setenv("RAWDEV_MEM_SHOW_MAX_BYTES", str(os.path.getsize(snap_path)))
    assert main(["mem", "show", str(snap_path)]) == 0
