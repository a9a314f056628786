"""rawdev.save / rawdev.load: safetensors files, dtypes and key order kept, PyTorch-written files load."""
import json
import struct
from collections import OrderedDict

import numpy as np
import pytest
from rawdev import dtypes
from rawdev.nn import Sequential
from rawdev.runtime import trace
from rawdev.serialization import load, save
from rawdev.tensor import arange, randn, tensor, zeros
from safetensors import safe_open
from safetensors.numpy import save_file

from _models import BN, Lin, mlp, snapshot


def test_round_trip_keeps_dtypes_values_and_order(tmp_path):
    sd = OrderedDict([("z.last", randn(3)), ("a.first", arange(4)), ("m.half", randn(2, 2, dtype=dtypes.float16)),
                      ("b.bf16", tensor([1.5, -2.25, 3.0e38], dtype=dtypes.bfloat16)),
                      ("flag", tensor([True, False])), ("u8", tensor([1, 255], dtype=dtypes.uint8)),
                      ("i32", tensor([-7], dtype=dtypes.int32)), ("d", tensor([1e-300], dtype=dtypes.float64)),
                      ("scalar", tensor(4.0)), ("empty", zeros(0, 3))])
    path = tmp_path / "m.safetensors"
    save(sd, path)
    out = load(path)
    assert list(out) == list(sd)
    for k in sd:
        assert out[k].dtype is sd[k].dtype and out[k].shape == sd[k].shape, k
        assert out[k]._storage_copy().tobytes() == sd[k]._storage_copy().tobytes(), k
    with safe_open(str(path), framework="np") as f:
        assert f.get_slice("b.bf16").get_dtype() == "BF16"
        meta = f.metadata()
    assert json.loads(meta["rawdev.keys"]) == list(sd)
    out["a.first"][0] = 9   # loaded tensors own writable memory
    assert out["a.first"].tolist()[0] == 9


def test_save_is_not_pickle_and_rejects_other_objects(tmp_path):
    with pytest.raises(TypeError, match=r"cannot store the object\[0\], builtins.generator"):
        save([(i for i in range(2))], tmp_path / "x")
    with open(tmp_path / "f", "w") as fh, pytest.raises(TypeError, match="rawdev never pickles arbitrary objects"):
        save({"a": fh}, tmp_path / "x")
    save({"a": randn(2)}, tmp_path / "x")
    header_len = struct.unpack("<Q", (tmp_path / "x").read_bytes()[:8])[0]
    json.loads((tmp_path / "x").read_bytes()[8:8 + header_len])   # a safetensors header, nothing else


def test_model_round_trip(tmp_path):
    src, dst = Sequential(Lin(3, 4), BN(4)), Sequential(Lin(3, 4), BN(4))
    save(src.state_dict(), tmp_path / "m.safetensors")
    dst.load_state_dict(load(tmp_path / "m.safetensors"))
    assert {k: v for k, v in snapshot(dst).items() if "scratch" not in k} == \
        {k: v for k, v in snapshot(src).items() if "scratch" not in k}


def test_pytorch_written_file_loads(tmp_path):
    """What safetensors.torch.save_file(model.state_dict()) writes for the same architecture: the same key
    names, float32/int64 tensors, metadata {"format": "pt"} and no rawdev key order."""
    src = Sequential(Lin(3, 4), BN(4))
    arrays = {k: v.numpy() for k, v in src.state_dict().items()}
    save_file(arrays, str(tmp_path / "torch.safetensors"), metadata={"format": "pt"})
    loaded = load(tmp_path / "torch.safetensors")
    assert loaded["1.num_batches_tracked"].dtype is dtypes.int64
    dst = Sequential(Lin(3, 4), BN(4))
    res = dst.load_state_dict(loaded)
    assert res.missing_keys == [] and res.unexpected_keys == []
    for k, v in src.state_dict().items():
        assert np.array_equal(dst.state_dict()[k].numpy(), v.numpy())


def test_pytorch_bf16_file_loads(tmp_path):
    """A bf16 checkpoint as PyTorch writes it (BF16 header entries), built with safetensors' serializer."""
    from safetensors import serialize_file
    w = dtypes.f32_to_bf16_bits(np.arange(12, dtype=np.float32).reshape(4, 3) / 8)
    b = dtypes.f32_to_bf16_bits(np.ones(4, np.float32))
    serialize_file({"weight": _spec("bfloat16", [4, 3], w), "bias": _spec("bfloat16", [4], b)},
                   str(tmp_path / "bf16.safetensors"), metadata={"format": "pt"})
    m = Lin(3, 4).bfloat16()
    m.load_state_dict(load(tmp_path / "bf16.safetensors"))
    assert m.weight.dtype is dtypes.bfloat16 and m.weight._data.tobytes() == w.tobytes()


def _spec(dtype, shape, arr):
    try:
        from safetensors import TensorSpec
    except ImportError:  # safetensors < 0.7 takes plain dicts
        return {"dtype": dtype, "shape": shape, "data": arr.tobytes()}
    return TensorSpec(dtype=dtype, shape=shape, data_ptr=arr.ctypes.data, data_len=arr.nbytes)


def test_truncated_or_garbage_file_is_a_clear_error(tmp_path):
    save(mlp().state_dict(), tmp_path / "ok")
    data = (tmp_path / "ok").read_bytes()
    (tmp_path / "trunc").write_bytes(data[:len(data) // 2])
    (tmp_path / "garbage").write_bytes(b"not a checkpoint at all")
    for name in ("trunc", "garbage"):
        with pytest.raises(RuntimeError, match=f"rawdev.load: '.*{name}' is not a readable safetensors file"):
            load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing")


def test_unsupported_dtype_in_file(tmp_path):
    save_file({"x": np.zeros(2, np.uint16)}, str(tmp_path / "u16"))
    with pytest.raises(RuntimeError, match="'x' .* has dtype U16, which rawdev tensors cannot hold"):
        load(tmp_path / "u16")


# ------------------------------------------------------------------------------------------- on the device
def test_save_from_cuda_is_one_dtoh(dev, tmp_path):
    m = mlp()
    ref = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    m.cuda()
    with trace() as t:
        save(m.state_dict(), tmp_path / "c")
    assert t.count("cuMemcpyDtoHAsync") == 1
    out = load(tmp_path / "c")                            # back on the device it was saved from, as PyTorch
    assert all(out[k].is_cuda and np.array_equal(out[k].cpu().numpy(), ref[k]) for k in ref)
    out = load(tmp_path / "c", map_location="cpu")
    assert all(np.array_equal(out[k].numpy(), ref[k]) for k in ref)


def test_load_into_cuda_model_one_copy(dev, tmp_path):
    src = mlp()
    save(src.state_dict(), tmp_path / "m")
    m = mlp().cuda()
    sd = load(tmp_path / "m")
    with trace() as t:
        m.load_state_dict(sd)
    assert t.count("cuMemcpyHtoDAsync") == 1 and t.count("cuMemcpyHtoD") == 0
    assert snapshot(m.cpu()) == snapshot(src)


def test_map_location_cuda_is_one_arena(dev, tmp_path):
    sd = mlp().state_dict()
    save(sd, tmp_path / "m")
    with trace() as t:
        out = load(tmp_path / "m", map_location="cuda")
    assert t.count("cuMemcpyHtoDAsync") == 1 and t.count("cuMemAllocFromPoolAsync") == 1
    assert all(v.is_cuda for v in out.values()) and len({id(v._buf) for v in out.values()}) == 1
    assert all(np.array_equal(out[k].cpu().numpy(), sd[k].numpy()) for k in sd)
