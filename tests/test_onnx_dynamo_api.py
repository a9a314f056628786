"""torch.onnx.dynamo_export / ExportOptions / OnnxRegistry / ONNXProgram over rawdev's exporter: the program saves a
checkable ONNX file, runs in onnxruntime equal to the model, dynamic_shapes=True leaves every input dim symbolic,
the registry answers which ops are mapped, and registering an onnxscript function is refused by name."""
import io

import numpy as np
import pytest
import rawdev

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from _refs import rng  # noqa: E402

nn = rawdev.nn


def _model():
    rawdev.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 7 * 7, 10)).eval()


def test_dynamo_export_saves_a_model_onnxruntime_runs_equal_to_rawdev(tmp_path):
    model = _model()
    x = rawdev.tensor(rng().standard_normal((1, 1, 16, 16)).astype(np.float32))
    program = rawdev.onnx.dynamo_export(model, x)
    path = tmp_path / "classifier.onnx"
    program.save(str(path))
    onnx.checker.check_model(onnx.load(str(path)))
    x2 = rawdev.tensor(rng().standard_normal((1, 1, 16, 16)).astype(np.float32))
    got = program(x2)[0].numpy()
    np.testing.assert_allclose(got, model(x2).detach().numpy(), rtol=1e-5, atol=1e-6)
    buf = io.BytesIO()
    program.save(buf, include_initializers=False)
    assert len(onnx.load_from_string(buf.getvalue()).graph.initializer) == 0
    assert len(program.model_proto.graph.initializer) > 0
    assert [a.shape for a in program.adapt_torch_inputs_to_onnx(x2)] == [(1, 1, 16, 16)]


def test_dynamic_shapes_leave_every_input_dimension_symbolic():
    model = nn.Sequential(nn.Linear(8, 4), nn.Tanh()).eval()
    x = rawdev.randn(3, 8)
    opts = rawdev.onnx.ExportOptions(dynamic_shapes=True, onnx_registry=rawdev.onnx.OnnxRegistry())
    program = rawdev.onnx.dynamo_export(model, x, export_options=opts)
    dims = program.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert all(d.dim_param for d in dims)
    x7 = rawdev.randn(7, 8)
    np.testing.assert_allclose(program(x7)[0].numpy(), model(x7).detach().numpy(), rtol=1e-5, atol=1e-6)
    static = rawdev.onnx.dynamo_export(model, x)
    assert [d.dim_value for d in static.model_proto.graph.input[0].type.tensor_type.shape.dim] == [3, 8]


def test_the_registry_answers_for_rawdevs_mappings_and_refuses_onnxscript_functions():
    reg = rawdev.onnx.OnnxRegistry()
    assert reg.opset_version == 18
    assert reg.is_registered_op(namespace="aten", op_name="add", overload="Tensor")
    assert not reg.is_registered_op(namespace="custom", op_name="add")
    assert not reg.is_registered_op(namespace="aten", op_name="no_such_op")
    assert reg.get_op_functions(namespace="aten", op_name="relu")
    with pytest.raises(NotImplementedError, match="register_op .*onnxscript"):
        reg.register_op(namespace="aten", op_name="add", overload="Tensor", function=lambda x, y: x)
