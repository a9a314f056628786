"""Random numbers on both devices: reproducible under a seed (cpu generator; per-device Philox on cuda, drawn
on the device), moments within statistical bounds, integer ranges, permutations, multinomial with and
without replacement (never a repeat without), the in-place fills on views, and the seeding API."""
import numpy as np
import pytest
import rawdev
import rawdev.cuda
from rawdev.ops import cuda as cuda_ops

DEVICES = ["cpu", "cuda"]
N = 40_000


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "cuda":
        from rawdev.runtime import reset_for_tests
        reset_for_tests("sim")
        cuda_ops.set_poison(True)
        yield "cuda"
        cuda_ops.set_poison(False)
    else:
        yield "cpu"


def vals(t):
    return t.cpu().numpy().astype(np.float64)


def moments_ok(x, mean, var, z=6.0):
    """Sample mean and variance within z standard errors (a failure chance far below 1e-6 per check)."""
    n = x.size
    se_mean = np.sqrt(var / n)
    m4 = 3 * var * var    # bounded generously by the normal's fourth moment x 3 below
    se_var = np.sqrt(3 * m4 / n)
    assert abs(x.mean() - mean) < z * se_mean, (x.mean(), mean)
    assert abs(x.var() - var) < z * se_var, (x.var(), var)


DRAWS = {
    "rand": (lambda d: rawdev.rand(N, device=d), 0.5, 1 / 12),
    "rand_f64": (lambda d: rawdev.rand(N, dtype=rawdev.float64, device=d), 0.5, 1 / 12),
    "randn": (lambda d: rawdev.randn(200, N // 200, device=d), 0.0, 1.0),
    "randn_f64": (lambda d: rawdev.randn(N, dtype=rawdev.float64, device=d), 0.0, 1.0),
    "randn_f16": (lambda d: rawdev.randn(N, dtype=rawdev.float16, device=d), 0.0, 1.0),
    "randint": (lambda d: rawdev.randint(-3, 7, (N,), device=d), 1.5, (10 ** 2 - 1) / 12),
    "normal": (lambda d: rawdev.normal(2.0, 3.0, (N,), device=d), 2.0, 9.0),
    "uniform_": (lambda d: rawdev.empty(N, device=d).uniform_(-1, 3), 1.0, 16 / 12),
    "normal_": (lambda d: rawdev.empty(N, device=d).normal_(-1, 0.5), -1.0, 0.25),
    "exponential_": (lambda d: rawdev.empty(N, device=d).exponential_(2.0), 0.5, 0.25),
    "bernoulli_": (lambda d: rawdev.empty(N, device=d).bernoulli_(0.3), 0.3, 0.21),
    "bernoulli": (lambda d: rawdev.bernoulli(rawdev.full((N,), 0.8, device=d)), 0.8, 0.16),
    "random_": (lambda d: rawdev.empty(N, dtype=rawdev.int64, device=d).random_(0, 4), 1.5, 15 / 12),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_moments_and_reproducible(name, device):
    fn, mean, var = DRAWS[name]
    rawdev.manual_seed(1234)
    a = fn(device)
    b = fn(device)
    rawdev.manual_seed(1234)
    a2 = fn(device)
    assert a.device.type == device
    assert np.array_equal(vals(a), vals(a2))       # a seed replays the stream
    assert not np.array_equal(vals(a), vals(b))    # consecutive draws differ
    moments_ok(vals(a).reshape(-1), mean, var)


def test_ranges(device):
    rawdev.manual_seed(0)
    r = vals(rawdev.rand(N, device=device))
    assert r.min() >= 0 and r.max() < 1
    u = vals(rawdev.empty(N, device=device).uniform_(2, 2.5))
    assert u.min() >= 2 and u.max() < 2.5
    i = vals(rawdev.randint(5, (N,), device=device))
    assert set(np.unique(i)) == {0, 1, 2, 3, 4}
    big = rawdev.randint(0, 2 ** 40, (1000,), device=device)
    assert big.dtype is rawdev.int64 and vals(big).max() > 2 ** 32
    e = vals(rawdev.empty(N, device=device).exponential_())
    assert e.min() > 0
    b = vals(rawdev.empty(100, dtype=rawdev.uint8, device=device).random_())
    assert b.min() >= 0 and b.max() <= 255
    assert rawdev.randint(3, (2, 2), dtype=rawdev.int32, device=device).dtype is rawdev.int32


def test_devices_differ_but_each_reproduces(dev):
    rawdev.manual_seed(7)
    c = rawdev.randn(100).numpy()
    g = rawdev.randn(100, device="cuda").cpu().numpy()
    assert not np.array_equal(c, g)
    rawdev.cuda.manual_seed(7)
    assert np.array_equal(rawdev.randn(100, device="cuda").cpu().numpy(), g)
    rawdev.cuda.manual_seed_all(7)
    assert np.array_equal(rawdev.randn(100, device="cuda").cpu().numpy(), g)


def test_generators(device):
    g = rawdev.Generator(device=device).manual_seed(99)
    a = rawdev.rand(50, generator=g, device=device)
    g.manual_seed(99)
    assert np.array_equal(vals(a), vals(rawdev.rand(50, generator=g, device=device)))
    state = g.get_state()
    x = rawdev.randn(10, generator=g, device=device)
    g.set_state(state)
    assert np.array_equal(vals(x), vals(rawdev.randn(10, generator=g, device=device)))
    assert g.initial_seed() == 99
    other = "cuda" if device == "cpu" else "cpu"
    with pytest.raises(RuntimeError, match=f"Expected a '{other}' device type for generator but found '{device}'"):
        rawdev.rand(2, generator=g, device=other)


def test_fills_write_views_in_place(device):
    x = rawdev.zeros(6, 5, device=device)
    x.t()[1:3].uniform_(5, 6)        # a transposed, narrowed view: only its elements change
    v = vals(x)
    assert ((v[:, 1:3] >= 5) & (v[:, 1:3] < 6)).all()
    assert (v[:, [0, 3, 4]] == 0).all()
    h = rawdev.zeros(4, dtype=rawdev.bfloat16, device=device).normal_()
    assert h.dtype is rawdev.bfloat16 and np.isfinite(vals(h)).all()
    w = rawdev.zeros(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.normal_()
    with rawdev.no_grad():
        w.normal_()


def test_randperm(device):
    rawdev.manual_seed(3)
    for n in (0, 1, 2, 57):
        p = vals(rawdev.randperm(n, device=device))
        assert sorted(p.tolist()) == list(range(n))
    p = vals(rawdev.randperm(300, device=device))
    assert not np.array_equal(p, np.arange(300))
    # every position sees every value about equally often
    first = [vals(rawdev.randperm(4, device=device))[0] for _ in range(400)]
    counts = np.bincount(np.asarray(first, np.int64), minlength=4)
    assert counts.min() > 60


def test_multinomial_with_replacement(device):
    rawdev.manual_seed(5)
    w = np.array([[1.0, 0.0, 3.0, 4.0], [0.0, 0.0, 2.0, 0.0]])
    t = rawdev.tensor(w, dtype=rawdev.float32, device=device)
    s = vals(rawdev.multinomial(t, 20_000, replacement=True)).astype(np.int64)
    assert s.shape == (2, 20_000)
    p = w[0] / w[0].sum()
    freq = np.bincount(s[0], minlength=4) / s.shape[1]
    assert np.all(np.abs(freq - p) < 6 * np.sqrt(p * (1 - p) / s.shape[1]) + 1e-12)
    assert (s[1] == 2).all()             # zero weights are never drawn
    one = rawdev.multinomial(rawdev.tensor([0.2, 0.8], device=device), 3, True)
    assert one.shape == (3,) and one.dtype is rawdev.int64


def test_multinomial_without_replacement(device):
    rawdev.manual_seed(6)
    w = rawdev.rand(8, 30, device=device) + 0.01
    s = vals(rawdev.multinomial(w, 30)).astype(np.int64)
    for row in s:
        assert sorted(row.tolist()) == list(range(30))     # never repeats
    # weighted: the first draw follows the weights
    wt = np.array([1.0, 2.0, 0.0, 5.0])
    t = rawdev.tensor(np.tile(wt, (4000, 1)), dtype=rawdev.float32, device=device)
    s = vals(rawdev.multinomial(t, 3)).astype(np.int64)
    assert all(len(set(r)) == 3 and 2 not in r for r in s.tolist())
    freq = np.bincount(s[:, 0], minlength=4) / len(s)
    p = wt / wt.sum()
    assert np.all(np.abs(freq - p) < 6 * np.sqrt(p * (1 - p) / len(s)) + 1e-12)
    rawdev.manual_seed(9)
    a = vals(rawdev.multinomial(t[:5], 2))
    rawdev.manual_seed(9)
    assert np.array_equal(a, vals(rawdev.multinomial(t[:5], 2)))


def test_multinomial_errors():
    w = rawdev.tensor([0.5, 0.5])
    with pytest.raises(RuntimeError,
                       match="cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"):
        rawdev.multinomial(w, 3)
    with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0 samples"):
        rawdev.multinomial(w, 0)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        rawdev.multinomial(rawdev.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        rawdev.multinomial(rawdev.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="invalid multinomial distribution \\(sum of probabilities <= 0\\)"):
        rawdev.multinomial(rawdev.zeros(3), 1, True)
    with pytest.raises(RuntimeError, match="not enough non-negative category to sample"):
        rawdev.multinomial(rawdev.tensor([1.0, 0.0, 0.0]), 2)


def test_normal_with_tensor_arguments(device):
    rawdev.manual_seed(2)
    mean = rawdev.tensor([0.0, 100.0], device=device).repeat(20_000)
    out = vals(rawdev.normal(mean, 2.0))
    moments_ok(out[0::2], 0.0, 4.0)
    moments_ok(out[1::2], 100.0, 4.0)
    std = rawdev.full((N,), 3.0, device=device)
    moments_ok(vals(rawdev.normal(1.0, std)), 1.0, 9.0)
