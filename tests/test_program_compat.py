"""What programs written for PyTorch's multi-GPU and housekeeping APIs meet: Module extra state, set_submodule and
to_empty; lazy conv/norm layers; DataParallel, SyncBatchNorm and DistributedSampler in one process; the
torch.cuda names (device context, memory fraction, nvtx ranges, OutOfMemoryError) and top-level constants."""
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.utils.data import DistributedSampler


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.calls = 0

    def get_extra_state(self):
        return {"calls": self.calls}

    def set_extra_state(self, state):
        self.calls = state["calls"]


def test_extra_state_saved_loaded_and_checked():
    m = nn.Sequential(Counter(), nn.ReLU())
    m[0].calls = 5
    sd = m.state_dict()
    assert list(sd) == ["0._extra_state", "0.fc.weight", "0.fc.bias"] and sd["0._extra_state"] == {"calls": 5}
    m2 = nn.Sequential(Counter(), nn.ReLU())
    assert m2.load_state_dict(sd) == ([], [])
    assert m2[0].calls == 5
    assert np.array_equal(m2[0].fc.weight.detach().numpy(), m[0].fc.weight.detach().numpy())
    missing = {k: v for k, v in sd.items() if k != "0._extra_state"}
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "0._extra_state"'):
        nn.Sequential(Counter(), nn.ReLU()).load_state_dict(missing)
    assert nn.Sequential(Counter(), nn.ReLU()).load_state_dict(missing, strict=False).missing_keys == ["0._extra_state"]
    plain = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "0._extra_state"'):
        plain.load_state_dict({"0.weight": sd["0.fc.weight"], "0.bias": sd["0.fc.bias"], "0._extra_state": 1})
    # a failed load (shape mismatch) changes nothing, extra state included
    bad = dict(sd)
    bad["0.fc.weight"] = rawdev.zeros(3, 2)
    m3 = nn.Sequential(Counter(), nn.ReLU())
    with pytest.raises(RuntimeError, match="size mismatch"):
        m3.load_state_dict(bad)
    assert m3[0].calls == 0


def test_set_submodule_and_its_errors():
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    m.set_submodule("1", nn.Tanh())
    assert isinstance(m[1], nn.Tanh)
    m.set_submodule("0.extra", nn.Identity())
    assert "0.extra" in dict(m.named_modules())
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name!"):
        m.set_submodule("", nn.Tanh())
    with pytest.raises(AttributeError, match="Linear has no attribute `zz`"):
        m.set_submodule("0.zz", nn.Tanh(), strict=True)
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.set_submodule("0.weight", nn.Tanh())
    with pytest.raises(ValueError, match="is not an nn.Module"):
        m.set_submodule("1", 3)


def test_to_empty_keeps_parameters_shapes_and_objects(driver):
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    w = m[0].weight
    m.to_empty(device="cuda")
    assert m[0].weight is w and w.is_cuda and tuple(w.shape) == (4, 3) and w.requires_grad
    assert m[1].running_mean.is_cuda and m[1].num_batches_tracked.dtype == rawdev.int64


@pytest.mark.parametrize("lazy,real,shape", [
    (lambda: nn.LazyConv1d(4, 3, padding=1), nn.Conv1d, (2, 5, 9)),
    (lambda: nn.LazyConv2d(4, 3, stride=2), nn.Conv2d, (2, 3, 9, 7)),
    (lambda: nn.LazyConv3d(2, 2), nn.Conv3d, (1, 3, 4, 5, 4)),
    (lambda: nn.LazyConvTranspose1d(4, 3, stride=2), nn.ConvTranspose1d, (2, 3, 5)),
    (lambda: nn.LazyConvTranspose2d(2, 3), nn.ConvTranspose2d, (2, 3, 4, 4)),
    (lambda: nn.LazyBatchNorm1d(), nn.BatchNorm1d, (6, 5)),
    (lambda: nn.LazyBatchNorm2d(momentum=0.5), nn.BatchNorm2d, (3, 4, 5, 5)),
    (lambda: nn.LazyInstanceNorm2d(), nn.InstanceNorm2d, (2, 3, 5, 5)),
])
def test_lazy_layers_become_the_layer_they_stand_for(driver, lazy, real, shape):
    for dev in ("cpu", "cuda"):
        m = lazy()
        assert m.has_uninitialized_params() and list(m.parameters()) == []
        seen = []
        m.register_forward_hook(lambda mod, i, o, seen=seen: seen.append(tuple(o.shape)))
        x = rawdev.randn(*shape).to(dev)
        y = m(x)
        assert type(m) is real and m.weight.device.type == dev and seen == [tuple(y.shape)]
        # the layer it became computes what that layer computes with these parameters
        conv = {nn.Conv1d: F.conv1d, nn.Conv2d: F.conv2d, nn.Conv3d: F.conv3d}.get(real)
        if conv is not None:
            want = conv(x, m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups)
            np.testing.assert_allclose(y.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-6)
        elif real in (nn.BatchNorm1d, nn.BatchNorm2d, nn.InstanceNorm2d):
            xs = x.cpu().numpy().astype(np.float64)
            axes = tuple(range(2, xs.ndim)) if real is nn.InstanceNorm2d else (0,) + tuple(range(2, xs.ndim))
            mu, var = xs.mean(axes, keepdims=True), xs.var(axes, keepdims=True)
            np.testing.assert_allclose(y.detach().cpu().numpy(), (xs - mu) / np.sqrt(var + 1e-5), rtol=2e-4,
                                       atol=2e-5)
        y.float().sum().backward()
        assert m.weight.grad is not None and m.weight.grad.shape == m.weight.shape


def test_lazy_layers_check_the_input_rank_and_keep_pytorchs_defaults():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        nn.LazyConv2d(3, 3)(rawdev.randn(2, 2))
    m = nn.LazyInstanceNorm1d()      # PyTorch's lazy norms default to affine=True, track_running_stats=True
    assert "affine=True" in repr(m) and "track_running_stats=True" in repr(m)
    m(rawdev.randn(2, 3, 4))
    assert m.affine and m.track_running_stats and m.running_mean.shape == (3,)
    assert repr(nn.LazyConv2d(8, 3, padding=1)) == "LazyConv2d(0, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.bn = nn.BatchNorm1d(2)

    def forward(self, x, scale=1.0):
        return self.bn(self.fc(x)) * scale


def test_data_parallel_runs_on_the_first_gpu_with_module_prefixed_checkpoints(driver):
    net = Net()
    x = rawdev.randn(5, 3)
    want = net(x).detach().numpy()
    dp = nn.DataParallel(net)
    assert dp.module is net and net.fc.weight.is_cuda
    assert list(dp.state_dict())[:2] == ["module.fc.weight", "module.fc.bias"]
    y = dp(x, scale=2.0)            # a cpu input is moved to cuda:0, kwargs too
    assert y.is_cuda
    np.testing.assert_allclose(y.detach().cpu().numpy(), 2 * want, rtol=1e-5, atol=1e-6)
    y.sum().backward()
    assert net.fc.weight.grad.is_cuda
    # a checkpoint of the wrapped model loads into the bare one once the prefix is stripped
    plain = Net()
    plain.load_state_dict({k[len("module."):]: v for k, v in dp.state_dict().items()})
    np.testing.assert_array_equal(plain.fc.weight.detach().numpy(), net.fc.weight.detach().cpu().numpy())
    net.cpu()
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device cuda:0"):
        dp(x)


def test_sync_batchnorm_converts_in_place_and_normalizes_as_batchnorm():
    net = Net()
    params = list(net.parameters())
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert conv is net and type(net.bn) is nn.SyncBatchNorm and list(net.parameters()) == params
    x = rawdev.randn(6, 3)
    ref = Net()
    ref.load_state_dict(net.state_dict())
    np.testing.assert_allclose(net(x).detach().numpy(), ref(x).detach().numpy(), rtol=1e-6)
    assert int(net.bn.num_batches_tracked) == 1
    np.testing.assert_allclose(net.bn.running_mean.numpy(), ref.bn.running_mean.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(rawdev.ones(3))


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 4, False), (10, 3, True), (10, 15, False), (7, 7, False)])
def test_distributed_sampler_partitions_the_dataset(n, replicas, drop_last):
    for shuffle in (False, True):
        parts = []
        for rank in range(replicas):
            s = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=shuffle, drop_last=drop_last)
            s.set_epoch(3)
            parts.append(list(s))
            want = math.ceil((n - replicas) / replicas) if drop_last and n % replicas else math.ceil(n / replicas)
            assert len(s) == len(parts[-1]) == want
        flat = [i for p in parts for i in p]
        if drop_last:
            assert len(set(flat)) == len(flat)                 # no index twice
        else:
            assert set(flat) == set(range(n))                 # every index, padded by repeats
        if not shuffle:
            assert parts[1][:2] == [1, 1 + replicas][:len(parts[1])]
    # PyTorch's lists for these (no shuffle): padding repeats the start, drop_last cuts the tail
    assert list(DistributedSampler(range(10), 4, 1, shuffle=False)) == [1, 5, 9]
    assert list(DistributedSampler(range(10), 4, 3, shuffle=False)) == [3, 7, 1]
    assert list(DistributedSampler(range(10), 3, 2, shuffle=False, drop_last=True)) == [2, 5, 8]
    assert list(DistributedSampler(range(10), 15, 14, shuffle=False)) == [4]
    s = DistributedSampler(range(50), num_replicas=2, rank=0, seed=1)
    first = list(s)
    assert list(s) == first                                   # same epoch, same order
    s.set_epoch(1)
    other = DistributedSampler(range(50), 2, 1, seed=1)
    other.set_epoch(1)
    assert list(s) != first and sorted(list(s) + list(other)) == list(range(50))
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))


def test_distributed_answers_as_before_init_process_group():
    assert rawdev.distributed.is_available() is True and rawdev.distributed.is_initialized() is False
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        rawdev.distributed.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nn.parallel.DistributedDataParallel(Net())


def test_cuda_device_context_and_housekeeping_names(driver):
    rawdev.cuda.init()
    assert rawdev.cuda.is_initialized()
    with rawdev.cuda.device(0):
        assert rawdev.cuda.current_device() == 0
    with rawdev.cuda.device_of(rawdev.ones(2, device="cuda")):
        assert rawdev.cuda.current_device() == 0
    for dev in ("cuda:0", "cuda", rawdev.device("cuda:0"), 0):      # a str too (str has an .index method)
        rawdev.cuda.set_device(dev)
        assert rawdev.cuda.current_device() == 0
    assert rawdev.cuda.memory_cached() == rawdev.cuda.memory_reserved()
    assert len(rawdev.cuda.get_rng_state_all()) == rawdev.cuda.device_count()
    assert rawdev.cuda.OutOfMemoryError is rawdev.OutOfMemoryError
    assert issubclass(rawdev.cuda.OutOfMemoryError, RuntimeError)


def test_memory_fraction_caps_allocations_and_loses_nothing(driver):
    total = rawdev.cuda.get_device_properties(0).total_memory
    keep = rawdev.ones(1000, device="cuda")
    before = rawdev.cuda.memory_allocated()
    rawdev.cuda.set_per_process_memory_fraction(0.001)
    try:
        assert rawdev.cuda.get_per_process_memory_fraction() == 0.001
        rawdev.ones(1000, device="cuda")                        # well under the cap
        with pytest.raises(rawdev.cuda.OutOfMemoryError, match=r"set_per_process_memory_fraction\(0.001\)"):
            rawdev.empty(int(total * 0.002) // 4, device="cuda")
        assert rawdev.cuda.memory_allocated() == before
    finally:
        rawdev.cuda.set_per_process_memory_fraction(1.0)
    big = rawdev.empty(int(total * 0.002) // 4, device="cuda")
    assert big.numel() == int(total * 0.002) // 4 and float(keep.sum()) == 1000.0
    with pytest.raises(TypeError, match="must be `float`"):
        rawdev.cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match=r"Invalid fraction value: 1.5. Allowed range: 0~1"):
        rawdev.cuda.set_per_process_memory_fraction(1.5)


def test_nvtx_ranges_become_memory_timeline_marks(driver):
    mem = rawdev.cuda.memory
    mem.record_history(True)
    try:
        nvtx = rawdev.cuda.nvtx
        assert nvtx.range_push("epoch") == 0 and nvtx.range_push("step") == 1
        assert nvtx.range_pop() == 1 and nvtx.range_pop() == 0 and nvtx.range_pop() == -1
        with nvtx.range("batch {}", 7):
            nvtx.mark("here")
        got = [(a["name"], a["stage"]) for a in mem.annotations() if a["stage"] != "PHASE"]
    finally:
        mem.record_history(False)
    assert got == [("epoch", "START"), ("step", "START"), ("step", "END"), ("epoch", "END"),
                   ("batch 7", "START"), ("here", "START"), ("batch 7", "END")]


def test_top_level_constants_threads_and_typename():
    assert rawdev.pi == math.pi and rawdev.e == math.e and rawdev.inf == math.inf and math.isnan(rawdev.nan)
    assert rawdev.arange(3.0)[:, rawdev.newaxis].shape == (3, 1)
    n = rawdev.get_num_threads()
    rawdev.set_num_threads(3)
    assert rawdev.get_num_threads() == 3
    rawdev.set_num_threads(n)
    with pytest.raises(RuntimeError, match="positive integer"):
        rawdev.set_num_threads(0)
    assert rawdev.typename(rawdev.zeros(2)) == "rawdev.FloatTensor"
    assert rawdev.typename(nn.Linear(1, 1)).endswith(".Linear") and rawdev.typename(3) == "int"


def test_3d_padding_layers_match_numpy_pad(driver):
    x = np.random.default_rng().standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    pad = (1, 2, 0, 1, 2, 1)                              # (left, right, top, bottom, front, back)
    np_pad = [(0, 0), (0, 0), (pad[4], pad[5]), (pad[2], pad[3]), (pad[0], pad[1])]
    for layer, kw in ((nn.ZeroPad3d(pad), {"mode": "constant"}),
                      (nn.ConstantPad3d(pad, 2.5), {"mode": "constant", "constant_values": 2.5}),
                      (nn.ReflectionPad3d(pad), {"mode": "reflect"}), (nn.ReplicationPad3d(pad), {"mode": "edge"}),
                      (nn.CircularPad3d(pad), {"mode": "wrap"})):
        want = np.pad(x, np_pad, **kw)
        for dev in ("cpu", "cuda"):
            np.testing.assert_array_equal(layer(rawdev.tensor(x, device=dev)).cpu().numpy(), want)
    assert repr(nn.ZeroPad3d(1)) == "ZeroPad3d((1, 1, 1, 1, 1, 1))"


def test_with_indices_pools_record_stream_and_module_compile(driver):
    x = rawdev.randn(2, 3, 6, 6, device="cuda")
    y, i = F.max_pool2d_with_indices(x, 2)
    y2, i2 = F.max_pool2d(x, 2, return_indices=True)
    assert np.array_equal(y.cpu().numpy(), y2.cpu().numpy()) and np.array_equal(i.cpu().numpy(), i2.cpu().numpy())
    y, i = F.adaptive_max_pool1d_with_indices(rawdev.randn(2, 3, 7), 3)
    assert y.shape == (2, 3, 3) and i.dtype == rawdev.int64
    x.record_stream(rawdev.cuda.current_stream())
    with pytest.raises(RuntimeError, match="only supported for CUDA tensors"):
        rawdev.ones(2).record_stream(rawdev.cuda.current_stream())
    m = nn.Linear(2, 2)
    w = m.weight
    import warnings
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert m.compile() is None
    assert m.weight is w


def test_conv_and_linear_batchnorm_fusion_matches_the_pair(driver):
    for dev in ("cpu", "cuda"):
        conv, bn = nn.Conv2d(3, 4, 3, padding=1).to(dev), nn.BatchNorm2d(4).to(dev)
        x = rawdev.randn(2, 3, 6, 5, device=dev)
        bn(conv(x))
        bn(conv(2 * x + 1))                     # running statistics that are not the defaults
        conv.eval()
        bn.eval()
        fused = nn.utils.fuse_conv_bn_eval(conv, bn)
        assert fused is not conv and isinstance(fused.weight, nn.Parameter) and fused.weight.requires_grad
        np.testing.assert_allclose(fused(x).detach().cpu().numpy(), bn(conv(x)).detach().cpu().numpy(), rtol=1e-4,
                                   atol=1e-5)
        lin, bn1 = nn.Linear(5, 3).to(dev), nn.BatchNorm1d(3).to(dev)
        bn1(lin(rawdev.randn(8, 5, device=dev)))
        lin.eval()
        bn1.eval()
        z = rawdev.randn(4, 5, device=dev)
        np.testing.assert_allclose(nn.utils.fuse_linear_bn_eval(lin, bn1)(z).detach().cpu().numpy(),
                                   bn1(lin(z)).detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))


def test_total_norm_in_two_steps_and_skip_init(driver):
    r = np.random.default_rng()
    for dev in ("cpu", "cuda"):
        vals = [r.standard_normal(3), r.standard_normal((2, 2))]
        ps = [nn.Parameter(rawdev.ones(*v.shape, device=dev)) for v in vals]
        for p, v in zip(ps, vals):
            p.grad = rawdev.tensor(v, dtype=rawdev.float32, device=dev)
        flat = np.concatenate([v.ravel() for v in vals])
        total = nn.utils.get_total_norm([p.grad for p in ps])
        assert abs(float(total) - np.linalg.norm(flat)) < 1e-5 * np.linalg.norm(flat)
        assert abs(float(nn.utils.get_total_norm([p.grad for p in ps], norm_type=math.inf)) - np.abs(flat).max()) < 1e-6
        nn.utils.clip_grads_with_norm_(ps, 0.5, total)
        scale = min(0.5 / (np.linalg.norm(flat) + 1e-6), 1.0)
        np.testing.assert_allclose(ps[1].grad.cpu().numpy(), vals[1] * scale, rtol=1e-5)
    m = nn.utils.skip_init(nn.Linear, 4, 3, bias=False)
    assert type(m) is nn.Linear and tuple(m.weight.shape) == (3, 4) and m.bias is None
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(nn.ReLU)


def test_deprecated_init_names_warn_and_initialize():
    t = rawdev.empty(20, 30)
    with pytest.warns(FutureWarning, match=r"`nn.init.normal` is now deprecated in favor of `nn.init.normal_`"):
        nn.init.normal(t, 3.0, 0.01)
    assert abs(float(t.mean()) - 3.0) < 0.01
    with pytest.warns(FutureWarning, match="kaiming_uniform"):
        nn.init.kaiming_uniform(t)
    assert float(t.abs().max()) <= math.sqrt(6 / ((1 + 0) * 30)) + 1e-6


def _write_rank(i, folder, fail_at):
    if i == fail_at:
        raise ValueError(f"rank {i} failed on purpose")
    with open(f"{folder}/rank{i}", "w") as f:
        f.write(str(i * i))


def test_multiprocessing_spawn_runs_every_rank_and_reports_a_failure(tmp_path):
    mp = rawdev.multiprocessing
    mp.start_processes(_write_rank, args=(str(tmp_path), -1), nprocs=3, start_method="fork")
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["0", "1", "4"]
    with pytest.raises(mp.ProcessRaisedException, match="rank 1 failed on purpose"):
        mp.start_processes(_write_rank, args=(str(tmp_path), 1), nprocs=2, start_method="fork")
    assert mp.get_sharing_strategy() == "file_descriptor"
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError):
        mp.set_sharing_strategy("bogus")
    assert mp.Queue is not None and mp.get_context("spawn").Process is not None


def _conv_transpose3d_ref(x, w, stride, padding, output_padding, dilation, groups):
    """The adjoint definition, written out with numpy: every input voxel spreads its kernel into the output."""
    n, cin, D, H, W = x.shape
    _, coutg, kd, kh, kw = w.shape
    s, p, op, dl = stride, padding, output_padding, dilation
    full = [(d - 1) * s[i] + dl[i] * (k - 1) + 1 + op[i] for i, (d, k) in enumerate(((D, kd), (H, kh), (W, kw)))]
    out = np.zeros((n, coutg * groups, *full))
    cin_g = cin // groups
    for ci in range(cin):
        g = ci // cin_g
        for a, b, c in np.ndindex(D, H, W):
            for i, j, k in np.ndindex(kd, kh, kw):
                od, oh, ow = a * s[0] + i * dl[0], b * s[1] + j * dl[1], c * s[2] + k * dl[2]
                out[:, g * coutg:(g + 1) * coutg, od, oh, ow] += x[:, ci, a, b, c, None] * w[ci, :, i, j, k]
    return out[:, :, p[0]:full[0] - p[0], p[1]:full[1] - p[1], p[2]:full[2] - p[2]]


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    ((2, 2, 2), (0, 0, 0), (0, 0, 0), (1, 1, 1), 1),
    ((2, 1, 2), (1, 0, 1), (1, 0, 0), (1, 2, 1), 1),
    ((1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), 2),
])
def test_conv_transpose3d_is_the_adjoint_of_conv3d(driver, stride, padding, output_padding, dilation, groups):
    r = np.random.default_rng()
    x = r.standard_normal((2, 4, 3, 3, 4))
    w = r.standard_normal((4, 6 // groups, 2, 3, 2))
    want = _conv_transpose3d_ref(x, w, stride, padding, output_padding, dilation, groups)
    got = F.conv_transpose3d(rawdev.tensor(x), rawdev.tensor(w), None, stride, padding, output_padding, groups,
                             dilation)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)
    # <conv_transpose3d(x, w), y> == <x, conv3d(y, w)>: the adjoint identity gives the input gradient's values
    y = r.standard_normal(want.shape)
    lhs = (want * y).sum()
    if output_padding == (0, 0, 0):
        back = F.conv3d(rawdev.tensor(y), rawdev.tensor(w), None, stride, padding, dilation, groups)
        assert abs(lhs - float((back.numpy() * x).sum())) < 1e-8 * max(1.0, abs(lhs))
    layer = nn.ConvTranspose3d(4, 6, (2, 3, 2), stride, padding, output_padding, groups, True, dilation).cuda()
    xc = rawdev.tensor(x, dtype=rawdev.float32, device="cuda", requires_grad=True)
    yc = layer(xc)
    ref = _conv_transpose3d_ref(x, layer.weight.detach().cpu().numpy().astype(np.float64), stride, padding,
                                output_padding, dilation, groups) + layer.bias.detach().cpu().numpy()[:, None, None,
                                                                                                       None]
    np.testing.assert_allclose(yc.detach().cpu().numpy(), ref, rtol=2e-5, atol=2e-5)
    yc.sum().backward()
    assert xc.grad.shape == xc.shape and layer.weight.grad.shape == layer.weight.shape


def _hogwild_step(model, k):
    with rawdev.no_grad():
        model.weight.add_(float(k))
        model.running.mul_(2.0)


def test_share_memory_lets_forked_processes_update_the_model():
    mp = rawdev.multiprocessing
    model = nn.Linear(3, 2)
    model.register_buffer("running", rawdev.ones(2))
    w0 = model.weight.detach().numpy().copy()
    w = model.weight
    assert not model.weight.is_shared()
    assert model.share_memory() is model and model.weight is w and model.weight.is_shared()
    assert model.running.is_shared() and model.weight.requires_grad
    np.testing.assert_array_equal(model.weight.detach().numpy(), w0)
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_hogwild_step, args=(model, k)) for k in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert all(p.exitcode == 0 for p in procs)
    np.testing.assert_allclose(model.weight.detach().numpy(), w0 + 3.0, rtol=1e-6)
    np.testing.assert_array_equal(model.running.numpy(), [4.0, 4.0])
    out = model(rawdev.ones(1, 3))                       # the shared parameters train as usual
    out.sum().backward()
    assert model.weight.grad is not None


def test_dense_tensor_predicates_layout_and_more_inplace_forms(driver):
    for dev in ("cpu", "cuda"):
        x = rawdev.tensor([-2.0, 0.0, 3.0], device=dev)
        assert not (x.is_sparse or x.is_quantized or x.is_meta or x.is_mkldnn or x.is_nested or x.is_mps)
        assert x.layout is rawdev.strided and repr(rawdev.strided) == "rawdev.strided" and x.to_dense() is x
        y = x.clone()
        assert y.sgn_() is y and y.cpu().tolist() == [-1.0, 0.0, 1.0]
        z = x.clone()
        z.ldexp_(rawdev.tensor([1.0, 2.0, 3.0], device=dev))
        assert z.cpu().tolist() == [-4.0, 0.0, 24.0]
    assert rawdev.zeros(2, layout=rawdev.strided).layout is rawdev.strided
