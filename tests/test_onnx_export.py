"""rawdev.onnx.export: models traced into ONNX graphs and run in onnxruntime against rawdev's own outputs — an
MLP, a CNN (conv, batchnorm in eval mode, relu, maxpool, flatten, linear), LSTMs and a GRU, a transformer encoder
layer — with dynamic batch axes checked at two batch sizes, names, opsets, paths and file objects, and the
errors: an op without a mapping, a function that bypasses the recorder, the missing extra."""
import io
import sys

import numpy as np
import pytest
import rawdev
import rawdev.nn as nn
import rawdev.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

SEED = 24
rawdev.manual_seed(SEED)


def session(model, x, **kw):
    buf = io.BytesIO()
    rawdev.onnx.export(model, (x,), buf, input_names=["x"], output_names=kw.pop("output_names", ["y"]),
                       dynamic_axes=kw.pop("dynamic_axes", {"x": {0: "batch"}, "y": {0: "batch"}}), **kw)
    return ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"]), buf.getvalue()


def check(model, shape, batch_axis=0, rtol=2e-5, atol=2e-6, **kw):
    x = rawdev.randn(*shape)
    sess, _ = session(model, x, **kw)
    for n in (shape[batch_axis], shape[batch_axis] + 3):      # the traced batch size and another one
        s = list(shape)
        s[batch_axis] = n
        xi = rawdev.randn(*s)
        with rawdev.no_grad():
            ref = model(xi)
        ref = ref[0] if isinstance(ref, tuple) else ref
        got = sess.run(None, {"x": xi.numpy()})[0]
        assert got.shape == tuple(ref.shape)
        np.testing.assert_allclose(got, ref.numpy(), rtol=rtol, atol=atol, err_msg=f"seed {SEED}, batch {n}")
    return sess


def test_mlp():
    mlp = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 8), nn.GELU(), nn.Linear(8, 3),
                        nn.Softmax(dim=-1))
    mlp.train()
    session(mlp, rawdev.randn(2, 5))
    assert mlp.training and mlp[2].training       # the export ran in eval mode and restored the flags
    check(mlp.eval(), (2, 5))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=1, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(6 * 2 * 2, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv1(x))))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(x.size(0), -1) if x.shape[1] == 6 else self.flatten(x)
        return F.log_softmax(self.fc(x), dim=1)


def test_cnn_with_batchnorm_statistics():
    cnn = CNN()
    cnn(rawdev.randn(16, 1, 8, 8) * 3 + 1)        # running statistics that are not the initial ones
    cnn.eval()
    check(cnn, (2, 1, 8, 8))


def test_cnn_graph_holds_the_layers_and_named_initializers():
    cnn = CNN().eval()
    _, data = session(cnn, rawdev.randn(2, 1, 8, 8))
    m = onnx.load_from_string(data)
    ops = [n.op_type for n in m.graph.node]
    for op in ("Conv", "BatchNormalization", "Relu", "MaxPool", "Reshape", "Gemm", "LogSoftmax"):
        assert op in ops, (op, ops)
    inits = {i.name for i in m.graph.initializer}
    assert {"conv1.weight", "conv1.bias", "bn.running_mean", "bn.running_var", "fc.weight"} <= inits
    assert [i.name for i in m.graph.input] == ["x"] and [o.name for o in m.graph.output] == ["y"]
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert m.opset_import[0].version == 18                       # PyTorch's default opset


class Tagger(nn.Module):
    def __init__(self, mode, **kw):
        super().__init__()
        self.rnn = getattr(nn, mode)(6, 8, **kw)
        self.fc = nn.Linear(8 * (2 if kw.get("bidirectional") else 1), 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1, :])


@pytest.mark.parametrize("mode,kw", [("LSTM", dict(num_layers=2, batch_first=True)),
                                     ("LSTM", dict(bidirectional=True, batch_first=True)),
                                     ("GRU", dict(batch_first=True)),
                                     ("RNN", dict(batch_first=True, nonlinearity="relu"))])
def test_recurrent_layers(mode, kw):
    check(Tagger(mode, **kw).eval(), (2, 5, 6))


def test_lstm_states_as_outputs_and_dynamic_sequence_length():
    lstm = nn.LSTM(4, 5, num_layers=2).eval()                # [seq, batch, feature]
    x = rawdev.randn(7, 2, 4)
    buf = io.BytesIO()
    rawdev.onnx.export(lstm, (x,), buf, input_names=["x"], output_names=["out", "h", "c"],
                       dynamic_axes={"x": {0: "seq", 1: "batch"}})
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    xi = rawdev.randn(4, 3, 4)
    out, (h, c) = lstm(xi)
    got = sess.run(None, {"x": xi.numpy()})
    for g_, r in zip(got, (out, h, c)):
        np.testing.assert_allclose(g_, r.detach().numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("batch_first", [True, False])
def test_transformer_encoder_layer(batch_first):
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=batch_first).eval()
    check(layer, (2, 7, 16) if batch_first else (7, 2, 16), batch_axis=0 if batch_first else 1,
          dynamic_axes={"x": {0 if batch_first else 1: "batch"}, "y": {0 if batch_first else 1: "batch"}})


def test_transformer_norm_first_gelu_and_older_opset():
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, activation="gelu", norm_first=True,
                                       batch_first=True).eval()
    sess = check(layer, (3, 5, 8), opset_version=14)     # LayerNormalization spelled out below opset 17
    assert sess.get_modelmeta() is not None


def test_export_to_a_path_and_functional_ops(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(rawdev.randn(4, 4))

        def forward(self, x):
            h = rawdev.matmul(x, self.w).tanh() * 2 + 1
            h = rawdev.cat([h, -h], dim=1).unsqueeze(1).transpose(1, 2)
            return h.squeeze(2).sum(dim=1, keepdim=True) / h.mean() - rawdev.sigmoid(x[:, :1])
    net = Net()
    path = tmp_path / "net.onnx"
    x = rawdev.randn(3, 4)
    rawdev.onnx.export(net, x, str(path), dynamic_axes={"input": [0]})
    m = onnx.load(str(path))
    assert m.graph.input[0].name == "input" and m.graph.output[0].name == "output"
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "input_dynamic_axes_1"
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    xi = rawdev.randn(5, 4)
    np.testing.assert_allclose(sess.run(None, {"input": xi.numpy()})[0], net(xi).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_model_on_the_simulator_exports_like_the_cpu():
    from rawdev.runtime import reset_for_tests
    reset_for_tests("sim")
    mlp = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = rawdev.randn(2, 3)
    ref = mlp(x).detach().numpy()
    mlp.cuda()
    sess, _ = session(mlp, x.cuda())
    np.testing.assert_allclose(sess.run(None, {"x": x.numpy()})[0], ref, rtol=1e-5, atol=1e-6)
    assert next(mlp.parameters()).is_cuda


def test_an_op_without_a_mapping_names_it():
    class Net(nn.Module):
        def forward(self, x):
            return rawdev.cumsum(x, dim=1)
    with pytest.raises(NotImplementedError, match=r"rawdev.onnx.export: the op rawdev.cumsum has no ONNX mapping"):
        rawdev.onnx.export(Net(), rawdev.randn(2, 3), io.BytesIO())
    # nothing stays patched after the failed export
    assert rawdev.cumsum(rawdev.ones(1, 2), dim=1).tolist() == [[1.0, 2.0]]
    assert not rawdev.onnx.is_in_onnx_export()


def test_a_function_that_bypasses_the_recorder_is_refused():
    from rawdev.ops.unary import exp as captured  # the op's own function, held before the export

    class Net(nn.Module):
        def forward(self, x):
            return captured(x * 2)
    with pytest.raises(NotImplementedError, match="does not record"):
        rawdev.onnx.export(Net(), rawdev.randn(2, 3), io.BytesIO())


def test_without_the_onnx_package_the_message_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ModuleNotFoundError, match=r"rawdev\[onnx\]"):
        rawdev.onnx.export(nn.Linear(2, 2), rawdev.randn(1, 2), io.BytesIO())


def test_bad_opset_is_refused():
    with pytest.raises(ValueError, match="opset_version"):
        rawdev.onnx.export(nn.Linear(2, 2), rawdev.randn(1, 2), io.BytesIO(), opset_version=7)


def test_indexed_write_inside_the_forward_is_refused_and_inplace_ops_are_recorded():
    class Writes(nn.Module):
        def forward(self, x):
            y = x * 2
            y[:, 0] = 0.0
            return y
    with pytest.raises(NotImplementedError, match=r"indexed write \(x\[idx\] = v\)"):
        rawdev.onnx.export(Writes(), rawdev.randn(2, 3), io.BytesIO())

    class InPlace(nn.Module):
        def forward(self, x):
            y = x * 2
            y.relu_()
            y += 1
            return y
    net = InPlace()
    sess, _ = session(net, rawdev.randn(2, 3))
    xi = rawdev.randn(4, 3)
    np.testing.assert_allclose(sess.run(None, {"x": xi.numpy()})[0], net(xi).numpy(), rtol=1e-6)
