"""nn.utils: clip_grad_norm_ / clip_grad_value_ against numpy (every norm type, error_if_nonfinite), cuda against
the cpu with the launches counted (one fused scale per gradient arena), parameters_to_vector /
vector_to_parameters, and rnn.pad_sequence (batch_first, padding_value, padding_side, gradients)."""
import math

import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.nn.parameter import Parameter
from rawdev.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters
from rawdev.nn.utils.rnn import pad_sequence
from rawdev.tensor.factory import from_numpy

RNG = np.random.default_rng(17)
SHAPES = [(4, 3), (3,), (2, 5)]


def np_clip_norm(grads, max_norm, p):
    flat = np.concatenate([g.ravel() for g in grads])
    if p == math.inf:
        total = np.abs(flat).max()
    elif p == -math.inf:
        total = np.abs(flat).min()
    elif p == 0:
        total = float((flat != 0).sum())
    else:
        total = (np.abs(flat) ** p).sum() ** (1 / p)
    coef = min(max_norm / (total + 1e-6), 1.0)
    return total, [g * coef for g in grads]


def params_with_grads(grads, dtype=np.float64, dev="cpu"):
    ps = []
    for g in grads:
        p = Parameter(from_numpy(np.zeros(g.shape, dtype)).to(dev))
        p.grad = from_numpy(g.astype(dtype)).to(dev)
        ps.append(p)
    return ps


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, 0.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_cpu(p, max_norm):
    grads = [RNG.standard_normal(s) for s in SHAPES]
    grads[0][0, 0] = 0.0
    ps = params_with_grads(grads)
    total = clip_grad_norm_(ps, max_norm, norm_type=p)
    want_total, want = np_clip_norm(grads, max_norm, p)
    assert total.shape == () and total.dtype is rawdev.float64
    np.testing.assert_allclose(total.item(), want_total, rtol=1e-12, atol=1e-14)
    for q, w in zip(ps, want):
        np.testing.assert_allclose(np.asarray(q.grad), w, rtol=1e-12, atol=1e-14)
    if max_norm == 1e3 and p not in (0.0, -math.inf):
        for q, g in zip(ps, grads):
            np.testing.assert_array_equal(np.asarray(q.grad), g)     # under the bound: coef clamped to 1


def test_clip_grad_norm_edge_cases():
    assert clip_grad_norm_([Parameter(from_numpy(np.zeros(2)))], 1.0).item() == 0.0   # no grads
    p = Parameter(from_numpy(np.zeros(3)))
    p.grad = from_numpy(np.array([3.0, 4.0, 0.0]))
    assert clip_grad_norm_(p, 1.0).item() == 5.0                                     # one tensor, not a list
    np.testing.assert_allclose(np.asarray(p.grad), np.array([3.0, 4.0, 0.0]) / (5.0 + 1e-6))
    p.grad = from_numpy(np.array([np.inf, 1.0, 0.0]))
    with pytest.raises(RuntimeError, match=r"^The total norm of order 2\.0 for gradients from `parameters` is "
                                           r"non-finite, so it cannot be clipped\. To disable this error and scale "
                                           r"the gradients by the non-finite norm anyway, set "
                                           r"`error_if_nonfinite=False`$"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_([p], 1.0, foreach=True).item())                 # scaled by 1/inf, no error
    np.testing.assert_array_equal(np.isnan(np.asarray(p.grad)), [True, False, False])


def _arena_model(dev):
    rawdev.manual_seed(4)
    return nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).to(dev)


def _backward(model, dev):
    x = from_numpy(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)).to(dev)
    model.zero_grad()
    (model(x) * model(x)).sum().backward()


@pytest.mark.parametrize("p", [2.0, 1.0, math.inf, 3.0])
def test_clip_grad_norm_cuda_matches_cpu_and_is_one_scale_launch_per_arena(driver, p):
    cpu, dev = _arena_model("cpu"), _arena_model("cuda")
    _backward(cpu, "cpu")
    _backward(dev, "cuda")
    want = clip_grad_norm_(cpu.parameters(), 0.1, norm_type=p)
    with rawdev.trace() as t:
        got = clip_grad_norm_(dev.parameters(), 0.1, norm_type=p)
    launches = [c.owner for c in t.calls if c.fn == "cuLaunchKernel"]
    # the 4 gradients share one grad arena: one scale launch, and no copy to the host
    assert launches.count("clip_grad_scale") == 1
    assert not any(c.fn.startswith("cuMemcpyDtoH") for c in t.calls)
    assert got.is_cuda and got.shape == ()
    assert abs(got.item() - want.item()) / want.item() < 1e-5
    for a, b in zip(dev.parameters(), cpu.parameters()):
        a, b = np.asarray(a.grad.cpu()), np.asarray(b.grad)
        assert np.abs(a - b).max() / np.abs(b).max() < 1e-5
    # and the clipped norm is max_norm (the coefficient was below 1)
    assert abs(clip_grad_norm_(dev.parameters(), 1e9, norm_type=p).item() - 0.1) < 1e-5


def test_clip_grads_outside_arenas_on_cuda(driver):
    grads = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
    ps = params_with_grads(grads, np.float32, "cuda")
    with rawdev.trace() as t:
        total = clip_grad_norm_(ps, 0.5)
    assert [c.owner for c in t.calls if c.fn == "cuLaunchKernel"].count("clip_grad_scale") == 3   # one per grad
    want_total, want = np_clip_norm([g.astype(np.float64) for g in grads], 0.5, 2.0)
    assert abs(total.item() - want_total) / want_total < 1e-5
    for q, w in zip(ps, want):
        np.testing.assert_allclose(np.asarray(q.grad.cpu()), w, rtol=1e-5, atol=1e-7)


def test_clip_grad_value(driver):
    grads = [RNG.standard_normal(s) for s in SHAPES]
    grads[1][0] = np.nan
    ps = params_with_grads(grads)
    clip_grad_value_(ps, 0.3)
    for q, g in zip(ps, grads):
        np.testing.assert_array_equal(np.asarray(q.grad), np.clip(g, -0.3, 0.3))
    cpu, dev = _arena_model("cpu"), _arena_model("cuda")
    _backward(cpu, "cpu")
    _backward(dev, "cuda")
    clip_grad_value_(cpu.parameters(), 0.05)
    with rawdev.trace() as t:
        clip_grad_value_(dev.parameters(), 0.05, foreach=True)
    assert [c.owner for c in t.calls if c.fn == "cuLaunchKernel"] == ["clip_grad_value"]
    for a, b in zip(dev.parameters(), cpu.parameters()):
        a, b = np.asarray(a.grad.cpu()), np.asarray(b.grad)
        assert np.abs(a).max() <= 0.05 and np.abs(a - b).max() <= 1e-6 * np.abs(b).max() + 1e-7


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_parameters_to_vector_and_back(driver, dev):
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
    ps = [Parameter(from_numpy(a).to(dev)) for a in arrays]
    vec = parameters_to_vector(ps)
    assert vec.shape == (sum(a.size for a in arrays),) and vec.device == ps[0].device
    np.testing.assert_array_equal(np.asarray(vec.detach().cpu()), np.concatenate([a.ravel() for a in arrays]))
    (vec * from_numpy(np.arange(vec.numel(), dtype=np.float32)).to(dev)).sum().backward()
    off = 0
    for p, a in zip(ps, arrays):
        np.testing.assert_array_equal(np.asarray(p.grad.cpu()), np.arange(off, off + a.size).reshape(a.shape))
        off += a.size
    new = from_numpy(np.linspace(0, 1, vec.numel(), dtype=np.float32)).to(dev)
    vector_to_parameters(new, ps)
    np.testing.assert_array_equal(np.asarray(parameters_to_vector(ps).detach().cpu()), np.asarray(new.cpu()))
    assert ps[2].shape == SHAPES[2]
    with pytest.raises(TypeError, match="^expected torch.Tensor, but got: list$"):
        vector_to_parameters([1.0], ps)


def test_parameters_on_two_devices_are_refused(driver):
    ps = [Parameter(from_numpy(np.zeros(2, np.float32))), Parameter(from_numpy(np.zeros(2, np.float32)).cuda())]
    with pytest.raises(TypeError, match="^Found two parameters on different devices, this is currently not "
                                        "supported.$"):
        parameters_to_vector(ps)


def np_pad(seqs, batch_first, value, side):
    T = max(len(s) for s in seqs)
    out = np.full((len(seqs), T) + seqs[0].shape[1:], value)
    for i, s in enumerate(seqs):
        if side == "left":
            out[i, T - len(s):] = s
        else:
            out[i, :len(s)] = s
    return out if batch_first else np.swapaxes(out, 0, 1)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_pad_sequence(driver, batch_first, side, dev):
    seqs = [RNG.standard_normal((n, 3)).astype(np.float32) for n in (4, 1, 6, 0)]
    ts = [from_numpy(s).to(dev).requires_grad_() for s in seqs]
    out = pad_sequence(ts, batch_first=batch_first, padding_value=-2.5, padding_side=side)
    want = np_pad(seqs, batch_first, -2.5, side)
    assert out.shape == want.shape and out.device == ts[0].device
    np.testing.assert_array_equal(np.asarray(out.detach().cpu()), want)
    w = RNG.standard_normal(want.shape).astype(np.float32)
    (out * from_numpy(w).to(dev)).sum().backward()
    wb = w if batch_first else np.swapaxes(w, 0, 1)
    T = want.shape[1] if batch_first else want.shape[0]
    for i, (s, t) in enumerate(zip(seqs, ts)):
        sl = slice(T - len(s), T) if side == "left" else slice(0, len(s))
        np.testing.assert_array_equal(np.asarray(t.grad.cpu()), wb[i, sl])


def test_pad_sequence_1d_and_errors():
    out = pad_sequence([rawdev.tensor([1, 2, 3]), rawdev.tensor([4])])
    assert out.tolist() == [[1, 4], [2, 0], [3, 0]] and out.dtype is rawdev.int64
    with pytest.raises(ValueError, match="^Expected padding_side to be one of left or right, but got middle.$"):
        pad_sequence([rawdev.tensor([1.0])], padding_side="middle")


def test_import_paths():
    import rawdev.nn.utils.clip_grad as cg
    import rawdev.nn.utils.convert_parameters as cp
    import rawdev.nn.utils.rnn as rnn
    assert nn.utils.clip_grad_norm_ is cg.clip_grad_norm_ and nn.utils.clip_grad_value_ is cg.clip_grad_value_
    assert nn.utils.parameters_to_vector is cp.parameters_to_vector and nn.utils.rnn.pad_sequence is rnn.pad_sequence
    with pytest.warns(FutureWarning):
        nn.utils.clip_grad_norm([Parameter(from_numpy(np.zeros(1)))], 1.0)
