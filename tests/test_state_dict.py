"""state_dict / load_state_dict: PyTorch's keys, order, metadata and messages; a failed load changes nothing."""
from collections import OrderedDict

import numpy as np
import pytest
from rawdev import dtypes
from rawdev.nn import Module, Parameter, Sequential
from rawdev.runtime import trace
from rawdev.tensor import Tensor, randn, tensor, zeros

from _models import BN, Lin, mlp, snapshot


def net():
    return Sequential(Lin(3, 4), BN(4), Sequential(Lin(4, 2)))


def test_state_dict_keys_order_metadata():
    m = net()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                        "1.num_batches_tracked", "2.0.weight", "2.0.bias"]   # non-persistent 1.scratch left out
    assert sd._metadata == OrderedDict([("", {"version": 1}), ("0", {"version": 1}), ("1", {"version": 1}),
                                        ("2", {"version": 1}), ("2.0", {"version": 1})])
    # detached aliases of the live storage, unless keep_vars
    assert not sd["0.weight"].requires_grad and sd["0.weight"].data_ptr() == m[0].weight.data_ptr()
    assert type(sd["0.weight"]) is Tensor
    assert m.state_dict(keep_vars=True)["0.weight"] is m[0].weight
    assert list(m.state_dict(prefix="model."))[0] == "model.0.weight"


def test_tied_weights_under_every_name():
    a, b = Lin(2, 2), Lin(2, 2)
    b.weight = a.weight
    sd = Sequential(a, b).state_dict()
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert sd["0.weight"].data_ptr() == sd["1.weight"].data_ptr()
    m2 = Sequential(Lin(2, 2), Lin(2, 2))
    m2[1].weight = m2[0].weight
    m2.load_state_dict(sd)
    assert m2[0].weight.tolist() == a.weight.tolist()


def test_round_trip_into_fresh_model():
    src, dst = net(), net()
    res = dst.load_state_dict(src.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == [] and repr(res) == "<All keys matched successfully>"
    assert res == ([], [])
    assert snapshot(dst).keys() == snapshot(src).keys()
    for k in src.state_dict():
        assert dst.state_dict()[k].tolist() == src.state_dict()[k].tolist()
    # copied into the existing storage: the parameter objects and their memory stay
    p = dst[0].weight
    ptr = p.data_ptr()
    dst.load_state_dict(net().state_dict())
    assert dst[0].weight is p and p.data_ptr() == ptr


def test_missing_and_unexpected_keys_message():
    m = net()
    sd = m.state_dict()
    del sd["0.bias"]
    sd["extra.weight"] = zeros(1)
    sd["1.bogus"] = zeros(1)
    before = snapshot(m)
    with pytest.raises(RuntimeError) as ei:
        m.load_state_dict(sd)
    assert str(ei.value) == ('Error(s) in loading state_dict for Sequential:\n\t'
                             'Missing key(s) in state_dict: "0.bias". \n\t'
                             'Unexpected key(s) in state_dict: "extra.weight", "1.bogus". ')
    assert snapshot(m) == before
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["0.bias"] and res.unexpected_keys == ["extra.weight", "1.bogus"]
    assert snapshot(m) == before  # the keys it did load are the model's own values


def test_truncated_checkpoint_changes_nothing():
    m = net()
    good = net().state_dict()
    truncated = OrderedDict(list(good.items())[:4])
    before = snapshot(m)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "1.running_mean", "1.running_var", '
                                           r'"1.num_batches_tracked", "2.0.weight", "2.0.bias"\.'):
        m.load_state_dict(truncated)
    assert snapshot(m) == before


def test_size_mismatch_message_and_nothing_copied():
    m = net()
    sd = net().state_dict()
    sd["2.0.weight"] = randn(2, 5)           # the last key: PyTorch would already have copied the others
    before = snapshot(m)
    with pytest.raises(RuntimeError) as ei:
        m.load_state_dict(sd)
    assert str(ei.value) == ("Error(s) in loading state_dict for Sequential:\n\tsize mismatch for 2.0.weight: "
                             "copying a param with shape rawdev.Size([2, 5]) from checkpoint, the shape in current "
                             "model is rawdev.Size([2, 4]).")
    assert snapshot(m) == before
    with pytest.raises(RuntimeError, match="size mismatch for 2.0.weight"):
        m.load_state_dict(sd, strict=False)  # shape errors are errors even when not strict
    assert snapshot(m) == before


def test_wrongly_typed_values_change_nothing():
    m = net()
    before = snapshot(m)
    sd = net().state_dict()
    sd["0.weight"] = [[1.0] * 3] * 4
    with pytest.raises(RuntimeError, match='While copying the parameter named "0.weight", expected torch.Tensor or '
                                           "Tensor-like object from checkpoint but received <class 'list'>"):
        m.load_state_dict(sd)
    sd = net().state_dict()
    sd["1.running_mean"] = zeros(4, dtype=dtypes.int64)
    with pytest.raises(RuntimeError, match='"1.running_mean", whose dtype in the model is rawdev.float32 and whose '
                                           "dtype in the checkpoint is rawdev.int64"):
        m.load_state_dict(sd)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        m.load_state_dict([1])
    assert snapshot(m) == before


def test_float_casts_like_copy_():
    m = Lin(2, 2)
    sd = OrderedDict((k, v.to(dtypes.float16)) for k, v in Lin(2, 2).state_dict().items())
    m.load_state_dict(sd)
    assert m.weight.dtype is dtypes.float32
    np.testing.assert_allclose(m.weight.detach().numpy(), sd["weight"].numpy(), rtol=1e-3)


def test_scalar_param_accepts_one_element_checkpoint():
    m = Module()
    m.s = Parameter(tensor(1.0))
    m.load_state_dict({"s": tensor([5.0])})
    assert m.s.item() == 5.0


def test_assign_replaces_tensors():
    m = Lin(2, 3)
    new = Lin(2, 3).state_dict()
    m.load_state_dict(new, assign=True)
    assert isinstance(m.weight, Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == new["weight"].data_ptr()


def test_non_persistent_buffer_not_expected():
    m = BN(3)
    sd = m.state_dict()
    assert "scratch" not in sd
    m.load_state_dict(sd)   # no missing key for the non-persistent buffer


# -------------------------------------------------------------------------------------------- on the device
def test_load_into_cuda_model_is_one_htod(dev):
    # staged (one arena, one HtoD), then written in place by one device copy: data_ptr is kept as PyTorch's
    m = mlp().cuda()
    src = mlp()
    p = m[0].weight
    ptr = p.data_ptr()
    with trace() as t:
        m.load_state_dict(src.state_dict())
    assert t.count("cuMemcpyHtoDAsync") == 1 and t.count("cuMemcpyHtoD") == 0
    assert t.count("cuMemAllocFromPoolAsync") == 1 and t.count("cuMemcpyDtoDAsync") == 1
    assert m[0].weight is p and p.data_ptr() == ptr and p.is_cuda
    assert snapshot(m.cpu()) == snapshot(src)


def test_load_with_non_persistent_buffer_in_the_arena(dev):
    m = Sequential(Lin(3, 4), BN(4)).cuda()
    scratch = m[1].scratch.cpu().numpy().copy()
    src = Sequential(Lin(3, 4), BN(4))
    m.load_state_dict(src.state_dict())
    assert np.array_equal(m[1].scratch.cpu().numpy(), scratch)   # the buffer between targets is untouched
    got = {k: v.cpu().numpy() for k, v in m.state_dict().items()}
    for k, v in src.state_dict().items():
        assert np.array_equal(got[k], v.numpy()), k


def test_cuda_state_dict_to_cuda_model(dev):
    a, b = mlp().cuda(), mlp().cuda()
    with trace() as t:
        b.load_state_dict(a.state_dict())
    # six device copies into the staging arena, one from it into the model's arena
    assert t.count("cuMemcpyDtoDAsync") == 7 and t.count("cuMemcpyHtoDAsync") == 0
    assert snapshot(b.cpu()) == snapshot(a.cpu())


def test_failed_load_into_cuda_model_changes_nothing(dev):
    m = net().cuda()
    before = snapshot(m)
    sd = net().state_dict()
    sd["2.0.bias"] = randn(3)
    with trace() as t, pytest.raises(RuntimeError, match="size mismatch for 2.0.bias"):
        m.load_state_dict(sd)
    assert t.count("cuMemcpyHtoDAsync") == 0
    assert snapshot(m) == before


class VersionedBN(BN):
    """A PyTorch-style override (as BatchNorm's): fills in a key old checkpoints lack, then super()."""
    _version = 2

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and prefix + "num_batches_tracked" not in state_dict:
            state_dict[prefix + "num_batches_tracked"] = tensor(0)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


def test_overridden_load_from_state_dict_still_validates_first():
    m = Sequential(VersionedBN(3), Lin(3, 2))
    old = Sequential(VersionedBN(3), Lin(3, 2)).state_dict()
    del old["0.num_batches_tracked"]
    old._metadata["0"]["version"] = 1
    m.load_state_dict(old)
    assert m[0].running_mean.tolist() == old["0.running_mean"].tolist()
    before = snapshot(m)
    bad = Sequential(VersionedBN(3), Lin(3, 2)).state_dict()
    bad["1.weight"] = zeros(9)     # checked after module 0, which must not have been copied
    with pytest.raises(RuntimeError, match="size mismatch for 1.weight"):
        m.load_state_dict(bad)
    assert snapshot(m) == before


def test_module_apply_private():
    m = Sequential(Lin(2, 2), BN(2))
    w = m[0].weight
    m._apply(lambda t: t.to(dtypes.float64))
    assert m[0].weight is w and w.dtype is dtypes.float64 and m[1].running_mean.dtype is dtypes.float64


def test_load_state_dict_takes_tensor_likes_and_names_what_it_cannot():
    """A state_dict of another library's cpu tensors (or numpy arrays) loads (rawdev said it expected a
    torch.Tensor when it got one); anything else gets PyTorch's message."""
    import numpy as np
    import rawdev

    class ForeignTensor:       # what a cpu torch.Tensor offers: shape, dtype, detach(), __array__
        def __init__(self, a):
            self.a, self.shape, self.dtype = a, a.shape, a.dtype

        def detach(self):
            return self

        def __array__(self, dtype=None, copy=None):
            return self.a

    m = rawdev.nn.Linear(3, 2)
    w, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1.5, -2.0], np.float32)
    m.load_state_dict({"weight": ForeignTensor(w), "bias": b})
    assert m.weight.tolist() == w.tolist() and m.bias.tolist() == b.tolist()
    import pytest
    with pytest.raises(RuntimeError, match="expected torch.Tensor or Tensor-like object from checkpoint but received "
                                           "<class 'str'>"):
        m.load_state_dict({"weight": "nope", "bias": b})
