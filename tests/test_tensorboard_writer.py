"""rawdev.utils.tensorboard.SummaryWriter writes real TensorBoard event files: every value is read back with
tensorboard's own EventAccumulator and compared (tags, steps, values); values come as rawdev tensors on the cpu
and the (simulated) GPU, numpy arrays and Python numbers. The tensorboard package is an optional extra: these
tests skip without it (tests/test_tensorboard_missing.py covers the package missing)."""
import io
import os

import numpy as np
import pytest
import rawdev

from _refs import rng

tb = pytest.importorskip("tensorboard")
from rawdev.utils.tensorboard import SummaryWriter  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def read(log_dir):
    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "tensors": 0, "histograms": 0,
                                                        "images": 0, "audio": 0})
    acc.Reload()
    return acc


def test_scalars_from_numbers_numpy_and_cpu_tensors_read_back_exactly(tmp_path):
    values = rng().standard_normal(6)
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("py", float(values[0]), 0)
        w.add_scalar("py", 7, 1)
        w.add_scalar("np", np.float64(values[1]), 3)
        w.add_scalar("np", np.array([values[2]]), 4)
        w.add_scalar("t", rawdev.tensor(values[3]), 10)
        w.add_scalar("t", rawdev.tensor([values[4]], dtype=rawdev.float64), 11, walltime=1234.5)
    acc = read(tmp_path)
    assert set(acc.Tags()["scalars"]) == {"py", "np", "t"}
    got = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in ("py", "np", "t")}
    f32 = lambda v: float(np.float32(v))  # noqa: E731  (simple_value is a float32 field)
    assert got["py"] == [(0, f32(values[0])), (1, 7.0)]
    assert got["np"] == [(3, f32(values[1])), (4, f32(values[2]))]
    assert got["t"] == [(10, f32(np.float32(values[3]))), (11, f32(values[4]))]
    assert acc.Scalars("t")[1].wall_time == 1234.5


def test_scalar_from_a_cuda_tensor(tmp_path, dev):
    x = rawdev.tensor([0.375, 2.5]).cuda()
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("gpu", x[1], 5)
        w.add_histogram("gpu_h", x, 5, bins=2)
    acc = read(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("gpu")] == [(5, 2.5)]
    h = acc.Histograms("gpu_h")[0].histogram_value
    assert (h.min, h.max, h.num, h.sum) == (0.375, 2.5, 2, 2.875)


def test_new_style_scalars_keep_double_precision(tmp_path):
    v = 1.0 + 2.0 ** -40   # not a float32
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("d", v, 2, new_style=True, double_precision=True)
        w.add_scalar("f", v, 2, new_style=True)
    acc = read(tmp_path)
    d, f = acc.Tensors("d")[0], acc.Tensors("f")[0]
    assert d.step == 2 and list(d.tensor_proto.double_val) == [v]
    assert list(f.tensor_proto.float_val) == [float(np.float32(v))]
    assert acc.SummaryMetadata("d").plugin_data.plugin_name == "scalars"


def test_a_scalar_must_be_one_number(tmp_path):
    with SummaryWriter(tmp_path) as w, pytest.raises(AssertionError, match="Tensor should contain one element"):
        w.add_scalar("x", rawdev.ones(3), 0)


@pytest.mark.parametrize("bins", ["tensorflow", 10, "auto"])
def test_histograms_match_float64_statistics_and_bucket_counts(tmp_path, bins):
    x = rng().standard_normal((40, 25)) * 3.0
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", rawdev.tensor(x, dtype=rawdev.float64), 7, bins=bins)
    h = read(tmp_path).Histograms("w")[0]
    assert h.step == 7
    p = h.histogram_value
    ref = x.reshape(-1)
    assert p.num == ref.size and p.min == ref.min() and p.max == ref.max()
    assert abs(p.sum - ref.sum()) <= 1e-12 * np.abs(ref).sum()
    assert abs(p.sum_squares - (ref * ref).sum()) <= 1e-12 * (ref * ref).sum()
    limits, counts = np.array(p.bucket_limit), np.array(p.bucket)
    assert counts.sum() == ref.size and counts[0] == 0   # the empty left bucket carries the left edge
    assert limits[0] <= ref.min() and limits[-1] >= ref.max() and np.all(np.diff(limits) > 0)
    if bins == 10:   # numpy's ten equal buckets over [min, max], all kept
        edges = np.linspace(ref.min(), ref.max(), 11)
        np.testing.assert_allclose(limits, edges[1:] if len(limits) == 10 else edges, rtol=1e-12, atol=1e-14)
    # bucket i holds the values in (limit[i-1], limit[i]]
    inner = counts[1:]
    lo, hi = limits[:-1], limits[1:]
    for k in range(len(inner)):
        in_bucket = ((ref >= lo[k]) & (ref < hi[k])) if k < len(inner) - 1 else ((ref >= lo[k]) & (ref <= hi[k]))
        assert inner[k] == in_bucket.sum()


def test_histogram_max_bins_merges_buckets(tmp_path):
    x = rng().uniform(0, 1, 500)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", x, 0, bins=64, max_bins=8)
    p = read(tmp_path).Histograms("h")[0].histogram_value
    assert len(p.bucket) <= 9 and sum(p.bucket) == 500
    edges = np.histogram_bin_edges(x, bins=64)
    np.testing.assert_allclose(p.bucket_limit[-1], edges[-1], rtol=1e-12, atol=1e-14)


def test_histogram_raw(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_histogram_raw("r", 0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 1, 2], global_step=1)
        with pytest.raises(ValueError, match="len\\(bucket_limits\\) != len\\(bucket_counts\\)"):
            w.add_histogram_raw("r", 0.0, 3.0, 4, 6.0, 14.0, [1.0], [1, 3])
    p = read(tmp_path).Histograms("r")[0].histogram_value
    assert (p.min, p.max, p.num, p.sum, p.sum_squares) == (0.0, 3.0, 4, 6.0, 14.0)
    assert list(p.bucket_limit) == [1.0, 2.0, 3.0] and list(p.bucket) == [1, 1, 2]


def test_text_reads_back(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "first **run**", 0)
        w.add_text("notes", "ünïcode", 4)
    acc = read(tmp_path)
    ev = acc.Tensors("notes/text_summary")
    assert [(e.step, e.tensor_proto.string_val[0].decode()) for e in ev] == [(0, "first **run**"), (4, "ünïcode")]
    assert acc.SummaryMetadata("notes/text_summary").plugin_data.plugin_name == "text"


def _png(event):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(event.encoded_image_string)))


def test_images_chw_float_hwc_uint8_and_batches(tmp_path):
    g = rng()
    chw = g.uniform(-0.2, 1.2, (3, 5, 7)).astype(np.float32)   # out of range values are clipped
    hwc = g.integers(0, 256, (4, 6, 3)).astype(np.uint8)
    batch = g.uniform(0, 1, (3, 1, 4, 4)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", rawdev.tensor(chw), 1)
        w.add_image("hwc", hwc, 2, dataformats="HWC")
        w.add_images("batch", rawdev.tensor(batch), 3)
    acc = read(tmp_path)
    ev = acc.Images("chw")[0]
    assert (ev.step, ev.width, ev.height) == (1, 7, 5)
    ref = (chw.transpose(1, 2, 0) * np.float32(255)).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(_png(ev), ref)
    np.testing.assert_array_equal(_png(acc.Images("hwc")[0]), hwc)
    grid = _png(acc.Images("batch")[0])   # 3 images in one row, the one channel repeated
    assert grid.shape == (4, 12, 3)
    for i in range(3):
        ref = (batch[i, 0] * np.float32(255)).clip(0, 255).astype(np.uint8)
        for c in range(3):
            np.testing.assert_array_equal(grid[:, 4 * i:4 * i + 4, c], ref)


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("loss/all", {"train": 1.0 / (step + 1), "val": 2.0 * step}, step)
    for key, ref in (("train", [1.0, 0.5, float(np.float32(1 / 3))]), ("val", [0.0, 2.0, 4.0])):
        acc = read(tmp_path / f"loss_all_{key}")
        assert [(e.step, e.value) for e in acc.Scalars("loss/all")] == list(enumerate(ref))


def test_hparams_land_in_a_sub_run_with_the_metrics(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "opt": "sgd", "layers": 3, "skip": None}, {"hparam/acc": 0.75}, run_name="r1")
        with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
            w.add_hparams([("lr", 0.1)], {})
    acc = read(tmp_path / "r1")
    assert [(e.step, e.value) for e in acc.Scalars("hparam/acc")] == [(0, 0.75)]
    content = acc.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hp = start.session_start_info.hparams
    assert hp["lr"].number_value == 0.1 and hp["opt"].string_value == "sgd" and hp["layers"].number_value == 3
    assert "skip" not in hp
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [i.name for i in exp.hparam_infos] == ["lr", "opt", "layers"]
    assert [m.name.tag for m in exp.metric_infos] == ["hparam/acc"]


def test_pr_curve_audio_and_custom_scalars(tmp_path):
    labels = np.array([0, 1, 1, 0, 1])
    preds = np.array([0.1, 0.8, 0.6, 0.7, 0.2])
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", rawdev.tensor(labels), rawdev.tensor(preds), 0, num_thresholds=5)
        w.add_audio("a", np.linspace(-1, 1, 50), 1, sample_rate=8000)
        w.add_custom_scalars_multilinechart(["loss", "val"])
    acc = read(tmp_path)
    data = np.array(acc.Tensors("pr")[0].tensor_proto.float_val).reshape(6, 5)
    # thresholds 0, .25, .5, .75, 1: a prediction counts as positive at every threshold at or below its bucket
    bucket = np.floor(preds * 4).astype(int)
    tp = [int(((bucket >= t) & (labels == 1)).sum()) for t in range(5)]
    fp = [int(((bucket >= t) & (labels == 0)).sum()) for t in range(5)]
    np.testing.assert_array_equal(data[0], tp)
    np.testing.assert_array_equal(data[1], fp)
    a = acc.Audio("a")[0]
    assert (a.step, a.sample_rate, a.length_frames, a.content_type) == (1, 8000, 50, "audio/wav")
    assert "custom_scalars__config__" in acc.Tags()["tensors"]


def test_embedding_files_as_pytorch_writes_them(tmp_path):
    mat = rng().standard_normal((6, 3))
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(rawdev.tensor(mat, dtype=rawdev.float64), metadata=list("abcdef"),
                        label_img=rawdev.rand(6, 3, 4, 4), tag="feat/1")
    sub = tmp_path / "00000" / "feat%2f1"
    rows = [[float(v) for v in line.split("\t")] for line in (sub / "tensors.tsv").read_text().splitlines()]
    np.testing.assert_array_equal(np.array(rows), mat)
    assert (sub / "metadata.tsv").read_text() == "a\nb\nc\nd\ne\nf\n"
    from PIL import Image
    assert Image.open(sub / "sprite.png").size == (12, 12)   # 3 x 3 grid of 4 x 4 images
    pbtxt = (tmp_path / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "feat/1:00000"' in pbtxt and 'tensor_path: "00000/feat%2f1/tensors.tsv"' in pbtxt


def test_purge_step_records_a_restart(tmp_path):
    with SummaryWriter(tmp_path, purge_step=4) as w:
        w.add_scalar("x", 1.0, 4)
    from tensorboard.backend.event_processing import event_file_loader
    (path,) = [p for p in tmp_path.iterdir() if p.name.startswith("events.out.tfevents")]
    events = list(event_file_loader.EventFileLoader(str(path)).Load())
    starts = [e for e in events if e.HasField("session_log")]
    assert len(starts) == 1 and starts[0].step == 4 and starts[0].session_log.status == 1   # SessionLog.START


def test_default_log_dir_close_reopen_and_suffix(tmp_path, monkeypatch):
    import socket
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1", filename_suffix=".mine")
    d = w.get_logdir()
    assert d.startswith("runs" + os.sep) and d.endswith("_" + socket.gethostname() + "_lr0.1")
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.close()                      # a second close does nothing
    w.add_scalar("x", 2.0, 1)     # a later add opens a new event file in the same directory
    w.close()
    files = [f for f in os.listdir(d) if f.startswith("events.out.tfevents")]
    assert len(files) == 2 and all(f.endswith(".mine") for f in files)
    assert [(e.step, e.value) for e in read(d).Scalars("x")] == [(0, 1.0), (1, 2.0)]


class _Net(rawdev.nn.Module):
    def __init__(self):
        super().__init__()
        nn = rawdev.nn
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.head = nn.Sequential(nn.Linear(4 * 3 * 3, 5), nn.Dropout(0.5))

    def forward(self, x):
        x = self.pool(rawdev.nn.functional.relu(self.conv1(x)))
        return self.head(x.view(-1, 4 * 3 * 3))


def _graph_nodes(log_dir):
    acc = read(log_dir)
    assert acc.Tags()["graph"] and acc.Tags()["run_metadata"] == ["step1"]
    return {n.name: (n.op, list(n.input), [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape])
            for n in acc.Graph().node}


def test_add_graph_writes_the_fx_traced_graph_with_shapes(tmp_path):
    net = _Net()
    net.head[1].eval()   # a submodule's own mode survives the shape run
    with SummaryWriter(tmp_path) as w:
        w.add_graph(net, rawdev.randn(2, 1, 8, 8))
    assert net.training and not net.head[1].training
    conv, relu, pool = "_Net/Conv2d[conv1]/conv1", "_Net/relu", "_Net/MaxPool2d[pool]/pool"
    lin, drop = "_Net/Sequential[head]/Linear[0]/head_0", "_Net/Sequential[head]/Dropout[1]/head_1"
    assert _graph_nodes(tmp_path) == {
        "input/x": ("IO Node", [], [[2, 1, 8, 8]]),
        conv: ("Conv2d", ["input/x"], [[2, 4, 6, 6]]),
        relu: ("relu", [conv], [[2, 4, 6, 6]]),
        pool: ("MaxPool2d", [relu], [[2, 4, 3, 3]]),
        "_Net/view": ("Tensor.view", [pool], [[2, 36]]),
        lin: ("Linear", ["_Net/view"], [[2, 5]]),
        drop: ("Dropout", [lin], [[2, 5]]),
        "output/output": ("IO Node", [drop], [[2, 5]]),
    }


def test_add_graph_without_an_input_and_on_the_device(tmp_path, dev):
    with SummaryWriter(tmp_path / "a") as w:
        w.add_graph(rawdev.nn.Sequential(rawdev.nn.Linear(3, 2), rawdev.nn.Tanh()))
    nodes = _graph_nodes(tmp_path / "a")
    assert [v[0] for v in nodes.values()] == ["IO Node", "Linear", "Tanh", "IO Node"]
    assert all(v[2] == [] for v in nodes.values())   # no input: no shapes
    net = rawdev.nn.Sequential(rawdev.nn.Linear(3, 2)).cuda()
    with SummaryWriter(tmp_path / "b") as w:
        w.add_graph(net, [rawdev.randn(4, 3).cuda()])
    assert _graph_nodes(tmp_path / "b")["output/output"][2] == [[4, 2]]


def test_add_graph_of_an_untraceable_model_says_why(tmp_path):
    class Branchy(rawdev.nn.Module):
        def forward(self, x):
            if x.sum() > 0:   # control flow on a tensor value: symbolic tracing cannot follow it
                return x
            return -x
    with SummaryWriter(tmp_path) as w, pytest.raises(NotImplementedError, match="add_graph: .*rawdev.fx"):
        w.add_graph(Branchy(), rawdev.ones(2))


def test_a_tensorboard_older_than_1_15_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(tb, "__version__", "1.14.0")
    with pytest.raises(ImportError, match=r"TensorBoard logging requires TensorBoard version 1\.15 or above"):
        SummaryWriter(tmp_path)
